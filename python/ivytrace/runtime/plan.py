"""Plan files: read, check, compile to a Python function, call.

    plan = ivytrace.load_plan("model.ivyplan")
    out = plan(x)          # straight-line replay
    print(plan.source)
"""
from __future__ import annotations

import inspect
import keyword
import mmap
import os
import zlib

from ivytrace.runtime.allowlist import AllowList, default_allowlist
from ivytrace.runtime import codegen
from ivytrace.runtime.codegen import generate
from ivytrace.runtime.errors import PlanError
from ivytrace.v1 import plan_pb2

PLAN_MAGIC = b"IVYPLN02"      # what the CLI writes: constants' bytes in an aligned data section
PLAN_MAGIC_V1 = b"IVYPLN01"   # still read: constants' bytes inside the Plan message
DATA_START = 64               # format 02: where the data section starts
DATA_ALIGN = 64
CHECKSUM_TAG = bytes([15 << 3 | 5])  # Plan.crc32: field 15, fixed32


def read_plan(path):
    """Read and check a plan file: (plan, data). `data[i]` is a writable buffer holding constant
    i's bytes, for format 02 (plan.proto): the file is mapped copy-on-write, so the constants are
    the file's pages, read lazily and shared with the page cache, never parsed or copied (a step
    that writes into one gets a private page). None for format 01, whose Plan holds the bytes."""
    plan, data, _, _ = _read_plan(path, machine=False)
    return plan, data


def _read_plan(path, machine=None):
    """read_plan's (plan, data), a view of the Plan's serialized bytes in the file, and the
    ivytrace._replay.Program that parsed them for the machine (`machine` as load_plan's) if one
    did: then `plan` holds all but the steps (see _parse)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            magic = f.read(len(PLAN_MAGIC))
            if magic == PLAN_MAGIC and os.fstat(f.fileno()).st_size >= DATA_START:
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
            else:
                buf = magic + f.read()
    except OSError as e:
        raise PlanError(f"{path}: cannot read plan file: {e.strerror}") from None
    if magic not in (PLAN_MAGIC, PLAN_MAGIC_V1):
        raise PlanError(f"{path}: not an ivytrace plan file (expected magic {PLAN_MAGIC!r} or {PLAN_MAGIC_V1!r} "
                        f"at byte 0, found {magic!r})")
    view = memoryview(buf)
    # The file ends with its checksum (Plan.crc32, field 15): the CRC-32 of every byte before it.
    end = len(buf) - len(CHECKSUM_TAG) - 4
    at = len(PLAN_MAGIC)
    if magic == PLAN_MAGIC:
        if len(buf) < DATA_START:
            raise PlanError(f"{path}: byte offset {len(buf)}: truncated: a format 02 plan file starts with "
                            f"{DATA_START} bytes (magic, data section size, padding)")
        section = int.from_bytes(view[8:16], "little")
        at = DATA_START + section
        if at > end:
            raise PlanError(f"{path}: byte offset 8: truncated or damaged: a data section of {section} bytes "
                            f"does not fit in the file ({len(buf)} bytes)")
    if end < at or view[end:end + len(CHECKSUM_TAG)] != CHECKSUM_TAG:
        raise PlanError(f"{path}: byte offset {max(end, 0)}: truncated or damaged: the plan file does not end "
                        f"with its checksum (field 15, fixed32)")
    stored = int.from_bytes(view[end + len(CHECKSUM_TAG):], "little")
    actual = zlib.crc32(view[:end])
    if stored != actual:
        raise PlanError(f"{path}: byte offset {end}: damaged: the checksum of bytes 0 to {end} "
                        f"({actual:#010x}) does not match the stored one ({stored:#010x}): bytes were "
                        f"changed after the plan was written")
    plan, program = _parse(view[at:end], path, at, machine)   # a view: a slice would be a copy
    if magic == PLAN_MAGIC_V1:
        return plan, None, view[at:end], program
    data = []
    for i, c in enumerate(plan.constants):
        where = f"{path}: constant {i} (slot {c.slot})"
        if c.value.data:
            raise PlanError(f"{where}: a format 02 plan keeps constants' bytes in its data section, not in the Plan")
        if c.data_offset % DATA_ALIGN or c.data_offset + c.data_bytes > section:
            raise PlanError(f"{where}: bytes {c.data_offset} to {c.data_offset + c.data_bytes} of the data section "
                            f"({section} bytes) are out of range or not {DATA_ALIGN}-byte aligned")
        data.append(view[DATA_START + c.data_offset:DATA_START + c.data_offset + c.data_bytes])
    return plan, data, view[at:end], program


def _parse(body, path, at, machine):
    """(plan, program): the Plan in `body`. A long plan that the plan machine may run is parsed
    by the C++ protobuf library (ivytrace._replay.Program, which keeps the steps) and only the
    rest of it by Python's, which would take seconds and a copy of every step (the codegen module
    reads the steps in Python after all if the machine does not run them). Otherwise program is
    None and the plan is whole."""
    if machine is not False and codegen._replay is not None and \
            len(body) >= (0 if machine else 16 * codegen.machine_min_steps()):   # a step is > 16 bytes
        try:
            program = codegen._replay.Program(body)
        except ValueError as e:
            raise PlanError(f"{path}: byte offset {at}: the plan does not parse as ivytrace.v1.Plan ({e})") from None
        if machine or program.num_steps >= codegen.machine_min_steps():
            return plan_pb2.Plan.FromString(program.head()), program
    plan = plan_pb2.Plan()
    try:
        plan.ParseFromString(body)
    except Exception as e:  # protobuf's DecodeError; the message differs by backend
        raise PlanError(f"{path}: byte offset {at}: the plan does not parse as ivytrace.v1.Plan: {e}") from None
    return plan, None


def write_plan_file(path, plan: plan_pb2.Plan) -> None:
    """Write a plan in format 02 (magic, data section, Plan), atomically; the constants' bytes,
    given in `value.data`, move to the data section. The CLI normally does this; tests use it."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    plan = plan_pb2.Plan.FromString(plan.SerializeToString())
    plan.ClearField("crc32")
    section = bytearray()
    for c in plan.constants:
        c.data_offset, c.data_bytes = len(section), len(c.value.data)
        section += c.value.data
        section += bytes(-len(section) % DATA_ALIGN)
        c.value.ClearField("data")
    head = PLAN_MAGIC + len(section).to_bytes(8, "little")
    body = head + bytes(DATA_START - len(head)) + section + plan.SerializeToString()
    with open(tmp, "wb") as f:
        f.write(body + CHECKSUM_TAG + zlib.crc32(body).to_bytes(4, "little"))
    os.replace(tmp, path)


# Guards a jax.jit'ed replay can check while tracing: shapes, ranks and dtypes are static under
# jit, and ivytrace.sym.* values are Python ints computed from them. Anything else (bool(t),
# t.item()) needs a concrete value, so such a plan replays op by op.
_STATIC_GUARDS = ("dim", "ndim", "shape", "dtype")


def _jit_allowed(plan) -> bool:
    if any(gi.value.WhichOneof("kind") != "tensor" for gi in plan.inputs):
        return False   # non-array inputs are checked against their traced values in Python
    return all(g.op.startswith("ivytrace.sym.") or g.op.rsplit(".", 1)[-1] in _STATIC_GUARDS
               for g in plan.guards)


class CompiledPlan:
    """A loaded plan: call it like the traced function.

    target: replay in this framework ("torch", "numpy", "jax") instead of the one the plan was
    recorded in (plan.target if the CLI wrote one, else plan.framework). Each step then calls the
    target's implementation of its canonical op (TargetImpl in schemas/); inputs of any framework
    are converted to the target's arrays, outputs are the target's, constants are converted once,
    here. An op the target does not implement is refused here, all of them in one PlanError.

    jit: run a JAX replay under one jax.jit of the whole plan (the plan must allow it: array inputs
    only, guards on shapes only; PlanError otherwise). The default replays op by op, each primitive
    through its public jax.numpy function where the JAX schema names one: bit for bit what the
    program computed un-jitted. Under jit XLA fuses ops, and results can differ in the last bits
    (as jax.jit of the original program's do); `return_backend_traced_fn` is the place for it.

    machine: run the steps in ivytrace._replay, a register machine in C++, instead of compiling
    them as Python: True, False, or None (the default) for plans of codegen.MACHINE_MIN_STEPS steps
    or more, where compiling would cost seconds. Same calls, same results; `source` then shows
    the call of the machine instead of each step. Not for retargeted or JAX plans.
    """

    def __init__(self, plan: plan_pb2.Plan, path: str = "<plan>", allow: AllowList | None = None,
                 target: str | None = None, jit: bool = False, data=None, raw=None, machine=None, program=None):
        self.plan = plan
        self.path = path
        target = target or plan.target or None
        self.framework = target or plan.framework
        use_jit = bool(jit) and self.framework == "jax" and _jit_allowed(plan)
        if jit and not use_jit:
            raise PlanError(f"{path}: jit=True, but this plan cannot run under jax.jit (framework "
                            f"{self.framework!r}, or non-array inputs, or guards on values)")
        # Under jit the inputs are converted before the jitted function sees them.
        gen = generate(plan, allow or default_allowlist(), filename=path, target=target,
                       convert_inputs=not use_jit, data=data, raw=raw, machine=machine, program=program)
        self.source = gen.source
        self.namespace = gen.namespace   # what the generated code's names are bound to
        self.machine = gen.machine       # whether its steps run in ivytrace._replay
        self.num_steps = gen.num_steps   # (plan.steps is empty when they do: see plan._parse)
        self._fn = gen.function
        self.jitted = use_jit
        if use_jit:
            import jax
            jitted = jax.jit(gen.function)
            if target and target != plan.framework:
                from ivytrace.runtime.retarget import converter
                cv = converter("jax")
                self._fn = lambda *a: jitted(*map(cv, a))
            else:
                self._fn = jitted
        self.input_names = gen.input_names
        bad = next((n for n in self.input_names if not n.isidentifier() or keyword.iskeyword(n)), None)
        try:
            if bad is not None:   # inspect.Parameter("") is an IndexError, not its ValueError
                raise ValueError(f"{bad!r} is not a valid parameter name")
            self.signature = inspect.Signature(
                [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in self.input_names])
        except ValueError as e:  # names that are not identifiers or repeat: bind by position only
            self.signature = None
            self._sig_error = str(e)
        self._n = len(self.input_names)

    @property
    def name(self) -> str:
        return self.plan.name

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == self._n:
            return self._fn(*args)
        if self.signature is None:
            raise TypeError(f"ivytrace plan {self.path}: call it with {self._n} positional arguments "
                            f"(its input names cannot be used as keywords: {self._sig_error})")
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"ivytrace plan {self.path} takes ({', '.join(self.input_names)}): {e}") from None
        return self._fn(*bound.args)

    def __repr__(self):
        return f"<ivytrace plan {self.plan.name!r} from {self.path}: {self.num_steps} steps>"


def load_plan(path, allow: AllowList | None = None, target: str | None = None,
              jit: bool = False, machine: bool | None = None) -> CompiledPlan:
    """Read a plan file and compile it. Never executes anything from the file: functions and
    symbols are resolved through the schema allow-list (PlanError otherwise).

    target: the framework to replay in ("torch", "numpy", "jax"); default: the plan's own (see
    CompiledPlan). machine: see CompiledPlan."""
    path = os.fspath(path)
    plan, data, raw, program = _read_plan(path, machine=machine if target is None and not jit else False)
    return CompiledPlan(plan, path, allow, target=target, jit=jit, data=data, raw=raw, machine=machine,
                        program=program)
