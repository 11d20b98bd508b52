"""Real PyTorch programs for the record -> optimize -> plan replay tests (tests/e2e/test_torch_programs_e2e.py).

Each entry of PROGRAMS is (function, make_inputs(seed) -> tuple of tensors). The functions are
plain PyTorch: an attention block, GRU/LSTM cells written out and looped over time steps, code
that writes through views and with __setitem__ in every index form, random ops, and a function
that branches on a tensor's value (a guard).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _gen(seed):
    g = torch.Generator().manual_seed(seed)
    return lambda *shape: torch.randn(*shape, generator=g)


# -- attention -------------------------------------------------------------------------------
def attention_block(x, wq, wk, wv, wo, ln_w, ln_b):
    """Pre-norm multi-head self-attention with a causal mask and a residual connection."""
    b, t, d = x.shape
    heads = 2
    h = F.layer_norm(x, (d,), ln_w, ln_b)
    q = (h @ wq).view(b, t, heads, d // heads).transpose(1, 2)
    k = (h @ wk).view(b, t, heads, d // heads).transpose(1, 2)
    v = (h @ wv).view(b, t, heads, d // heads).transpose(1, 2)
    scores = q @ k.mT / math.sqrt(d // heads)
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    attn = scores.softmax(dim=-1)
    out = (attn @ v).transpose(1, 2).reshape(b, t, d)
    return x + out @ wo


def attention_inputs(seed):
    r = _gen(seed)
    d = 8
    return (r(2, 5, d), r(d, d) / 3, r(d, d) / 3, r(d, d) / 3, r(d, d) / 3, 1 + r(d) / 10, r(d) / 10)


# -- recurrent cells looped over time ----------------------------------------------------------
def gru_loop(xs, h, w_ih, w_hh, b_ih, b_hh):
    """A GRU cell in plain torch, unrolled over the time steps of xs (T, B, I)."""
    outs = []
    for t in range(xs.shape[0]):
        gi = xs[t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        i_r, i_z, i_n = gi.chunk(3, dim=1)
        h_r, h_z, h_n = gh.chunk(3, dim=1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        h = (1 - z) * n + z * h
        outs.append(h)
    return torch.stack(outs), h


def gru_inputs(seed):
    r = _gen(seed)
    i, hid = 4, 6
    return (r(7, 3, i), r(3, hid), r(3 * hid, i) / 2, r(3 * hid, hid) / 2, r(3 * hid) / 5, r(3 * hid) / 5)


def lstm_loop(xs, h, c, w, b):
    """An LSTM cell in plain torch; the hidden states are written into a preallocated buffer."""
    steps = xs.shape[0]
    out = torch.zeros(steps, *h.shape)
    for t in range(steps):
        gates = torch.cat([xs[t], h], dim=1) @ w + b
        i, f, g, o = gates.split(h.shape[1], dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        out[t] = h                                  # __setitem__ with an int
    return out, h, c


def lstm_inputs(seed):
    r = _gen(seed)
    i, hid = 3, 5
    return (r(6, 2, i), r(2, hid), r(2, hid), r(i + hid, 4 * hid) / 2, r(4 * hid) / 5)


# -- in-place writes and views -------------------------------------------------------------------
def views_inplace(x, idx):
    """Writes through views and __setitem__ with every index form; the base sees each write."""
    y = x * 2
    v = y.view(-1)
    v.add_(1)                          # through a view: y changes too
    y.t()[0] += 5                      # view of a view (t, then select), augmented assignment
    y[1:3].zero_()                     # slice view
    y[y > 3] = 0                       # boolean mask
    y[0, ..., None] = 7                # int, Ellipsis, None
    y[idx] = -1.5                      # index tensor
    y[:, 1] = x[:, 2]                  # tensor value
    z = y.clone()
    w = z.T                            # property view made before the write below
    z.mul_(3)                          # write to the base: the view w sees it
    u = z.unsqueeze(0)
    u[0, -1].sub_(x[0])                # through unsqueeze then an int index
    p = z.permute(1, 0)
    p.narrow(0, 1, 2).mul_(0.5)        # narrow of a permute
    z.select(1, 0).clamp_(max=2.0)     # select
    return y, w + 0, z, v.sum()


def views_inputs(seed):
    r = _gen(seed)
    return (r(4, 4), torch.tensor([3, 0]))


def tensor_api(x):
    """Tensor properties, every __getitem__ form, factories and reflected operators."""
    a = x.T @ x.mT
    b = x[None, ..., 1:] + x[1, 1:] + x[::2, None, 1:3].sum() + x[:, None, 0].T.sum()
    c = x[x > 0].sum() + x[torch.tensor([0, 2])].mean() + x[[1, 1]].max()
    d = 1 - x + 2 / (x.abs() + 3) + 2 ** x.tanh() + 3 * x - x % 2
    f = (torch.zeros(4, 4) + torch.ones(4) + torch.arange(4.0) + torch.full((4, 4), 0.5)
         + torch.zeros_like(x) + torch.ones_like(x) + torch.full_like(x, 2.0))
    e = torch.empty_like(x).fill_(3.0) + torch.empty(4).fill_(1.0)
    return a, b, c, d, f * x, e - x, torch.eye(4) @ x


def tensor_api_inputs(seed):
    r = _gen(seed)
    return (r(4, 4),)


# -- random ops ---------------------------------------------------------------------------------
def random_ops(x):
    """Random ops: the recorded values are kept (generators flagged in schemas/torch.textproto)."""
    a = x + torch.rand(x.shape)
    b = a * torch.randn(x.shape[1])
    n = torch.empty(x.shape).normal_(0.0, 2.0)
    d = F.dropout(b, p=0.5, training=True)
    bern = torch.bernoulli(torch.full_like(x, 0.3))
    idx = torch.randint(0, x.shape[1], (3,))
    m = torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 4, replacement=True)
    return d + n * bern, x[:, idx], m


def random_draws(x):
    """Random ops that read no input data: --bake-generators can replace them by their values."""
    noise = torch.rand(x.shape) + torch.randn(x.shape[1]) + torch.empty(x.shape).normal_(0.0, 2.0)
    keep = torch.bernoulli(torch.full(x.shape, 0.3))
    idx = torch.randint(0, x.shape[1], (3,))
    m = torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 4, replacement=True)
    return x * keep + noise, x[:, idx], m


def random_inputs(seed):
    r = _gen(seed)
    return (r(3, 4),)


# -- a guard ------------------------------------------------------------------------------------
def branchy(x):
    if bool(x.sum() > 0):                          # the graph is specialized on this
        return x * 2
    return x - 1


def branchy_inputs(seed):
    return (torch.ones(3) * (1 + seed % 3),)


PROGRAMS = {
    "attention": (attention_block, attention_inputs),
    "gru": (gru_loop, gru_inputs),
    "lstm": (lstm_loop, lstm_inputs),
    "views": (views_inplace, views_inputs),
    "tensor_api": (tensor_api, tensor_api_inputs),
}
