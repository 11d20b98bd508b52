"""A traced nn.Module trains (issue 14): parameters and buffers are live inputs of the replay, so
five SGD steps through the traced module give the same weights as five eager steps."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ivytrace


@pytest.fixture(autouse=True)
def _cli(ivytrace_bin, monkeypatch):
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)


class SmallNet(nn.Module):
    """Conv + BatchNorm (running statistics written in train mode) + MLP head."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc2(torch.tanh(self.fc1(h.flatten(1))))


def _batches(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(6, 3, 8, 8, generator=g), torch.randint(0, 5, (6,), generator=g)) for _ in range(n)]


def _train(model, batches, momentum):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_five_sgd_steps_through_the_traced_module_match_eager(momentum):
    torch.manual_seed(0)
    model = SmallNet().train()
    eager = copy.deepcopy(model)
    batches = _batches(5)
    traced = ivytrace.trace_graph(model, args=(torch.randn(6, 3, 8, 8),))
    assert traced is model
    model.load_state_dict(eager.state_dict())   # undo the traced call's BatchNorm update
    graph = ivytrace.graph_of(model)

    traced_losses = _train(model, batches, momentum)
    eager_losses = _train(eager, batches, momentum)

    assert graph.traces == 1                     # every step replayed the one trace
    torch.testing.assert_close(torch.tensor(traced_losses), torch.tensor(eager_losses), rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=f"parameter {name}")
    for (name, b), c in zip(model.named_buffers(), eager.buffers()):
        torch.testing.assert_close(b, c, rtol=1e-5, atol=1e-6, msg=f"buffer {name}")
    assert int(model.bn.num_batches_tracked) == 5


def test_the_weights_really_moved():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    start = copy.deepcopy(model.state_dict())
    ivytrace.trace_graph(model, args=(torch.randn(8, 4),))
    g = torch.Generator().manual_seed(3)
    x = torch.randn(32, 4, generator=g)
    y = x.sum(1, keepdim=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    first = None
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    final = F.mse_loss(model(x), y).item()
    assert final < first
    for name, p in model.named_parameters():
        assert not torch.equal(p.detach(), start[name]), name
