"""Plan -> straight-line Python source.

    def forward(v0, v1):
        v2 = f0(v0, v1)
        del v0
        return v2

Only names this module makes up appear in the source (slot variables vN, constant tensors cN
(and sN: what a retargeted op computes from constants alone, at load), temporaries tN/rN, input
converters cvN, argument conversions xN,
functions fN, literals kN, guard checks gN, input containers aN). Every function object and every
literal value from the plan - ints, strings, dtypes, slices, dict keys, keyword names - is bound
in the exec namespace, so no string from the plan file is ever compiled. Array methods that are
Python operators (torch.Tensor.mul, numpy.ndarray.__getitem__...) are written as the operator
(`v3 = v1 * k2`), from this module's own table.
"""
from __future__ import annotations

import builtins
import linecache
import os
import re
import weakref
import itertools

from ivytrace.runtime import retarget
from ivytrace.runtime.errors import GuardError, PlanError
from ivytrace.runtime.values import array_from_proto, literal, same_value, tensor_from_proto
from ivytrace.v1 import common_pb2

try:   # the plan machine (C++); without it every plan is compiled as Python
    from ivytrace import _replay
except ImportError:
    _replay = None

_counter = itertools.count()

# Plans of at least this many steps run in ivytrace._replay: compiling them as Python would take
# ~15 us a step (IVYTRACE_PLAN_MACHINE=1 / 0 forces the machine on / off, for tests).
MACHINE_MIN_STEPS = 5000


def machine_min_steps() -> int:
    forced = os.environ.get("IVYTRACE_PLAN_MACHINE")
    if forced == "1":
        return 0
    if forced == "0":
        return 1 << 62
    return MACHINE_MIN_STEPS

# How a guard re-evaluates the value Python saw, by the last component of Guard.op.
_GUARD_EVAL = {
    "__bool__": bool, "__nonzero__": bool, "item": lambda t: t.item(), "tolist": lambda t: t.tolist(),
    "__int__": int, "__float__": float, "__index__": lambda t: t.__index__(), "__complex__": complex,
    "numpy": lambda t: t.tolist(), "__array__": lambda t: t.tolist(),
    # An input's rank or shape (torch.Tensor.dim, numpy.ndarray.ndim, jax.Array.shape): any
    # framework's array has .shape.
    "dim": lambda t: len(t.shape), "ndim": lambda t: len(t.shape), "shape": lambda t: tuple(t.shape),
    # A dtype the graph is specialized on (a dtype read, or a cast that returned its input: the
    # graph builder's GuardCastReturningInput), by name, the same in torch, NumPy and JAX.
    "dtype": lambda t: str(t.dtype).rsplit(".", 1)[-1],
}


def _guard_check(evaluate, observed, op, where, expr=""):
    why = ("a JAX graph is specialized on its inputs' dtypes, as jax.jit is" if op == "jax.Array.dtype"
           else "the program read a dtype there, or a cast returned its input unchanged, as it does only for that "
                "dtype" if op.endswith(".dtype")
           else "control flow or a Python number taken from a tensor")

    what = f" The value checked is `{expr}`." if expr else ""

    def fail(new):
        raise GuardError(
            f"ivytrace: guard failed at {where}: when traced, {op} gave {observed!r}; on these "
            f"inputs it gives {new!r}.{what} The graph was specialized on that value ({why}); trace "
            f"again with inputs that take this path.")

    # Every replay runs these for every input (a rank and a dtype each, also for a model's live
    # weights): the common kinds skip same_value's general comparison.
    if evaluate is _GUARD_EVAL["dtype"]:
        passed = set()   # dtype objects seen to match: a set lookup, not a name built per call

        def check(t):
            d = t.dtype
            if d not in passed:
                new = evaluate(t)
                if not same_value(new, observed):
                    fail(new)
                passed.add(d)
        return check
    if evaluate in (_GUARD_EVAL["dim"], _GUARD_EVAL["ndim"]) and type(observed) is int:
        def check(t):
            if t.ndim != observed:   # torch, NumPy and JAX arrays all have .ndim
                fail(t.ndim)
        return check

    def check(t):
        new = evaluate(t)
        if not same_value(new, observed):
            fail(new)
    return check


def _count_check(n, step):
    where = f"{step.loc.file}:{step.loc.line}" if step.loc.file else "an unknown line"

    def check(result):
        if len(result) != n:
            raise GuardError(
                f"ivytrace: guard failed at {where}: when traced, {step.function} returned {n} values; on "
                f"these inputs it returns {len(result)}. The graph was specialized on that count; trace "
                f"again with inputs that take this path.")
    return check


def _input_check(observed, name, path):
    def check(value):
        if not same_value(value, observed):
            raise GuardError(
                f"ivytrace: input {name!r}{path} was {observed!r} when traced and is {value!r} now; the "
                f"graph is specialized on non-tensor inputs, trace again with this value")
    return check


def _has_slot(arg) -> bool:
    kind = arg.WhichOneof("kind")
    if kind == "tensor":
        return True
    if kind in ("list", "tuple"):
        return any(_has_slot(a) for a in getattr(arg, kind).items)
    if kind == "dict":
        return any(_has_slot(a) for a in arg.dict.values)
    if kind == "slice":
        return any(arg.slice.HasField(f) and _has_slot(getattr(arg.slice, f)) for f in ("start", "stop", "step"))
    return False


class _Gen:
    def __init__(self, plan, allow, filename, target=None, convert_inputs=True, data=None, raw=None,
                 machine=None, program=None):
        self.plan = plan
        self.data = data   # format 02: the constants' bytes, by index (plan.read_plan)
        self.raw = raw     # the Plan's serialized bytes, if the caller has them (the machine parses them)
        self.machine = machine   # run the steps in ivytrace._replay: True, False, None (by size)
        # A Program (ivytrace._replay) that parsed the plan's bytes, when the caller read only the
        # rest of the plan in Python (plan.py _parse: plan.steps is then empty).
        self.program = program
        self.headless = program is not None
        self.num_steps = None
        self.machine_used = False
        self.allow = allow
        self.filename = filename
        # Retargeting: steps of other frameworks call `target`'s implementation of their canonical
        # op (retarget.py); None replays every step with the function it names.
        self.to = target if target and target != plan.framework else None
        self.convert_inputs = convert_inputs
        self.unsupported: dict = {}   # op -> [count, reason, sites]
        self.temps: list = []
        # Only __import__: C functions that import lazily on first use (numpy's ndarray.mean imports
        # numpy._core._methods) look it up in the calling frame's builtins. The generated code never
        # names it (it uses only names this module makes up).
        self.ns: dict = {"__builtins__": {"__import__": builtins.__import__}}
        self.lines: list[str] = []
        self.names: dict[int, str] = {}     # slot -> variable holding it
        self.defined: list[int] = []        # slots define() made since the caller last cleared it
        self.constants: set[int] = set()
        self.outputs: set[int] = set()
        self._lit: dict = {}
        self._fn: dict = {}
        self._n = itertools.count()
        self.guards_by_slot: dict[int, list] = {}
        self.freed: set[int] = set()
        # JAX primitive params need their own decoding (numpy dtypes, dimension-number records).
        if self.to:
            self.literal = retarget.literal_for(self.to)
        elif plan.framework == "jax":
            from ivytrace.runtime import jax_values
            self.literal = jax_values.literal
        else:
            self.literal = literal

    # -- names bound in the namespace ----------------------------------------------------------
    def bind(self, prefix, value) -> str:
        name = f"{prefix}{next(self._n)}"
        self.ns[name] = value
        return name

    def lit(self, value) -> str:
        try:
            key = (type(value), value)
            hash(key)
        except TypeError:
            return self.bind("k", value)
        name = self._lit.get(key)
        if name is None:
            name = self._lit[key] = self.bind("k", value)
        return name

    def fn(self, name, where) -> str:
        var = self._fn.get(name)
        if var is None:
            var = self._fn[name] = self.bind("f", self.allow.function(name, where))
        return var

    # -- expressions over slots -----------------------------------------------------------------
    def slot(self, ref, where) -> str:
        s = ref.value
        var = self.names.get(s)
        if var is None:
            raise PlanError(f"{where}: reads slot {s}, which no input, constant or earlier step defines")
        if s in self.freed:
            raise PlanError(f"{where}: reads slot {s} after a step that listed it in free_after")
        return var

    def expr(self, arg, where) -> str:
        kind = arg.WhichOneof("kind")
        if kind == "tensor":
            return self.slot(arg.tensor, where)
        if kind == "list":
            return "[" + ", ".join(self.expr(a, where) for a in arg.list.items) + "]"
        if not _has_slot(arg):
            if kind == "dict" and self.literal is literal:   # a fresh dict per call: callees may mutate it
                d = arg.dict
                if len(d.keys) != len(d.values):
                    raise PlanError(f"{where}: dict argument has {len(d.keys)} keys but {len(d.values)} values")
                return "{" + ", ".join(f"{self.lit(k)}: {self.expr(v, where)}" for k, v in zip(d.keys, d.values)) + "}"
            return self.lit(self.literal(arg, self.allow, where))
        if kind == "tuple":
            items = [self.expr(a, where) for a in arg.tuple.items]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if kind == "dict":
            d = arg.dict
            if len(d.keys) != len(d.values):
                raise PlanError(f"{where}: dict argument has {len(d.keys)} keys but {len(d.values)} values")
            return "{" + ", ".join(f"{self.lit(k)}: {self.expr(v, where)}" for k, v in zip(d.keys, d.values)) + "}"
        if kind == "slice":
            s = arg.slice
            parts = [self.expr(getattr(s, f), where) if s.HasField(f) else self.lit(None)
                     for f in ("start", "stop", "step")]
            return f"{self.lit(slice)}({', '.join(parts)})"
        raise PlanError(f"{where}: unexpected argument kind {kind!r}")

    # -- definitions ------------------------------------------------------------------------------
    def define(self, slot, where, var=None) -> str:
        if slot in self.names:
            raise PlanError(f"{where}: slot {slot} is defined twice")
        if self.plan.num_slots and slot >= self.plan.num_slots:
            raise PlanError(f"{where}: slot {slot} is out of range (num_slots = {self.plan.num_slots})")
        var = self.names[slot] = var or f"v{slot}"
        self.defined.append(slot)
        return var

    def target(self, arg, where):
        """Assignment target for a result tree, or None if it holds no slot / needs paths."""
        kind = arg.WhichOneof("kind")
        if kind == "tensor":
            return self.define(arg.tensor.value, where)
        if kind in ("list", "tuple"):
            items = getattr(arg, kind).items
            if not any(_has_slot(a) for a in items):
                return None
            parts = []
            for a in items:
                t = self.target(a, where) if _has_slot(a) else None
                parts.append(t if t is not None else "_")
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return None

    def paths(self, arg, base, where, out):
        """(variable, access expression) for each slot in a tree, for trees unpacking can't reach."""
        kind = arg.WhichOneof("kind")
        if kind == "tensor":
            out.append((self.define(arg.tensor.value, where), base))
        elif kind in ("list", "tuple"):
            for i, a in enumerate(getattr(arg, kind).items):
                self.paths(a, f"{base}[{i}]", where, out)
        elif kind == "dict":
            for k, a in zip(arg.dict.keys, arg.dict.values):
                self.paths(a, f"{base}[{self.lit(k)}]", where, out)
        elif _has_slot(arg):
            raise PlanError(f"{where}: a {kind} cannot hold tensors in a result")

    def emit_guards(self, slot, indent="    "):
        for check in self.guards_by_slot.pop(slot, ()):
            self.lines.append(f"{indent}{check}({self.names[slot]})")

    # -- the function ---------------------------------------------------------------------------
    def run(self) -> str:
        plan = self.plan
        where_plan = self.filename
        # A mixed program's plan names every framework it calls into: "torch,numpy".
        for fw in plan.framework.split(",") if plan.framework else ():
            if fw not in self.allow.frameworks:
                raise PlanError(f"{where_plan}: plan targets framework {fw!r}; this runtime "
                                f"replays {', '.join(sorted(self.allow.frameworks))}")
        default_fw = plan.framework if plan.framework in ("numpy", "jax") else "torch"
        if self.to:
            if self.to not in self.allow.targets:
                raise PlanError(f"{where_plan}: cannot retarget to {self.to!r}: the schemas describe "
                                f"{', '.join(sorted(self.allow.targets))}")
            make_target = retarget.constant_maker(self.to)
            self.cv = self.bind("cv", retarget.converter(self.to))
        for i, c in enumerate(plan.constants):
            where = f"{where_plan}: constant for slot {c.slot}"
            raw = self.data[i] if self.data is not None else None
            if c.slot in self.names:
                raise PlanError(f"{where}: slot {c.slot} is defined twice")
            if self.plan.num_slots and c.slot >= self.plan.num_slots:
                raise PlanError(f"{where}: slot {c.slot} is out of range (num_slots = {self.plan.num_slots})")
            var = self.names[c.slot] = f"c{c.slot}"
            fw = c.value.framework or default_fw
            if self.to:   # converted once, here
                self.ns[var] = make_target(c.value, where, data=raw)
                self.constants.add(c.slot)
                continue
            if fw == "jax":
                from ivytrace.runtime.jax_values import array_from_tensor_proto as make
            elif fw in ("torch", "numpy"):
                make = array_from_proto if fw == "numpy" else tensor_from_proto
            else:
                raise PlanError(f"{where}: constant of framework {fw!r}; this runtime makes torch, numpy and jax values")
            self.ns[var] = make(c.value, where, data=raw)
            self.constants.add(c.slot)

        # Guards are checked right after their tensor is defined.
        for i, g in enumerate(plan.guards):
            where = f"{where_plan}: guard {i} ({g.op or '?'})"
            evaluate = _GUARD_EVAL.get(g.op.rsplit(".", 1)[-1])
            if evaluate is None:
                raise PlanError(f"{where}: guard op {g.op!r} is not one the runtime can check")
            if g.op.endswith(".dtype") and g.observed.WhichOneof("kind") == "dtype":
                observed = common_pb2.DType.Name(g.observed.dtype).lower()
            else:
                observed = self.literal(g.observed, self.allow, where)
            loc = f"{g.loc.file}:{g.loc.line}" if g.loc.file else "<unknown location>"
            check = self.bind("g", _guard_check(evaluate, observed, g.op, loc, g.expr))
            self.guards_by_slot.setdefault(g.tensor.value, []).append(check)

        params = []
        body = self.lines
        for i, gi in enumerate(plan.inputs):
            where = f"{where_plan}: input {i} ({gi.name})"
            kind = gi.value.WhichOneof("kind")
            if kind == "tensor":
                params.append(self.define(gi.value.tensor.value, where))
                if self.to and self.convert_inputs:
                    body.append(f"    {params[-1]} = {self.cv}({params[-1]})")
                continue
            pname = f"a{i}"
            params.append(pname)
            self._bind_input(gi.value, pname, gi.name, "", where)
        for slot in list(self.names):
            if slot not in self.constants:
                self.emit_guards(slot)
        for slot in self.constants:
            self.emit_guards(slot)

        if plan.HasField("outputs"):
            self._collect_outputs(plan.outputs)

        if not self._machine_steps(params):
            if self.headless:   # parsed without its steps for the machine, which does not run them
                plan.ParseFromString(self.raw)
            self._emit_steps()
        return self._finish(params)

    def _machine_steps(self, params) -> bool:
        """Hand the steps to ivytrace._replay (see _replay.cc) instead of writing them as Python:
        for plans of MACHINE_MIN_STEPS steps or more (or as `machine` says), replayed in the
        framework they were recorded in, when the extension is built. Returns whether it did."""
        plan = self.plan
        if self.machine is False:
            return False
        why = ("ivytrace._replay is not built here" if _replay is None else
               f"the plan is replayed in another framework ({self.to})" if self.to else
               "the plan calls JAX primitives" if "jax" in plan.framework.split(",") else None)
        if why:
            if self.machine:
                raise PlanError(f"{self.filename}: machine=True, but {why}")
            return False
        prog = self.program
        if prog is None:
            if self.machine is None and len(plan.steps) < machine_min_steps():
                return False
            try:
                prog = _replay.Program(self.raw if self.raw is not None else plan.SerializeToString())
            except ValueError:
                raise PlanError(f"{self.filename}: the plan does not parse as ivytrace.v1.Plan") from None
        self.program = None   # built once; a fallback below reads the steps in Python
        defined = [s for s in self.names if s not in self.constants]   # inputs, in the order passed
        prog.build(self.filename, plan.num_slots, defined, {s: self.ns[self.names[s]] for s in self.constants},
                   sorted(self.outputs), {s: [self.ns[g] for g in checks] for s, checks in self.guards_by_slot.items()},
                   PlanError, GuardError)
        functions = prog.functions
        if any(name.startswith("jax.") for name, _ in functions):
            # JAX primitives replay through their jax.numpy functions (public_jax_call): codegen's.
            if self.machine:
                raise PlanError(f"{self.filename}: machine=True, but the plan calls JAX primitives")
            return False
        fns, kinds = [], []
        for name, first in functions:
            f = self.allow.function(name, f"{self.filename}: step {first} ({name})")
            method = getattr(f, "method_name", None)
            kinds.append(_MACHINE_OPERATORS.get(name) or ((3, method) if method else 0))
            fns.append(f)
        lits = []
        for raw, first, function in prog.literals:
            where = f"{self.filename}: step {first} ({function})"
            lits.append(self.literal(common_pb2.Arg.FromString(raw), self.allow, where))
        machine = self.bind("m", prog.link(fns, kinds, lits))
        self.machine_used = True
        self.guards_by_slot.clear()   # the machine checks them
        self.num_steps = prog.num_steps
        outs = prog.defined_outputs
        for s in outs:
            self.names[s] = f"v{s}"
        call = f"{machine}({', '.join(self.names[s] for s in defined)})"
        self.lines.append(f"    # steps 0 to {prog.num_steps - 1}: run by ivytrace._replay "
                          f"(load_plan(..., machine=False) writes them as Python)")
        if outs:
            self.lines.append(f"    ({', '.join(self.names[s] for s in outs)},) = {call}")
        else:
            self.lines.append(f"    {call}")
        return True

    def _emit_steps(self):
        plan, body, where_plan = self.plan, self.lines, self.filename
        for i, step in enumerate(plan.steps):
            where = f"{where_plan}: step {i} ({step.function})"
            retargeted = self.to and retarget.framework_of(step.function) not in (self.to, "ivytrace")
            # A JAX primitive with a public jax.numpy function (impls with source "jax" in the JAX
            # schema): called through it, not through Primitive.bind.
            public = None
            if not retargeted and self.to is None and step.function.startswith("jax.") and not step.written:
                self.temps = []
                public = self.public_jax_call(i, step, where)
            if public is not None:
                call = public
                retargeted = True
            elif retargeted:
                self.temps = []
                call = self.retarget_call(i, step, where)
                if call is None:   # refused (listed at the end); its results stay defined for the rest
                    call = "None"
                if step.written:
                    body.append(f"    r{i} = {call}")
                    call = f"r{i}"
            else:
                f = self.fn(step.function, where)
                args = [self.expr(a, where) for a in step.args]
                op = _OPERATORS.get(step.function)
                if op and not step.kwargs and len(args) == len(op) - 1 and step.args[0].WhichOneof("kind") == "tensor":
                    # x * y rather than torch.Tensor.mul(x, y), as eager code wrote it: calling the
                    # unbound method descriptor costs 0.7 us more per call. The operator comes
                    # from this module's table, keyed by the (allow-listed) function name.
                    call = op[0].format(*args)
                else:
                    if step.kwargs and not any(_has_slot(k.value) for k in step.kwargs) and \
                            all(k.value.WhichOneof("kind") not in ("dict", "list") for k in step.kwargs):
                        # Keywords of literal values: one dict, built here, not a new one per call
                        # (the callee gets its own **kwargs copy; lists and dicts, which it could
                        # change, are still made per call).
                        kw = {k.name: self.ns[self.expr(k.value, where)] for k in step.kwargs}
                        args.append("**" + self.bind("k", kw))
                    elif step.kwargs:
                        kw = ", ".join(f"{self.lit(k.name)}: {self.expr(k.value, where)}" for k in step.kwargs)
                        args.append("**{" + kw + "}")
                    method = getattr(self.ns[f], "method_name", None)
                    if method and step.args and step.args[0].WhichOneof("kind") == "tensor":
                        # x.sum(...) as eager code wrote it: the method of the object it is
                        # called on (a NumPy scalar has its own), at eager's cost. The name is
                        # NumPy's own descriptor's (allowlist._numpy_method), not the plan's.
                        call = f"{args[0]}.{method}({', '.join(args[1:])})"
                    else:
                        call = f"{f}({', '.join(args)})"
            # The slots this step defines, for their guards. (Diffing a copy of every name so far,
            # as before, made loading quadratic: 82 s for a plan of 100k steps.)
            self.defined.clear()
            if step.HasField("result") and _has_slot(step.result):
                if _needs_paths(step.result):
                    tmp = f"r{i}"
                    body.append(f"    {tmp} = {call}")
                    out = []
                    self.paths(step.result, tmp, where, out)
                    body.extend(f"    {var} = {expr}" for var, expr in out)
                    body.append(f"    del {tmp}")
                elif step.result.WhichOneof("kind") == "tensor" and not step.written and \
                        (reuse := self._freeable(step)) is not None:
                    # x = f(x): the result takes the variable of an argument this step reads last,
                    # which drops the old value as eager code does, without a `del` line.
                    self.freed.add(reuse)
                    target = self.define(step.result.tensor.value, where, var=self.names[reuse])
                    body.append(f"    {target} = {call}")
                else:
                    target = self.target(step.result, where)
                    kind = step.result.WhichOneof("kind")
                    n = len(getattr(step.result, kind).items) if kind in ("list", "tuple") else 0
                    if n > 1:
                        target = target[1:-1]   # v5, v6 = f2(...)
                    if kind in ("list", "tuple"):
                        # How many values a split or unbind returns can follow the input's shape
                        # or an int input: a different count is another path, not a ValueError.
                        check = self.bind("g", _count_check(n, step))
                        body.append(f"    r{i} = {call}")
                        body.append(f"    {check}(r{i})")
                        body.append(f"    {target} = r{i}")
                        body.append(f"    del r{i}")
                    else:
                        body.append(f"    {target} = {call}")
            else:
                body.append(f"    {call}")
            for w in step.written:   # a tensor written in place and not returned: the argument object
                src = f"r{i}" if retargeted else self.slot(common_pb2.TensorRef(value=w.arg), where)
                body.append(f"    {self.define(w.slot, where)} = {src}")
            if retargeted and (step.written or self.temps):
                body.append(f"    del {', '.join(([f'r{i}'] if step.written else []) + self.temps)}")
            for slot in self.defined:
                self.emit_guards(slot)
            free = []
            for s in dict.fromkeys(step.free_after):
                if s in self.names and s not in self.constants and s not in self.outputs and s not in self.freed:
                    self.freed.add(s)
                    free.append(self.names[s])
            if free:
                body.append(f"    del {', '.join(free)}")

    def _finish(self, params) -> str:
        plan, body, where_plan = self.plan, self.lines, self.filename
        if self.unsupported:
            raise PlanError(self.unsupported_message())
        if self.guards_by_slot:
            slots = sorted(self.guards_by_slot)
            raise PlanError(f"{where_plan}: guard on slot {slots[0]}, which the plan never defines")
        ret = self.expr(self.plan.outputs, f"{where_plan}: outputs") if plan.HasField("outputs") else "None"
        body.append(f"    return {ret}")
        if len(body) > CHUNK_LINES:
            return _chunked(params, body)
        return "def forward(" + ", ".join(params) + "):\n" + "\n".join(body) + "\n"

    def _freeable(self, step):
        """The first slot this step frees that holds an ordinary value (not a constant, an output
        or a slot already freed), or None."""
        for s in step.free_after:
            if s in self.names and s not in self.constants and s not in self.outputs and s not in self.freed:
                return s
        return None

    # -- retargeting ----------------------------------------------------------------------------
    def _refuse(self, step, reason):
        e = self.unsupported.setdefault(step.function, [0, reason, []])
        e[0] += 1
        if step.loc.file:
            site = f"{step.loc.file}:{step.loc.line}"
            if site not in e[2]:
                e[2].append(site)

    def unsupported_message(self) -> str:
        total = sum(e[0] for e in self.unsupported.values())
        lines = [f"{self.filename}: cannot replay in {self.to}: {total} call{'s' if total != 1 else ''} of "
                 f"{len(self.unsupported)} op{'s' if len(self.unsupported) != 1 else ''} have no "
                 f"{self.to} implementation (TargetImpl in the {self.to} schema):"]
        for op, (count, reason, sites) in sorted(self.unsupported.items()):
            line = f"  {op}  x{count}  ({reason})"
            if sites:
                line += "  at " + ", ".join(sites[:5]) + (", ..." if len(sites) > 5 else "")
            lines.append(line)
        return "\n".join(lines)

    def retarget_call(self, i, step, where):
        """The expression calling the target's implementation of this step's op (with temporaries
        appended to the body first), or None after recording why there is none."""
        if step.function not in self.allow.functions:
            raise PlanError(f"{where}: function {step.function!r} is not in the allow-list "
                            f"(the op names in {', '.join(self.allow.sources)}); refusing to load the plan")
        op = self.allow.ops.get(step.function)
        if op is None or not op.canonical:
            self._refuse(step, "no canonical op in its schema")
            return None
        impls = self.allow.impls.get(self.to, {}).get(op.canonical)
        if not impls:
            self._refuse(step, f"canonical op {op.canonical!r} has no {self.to} implementation")
            return None
        try:
            bound = retarget.bind_step(step, op, _list_arg, where)
            impl = retarget.choose_impl(impls, retarget.framework_of(step.function), bound, op, _has_slot)
            if impl is None:
                raise retarget.Unsupported(f"no {self.to} implementation of {op.canonical!r} takes these arguments")
            if step.written:
                if len(step.written) > 1 or not op.writes or op.writes > len(op.param) or \
                        step.written[0].arg != _slot_of(bound.get(op.param[op.writes - 1].name)):
                    raise retarget.Unsupported("writes in place through a view")
            return self._impl_calls(i, impl, bound, where)
        except retarget.Unsupported as e:
            self._refuse(step, str(e))
            return None

    def public_jax_call(self, i, step, where):
        op = self.allow.ops.get(step.function)
        impls = self.allow.impls.get("jax", {}).get(op.canonical) if op is not None and op.canonical else None
        if not impls:
            return None
        try:
            bound = retarget.bind_step(step, op, _list_arg, where)
            impl = retarget.choose_impl([m for m in impls if "jax" in m.source], "jax", bound, op, _has_slot)
            return None if impl is None else self._impl_calls(i, impl, bound, where)
        except retarget.Unsupported:
            return None

    def _impl_calls(self, i, impl, bound, where):
        uses = [0] * len(impl.call)
        for call in impl.call:
            for a in call.arg:
                if a.result:
                    if not 0 < a.result <= len(uses):
                        raise PlanError(f"{where}: schema impl of {list(impl.canonical)} refers to call {a.result}")
                    uses[a.result - 1] += 1
        results: list = []
        static: list = []
        temps = []
        expr = None
        for ci, call in enumerate(impl.call):
            f = self.fn(call.function, where)
            pos, kws = [], []
            is_static = True
            for a in call.arg:
                e, st = self._impl_arg(a, bound, results, static, where)
                is_static = is_static and st
                if a.keyword == "-":   # checked by its conversion, not passed
                    continue
                if e is None:
                    if not a.keyword:
                        raise retarget.Unsupported(f"{call.function} needs {'/'.join(a.param) or 'a value'}")
                    continue
                if a.keyword:
                    kws.append(f"{a.keyword}={e}")
                elif kws:
                    raise PlanError(f"{where}: schema impl of {list(impl.canonical)}: positional after keyword")
                else:
                    pos.append(e)
            expr = f"{f}({', '.join(pos + kws)})"
            if is_static and ci < len(impl.call) - 1:
                # Reads only constants (a linear layer's transposed weight): computed once, here.
                try:
                    value = eval(expr, self.ns)   # noqa: S307 - names this module bound, see the module doc
                except Exception as e:  # noqa: BLE001
                    raise PlanError(f"{where}: computing {call.function} on the plan's constants failed: "
                                    f"{type(e).__name__}: {e}") from None
                expr = self.bind("s", value)
                static.append(True)
                results.append(expr)
                continue
            static.append(False)
            if ci < len(impl.call) - 1 and uses[ci] > 1:
                t = f"t{i}_{ci}"
                self.lines.append(f"    {t} = {expr}")
                temps.append(t)
                expr = t
            results.append(expr)
        self.temps = temps   # deleted after the step's result is assigned
        return expr

    def _static(self, arg) -> bool:
        """Whether an Arg reads no slot but constants."""
        return all(s in self.constants for s in _slots_in(arg))

    def _impl_arg(self, a, bound, results, static, where):
        """(expression, whether it reads only constants and literals)."""
        if a.result:
            return results[a.result - 1], static[a.result - 1]
        star = False
        if a.HasField("value"):
            arg = a.value
        else:
            arg = None
            for p in a.param:
                star = p.startswith("*")
                name, _, item = p.lstrip("*").partition("[")
                if name in bound:
                    arg = bound[name]
                    if item:   # "cases[1]": an item of a list parameter
                        items = arg.list.items if arg.WhichOneof("kind") == "list" else arg.tuple.items
                        k = int(item.rstrip("]"))
                        if k >= len(items):
                            raise retarget.Unsupported(f"{name} has {len(items)} items, the impl reads item {k}")
                        arg = items[k]
                    break
            if arg is None and a.HasField("default"):
                arg = a.default
        if a.convert:
            fn = retarget.CONVERSIONS.get(a.convert)
            if fn is None:
                raise PlanError(f"{where}: the schemas name conversion {a.convert!r}, which this runtime lacks")
            inputs = [arg] + [bound.get(n) for n in getattr(a, "with")]
            if not any(x is not None and _has_slot(x) for x in inputs):
                vals = [None if x is None else self.literal(x, self.allow, where) for x in inputs]
                return self.lit(fn(*vals)), True
            exprs = [self.lit(None) if x is None else self.expr(x, where) for x in inputs]
            return f"{self.bind('x', fn)}({', '.join(exprs)})", all(x is None or self._static(x) for x in inputs)
        if arg is None:
            return None, True
        return ("*" if star else "") + self.expr(arg, where), self._static(arg)

    def _bind_input(self, arg, base, name, path, where):
        kind = arg.WhichOneof("kind")
        if kind == "tensor":
            if self.to:
                base = f"{self.cv}({base})"
            self.lines.append(f"    {self.define(arg.tensor.value, where)} = {base}")
        elif kind in ("list", "tuple"):
            for j, a in enumerate(getattr(arg, kind).items):
                self._bind_input(a, f"{base}[{j}]", name, f"{path}[{j}]", where)
        elif kind == "dict":
            for k, a in zip(arg.dict.keys, arg.dict.values):
                self._bind_input(a, f"{base}[{self.lit(k)}]", name, f"{path}[{k!r}]", where)
        elif kind == "opaque":
            return  # not replayable, not checked: the traced graph did not depend on it by value
        else:
            observed = literal(arg, self.allow, where)
            check = self.bind("g", _input_check(observed, name, path))
            self.lines.append(f"    {check}({base})")

    def _collect_outputs(self, arg):
        kind = arg.WhichOneof("kind")
        if kind == "tensor":
            self.outputs.add(arg.tensor.value)
        elif kind in ("list", "tuple"):
            for a in getattr(arg, kind).items:
                self._collect_outputs(a)
        elif kind == "dict":
            for a in arg.dict.values:
                self._collect_outputs(a)


def _list_arg(items):
    return common_pb2.Arg(list=common_pb2.ArgList(items=items))


# CPython compiles one function in time that grows faster than its length (a 1M-step forward took
# most of load_plan's 19 s): a plan longer than this runs as a chain of functions of this many lines.
CHUNK_LINES = 4000
# The names a body line can read or write: slot variables, input containers, temporaries. Every
# other name in the generated code is a global of its namespace, and it has no string literals.
# Array methods that are Python operators: written as the operator (format string, then one entry
# per argument the step must have), with no keywords.
_OPERATORS = {}
for _names, _fmt in (
        (("mul", "__mul__"), "{0} * {1}"), (("add", "__add__"), "{0} + {1}"), (("sub", "__sub__"), "{0} - {1}"),
        (("div", "__truediv__"), "{0} / {1}"), (("matmul", "__matmul__"), "{0} @ {1}"),
        (("pow", "__pow__"), "{0} ** {1}"), (("__floordiv__",), "{0} // {1}"), (("__mod__",), "{0} % {1}"),
        (("__eq__",), "{0} == {1}"), (("__ne__",), "{0} != {1}"), (("__lt__",), "{0} < {1}"),
        (("__le__",), "{0} <= {1}"), (("__gt__",), "{0} > {1}"), (("__ge__",), "{0} >= {1}"),
        (("__and__",), "{0} & {1}"), (("__or__",), "{0} | {1}"), (("__xor__",), "{0} ^ {1}"),
        (("neg", "__neg__"), "-{0}"), (("__invert__",), "~{0}"), (("__getitem__",), "{0}[{1}]")):
    for _n in _names:
        _OPERATORS[f"torch.Tensor.{_n}"] = (_fmt,) + (None,) * _fmt.count("{")
        if _n.startswith("__"):
            _OPERATORS[f"numpy.ndarray.{_n}"] = _OPERATORS[f"torch.Tensor.{_n}"]
# The same operators for ivytrace._replay: (1, binary op) or (2, unary op), numbered as in _replay.cc.
_MACHINE_CODES = {"{0} * {1}": 0, "{0} + {1}": 1, "{0} - {1}": 2, "{0} / {1}": 3, "{0} @ {1}": 4,
                  "{0} ** {1}": 5, "{0} // {1}": 6, "{0} % {1}": 7, "{0} == {1}": 8, "{0} != {1}": 9,
                  "{0} < {1}": 10, "{0} <= {1}": 11, "{0} > {1}": 12, "{0} >= {1}": 13, "{0} & {1}": 14,
                  "{0} | {1}": 15, "{0} ^ {1}": 16, "{0}[{1}]": 17, "-{0}": 100, "~{0}": 101}
_MACHINE_OPERATORS = {name: (1 if op[0].count("{") == 2 else 2, _MACHINE_CODES[op[0]])
                      for name, op in _OPERATORS.items()}
_LOCAL = re.compile(r"\b(?:v\d+|a\d+|r\d+t?|t\d+_\d+)\b")


def _chunked(params, body):
    """The body as functions _c0, _c1, ... of CHUNK_LINES lines each, called in turn by forward:
    each takes the locals it reads that earlier lines made, and returns those later lines read.
    forward drops a value after the last chunk that reads it, as the single function did."""
    ret = body[-1]
    lines = body[:-1]
    chunks = [lines[i:i + CHUNK_LINES] for i in range(0, len(lines), CHUNK_LINES)]
    reads, writes = [], []
    for j, chunk in enumerate(chunks):
        r, w = [], set()
        kept_lines = []
        for line in chunk:
            stmt = line.strip()
            if stmt.startswith("del "):
                # A value whose last reader ended the previous chunk is forward's to drop.
                names = [n for n in _LOCAL.findall(stmt) if n in w or n in r]
                for n in names:
                    w.discard(n)
                if names:
                    kept_lines.append(f"    del {', '.join(names)}")
                continue
            kept_lines.append(line)
            lhs, eq, rhs = stmt.partition(" = ")
            if not eq or "(" in lhs.replace("(v", "v").replace("(_", "_"):   # a call statement: reads only
                lhs, rhs = "", stmt
            for n in _LOCAL.findall(rhs):
                if n not in w and n not in r:
                    r.append(n)
            w.update(_LOCAL.findall(lhs))
        chunks[j] = kept_lines
        reads.append(r)
        writes.append(w)
    ret_reads = _LOCAL.findall(ret)
    last_read = {}
    for j, r in enumerate(reads):
        for n in r:
            last_read[n] = j
    for n in ret_reads:
        last_read[n] = len(chunks)
    out = []
    fwd = ["def forward(" + ", ".join(params) + "):"]
    for j, chunk in enumerate(chunks):
        outs = sorted(n for n in writes[j] if last_read.get(n, -1) > j)   # read by a later chunk
        ins = reads[j]
        out.append(f"def _c{j}({', '.join(ins)}):")
        out.extend(chunk)
        tup = ", ".join(outs) + ("," if len(outs) == 1 else "")
        out.append(f"    return ({tup})")
        out.append("")
        fwd.append(f"    ({tup}) = _c{j}({', '.join(ins)})" if outs else f"    _c{j}({', '.join(ins)})")
        dead = sorted(n for n in set(ins) | set(outs) if last_read.get(n, -1) <= j)
        if dead:
            fwd.append(f"    del {', '.join(dead)}")
    fwd.append(ret)
    return "\n".join(out + fwd) + "\n"


def _slots_in(arg):
    kind = arg.WhichOneof("kind")
    if kind == "tensor":
        yield arg.tensor.value
    elif kind in ("list", "tuple"):
        for a in getattr(arg, kind).items:
            yield from _slots_in(a)
    elif kind == "dict":
        for a in arg.dict.values:
            yield from _slots_in(a)
    elif kind == "slice":
        for f in ("start", "stop", "step"):
            if arg.slice.HasField(f):
                yield from _slots_in(getattr(arg.slice, f))


def _slot_of(arg):
    return arg.tensor.value if arg is not None and arg.WhichOneof("kind") == "tensor" else None


def _needs_paths(arg) -> bool:
    kind = arg.WhichOneof("kind")
    if kind == "dict":
        return _has_slot(arg)
    if kind in ("list", "tuple"):
        return any(_needs_paths(a) for a in getattr(arg, kind).items)
    return False


class Generated:
    """The generated function, its source and its namespace."""

    def __init__(self, source, namespace, function, input_names, filename, machine=False, num_steps=0):
        self.machine = machine   # whether the steps run in ivytrace._replay
        self.num_steps = num_steps
        self.source = source
        self.namespace = namespace
        self.function = function
        self.input_names = input_names
        self.filename = filename


def generate(plan, allow, filename: str = "<plan>", target=None, convert_inputs=True, data=None, raw=None,
             machine=None, program=None) -> Generated:
    g = _Gen(plan, allow, filename, target, convert_inputs, data, raw, machine, program)
    source = g.run()
    plan_no = next(_counter)
    # A chunked plan's functions are compiled one by one: compiling them as one module would hold
    # the syntax tree of the whole plan at once.
    pieces = source.split("\n\n") if source.startswith("def _c") else [source]
    names = []
    for k, piece in enumerate(pieces):
        code_name = f"<ivytrace plan {plan_no}>" if len(pieces) == 1 else f"<ivytrace plan {plan_no} part {k}>"
        piece = piece if piece.endswith("\n") else piece + "\n"
        try:
            code = compile(piece, code_name, "exec")
        except SyntaxError as e:  # a bug in this module, not in the plan
            raise PlanError(f"{filename}: internal error generating code: {e}\n{piece}") from None
        # Tracebacks through the generated function show its lines, for as long as the function
        # lives: the linecache entry goes with it (one entry per load_plan, kept forever, grew
        # without bound in a process that loads many plans).
        linecache.cache[code_name] = (len(piece), None, piece.splitlines(True), code_name)
        names.append(code_name)
        exec(code, g.ns)
        del code
    fn = g.ns["forward"]
    for code_name in names:
        weakref.finalize(fn, linecache.cache.pop, code_name, None)
    return Generated(source, g.ns, fn, [gi.name for gi in plan.inputs], filename, g.machine_used,
                     len(plan.steps) if g.num_steps is None else g.num_steps)
