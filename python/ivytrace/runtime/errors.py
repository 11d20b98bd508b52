"""Errors raised when loading or replaying a plan."""


class PlanError(ValueError):
    """A plan file is malformed or asks for something the runtime refuses (a function or symbol
    outside the allow-list, an opaque value, a slot read before it is defined...)."""


class GuardError(RuntimeError):
    """A replay would take another path than the traced run: a value the graph was specialized
    on (bool(t), t.item(), ...) differs."""
