"""`python -m ivytrace ARGS` and the `ivytrace` console script: run the ivytrace CLI binary.

The binary is $IVYTRACE_BIN when set, else the one bundled in the package (ivytrace/bin/ivytrace,
in a wheel), else an `ivytrace` executable on PATH that is a binary (not this script), else the
build of the source checkout the package lives in (ivytrace.cli_bin.find_cli). Commands that run Python themselves (`check`, `record`) use this
interpreter unless $IVYTRACE_PYTHON says otherwise.
"""
from __future__ import annotations

import os
import sys


def main(argv=None) -> int:
    from ivytrace.cli_bin import CLIError, find_cli
    try:
        binary = find_cli()
    except CLIError as e:
        print(e, file=sys.stderr)
        return 127
    args = sys.argv[1:] if argv is None else list(argv)
    env = dict(os.environ)
    env.setdefault("IVYTRACE_PYTHON", sys.executable)
    os.execve(binary, [binary, *args], env)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
