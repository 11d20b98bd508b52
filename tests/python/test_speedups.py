"""The C fast path (ivytrace._speedups) must write exactly the records the pure-Python recorder
writes: the same programs are recorded in two processes, one with IVYTRACE_NO_SPEEDUPS=1, and the
traces are compared record by record with only the clocks (and the process id) left out."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ivytrace.recorder.reader import TraceFormatError, read_trace
from ivytrace.v1 import trace_pb2

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = str(REPO / "python")

PROGRAM = r'''
import sys, torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, {samples!r})
import ivytrace
import torch_programs as tp
from models import make_model, make_input
torch.manual_seed(0)
model = make_model("cnn").eval()   # made outside: its init reads uninitialized memory
with ivytrace.Recorder(sys.argv[1]) as rec:
    torch.ones(1)
    print("recorder:", [c.__name__ for c in type(rec.torch).__mro__], rec.writer.sink is not None)
    for name, (fn, inputs) in tp.PROGRAMS.items():
        ivytrace.region(name)(fn)(*inputs(1))
    fwd = ivytrace.region("forward")(model)
    x = make_input("cnn", batch=2)
    with torch.no_grad():
        fwd(x); fwd(x)
    a = torch.ones(3)                      # outside regions: constants, foldable ops
    b = (a * 2 + 1).sum()
    c = torch.randn(2, 2) @ torch.eye(2)   # random op values
    if b > 0:                               # guard
        d = c.relu_().add(1, alpha=2)       # in-place write, keyword argument
    try:
        torch.ones(2) + torch.ones(3)       # a call that raises
    except RuntimeError:
        pass
    e = a.detach(); e.mul_(3)               # alias op, write through it
    f = torch.cat([a, e]).view(2, 3)[1]     # list argument, view, getitem
    g = f.sum(dim=0, keepdim=True) * 2 ** 40 + 1.5
'''


def _normalized(path):
    t = read_trace(str(path))
    out = []
    last_op = ""
    for rec in t.records:
        kind = rec.WhichOneof("kind")
        if kind == "tensor" and last_op.startswith("torch.empty"):
            rec.tensor.value.data = b""   # uninitialized memory (torch.empty is foldable)
        if kind == "op":
            last_op = t.string(rec.op.op)
            rec.op.start_ns = 0
            rec.op.duration_ns = 0
            rec.op.thread = 0
        elif kind == "header":
            rec.header.pid = 0
            rec.header.start_time_unix_ns = 0
            del rec.header.argv[:]
        elif kind == "footer":
            rec.footer.end_ns = 0
            rec.footer.ClearField("crc32")
            rec.footer.ClearField("footer_crc32")  # covers end_ns, which differs
        out.append(re.sub(r"0x[0-9a-f]+", "0x?", str(rec)))   # addresses in opaque reprs
    return t, out


def _record(tmp_path, name, **env):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(samples=str(REPO / "samples")))
    trace = tmp_path / f"{name}.ivt"
    full_env = {k: v for k, v in os.environ.items() if k != "IVYTRACE_NO_SPEEDUPS"}
    full_env.update(PYTHONPATH=os.pathsep.join([PYTHON_DIR, str(REPO / "samples")]), **env)
    proc = subprocess.run([sys.executable, str(prog), str(trace)], check=True, env=full_env, timeout=300,
                          capture_output=True, text=True)
    return trace, proc.stdout


def test_c_fast_path_writes_the_records_of_the_python_recorder(tmp_path):
    pytest.importorskip("ivytrace._speedups")
    fast_trace, fast_out = _record(tmp_path, "fast")
    slow_trace, slow_out = _record(tmp_path, "slow", IVYTRACE_NO_SPEEDUPS="1")
    assert "RecorderBase" in fast_out and "True" in fast_out       # C recorder, mapped file
    assert "RecorderBase" not in slow_out and "False" in slow_out  # Python recorder, write()
    fast, fast_recs = _normalized(fast_trace)
    slow, slow_recs = _normalized(slow_trace)
    assert fast.footer is not None and slow.footer is not None
    assert len(fast.ops()) > 300
    assert [fast.string(o.op) for o in fast.ops()] == [slow.string(o.op) for o in slow.ops()]
    for i, (a, b) in enumerate(zip(fast_recs, slow_recs)):
        assert a == b, f"record {i} differs:\n{a}\nvs\n{b}"
    assert len(fast_recs) == len(slow_recs)
    assert fast.strings == slow.strings


def test_zero_tail_of_a_killed_recording_ends_the_records_and_nothing_else_may_follow(tmp_path):
    good = tmp_path / "good.ivt"
    from ivytrace.recorder.recorder import Recorder
    import torch
    with Recorder(good):
        torch.ones(2) * 3
    data = good.read_bytes()
    # Where the footer record (the last one) starts: its bytes after their length prefix (a varint;
    # one byte for a footer this small). Searching for a single byte of it instead was flaky: the
    # footer's CRC-32 and counts change from run to run and may contain that byte.
    footer = read_trace(str(good)).records[-1]
    assert footer.WhichOneof("kind") == "footer"
    body = footer.SerializeToString()
    assert len(body) < 128
    footer_at = data.rindex(bytes([len(body)]) + body)
    killed = tmp_path / "killed.ivt"
    killed.write_bytes(data[:footer_at] + bytes(4096))
    t = read_trace(str(killed))
    assert t.footer is None and not t.truncated and t.op_names() == ["torch.ones", "torch.Tensor.mul"]
    bad = tmp_path / "bad.ivt"
    bad.write_bytes(data[:footer_at] + bytes(100) + b"\x01" + bytes(10))
    with pytest.raises(TraceFormatError, match="record length of 0"):
        read_trace(str(bad))


def test_locator_finds_the_frames_the_python_caller_location_finds(tmp_path):
    """_speedups.Locator (the caller's file and line for NumPy and JAX ops) against its Python twin
    array_recorder.py_caller_location: same frame skipped or taken, same line, same interned file,
    first call and cached, from frames of internal and of user files."""
    _speedups = pytest.importorskip("ivytrace._speedups")
    from ivytrace.recorder.array_recorder import py_caller_location

    internal = tmp_path / "lib"
    internal.mkdir()
    # A library file (internal: its frames are skipped) that calls back into the user's function.
    (internal / "libmod.py").write_text(
        "def call(f, loc, intern):\n"
        "    return f(loc, intern)\n"
        "def here(loc, intern):\n"
        "    return loc(intern)\n")
    (tmp_path / "usermod.py").write_text(
        "import libmod\n"
        "def user(loc, intern):\n"
        "    return libmod.here(loc, intern)\n"
        "def twice(loc, intern):\n"
        "    return [libmod.call(user, loc, intern),\n"
        "            libmod.here(loc, intern)]\n")
    sys.path[:0] = [str(internal), str(tmp_path)]
    try:
        import usermod
        import libmod
        strings = {}

        def intern(s):
            return strings.setdefault(s, len(strings) + 1)

        prefixes = (str(internal) + os.sep,)
        c_loc, py_loc = _speedups.Locator(prefixes), py_caller_location(prefixes)
        for _ in range(2):   # first and cached
            got = usermod.twice(c_loc, intern)
            assert got == usermod.twice(py_loc, intern)
            assert got == [(intern(usermod.__file__), 3), (intern(usermod.__file__), 6)]
        # Every frame internal (files and "<frozen ...>" ones): none is the user's, (0, 0).
        everything = _speedups.Locator(("/", "<")), py_caller_location(("/", "<"))
        assert libmod.here(everything[0], intern) == libmod.here(everything[1], intern) == (0, 0)
        with pytest.raises(TypeError):
            _speedups.Locator(["not a tuple"])
    finally:
        del sys.path[:2]
        sys.modules.pop("usermod", None)
        sys.modules.pop("libmod", None)


def test_numpy_and_jax_c_paths_write_the_records_of_their_python_twins(tmp_path):
    """np_ufunc, jax_finish and Locator (C) against record_ufunc, _finish_array and
    caller_location (Python): the NumPy, JAX (symbolic shapes on: trace_graph's default) and
    symbolic-shape programs of record_corpus.py, recorded in two processes, record for record."""
    _speedups = pytest.importorskip("ivytrace._speedups")
    assert hasattr(_speedups, "jax_finish") and hasattr(_speedups, "Locator")
    corpus = Path(__file__).parent / "record_corpus.py"
    traces = {}
    for name, env in (("fast", {}), ("slow", {"IVYTRACE_NO_SPEEDUPS": "1"})):
        out = tmp_path / name
        out.mkdir()
        full_env = {k: v for k, v in os.environ.items() if k not in ("IVYTRACE_NO_SPEEDUPS", "IVYTRACE_JAX_SYMBOLIC_SHAPES")}
        full_env.update(PYTHONPATH=PYTHON_DIR, HF_HUB_OFFLINE="1", **env)
        subprocess.run([sys.executable, str(corpus), str(out), "numpy", "jax", "symbolic"], check=True,
                       env=full_env, timeout=600, capture_output=True, cwd=str(REPO))
        traces[name] = sorted(out.glob("*.ivt"))
    assert [p.name for p in traces["fast"]] == [p.name for p in traces["slow"]]
    assert {"numpy.ivt", "jax.ivt", "symbolic_jax.ivt"} <= {p.name for p in traces["fast"]}
    foldable = 0
    for fast_path, slow_path in zip(traces["fast"], traces["slow"]):
        fast, fast_recs = _normalized(fast_path)
        slow, slow_recs = _normalized(slow_path)
        assert len(fast.ops()) > 20, fast_path.name
        foldable += sum(1 for o in fast.ops() if o.flags & trace_pb2.FOLDABLE_OP)   # jax_finish's value writes
        for i, (a, b) in enumerate(zip(fast_recs, slow_recs)):
            assert a == b, f"{fast_path.name}: record {i} differs:\n{a}\nvs\n{b}"
        assert len(fast_recs) == len(slow_recs), fast_path.name
        assert fast.strings == slow.strings
    assert foldable > 0


def test_tensor_id_table_keeps_live_entries_and_sweeps_dead_ones():
    """TorchRecorder's id table in C (_speedups.TensorIds of IdEntry): an entry reads as the
    pure-Python recorder's 5-tuple (weakref, tensor id, storage id, TensorRef.id and .storage
    fields), a tensor's entry is found by id(tensor) while it lives, a view gets its base's storage
    id, the table survives many insertions and deletions (open addressing, backward-shift delete),
    and a sweep drops exactly the entries of dead tensors."""
    _speedups = pytest.importorskip("ivytrace._speedups")
    torch = pytest.importorskip("torch")
    from ivytrace.recorder import torch_recorder as tr
    from ivytrace.recorder.encode import varint

    ids = _speedups.TensorIds()
    with pytest.raises(TypeError):
        ids[1] = (None, 1, 1, b"", b"")   # only entries made in C go in

    rec = tr.TorchRecorder.__new__(tr.TorchRecorder)   # the C base's tables only: no session
    rec._ids = _speedups.TensorIds()
    rec._next_tid = 7
    base = torch.zeros(4)
    view = base[1:]
    e = rec._ref_of(view)
    b = rec._ids.get(id(base))
    assert e[0]() is view and b[0]() is base
    assert (e[1], e[2]) == (7, 8) and (b[1], b[2]) == (8, 8)   # the view's storage is its base's
    assert e[3] == tr._REF_ID + varint(7) and e[4] == tr._REF_STORAGE + varint(8)
    assert len(e) == 5 and e[-1] == e[4]
    assert rec._ref_of(view) is e and rec._ids[id(view)] is e and len(rec._ids) == 2
    a = torch.zeros(1)
    alias = rec._c_new_ref(a, b[2])
    assert (alias[1], alias[2]) == (9, 8)

    tensors = [torch.zeros(1) for _ in range(3000)]
    entries = [rec._ref_of(t) for t in tensors]
    assert [x[1] for x in entries] == list(range(10, 3010))
    for t in tensors[::2]:
        del rec._ids[id(t)]
    assert all(rec._ids.get(id(t)) is None for t in tensors[::2])
    assert all(rec._ids.get(id(t)) is x for t, x in zip(tensors[1::2], entries[1::2]))
    with pytest.raises(KeyError):
        del rec._ids[id(tensors[0])]
    kept = tensors[1:200:2]
    del tensors, a
    alive_before = len(rec._ids)
    rec._sweep()
    # left: base, view and the odd tensors still held (the alias's and the other odd ones died)
    assert alive_before == 2 + 1 + 1500 and len(rec._ids) == 2 + len(kept)
    assert all(rec._ids.get(id(t))[0]() is t for t in kept)
    assert sorted(k for k, _ in rec._ids.items()) == sorted([id(base), id(view)] + [id(t) for t in kept])
