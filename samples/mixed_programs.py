"""Programs that mix PyTorch and NumPy, for the mixed-program tests (tests/e2e/test_mixed_programs_e2e.py).

Each entry of PROGRAMS is (function, make_inputs(seed) -> tuple of inputs). Data crosses between
the frameworks through t.numpy(), np.asarray(t), torch.from_numpy(a), torch.as_tensor(a) and
torch.tensor(a); four programs write on one side of memory shared across a conversion (NumPy in
place, torch in place, torch through a view, the caller's tensor through its NumPy view) and read
the other side afterwards; one branches on a value that went through t.numpy() (a guard).

Run as a script it records nothing itself; under `ivytrace record` it marks the program's region:

    ivytrace record -o mixed.ivt -- python samples/mixed_programs.py roundtrip --save-io io.pt
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import ivytrace


def _gen(seed):
    g = torch.Generator().manual_seed(seed)
    return lambda *shape: torch.randn(*shape, generator=g)


def roundtrip(x):
    """torch -> NumPy -> torch: the example of the issue."""
    h = torch.relu(x)
    a = h.numpy()
    b = np.tanh(a) * 2
    return torch.from_numpy(b) + 1


def roundtrip_inputs(seed):
    return (_gen(seed)(3, 4),)


def standardize(x, w):
    """Statistics in NumPy (np.asarray on a tensor), the rest in torch (as_tensor, tensor)."""
    y = x @ w
    a = np.asarray(y)
    mean = a.mean(axis=0, keepdims=True)
    std = a.std(axis=0, keepdims=True) + 1e-5
    z = torch.as_tensor((a - mean) / std)
    scale = torch.tensor(np.abs(mean))        # a copy, not a view
    return torch.sigmoid(z) * scale, z.sum(dim=1)


def standardize_inputs(seed):
    r = _gen(seed)
    return r(6, 5), r(5, 3)


def numpy_writes_shared(x):
    """h and a share memory; NumPy writes a in place; torch then reads h (it sees the write)."""
    h = torch.sigmoid(x) + 0.5
    a = h.numpy()
    a *= 3
    a[0] = np.exp(a[1])
    return h * h + 1


def numpy_writes_shared_inputs(seed):
    return (_gen(seed)(4, 3),)


def torch_writes_shared(a):
    """NumPy input; t and b share memory; torch writes t in place; NumPy then reads b."""
    b = np.tanh(a) + 1.0
    t = torch.from_numpy(b)
    t.mul_(2).add_(torch.ones(3, dtype=t.dtype))
    return np.sum(b, axis=0) * 0.5, np.sqrt(b)


def torch_writes_shared_inputs(seed):
    return (np.random.RandomState(seed).randn(5, 3).astype(np.float32),)


def torch_view_write_shared(x):
    """torch writes through a view of t (t[0].add_) after t.numpy(); NumPy then reads a."""
    t = x * 2
    a = t.numpy()
    t[0].add_(5)
    return np.sum(a, axis=0)


def torch_view_write_shared_inputs(seed):
    return (_gen(seed)(3, 2),)


def input_written_through_numpy(x):
    """The caller's tensor is written through its NumPy view (as the program does)."""
    a = x.numpy()
    a *= 2
    return x + 1


def input_written_through_numpy_inputs(seed):
    return (_gen(seed)(4),)


def branch_through_numpy(x):
    """A value that went through t.numpy() decides the branch: a NumPy guard."""
    s = torch.tanh(x).numpy()
    if s.sum() > 0:
        return x * 2
    return x - 1


def branch_through_numpy_inputs(seed):
    return (_gen(seed)(3, 3).abs(),)     # positive: the recorded branch


PROGRAMS = {
    "roundtrip": (roundtrip, roundtrip_inputs),
    "standardize": (standardize, standardize_inputs),
    "numpy_writes_shared": (numpy_writes_shared, numpy_writes_shared_inputs),
    "torch_writes_shared": (torch_writes_shared, torch_writes_shared_inputs),
    "torch_view_write_shared": (torch_view_write_shared, torch_view_write_shared_inputs),
    "input_written_through_numpy": (input_written_through_numpy, input_written_through_numpy_inputs),
    "branch_through_numpy": (branch_through_numpy, branch_through_numpy_inputs),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("program", choices=sorted(PROGRAMS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-io", help="torch.save the inputs and outputs here")
    a = p.parse_args()
    fn, make_inputs = PROGRAMS[a.program]
    args = make_inputs(a.seed)
    keep = [x.copy() if isinstance(x, np.ndarray) else x.clone() for x in args]
    with ivytrace.region(a.program, inputs=dict(zip(["x", "w"], args))) as r:
        out = fn(*args)
        r.set_result(out)
    if a.save_io:
        plain = [np.asarray(o).copy() if isinstance(o, np.ndarray) else o for o in (out if isinstance(out, tuple) else (out,))]
        torch.save({"inputs": keep, "outputs": plain}, a.save_io)
    print(a.program, "done")


if __name__ == "__main__":
    main()
