"""Finding and running the `ivytrace` CLI (the C++ binary that builds graphs and exports them)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

_BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ivytrace")
_REPO_BUILD = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "ivytrace"))


class CLIError(RuntimeError):
    """The CLI failed; carries its exit status and stderr."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "", command=None):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.command = command


def _is_binary(path: str) -> bool:
    """An executable ELF file (the `ivytrace` console script on PATH is not the CLI itself)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF" and os.access(path, os.X_OK)
    except OSError:
        return False


def find_cli() -> str:
    """$IVYTRACE_BIN, else the binary bundled in the package (a wheel), else `ivytrace` on PATH
    when it is the binary, else <repo>/build/ivytrace of a source checkout."""
    env = os.environ.get("IVYTRACE_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise CLIError(f"ivytrace: IVYTRACE_BIN={env} is not an executable file")
        return env
    if _is_binary(_BUNDLED):
        return _BUNDLED
    on_path = shutil.which("ivytrace")
    if on_path and _is_binary(on_path):
        return on_path
    if os.path.isfile(_REPO_BUILD) and os.access(_REPO_BUILD, os.X_OK):
        return _REPO_BUILD
    raise CLIError("ivytrace: cannot find the ivytrace CLI: set IVYTRACE_BIN to the binary, put "
                   f"`ivytrace` on PATH, or build it (cmake) so that {_REPO_BUILD} exists")


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [find_cli(), *map(str, args)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and proc.returncode != 0:
        err = proc.stderr.strip() or proc.stdout.strip()
        raise CLIError(f"ivytrace CLI failed (exit status {proc.returncode}): {' '.join(cmd)}\n{err}",
                       proc.returncode, proc.stderr, cmd)
    return proc


@functools.lru_cache(maxsize=None)
def _help_text(binary: str, subcommand: str) -> str:
    proc = subprocess.run([binary, subcommand, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.stdout


def supports_flag(subcommand: str, flag: str) -> bool:
    """Whether `ivytrace SUBCOMMAND --help` lists `flag` (for options newer CLIs add)."""
    text = _help_text(find_cli(), subcommand)
    return any(tok.strip(",[]") == flag or tok.startswith(flag + ",") or tok.endswith("," + flag)
               for tok in text.split())
