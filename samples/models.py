"""Small real models in plain torch, shared by the samples, the tests and the benchmarks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """A three-layer perceptron with GELU and a softmax head."""

    def __init__(self, in_features=16, hidden=32, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = torch.tanh(self.fc2(h)) + h
        return F.softmax(self.head(h), dim=-1)


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 convs with batch norm and an identity (or 1x1) shortcut."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class SmallResNet(nn.Module):
    """A ResNet-style CNN: stem, max pool, two stages of basic blocks, global pool, classifier."""

    def __init__(self, classes=10, width=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        self.layer2 = nn.Sequential(BasicBlock(width, 2 * width, stride=2), BasicBlock(2 * width, 2 * width))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class GPTBlock(nn.Module):
    """A GPT-style decoder block as people write it in plain torch, with the redundancy everyday
    code carries: the causal mask built inside forward, layer norm called once per projection,
    view/transpose/contiguous chains, dropout (a no-op in eval) and a cast to the same dtype."""

    def __init__(self, dim=32, heads=4, seq=8):
        super().__init__()
        self.heads, self.seq = heads, seq
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, t, c = x.shape
        h, d = self.heads, c // self.heads
        mask = torch.tril(torch.ones(self.seq, self.seq))[:t, :t].view(1, 1, t, t)
        q = self.q(self.ln1(x)).view(b, t, h, d).transpose(1, 2)
        k = self.k(self.ln1(x)).view(b, t, h, d).transpose(1, 2)
        v = self.v(self.ln1(x)).view(b, t, h, d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / d**0.5)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = self.drop(F.softmax(att.float(), dim=-1).type_as(x))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


def make_model(name, seed=0):
    """A model in eval mode with deterministic weights and non-trivial batch-norm statistics."""
    torch.manual_seed(seed)
    model = {"mlp": MLP, "cnn": SmallResNet, "gpt": GPTBlock}[name]()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model.eval()


def make_input(name, batch=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    if name == "mlp":
        return torch.randn(batch, 16, generator=g)
    if name == "gpt":
        return torch.randn(batch, 8, 32, generator=g)
    return torch.randn(batch, 3, 32, 32, generator=g)
