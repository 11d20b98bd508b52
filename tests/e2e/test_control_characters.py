"""Names from a trace are data: control characters in them never reach the terminal raw from
`inspect`, and `inspect --json` stays valid JSON holding the name exactly."""
import json
import sys

NAME = "evil\x1b[2J\x07\x0c\x00\u009bname"
PROGRAM = f"""
import torch, ivytrace
x = torch.ones(2)
with ivytrace.region({NAME!r}, inputs={{"x": x}}) as r:
    r.set_result(x * 2)
"""


def test_inspect_escapes_control_characters(cli, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    trace = tmp_path / "t.ivt"
    cli("record", "-o", trace, "--", sys.executable, prog, check=True)
    for args in (["inspect", trace], ["inspect", "--graph", trace]):
        proc = cli(*args)
        assert proc.returncode == 0, proc.stderr
        for c in ("\x1b", "\x07", "\x0c", "\x00", "\u009b"):
            assert c not in proc.stdout, (args, repr(c))
        if args[1] == "inspect":
            assert "evil\\x1b[2J\\x07\\x0c\\x00\\u009bname" in proc.stdout, proc.stdout
    proc = cli("inspect", "--json", trace)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\u009b" not in proc.stdout
    assert [r["name"] for r in json.loads(proc.stdout)["regions"]] == [NAME]
    # Errors quote it escaped too.
    proc = cli("optimize", trace, "--region", "nope", "-o", tmp_path / "g.ivg")
    assert proc.returncode == 3 and "\x1b" not in proc.stderr and "evil\\x1b" in proc.stderr, proc.stderr
