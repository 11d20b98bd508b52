"""Records a fixed corpus of programs with whichever ivytrace is first on sys.path, one trace file
per group, into the directory given as argv[1]. Used by test_record_bytes.py to compare the
records of two versions of the recorder byte for byte (it is not a test itself).

The corpus: every program of samples/{torch,numpy,jax,mixed}_programs.py, the sample CNN's forward,
the seeds' first example, the symbolic-shape programs of tests/python/test_symbolic_shapes.py in
each framework, and a handful of record kinds the samples do not reach (guards, a raised call,
in-place writes through an alias, kwargs, constants outside regions).
"""
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "samples"))

import ivytrace  # noqa: E402

warnings.simplefilter("ignore")
OUT = Path(sys.argv[1])
GROUPS = sys.argv[2:] or ["torch", "torch_misc", "numpy", "jax", "mixed", "symbolic"]


def session(name, frameworks):
    return ivytrace.Recorder(OUT / f"{name}.ivt", frameworks=frameworks, argv=["corpus", name])


def torch_group():
    import torch_programs as tp
    from models import make_input, make_model
    torch.manual_seed(0)
    model = make_model("cnn").eval()
    with session("torch", ("torch",)):
        for name, (fn, inputs) in tp.PROGRAMS.items():
            ivytrace.region(name)(fn)(*inputs(1))
        fwd = ivytrace.region("forward")(model)
        x = make_input("cnn", batch=2)
        with torch.no_grad():
            fwd(x)
            fwd(x)


def torch_misc_group():
    import seeds_example
    torch.manual_seed(0)
    with session("torch_misc", ("torch",)):
        ivytrace.region("seeds")(seeds_example.fn)(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 3.0, 4.0]))
        a = torch.ones(3)                      # outside regions: constants, foldable ops
        b = (a * 2 + 1).sum()
        c = torch.randn(2, 2) @ torch.eye(2)   # random op values
        if b > 0:                               # guard
            c.relu_().add(1, alpha=2)           # in-place write, keyword argument
        try:
            torch.ones(2) + torch.ones(3)       # a call that raises
        except RuntimeError:
            pass
        e = a.detach()
        e.mul_(3)                               # alias op, write through it
        f = torch.cat([a, e]).view(2, 3)[1]     # list argument, view, getitem
        f.sum(dim=0, keepdim=True) * 2 ** 40 + 1.5
        g = torch.arange(12.0).reshape(3, 4)
        g[1:, ::2] = 0.5                        # slice argument
        g.float().tolist()
        torch.zeros(2, dtype=torch.float64, device="cpu") + 1j


def numpy_group():
    import numpy_programs as npp
    np.random.seed(1)   # before recording: the baseline recorder does not record seeding
    with session("numpy", ("numpy",)):
        for name, (fn, make) in npp.PROGRAMS.items():
            args = make(np.random)
            with ivytrace.region(name, inputs=dict(zip(("x", "y"), args))) as reg:
                reg.set_result(fn(*args))
        # The common ufunc call and the cases next to it (C path: np_ufunc; Python: record_ufunc).
        ivytrace.region("ufunc_edges")(_ufunc_edges)(np.linspace(0.0, 1.0, 6).reshape(2, 3))
        x = np.arange(6.0).reshape(2, 3)
        y = x * 2 + 1                       # outside regions: constants, foldable ops
        y[0] = 7.0                          # in-place write
        if y.sum() > 0:                     # guard
            np.add(y, 1, out=y)
        try:
            np.ones(2) + np.ones(3)         # a call that raises
        except ValueError:
            pass


def _ufunc_edges(x):
    y = x + 1                        # int operand
    y = np.multiply(y, 0.5)          # float operand
    y = y * 2 ** 70                  # an int64 cannot hold it: the general path
    z = y[0, 0] + 1.5                # 0-d operand: a NumPy scalar result
    w = np.maximum(y, x)             # two arrays
    try:
        y + np.ones(4)               # raises (shapes), one operand a constant
    except ValueError:
        pass
    y = y - True                     # bool operand: the general path
    return w + z + y


def jax_group():
    import jax
    import jax_programs as jp
    with session("jax", ("jax",)):
        r = np.random.RandomState(1)
        for name, (fn, make) in jp.PROGRAMS.items():
            args = make(r)
            with ivytrace.region(name, inputs=dict(zip(("x", "y"), args))) as reg:
                reg.set_result(fn(*args))
        del jax


def mixed_group():
    import mixed_programs as mp
    # Inputs made before recording: RandomState(seed) draws OS entropy into a recorded call.
    inputs = {name: make(0) for name, (fn, make) in mp.PROGRAMS.items()}
    with session("mixed", ("torch", "numpy")):
        for name, (fn, make) in mp.PROGRAMS.items():
            args = inputs[name]
            with ivytrace.region(name, inputs=dict(zip(["x", "w"], args))) as reg:
                reg.set_result(fn(*args))


def symbolic_group():
    spec = importlib.util.spec_from_file_location("_symbolic_programs", HERE / "test_symbolic_shapes.py")
    m = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = m   # its dataclasses look their module up
    spec.loader.exec_module(m)
    for fw, F in m.FRAMEWORKS.items():
        with session(f"symbolic_{fw}", (fw,)):
            for program, shapes in m.PROGRAMS.items():
                fn = program(F)
                for k, shape in enumerate(shapes[:2]):
                    x = m._data(F, shape, seed=k)
                    ivytrace.region(f"{program.__name__}_{k}")(fn)(x)


for g in GROUPS:
    globals()[f"{g}_group"]()
print("recorded", " ".join(GROUPS))
