"""What the NumPy recorder writes: op names, args, writes and versions, guards, creation wrappers."""
import sys

import numpy as np
import pytest

from ivytrace.recorder import numpy_recorder as nr
from ivytrace.v1 import trace_pb2


def _run(record, body, *arrays):
    """Record body(*traced arrays) under a numpy-only Recorder; the arrays are region-free
    TracedArray views (as trace_graph makes them)."""
    def prog():
        from ivytrace.recorder.recorder import active
        rec = active()
        wrapped = rec.numpy.wrap(tuple(arrays))
        body(*wrapped)
    return record(prog, frameworks=("numpy",))


def test_ufuncs_operators_and_methods_are_recorded_by_name(record):
    def body(a, b):
        c = a + b
        d = np.exp(c) * 2
        e = np.add.reduce(d, axis=0)
        f = np.multiply.accumulate(a)
        g = np.concatenate([a, b]).reshape(2, -1).T
        h = np.einsum("i,i->", a, b)
        k = a.astype(np.float32).sum()

    r = _run(record, body, np.arange(3.0), np.ones(3))
    names = r.op_names() if isinstance(r.op_names(), list) else list(r.op_names())
    for n in ("numpy.add", "numpy.exp", "numpy.multiply", "numpy.add.reduce", "numpy.multiply.accumulate",
              "numpy.concatenate", "numpy.ndarray.reshape", "numpy.transpose", "numpy.einsum",
              "numpy.ndarray.astype", "numpy.ndarray.sum"):
        assert n in names, (n, names)
    astype = r.ops("numpy.ndarray.astype")[0]
    assert astype.args[1].symbol == "numpy.float32"
    # No op made inside another recorded op (astype's, sum's internals) is recorded.
    assert len(r.ops("numpy.add")) == 1


def test_out_and_setitem_are_writes_with_new_versions_and_views_follow(record):
    def body(a, b):
        c = a.copy()
        np.add(c, b, out=c)
        v = c[1:]
        v[0] = 5.0
        c += 1

    r = _run(record, body, np.arange(4.0), np.ones(4))
    add_out = [o for o in r.ops("numpy.add") if any(k.name == "out" for k in o.kwargs)]
    assert len(add_out) == 2
    first = add_out[0]
    assert first.flags & trace_pb2.INPLACE
    c_in = first.args[0].tensor
    assert [m.id for m in first.mutated] == [c_in.id] and first.mutated[0].version == c_in.version + 1
    setitem = r.ops("numpy.ndarray.__setitem__")[0]
    # Writing the view writes c too: both are listed, at the storage's new version.
    ids = {m.id for m in setitem.mutated}
    assert c_in.id in ids and len(ids) == 2
    assert len({m.storage for m in setitem.mutated}) == 1
    assert all(m.version == c_in.version + 2 for m in setitem.mutated)


def test_guards_record_value_and_user_line(record):
    line = {}

    def body(a):
        line["n"] = sys._getframe().f_lineno + 1
        if float(a.sum()) > 1:
            pass
        a.tolist()
        int(a[0])

    r = _run(record, body, np.arange(3.0))
    guards = r.of_kind("guard")
    ops = [r.s(g.op) for g in guards]
    assert ops == ["numpy.ndarray.__float__", "numpy.ndarray.tolist", "numpy.ndarray.__int__"]
    assert guards[0].value.f == 3.0 and guards[0].line == line["n"]
    assert r.s(guards[0].file) == __file__
    assert [x.f for x in guards[1].value.list.items] == [0.0, 1.0, 2.0]


def test_random_ops_are_flagged_and_their_values_kept(record):
    def body(a):
        return a + np.random.rand(3)

    r = _run(record, body, np.zeros(3))
    (op,) = r.ops("numpy.random.rand")
    assert op.flags & trace_pb2.RANDOM
    assert any(t.ref.id == op.result.tensor.id for t in r.tensors(nr.RANDOM_OUTPUT))


def test_creation_functions_return_recorded_arrays_only_while_recording(record):
    seen = {}

    def prog():
        seen["in"] = type(np.array([1, 2]))
    record(prog, frameworks=("numpy",))
    assert seen["in"] is nr.TracedArray
    assert type(np.array([1, 2])) is np.ndarray
    assert not hasattr(np.array, "__ivytrace_original__")


def test_other_threads_are_not_recorded(record):
    import threading

    def body(a):
        t = threading.Thread(target=lambda: a * 5)
        t.start()
        t.join()
        a * 7

    r = _run(record, body, np.ones(2))
    assert len(r.ops("numpy.multiply")) == 1


def test_array_derived_by_an_unrecorded_method_warns(record):
    def prog():
        from ivytrace.recorder.recorder import active
        rec = active()
        (a,) = rec.numpy.wrap((np.arange(3.0),))
        rid = rec.region_begin("r", [("a", a)])
        v = a.view()                  # ndarray.view is not recorded
        out = v * 2
        rec.region_end(rid, out)

    with pytest.warns(RuntimeWarning, match="does not record"):
        record(prog, frameworks=("numpy",))


def test_recorded_methods_round_take_diagonal(record):
    def body(a):
        a.round(1).take([0, 2]).cumprod()
        a.reshape(3, 1).diagonal()

    r = _run(record, body, np.arange(3.0) / 3)
    names = list(r.op_names())
    for n in ("numpy.ndarray.round", "numpy.ndarray.take", "numpy.ndarray.cumprod", "numpy.ndarray.diagonal"):
        assert n in names


def test_shape_reads_are_recorded(record):
    def body(a):
        n = a.shape[0]
        m = len(a)
        a.reshape(-1)

    r = _run(record, body, np.zeros((2, 3)))
    reads = r.of_kind("shape_read")
    assert [r.s(x.op) for x in reads] == ["numpy.ndarray.shape", "numpy.ndarray.__len__"]
    assert [i.i for i in reads[0].value.tuple.items] == [2, 3] and reads[1].value.i == 2


def test_region_ids_are_unique_across_torch_and_numpy_regions(record):
    torch = pytest.importorskip("torch")
    import ivytrace

    def prog():
        for _ in range(2):
            with ivytrace.region("t", inputs={"x": torch.ones(2)}) as r:
                r.set_result(torch.ones(2) * 2)
            with ivytrace.region("n", inputs={"x": np.ones(2)}) as r:
                r.set_result(np.ones(2) * 2)

    r = record(prog, frameworks=("torch", "numpy"))
    ids = [b.region for b in r.of_kind("region_begin")]
    assert len(ids) == 4 and len(set(ids)) == 4
