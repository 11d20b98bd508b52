"""Loaded by Python at startup when `ivytrace record` runs a program (this directory is put first
on PYTHONPATH). With IVYTRACE_RECORD_TO set, it starts a recorder writing there, then hands over to
any other sitecustomize further down sys.path. Without it, it only hands over.
"""
import os
import sys

_BOOT_DIR = os.path.dirname(os.path.abspath(__file__))


def _strip_boot_from_pythonpath():
    """Child processes get the environment the program would have had without ivytrace."""
    pp = os.environ.get("PYTHONPATH")
    if pp is None:
        return
    parts = [p for p in pp.split(os.pathsep) if p and os.path.abspath(p) != _BOOT_DIR]
    if parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        del os.environ["PYTHONPATH"]


def _start_recording(path):
    frameworks = [f.strip() for f in os.environ.pop("IVYTRACE_FRAMEWORKS", "torch,numpy,jax").split(",") if f.strip()]
    try:
        import ivytrace  # noqa: F401
    except ImportError:
        # Running under an interpreter that does not have the package installed: use the copy
        # this boot directory belongs to (<root>/ivytrace/_boot).
        sys.path.append(os.path.dirname(os.path.dirname(_BOOT_DIR)))
    from ivytrace.recorder.recorder import KNOWN_FRAMEWORKS, Recorder, limits_from_environ

    unknown = [f for f in frameworks if f not in KNOWN_FRAMEWORKS]
    if unknown or not frameworks:
        sys.stderr.write(f"ivytrace record: error: unknown framework(s) {', '.join(unknown) or '(none given)'} in "
                         f"IVYTRACE_FRAMEWORKS (this recorder supports: {', '.join(KNOWN_FRAMEWORKS)})\n")
        sys.stderr.flush()
        os._exit(2)

    argv = _program_argv()
    try:
        rec = Recorder(path, frameworks=frameworks, argv=argv, **limits_from_environ())
        rec.start()
    except Exception as e:
        sys.stderr.write(f"ivytrace record: error: cannot start the recorder: {e}\n")
        sys.stderr.flush()
        os._exit(2)

    import atexit

    state = {"error": "", "status": None}
    previous_hook = sys.excepthook
    previous_exit = sys.exit

    def excepthook(exc_type, exc, tb):
        state["error"] = f"{exc_type.__name__}: {exc}"
        state["status"] = 1
        previous_hook(exc_type, exc, tb)

    def exit(status=None):
        # The footer's exit status, when the program ends through sys.exit().
        state["status"] = 0 if status is None else status if isinstance(status, int) else 1
        previous_exit(status)

    sys.excepthook = excepthook
    sys.exit = exit

    def finish():
        rec.stop(error=state["error"], exit_status=state["status"])

    # Registered first, so it runs last: atexit handlers of the program are still recorded.
    atexit.register(finish)


def _program_argv():
    """The command line (sys.argv is not set yet while site runs)."""
    argv = getattr(sys, "orig_argv", None)
    if argv:
        return list(argv)
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _chain_next_sitecustomize():
    """Run the sitecustomize this one shadows, if any (e.g. the distribution's)."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if p and os.path.abspath(p) != _BOOT_DIR]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_path = os.environ.pop("IVYTRACE_RECORD_TO", None)
_strip_boot_from_pythonpath()
if _path:
    _start_recording(_path)
_chain_next_sitecustomize()
