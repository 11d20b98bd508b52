"""HTML viewer benchmark: a recorded trace of N ops (default 100,000) from a model nested by module
(N/1000 stages of 100 blocks of 10 ops), drawn with `ivytrace viz -o g.html` and opened in
headless Chromium, beside Graphviz (`viz -o g.svg`) on the same graph. Prints figures measured in
this run; nothing asserts on time.

  - viz -> .html: CLI wall time and file size (bytes per node)
  - Chromium: time to first render (navigation start to the first frame after the first layout),
    time to expand a stage (100 blocks) and then a block, as the page measures them (layout +
    drawing) and as seen from the driver (click to return)
  - Graphviz: `viz -o g.svg --max-nodes N` wall time, killed after --graphviz-timeout s; and the
    default budget's refusal
  - --screenshot PATH saves the page with one stage open, a block found by search, coloured by
    time (the README's picture, bench/viewer.png)
  - --flat N: also a flat loop of N ops with no modules (bench_foundation.record_many_ops), which
    the viewer splits into chunks of 200: viz time, file size, first render, expand, search+jump

    .venv/bin/python bench/bench_viewer.py [--ops 100000] [--graphviz-timeout 300] [--screenshot docs/viewer.png]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = os.environ.get("IVYTRACE_BIN") or str(REPO / "build" / "ivytrace")

PROGRAM = textwrap.dedent("""
    import sys, torch, torch.nn as nn, ivytrace

    class Block(nn.Module):          # 10 recorded ops (linear, relu, linear, mul, sigmoid, add, layer_norm, tanh, sub, mul)
        def __init__(self, d):
            super().__init__()
            self.fc1 = nn.Linear(d, d)
            self.fc2 = nn.Linear(d, d)
            self.norm = nn.LayerNorm(d)
        def forward(self, x):
            h = torch.relu(self.fc1(x))
            h = self.fc2(h) * 0.5
            h = torch.sigmoid(h) + x
            return (self.norm(h).tanh() - 0.1) * 2.0

    class Stage(nn.Module):
        def __init__(self, d, blocks):
            super().__init__()
            self.blocks = nn.Sequential(*[Block(d) for _ in range(blocks)])
        def forward(self, x):
            return self.blocks(x)

    stages = int(sys.argv[1])
    torch.manual_seed(0)
    model = nn.Sequential(*[Stage(8, 100) for _ in range(stages)]).eval()
    x = torch.randn(2, 8)
    with torch.no_grad(), ivytrace.region("forward", inputs={"x": x}) as r:
        r.set_result(model(x))
""")


def run(*args, timeout=None):
    t0 = time.perf_counter()
    proc = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return proc, time.perf_counter() - t0


def browser():
    from selenium import webdriver
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"]:
        opts.add_argument(a)
    return webdriver.Chrome(service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")), options=opts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--graphviz-timeout", type=float, default=300)
    ap.add_argument("--screenshot", help="save a PNG of the page with a stage and a block open")
    ap.add_argument("--workdir", help="keep files here (default: a temporary directory)")
    ap.add_argument("--flat", type=int, default=0, help="also a flat loop of this many ops (e.g. 1000000)")
    ap.add_argument("--skip-model", action="store_true", help="only the --flat measurement")
    a = ap.parse_args()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    work = Path(a.workdir or tempfile.mkdtemp(prefix="ivy_bench_viewer_"))
    work.mkdir(parents=True, exist_ok=True)
    if a.flat:
        flat(a.flat, work)
    if a.skip_model:
        return
    prog, trace = work / "prog.py", work / "trace.ivt"
    prog.write_text(PROGRAM)
    stages = max(1, a.ops // 1000)
    t0 = time.perf_counter()
    subprocess.run([BIN, "record", "-o", trace, "--", sys.executable, prog, str(stages)], check=True,
                   env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    print(f"recorded {stages} stages x 100 blocks x 10 ops in {time.perf_counter() - t0:.1f} s")

    html = work / "g.html"
    proc, wall = run("viz", trace, "-o", html, "--max-nodes", 10 * a.ops)
    assert proc.returncode == 0, proc.stderr
    d = browser()
    try:
        d.get(html.as_uri())
        WebDriverWait(d, 300).until(lambda x: x.execute_script("return document.body.dataset.ready === '1'"))
        nodes = d.execute_script("return ivy.nodeCount")
        t = d.execute_script("return ivy.timing")
        size = html.stat().st_size
        print(f"viz -> .html: {wall:.2f} s, {size / 1e6:.1f} MB, {size / nodes:.0f} bytes/node ({nodes} nodes)")
        print(f"chromium: first render {t['firstRender'] / 1e3:.2f} s after navigation start "
              f"(JSON.parse {t['parse'] / 1e3:.2f} s, first layout {t['lastLayout']:.0f} ms), "
              f"{d.execute_script('return ivy.drawnNodes()')} nodes drawn")
        for path in ["1", "1.blocks", "1.blocks.50"]:
            el = d.find_element(By.CSS_SELECTOR, f'.group[data-path="{path}"]')
            if "expanded" in el.get_attribute("class"):
                continue
            t0 = time.perf_counter()
            el.click()
            seen = time.perf_counter() - t0
            page = d.execute_script("return ivy.timing.lastExpand")
            print(f"chromium: expand {path}: {page:.0f} ms in the page, {seen * 1e3:.0f} ms click to return, "
                  f"{d.execute_script('return ivy.drawnNodes()')} nodes drawn")
        if a.screenshot:
            d.find_element(By.ID, "search").send_keys("module:/^1\\.blocks\\.50\\.fc2$/\n")
            d.find_element(By.CSS_SELECTOR, '#overlay option[value="time"]').click()
            time.sleep(0.5)
            d.save_screenshot(a.screenshot)
            print(f"screenshot: {a.screenshot}")
    finally:
        d.quit()

    proc, wall = run("viz", trace, "-o", work / "g.svg")
    print(f"graphviz, default budget: exit {proc.returncode} in {wall:.2f} s: {proc.stderr.strip()}")
    try:
        proc, wall = run("viz", trace, "-o", work / "g.svg", "--max-nodes", 10 * a.ops, timeout=a.graphviz_timeout)
        print(f"graphviz on the same graph (.svg): exit {proc.returncode} in {wall:.1f} s")
    except subprocess.TimeoutExpired:
        print(f"graphviz on the same graph (.svg): not done after {a.graphviz_timeout:.0f} s (killed)")


def flat(n, work):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    trace, html = work / "flat.ivt", work / "flat.html"
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'bench')!r}); "
            f"from bench_foundation import record_many_ops; record_many_ops({n}, {str(trace)!r})")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    proc, wall = run("viz", trace, "-o", html)
    print(f"flat {n} ops: viz -> .html exit {proc.returncode} in {wall:.1f} s {proc.stderr.strip()[:200]}")
    if proc.returncode != 0:
        return
    d = browser()
    try:
        d.set_page_load_timeout(600)
        d.get(html.as_uri())
        WebDriverWait(d, 600).until(lambda x: x.execute_script("return document.body.dataset.ready === '1'"))
        t = d.execute_script("return ivy.timing")
        print(f"flat {n} ops: {html.stat().st_size / 1e6:.1f} MB ({html.stat().st_size / (n + 2):.0f} bytes/node), "
              f"first render {t['firstRender'] / 1e3:.2f} s (JSON.parse {t['parse'] / 1e3:.2f} s)")
        d.find_elements(By.CSS_SELECTOR, ".group.collapsed")[0].click()
        print(f"flat {n} ops: expand a chunk: {d.execute_script('return ivy.timing.lastExpand'):.0f} ms in the page")
        t0 = time.perf_counter()
        d.find_element(By.ID, "search").send_keys(f"%{n - 1}\n")
        WebDriverWait(d, 60).until(lambda x: x.execute_script("return ivy.selected()") is not None)
        print(f"flat {n} ops: search + jump to the last node: {time.perf_counter() - t0:.2f} s")
    finally:
        d.quit()


if __name__ == "__main__":
    main()
