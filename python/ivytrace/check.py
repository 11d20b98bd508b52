"""The numerical half of `ivytrace check`: run an exported model and compare its outputs.

The CLI (cli/cmd_check.cc) resolves files, regions and flags, exports the reference plan, then runs

    python -m ivytrace.check JOB.json

and reads one JSON report from stdout (the schema is in the README, "ivytrace check"). This module
runs the artifact (an ONNX model in onnxruntime, or a plan in the Python runtime) on

  * the region's recorded inputs, comparing with the recorded outputs (a trace holds both), and
  * `random` fresh inputs of the recorded shapes and dtypes, comparing with a replay of the
    reference plan (the source's graph exactly as recorded); dims the ONNX model declares
    symbolic (dim_param) take other sizes in trials 1, 2, ...

Exit status: 0 the report was written (whether or not the check passed), 3 bad input (a message on
stderr), 8 a module the check needs is missing (onnxruntime, numpy, torch).
"""
from __future__ import annotations

import json
import math
import sys

EXIT_BAD_INPUT = 3
EXIT_MISSING = 8
REPORT_SCHEMA = "ivytrace.check/1"


class BadInput(Exception):
    pass


class Missing(Exception):
    pass


def _need(module: str, why: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise Missing(f"{why} needs the Python package '{module}', which {sys.executable} cannot import "
                      f"({e}); install it (pip install {module}) or name another interpreter with --python "
                      f"or $IVYTRACE_PYTHON") from None


# --- Recorded values ------------------------------------------------------------------------------

def _np_dtype(np, enum: int, where: str):
    from ivytrace.v1 import common_pb2 as c
    table = {c.FLOAT32: "float32", c.FLOAT64: "float64", c.FLOAT16: "float16", c.INT8: "int8",
             c.INT16: "int16", c.INT32: "int32", c.INT64: "int64", c.UINT8: "uint8", c.BOOL: "bool",
             c.COMPLEX64: "complex64", c.COMPLEX128: "complex128", c.UINT16: "uint16", c.UINT32: "uint32",
             c.UINT64: "uint64"}
    if enum not in table:
        name = c.DType.Name(enum) if enum in c.DType.values() else str(enum)
        raise BadInput(f"{where}: dtype {name} has no NumPy equivalent to compare in")
    return np.dtype(table[enum])


def tensor_refs(arg, out: list):
    """TensorRefs of an Arg tree (slice bounds included), in tree order (the order of ONNX inputs
    and outputs)."""
    kind = arg.WhichOneof("kind")
    if kind == "tensor":
        out.append(arg.tensor)
    elif kind in ("list", "tuple"):
        for a in getattr(arg, kind).items:
            tensor_refs(a, out)
    elif kind == "dict":
        for a in arg.dict.values:
            tensor_refs(a, out)
    elif kind == "slice":
        for a in (arg.slice.start, arg.slice.stop, arg.slice.step):
            tensor_refs(a, out)
    return out



def read_recorded(trace_path: str, region: str):
    """(inputs, outputs) of region "name:K": inputs as [(name, Arg tree)], values by (id, version).

    Returns None when the trace has no such region (nothing recorded to compare with)."""
    from ivytrace.recorder.reader import TraceFormatError, iter_records
    from ivytrace.v1 import common_pb2
    name, _, k = region.rpartition(":")
    if not name or not k.isdigit():
        return None
    want, seen, instance = int(k), 0, None
    begin = end = None
    chunks: dict = {}  # (id, version, role) -> (Tensor, total, {offset: bytes})
    try:
        for rec in iter_records(trace_path):
            kind = rec.WhichOneof("kind")
            if kind == "region_begin" and instance is None and rec.region_begin.name == name:
                if seen == want:
                    instance, begin = rec.region_begin.region, rec.region_begin
                seen += 1
            elif kind == "region_end" and instance is not None and rec.region_end.region == instance:
                end = rec.region_end  # its REGION_OUTPUT values follow it
            elif end is not None and kind not in ("tensor", "intern"):
                break
            elif kind == "tensor" and instance is not None:
                td = rec.tensor
                if td.value.role in (common_pb2.REGION_INPUT, common_pb2.REGION_OUTPUT):
                    key = (td.ref.id, td.ref.version, td.value.role)
                    entry = chunks.setdefault(key, (td.value, td.total_bytes, {}))
                    entry[2][td.offset] = td.value.data
    except TraceFormatError as e:
        raise BadInput(str(e)) from None
    if begin is None or end is None:
        return None

    def values(role):
        out = {}
        for (tid, ver, r), (meta, total, parts) in chunks.items():
            if r == role:
                data = b"".join(parts[o] for o in sorted(parts))
                if len(data) == total:
                    out[(tid, ver)] = (meta, data)
        return out
    return begin, end, values(common_pb2.REGION_INPUT), values(common_pb2.REGION_OUTPUT)


def _array(np, meta, data: bytes, where: str):
    dt = _np_dtype(np, meta.dtype, where)
    shape = tuple(int(s) for s in meta.shape)
    if len(data) != math.prod(shape) * dt.itemsize:
        raise BadInput(f"{where}: recorded value of shape {list(shape)} holds {len(data)} bytes")
    return np.frombuffer(bytearray(data), dtype=dt).reshape(shape)


# --- Running the artifact and the reference ------------------------------------------------------

class PlanRunner:
    """A plan replayed by the Python runtime; inputs as NumPy arrays, outputs flattened to arrays."""

    def __init__(self, path: str):
        from ivytrace.runtime.errors import PlanError
        self.framework = "torch"
        try:
            from ivytrace.runtime.plan import read_plan
            plan, data = read_plan(path)
        except PlanError as e:
            raise BadInput(str(e)) from None
        self.framework = (plan.framework or "torch").split(",")[0]
        if self.framework == "torch":
            _need("torch", f"replaying the torch plan {path}")
        elif self.framework == "jax":
            _need("jax", f"replaying the jax plan {path}")
        from ivytrace.runtime.plan import CompiledPlan
        try:
            self.plan = CompiledPlan(plan, path, data=data)
        except PlanError as e:
            raise BadInput(str(e)) from None
        self.inputs = list(plan.inputs)

    def to_framework(self, np, a, framework: str):
        fw = framework or self.framework
        if fw == "torch":
            import torch
            return torch.from_numpy(np.ascontiguousarray(a).copy())
        if fw == "jax":
            import jax.numpy as jnp
            return jnp.asarray(a)
        return np.array(a)

    def run(self, np, trees: list):
        """`trees`: one Python value per plan input (tensors as (array, framework) pairs)."""
        def build(v):
            if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], str):
                return self.to_framework(np, v[0], v[1])
            if isinstance(v, list):
                return [build(x) for x in v]
            if isinstance(v, TupleValue):
                return tuple(build(x) for x in v.items)
            if isinstance(v, dict):
                return {k: build(x) for k, x in v.items()}
            return v
        try:
            import torch
            grad = torch.no_grad()
        except ImportError:
            import contextlib
            grad = contextlib.nullcontext()
        with grad:
            out = self.plan(*[build(t) for t in trees])
        return [_to_numpy(np, t) for t in _flatten_result(out)]


class TupleValue:
    """A tuple in an input tree (plain tuples mark (array, framework) leaves)."""

    def __init__(self, items):
        self.items = items


def _flatten_result(v, out=None):
    out = [] if out is None else out
    if isinstance(v, (list, tuple)):
        for x in v:
            _flatten_result(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _flatten_result(x, out)
    elif hasattr(v, "shape") and hasattr(v, "dtype"):
        out.append(v)
    return out


def _to_numpy(np, t):
    if type(t).__module__.startswith("torch"):
        t = t.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(t)


class OnnxRunner:
    def __init__(self, path: str):
        ort = _need("onnxruntime", f"running the ONNX model {path}")
        try:
            self.session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph types
            raise BadInput(f"{path}: onnxruntime cannot load the model: {e}") from None
        self.inputs = self.session.get_inputs()

    def symbolic_dims(self):
        """[(input index, dim index, dim_param)] for dims the model leaves symbolic."""
        out = []
        for i, inp in enumerate(self.inputs):
            for d, size in enumerate(inp.shape):
                if not isinstance(size, int):
                    out.append((i, d, str(size)))
        return out

    def run(self, np, flat: list):
        if len(flat) != len(self.inputs):
            raise BadInput(f"the ONNX model takes {len(self.inputs)} inputs, the region has {len(flat)} tensors")
        feed = {inp.name: np.ascontiguousarray(a) for inp, a in zip(self.inputs, flat)}
        return list(self.session.run(None, feed))


# --- Input trees ----------------------------------------------------------------------------------

def _tree(arg, leaf):
    """The Python value of an input Arg tree; `leaf(TensorRef)` makes each tensor."""
    from ivytrace.runtime.values import literal
    kind = arg.WhichOneof("kind")
    if kind == "tensor":
        return leaf(arg.tensor)
    if kind == "list":
        return [_tree(a, leaf) for a in arg.list.items]
    if kind == "tuple":
        return TupleValue([_tree(a, leaf) for a in arg.tuple.items])
    if kind == "dict":
        return {k: _tree(v, leaf) for k, v in zip(arg.dict.keys, arg.dict.values)}
    return literal(arg, None, "region input")


def _flat_arrays(v, out):
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], str):
        out.append(v[0])
    elif isinstance(v, list):
        for x in v:
            _flat_arrays(x, out)
    elif isinstance(v, TupleValue):
        for x in v.items:
            _flat_arrays(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _flat_arrays(x, out)
    return out


# --- Comparing ------------------------------------------------------------------------------------

def _tolerance(job, name):
    t = dict(job["tolerance"]["default"])
    t.update(job["tolerance"].get("per_output", {}).get(name, {}))
    return t


def _statistic(np, stat: str, x):
    if x.size == 0:
        return 0.0
    if stat == "max":
        return float(np.max(x))
    if stat == "mean":
        return float(np.mean(x))
    if stat == "median":
        return float(np.median(x))
    q = float(stat.split(":", 1)[1])
    return float(np.quantile(x, q))


def compare(np, name: str, got, expected, tol: dict) -> dict:
    """One output: the error statistics and whether it is within tolerance.

    ratio = |got - expected| / (atol + rtol * |expected|) per element (NaN matches NaN only); the
    output passes when the chosen statistic of the ratio is <= 1 (with "max" that is allclose)."""
    row = {"name": name, "shape": list(expected.shape), "dtype": str(expected.dtype),
           "atol": tol["atol"], "rtol": tol["rtol"], "statistic": tol["stat"]}
    if tuple(got.shape) != tuple(expected.shape):
        row.update(passed=False, reason=f"shape {list(got.shape)}, expected {list(expected.shape)}")
        return row
    if got.dtype != expected.dtype and not (got.dtype.kind in "fc" and expected.dtype.kind in "fc"):
        row.update(passed=False, reason=f"dtype {got.dtype}, expected {expected.dtype}")
        return row
    if expected.dtype.kind == "b" or got.dtype.kind == "b":
        a, b = got.astype(np.float64), expected.astype(np.float64)
    elif expected.dtype.kind == "c":
        a, b = got.astype(np.complex128), expected.astype(np.complex128)
    else:
        a, b = got.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        both_nan = np.isnan(a) & np.isnan(b)
        diff = np.where(both_nan, 0.0, np.abs(a - b))
        diff = np.where(np.isnan(diff), np.inf, diff)
        scale = np.abs(b)
        rel = np.where(scale > 0, diff / np.where(scale > 0, scale, 1), np.where(diff > 0, np.inf, 0.0))
        bound = tol["atol"] + tol["rtol"] * np.where(np.isfinite(scale), scale, 0.0)
        ratio = np.where(bound > 0, diff / np.where(bound > 0, bound, 1), np.where(diff > 0, np.inf, 0.0))
    value = _statistic(np, tol["stat"], ratio)
    row.update(
        max_abs_error=float(np.max(diff)) if diff.size else 0.0,
        mean_abs_error=float(np.mean(diff)) if diff.size else 0.0,
        max_rel_error=float(np.max(rel)) if rel.size else 0.0,
        error_ratio=value,
        mismatched=int(np.count_nonzero(ratio > 1)),
        elements=int(diff.size),
        passed=bool(value <= 1.0),
    )
    if not row["passed"]:
        row["reason"] = (f"{tol['stat']} error ratio {value:.3g} > 1 (max abs error {row['max_abs_error']:.3g}, "
                         f"{row['mismatched']} of {row['elements']} elements outside atol {tol['atol']:g} + "
                         f"rtol {tol['rtol']:g} * |expected|)")
    return row


def _compare_case(np, job, name, got, expected, inputs) -> dict:
    case = {"name": name, "inputs": inputs, "outputs": []}
    if len(got) != len(expected):
        case.update(passed=False, error=f"the artifact returned {len(got)} tensors, expected {len(expected)}")
        return case
    names = ["output"] if len(expected) == 1 else [f"output.{i}" for i in range(len(expected))]
    for n, g, e in zip(names, got, expected):
        case["outputs"].append(compare(np, n, np.asarray(g), np.asarray(e), _tolerance(job, n)))
    case["passed"] = all(o["passed"] for o in case["outputs"])
    return case


def _random_like(np, rng, meta_shape, dtype, recorded):
    shape = tuple(meta_shape)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo, hi = (int(recorded.min()), int(recorded.max())) if recorded is not None and recorded.size else (0, 9)
        return rng.integers(lo, hi + 1, size=shape, dtype=np.int64, endpoint=False).astype(dtype)
    mean, std = 0.0, 1.0
    if recorded is not None and recorded.size and dtype.kind == "f":
        r = recorded.astype(np.float64)
        r = r[np.isfinite(r)]
        if r.size:
            mean, std = float(r.mean()), float(r.std()) or 1.0
    x = rng.standard_normal(shape) * std + mean
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape) * std
    return x.astype(dtype)


def run_job(job: dict) -> dict:
    np = _need("numpy", "ivytrace check")
    artifact = OnnxRunner(job["artifact"]) if job["artifact_kind"] == "onnx" else PlanRunner(job["artifact"])
    reference = PlanRunner(job["reference_plan"]) if job.get("reference_plan") else None
    report = {"schema": REPORT_SCHEMA, "artifact": job["artifact_display"], "source": job["source_display"],
              "region": job.get("region") or None, "tolerance": job["tolerance"], "cases": [], "notes": []}

    # The input trees: from the recorded region when there is one, else the reference plan's inputs.
    recorded = read_recorded(job["trace"], job.get("region", "")) if job.get("trace") else None
    if recorded is not None:
        begin, end, in_values, out_values = recorded
        input_args = [(ni.name, ni.value) for ni in begin.inputs]
    elif reference is not None:
        in_values = out_values = {}
        input_args = [(gi.name, gi.value) for gi in reference.inputs]
    else:
        raise BadInput("nothing to compare: the source holds no recorded region values and no reference "
                       "plan was made (give --random N)")
    metas = {}  # (id, version) -> (shape, dtype, recorded array or None, framework)
    for name, arg in input_args:
        for ref in tensor_refs(arg, []):
            key = (ref.id, ref.version)
            if key in in_values:
                meta, data = in_values[key]
                arr = _array(np, meta, data, f"{job['source_display']}: region input {name!r}")
                metas[key] = (arr.shape, arr.dtype, arr, meta.framework)
            else:
                metas[key] = (tuple(ref.shape), _np_dtype(np, ref.dtype, f"region input {name!r}"), None, "")

    def case_inputs(make):
        trees = [_tree(arg, lambda r: (make(r), metas[(r.id, r.version)][3])) for _, arg in input_args]
        flat = []
        for t in trees:
            _flat_arrays(t, flat)
        return trees, flat

    def run(runner, trees, flat):
        return runner.run(np, flat) if isinstance(runner, OnnxRunner) else runner.run(np, trees)

    def shapes(flat):
        return [list(a.shape) for a in flat]

    # 1. Recorded inputs against recorded outputs.
    if recorded is not None:
        missing = [k for k in metas if metas[k][2] is None]
        out_refs = tensor_refs(end.result, [])
        missing_out = [r for r in out_refs if (r.id, r.version) not in out_values]
        if missing or missing_out or not out_refs:
            report["notes"].append("the trace does not hold every region input and output value; "
                                   "recorded comparison skipped")
        else:
            trees, flat = case_inputs(lambda r: metas[(r.id, r.version)][2])
            expected = [_array(np, *out_values[(r.id, r.version)], "recorded output") for r in out_refs]
            try:
                got = run(artifact, trees, flat)
                report["cases"].append(_compare_case(np, job, "recorded", got, expected, shapes(flat)))
            except (BadInput, Missing):
                raise
            except Exception as e:
                report["cases"].append({"name": "recorded", "inputs": shapes(flat), "outputs": [], "passed": False,
                                        "error": f"the artifact failed on the recorded inputs: {type(e).__name__}: {e}"})

    # 2. Random inputs against the reference plan's replay.
    sym = artifact.symbolic_dims() if isinstance(artifact, OnnxRunner) else []
    flat_keys = []
    for _, arg in input_args:
        flat_keys.extend((r.id, r.version) for r in tensor_refs(arg, []))
    for t in range(int(job.get("random", 0))):
        rng = np.random.default_rng(int(job.get("seed", 0)) + t)
        sizes = {}
        for i, d, param in sym:
            if i < len(flat_keys):
                base = metas[flat_keys[i]][0][d] if d < len(metas[flat_keys[i]][0]) else 1
                sizes.setdefault(param, max(1, base + t))  # trial 0: as recorded; then larger
        shape_of = {}
        for i, key in enumerate(flat_keys):
            s = list(metas[key][0])
            for j, d, param in sym:
                if j == i and d < len(s):
                    s[d] = sizes[param]
            shape_of.setdefault(key, s)
        trees, flat = case_inputs(lambda r: _random_like(np, rng, shape_of[(r.id, r.version)],
                                                         metas[(r.id, r.version)][1], metas[(r.id, r.version)][2]))
        name = f"random.{t}"
        try:
            expected = reference.run(np, trees)
        except Exception as e:
            report["notes"].append(f"{name}: the reference replay cannot run on inputs of shapes {shapes(flat)} "
                                   f"({type(e).__name__}: {str(e)[:200]}); trial skipped")
            continue
        try:
            got = run(artifact, trees, flat)
        except Exception as e:
            report["cases"].append({"name": name, "inputs": shapes(flat), "outputs": [], "passed": False,
                                    "error": f"the artifact failed: {type(e).__name__}: {str(e)[:300]}"})
            continue
        report["cases"].append(_compare_case(np, job, name, got, expected, shapes(flat)))

    if not report["cases"]:
        report["notes"].append("no comparison ran")
    report["passed"] = bool(report["cases"]) and all(c["passed"] for c in report["cases"])
    return report


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ivytrace.check JOB.json (run by `ivytrace check`)", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    try:
        report = run_job(job)
    except BadInput as e:
        print(e, file=sys.stderr)
        return EXIT_BAD_INPUT
    except Missing as e:
        print(e, file=sys.stderr)
        return EXIT_MISSING
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
