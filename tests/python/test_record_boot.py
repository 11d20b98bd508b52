"""Recording whole programs in a subprocess: crash safety and the `ivytrace record` boot."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import ivytrace
from ivytrace.recorder.reader import read_trace


PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ivytrace.__file__)))


def env_for_subprocess():
    """A child python that imports the same ivytrace package as this test process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PYTHON_DIR] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def run_python(code, tmp_path, env=None, args=()):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(prog), *args], capture_output=True, text=True,
                          env=env or env_for_subprocess(), cwd=tmp_path, timeout=300)


def boot_env(trace, **extra):
    env = env_for_subprocess()
    env["PYTHONPATH"] = os.pathsep.join([ivytrace.boot_dir(), env["PYTHONPATH"]])
    env["IVYTRACE_RECORD_TO"] = str(trace)
    env.update(extra)
    return env


def test_killed_program_leaves_a_readable_prefix(tmp_path):
    trace = tmp_path / "t.ivytrace"
    proc = run_python(f"""
        import os, signal, torch, ivytrace
        rec = ivytrace.Recorder({str(trace)!r}).start()
        x = torch.ones(3)
        for _ in range(20):
            x = x + 1
        os.kill(os.getpid(), signal.SIGKILL)
    """, tmp_path)
    assert proc.returncode == -signal.SIGKILL
    t = read_trace(str(trace))
    assert t.header is not None and t.footer is None and not t.truncated
    assert t.op_names() == ["torch.ones"] + ["torch.Tensor.add"] * 20


def test_truncated_file_reads_up_to_the_last_complete_record(tmp_path):
    trace = tmp_path / "t.ivytrace"
    with ivytrace.Recorder(trace):
        import torch
        torch.ones(2) * 3
    data = trace.read_bytes()
    (tmp_path / "cut.ivytrace").write_bytes(data[:-2])
    t = read_trace(str(tmp_path / "cut.ivytrace"))
    assert t.truncated and t.footer is None and t.op_names() == ["torch.ones", "torch.Tensor.mul"]
    (tmp_path / "bad.bin").write_bytes(b"NOTATRACE")
    with pytest.raises(ValueError, match="bad.bin.*not an ivytrace trace file"):
        read_trace(str(tmp_path / "bad.bin"))


def test_boot_records_a_program_that_imports_torch_after_startup(tmp_path):
    trace = tmp_path / "t.ivytrace"
    proc = run_python("""
        import os, sys, subprocess
        assert "torch" not in sys.modules
        import torch
        x = torch.ones(3)
        y = x * 2
        # A child process must not write into the same trace.
        print("child sees", os.environ.get("IVYTRACE_RECORD_TO"))
        print("argv", sys.argv[1:])
    """, tmp_path, env=boot_env(trace), args=("a", "b"))
    assert proc.returncode == 0, proc.stderr
    assert "child sees None" in proc.stdout and "argv ['a', 'b']" in proc.stdout
    t = read_trace(str(trace))
    assert t.op_names() == ["torch.ones", "torch.Tensor.mul"]
    assert t.footer is not None and t.footer.op_events == 2 and not t.footer.error
    assert t.header.argv[-2:] == ["a", "b"] and t.header.argv[-3].endswith("prog.py")


def test_boot_records_the_uncaught_exception(tmp_path):
    trace = tmp_path / "t.ivytrace"
    proc = run_python("""
        import torch
        torch.ones(2) + 1
        raise RuntimeError("it broke")
    """, tmp_path, env=boot_env(trace))
    assert proc.returncode == 1 and "it broke" in proc.stderr
    t = read_trace(str(trace))
    assert t.footer.error == "RuntimeError: it broke" and t.footer.exit_status == 1
    assert t.op_names() == ["torch.ones", "torch.Tensor.add"]


def test_boot_records_the_exit_status_of_sys_exit(tmp_path):
    trace = tmp_path / "t.ivytrace"
    proc = run_python("""
        import sys, torch
        torch.ones(2) * 2
        sys.exit(3)
    """, tmp_path, env=boot_env(trace))
    assert proc.returncode == 3
    t = read_trace(str(trace))
    assert t.footer.exit_status == 3 and not t.footer.error


def test_boot_unknown_framework_exits_2(tmp_path):
    trace = tmp_path / "t.ivytrace"
    proc = run_python("print('ran')", tmp_path, env=boot_env(trace, IVYTRACE_FRAMEWORKS="torch,tensorflow"))
    assert proc.returncode == 2
    assert "tensorflow" in proc.stderr and "ran" not in proc.stdout


def test_boot_chains_to_the_next_sitecustomize(tmp_path):
    other = tmp_path / "other_site"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITE_RAN = True\n")
    trace = tmp_path / "t.ivytrace"
    env = boot_env(trace)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(other)])
    proc = run_python("import builtins\nprint('other', getattr(builtins, 'OTHER_SITE_RAN', False))\n",
                      tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "other True" in proc.stdout
    assert read_trace(str(trace)).footer is not None


def test_boot_without_record_env_does_nothing(tmp_path):
    env = env_for_subprocess()
    env["PYTHONPATH"] = os.pathsep.join([ivytrace.boot_dir(), env["PYTHONPATH"]])
    proc = run_python("import sys; print('recording' if 'ivytrace.recorder.recorder' in sys.modules else 'idle')",
                      tmp_path, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "idle"


def test_forked_child_does_not_write_into_the_trace(tmp_path):
    trace = tmp_path / "t.ivytrace"
    proc = run_python(f"""
        import os, torch, ivytrace
        rec = ivytrace.Recorder({str(trace)!r}).start()
        x = torch.ones(2) + 1
        pid = os.fork()
        if pid == 0:
            for _ in range(5):
                x = x * 3
            os._exit(0)
        os.waitpid(pid, 0)
        x - 1
        rec.stop()
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    t = read_trace(str(trace))
    assert t.op_names() == ["torch.ones", "torch.Tensor.add", "torch.Tensor.sub"]
    assert t.footer.op_events == 3
