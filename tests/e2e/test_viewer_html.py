"""The HTML viewer (`ivytrace viz FILE -o OUT.html`), opened in headless Chromium and used as a
person would: click a module open, search and jump, open a node's details, turn on the time
overlay, follow a link to a node, compare two graphs. Each test saves a screenshot in its tmp dir.

What the page shows is checked against the CLI's own text (`ivytrace inspect --graph`), which names
nodes the same way (`%12`)."""
import html as html_text
import os
import re
import shutil
import sys
import textwrap

import pytest

selenium = pytest.importorskip("selenium", reason="pip install selenium (python/requirements.txt)")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from conftest import SAMPLES  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.fail("headless Chromium is needed: apt-get install chromium chromium-driver (scripts/setup.sh)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,900", "--allow-file-access-from-files"]:
        opts.add_argument(a)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def open_page(driver, path, fragment=""):
    driver.get(path.resolve().as_uri() + fragment)
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] if hasattr(driver, "get_log") else []
    assert not errors, errors


def shot(driver, tmp_path, name):
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000


def record(cli, tmp_path_factory, name, argv, env=None):
    d = tmp_path_factory.mktemp(name)
    trace, graph = d / f"{name}.ivt", d / f"{name}.ivg"
    run_env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ""), **(env or {}))
    cli("record", "-o", trace, "--", sys.executable, *argv, check=True, env=run_env)
    cli("optimize", trace, "-o", graph, check=True)
    return {"dir": d, "trace": trace, "graph": graph}


@pytest.fixture(scope="module")
def cnn(cli, tmp_path_factory):
    return record(cli, tmp_path_factory, "cnn", [str(SAMPLES / "run_model.py"), "cnn"])


@pytest.fixture(scope="module")
def gpt(cli, tmp_path_factory):
    return record(cli, tmp_path_factory, "gpt", [str(SAMPLES / "run_model.py"), "gpt"])


GPT2_PROGRAM = textwrap.dedent("""
    import torch, ivytrace
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=97, n_positions=16)
    model = GPT2LMHeadModel(config).eval()   # random weights: nothing is downloaded
    ids = torch.randint(0, 97, (1, 8))
    with torch.no_grad(), ivytrace.region("forward", inputs={"ids": ids}) as r:
        r.set_result(model(ids, use_cache=False).logits)
""")


@pytest.fixture(scope="module")
def gpt2(cli, tmp_path_factory):
    pytest.importorskip("transformers", reason="pip install transformers (python/requirements.txt)")
    d = tmp_path_factory.mktemp("gpt2_src")
    prog = d / "gpt2_prog.py"
    prog.write_text(GPT2_PROGRAM)
    return record(cli, tmp_path_factory, "gpt2", [str(prog)], env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})


def graph_lines(cli, path):
    """`inspect --graph` op lines: {'%12': line}."""
    out = cli("inspect", path, "--graph", check=True).stdout
    lines = {}
    for line in out.splitlines():
        m = re.match(r"\s+(%\d+)(?:, %\d+)*: ", line)
        if m and " = constant" not in line:
            lines[m.group(1)] = line
    return lines


def viz(cli, src, out, *more):
    cli("viz", src, *more, "-o", out, check=True)
    return out


def group(driver, path):
    return driver.find_element(By.CSS_SELECTOR, f'.group[data-path="{path}"]')


def paths(driver):
    return {e.get_attribute("data-path") for e in driver.find_elements(By.CSS_SELECTOR, ".group")}


def test_cnn_opens_collapsed_and_expands_a_module_in_place(browser, cli, cnn, tmp_path):
    html = viz(cli, cnn["trace"], tmp_path / "cnn.html")
    open_page(browser, html)
    top = paths(browser)
    assert {"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "avgpool", "fc"} <= top
    assert all("." not in p for p in top)  # only top-level modules
    assert browser.find_elements(By.CSS_SELECTOR, ".group.collapsed")
    inputs = browser.find_elements(By.CSS_SELECTOR, ".node.input")
    outputs = browser.find_elements(By.CSS_SELECTOR, ".node.output")
    assert len(inputs) == 1 and len(outputs) == 1
    # Region input at the top, output at the bottom.
    assert inputs[0].rect["y"] < min(e.rect["y"] for e in browser.find_elements(By.CSS_SELECTOR, ".group"))
    assert outputs[0].rect["y"] > max(e.rect["y"] for e in browser.find_elements(By.CSS_SELECTOR, ".group"))
    drawn = browser.execute_script("return ivy.drawnNodes()")
    group(browser, "layer1").click()
    assert "expanded" in group(browser, "layer1").get_attribute("class")
    assert {"layer1.0", "layer1.1"} <= paths(browser)
    group(browser, "layer1.0").click()
    # Each call of the block's reused nn.ReLU is its own group.
    assert {"layer1.0.conv1", "layer1.0.bn1", "layer1.0.relu", "layer1.0.relu #2", "layer1.0.conv2"} <= paths(browser)
    group(browser, "layer1.0.conv1").click()
    assert browser.execute_script("return ivy.drawnNodes()") > drawn
    # Data flows down: the block's conv1 sits above its conv2.
    assert group(browser, "layer1.0.conv1").rect["y"] < group(browser, "layer1.0.conv2").rect["y"]
    shot(browser, tmp_path, "cnn_expanded")


def test_search_jumps_to_each_match_and_links_to_it(browser, cli, cnn, tmp_path):
    html = viz(cli, cnn["trace"], tmp_path / "cnn.html")
    lines = graph_lines(cli, cnn["trace"])
    convs = [name for name, line in lines.items() if "conv2d(" in line]
    assert len(convs) > 3
    open_page(browser, html)
    box = browser.find_element(By.ID, "search")
    box.send_keys("conv2d", Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "count").text == f"1/{len(convs)}")
    first = browser.execute_script("return ivy.selected()")
    assert first == convs[0]
    assert browser.current_url.endswith("#node=" + first.replace("%", "%25"))
    node = browser.find_element(By.CSS_SELECTOR, f'.node[data-name="{first}"]')  # its module opened
    assert "selected" in node.get_attribute("class") and "current" in node.get_attribute("class")
    box.send_keys(Keys.ENTER)
    assert browser.find_element(By.ID, "count").text == f"2/{len(convs)}"
    assert browser.execute_script("return ivy.selected()") == convs[1]
    box.send_keys(Keys.SHIFT, Keys.ENTER)
    assert browser.execute_script("return ivy.selected()") == convs[0]
    # Regex and field search.
    box.clear()
    box.send_keys("module:/^layer2\\.1/", Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda d: d.execute_script("return ivy.matches()") > 0)
    in_block = [n for n, line in lines.items() if line.rstrip().endswith("[layer2.1]") or "[layer2.1." in line]
    assert browser.execute_script("return ivy.matches()") == len(in_block)
    shot(browser, tmp_path, "search")
    # The link opens the page at that node.
    open_page(browser, html, "#node=" + convs[2].replace("%", "%25"))
    assert browser.execute_script("return ivy.selected()") == convs[2]
    assert browser.find_elements(By.CSS_SELECTOR, f'.node.selected[data-name="{convs[2]}"]')


def test_details_panel_shows_what_inspect_prints(browser, cli, cnn, tmp_path):
    html = viz(cli, cnn["trace"], tmp_path / "cnn.html")
    lines = graph_lines(cli, cnn["trace"])
    open_page(browser, html)
    group(browser, "fc").click()
    fc = [e for e in browser.find_elements(By.CSS_SELECTOR, ".node[data-name]")
          if e.get_attribute("data-name") in lines and "[fc]" in lines[e.get_attribute("data-name")]]
    assert len(fc) == 1
    fc[0].click()
    name = fc[0].get_attribute("data-name")
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
            for r in browser.find_elements(By.CSS_SELECTOR, "#details-table tr")}
    line = lines[name]
    assert rows["op"] in line and rows["module"] == "fc"
    assert rows["output"].replace(" ", "") in line.replace(" ", "")  # float32[4, 10]
    file_line = re.search(r"# (\S+:\d+)", line).group(1)
    assert rows["source"] == file_line
    assert rows["duration"].endswith("µs") or rows["duration"].endswith("ms")
    assert "fc.weight: float32[10, 16]" in rows["constants"] and "fc.bias: float32[10]" in rows["constants"]
    shot(browser, tmp_path, "details")
    # The constants toggle draws them as boxes; their values are never in the file.
    browser.find_element(By.ID, "show-consts").click()
    consts = {e.get_attribute("data-constant") for e in browser.find_elements(By.CSS_SELECTOR, ".node.const")}
    assert {"fc.weight", "fc.bias"} <= consts
    nodes = browser.execute_script("return ivy.nodeCount")
    assert html.stat().st_size <= 300 * nodes + 200_000  # + the viewer's own code


def test_time_overlay_and_time_table(browser, cli, cnn, tmp_path):
    html = viz(cli, cnn["trace"], tmp_path / "cnn.html")
    open_page(browser, html)
    browser.find_element(By.ID, "expand-level").click()
    fills_before = {e.value_of_css_property("fill") for e in browser.find_elements(By.CSS_SELECTOR, ".node rect")}
    browser.find_element(By.CSS_SELECTOR, '#overlay option[value="time"]').click()
    fills = {e.value_of_css_property("fill") for e in browser.find_elements(By.CSS_SELECTOR, ".node rect, .group.collapsed > rect")}
    assert len(fills) >= 4 and fills != fills_before  # coloured by each node's recorded duration
    assert "time" in browser.find_element(By.ID, "legend").text
    shot(browser, tmp_path, "time_overlay")
    # Keyboard: t cycles the overlays (op kind, then framework), f fits, / focuses the search box.
    body = browser.find_element(By.TAG_NAME, "body")
    browser.execute_script("document.activeElement.blur()")
    body.send_keys("t")
    assert browser.find_element(By.ID, "overlay").get_attribute("value") == "kind"
    assert "conv2d" in browser.find_element(By.ID, "legend").text
    body.send_keys("t")
    assert {"torch", "region"} <= set(browser.find_element(By.ID, "legend").text.split())
    body.send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "search"
    browser.find_element(By.ID, "table-btn").click()
    table = browser.find_element(By.ID, "time-table")
    ops = [r.find_elements(By.TAG_NAME, "td")[0].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert "torch.nn.functional.conv2d" in ops or any("conv2d" in o for o in ops)

    def totals():
        return [r.find_elements(By.TAG_NAME, "td")[1].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]

    table.find_element(By.CSS_SELECTOR, 'th[data-col="1"]').click()  # by call count, descending
    counts = [int(c) for c in totals()]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    table.find_element(By.CSS_SELECTOR, 'th[data-col="1"]').click()  # ascending
    assert [int(c) for c in totals()] == sorted(counts)
    browser.find_element(By.CSS_SELECTOR, '#table-panel .tab[data-tab="module"]').click()
    modules = [r.find_elements(By.TAG_NAME, "td")[0].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert "layer1.0.relu #2" in modules
    shot(browser, tmp_path, "time_table")


def test_diff_of_trace_and_optimized_graph_highlights_changes(browser, cli, cnn, tmp_path):
    html = tmp_path / "diff.html"
    cli("viz", cnn["trace"], cnn["graph"], "-o", html, check=True)
    before, after = graph_lines(cli, cnn["trace"]), graph_lines(cli, cnn["graph"])
    batch_norms = sum("batch_norm(" in line for line in before.values())
    assert batch_norms > 3 and not any("batch_norm(" in line for line in after.values())
    open_page(browser, html)
    summary = browser.find_element(By.ID, "diff-counts").text
    removed = int(re.search(r"(\d+) removed", summary).group(1))
    assert removed >= batch_norms  # fold-conv-bn folded every batch norm into its conv
    # The modules that hold differences open on load.
    assert "expanded" in group(browser, "layer1").get_attribute("class")
    removed_nodes = browser.find_elements(By.CSS_SELECTOR, ".node.diff-removed")
    changed_nodes = browser.find_elements(By.CSS_SELECTOR, ".node.diff-changed")
    assert removed_nodes and changed_nodes
    assert sum("batch_norm" in e.find_element(By.TAG_NAME, "title").get_attribute("textContent") for e in removed_nodes) >= 1
    # A changed conv now reads the folded weights.
    changed_nodes[0].click()
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
            for r in browser.find_elements(By.CSS_SELECTOR, "#details-table tr")}
    assert rows["diff"] == "changed" and "before" in rows
    browser.find_element(By.ID, "collapse-all").click()  # closed modules that hold a difference are outlined
    outlined = {e.get_attribute("data-path") for e in browser.find_elements(By.CSS_SELECTOR, ".group.has-diff")}
    assert {"layer1", "layer2", "bn1"} <= outlined and "fc" not in outlined
    shot(browser, tmp_path, "diff")


@pytest.mark.parametrize("model, modules", [
    ("gpt", None),
    ("gpt2", ["transformer", "transformer.h", "transformer.h.0", "transformer.h.0.attn"]),
])
def test_transformers_render_nested_by_module(browser, cli, request, tmp_path, model, modules):
    rec = request.getfixturevalue(model)
    html = viz(cli, rec["graph"], tmp_path / f"{model}.html")
    open_page(browser, html)
    lines = graph_lines(cli, rec["graph"])
    scopes = {m.group(1) for line in lines.values() for m in [re.search(r"\[([^\]]+)\]\s*$", line)] if m}
    assert scopes
    if modules is None:  # the GPT block's own submodules
        modules = sorted({s.split(".")[0] for s in scopes})
    for path in modules:
        browser.find_element(By.ID, "fit").click()   # as a person would: fit, so the module is on screen
        g = group(browser, path)
        if "collapsed" in g.get_attribute("class"):
            g.click()
        assert "expanded" in group(browser, path).get_attribute("class")
    deepest = max(scopes, key=lambda s: s.count("."))
    browser.find_element(By.ID, "search").send_keys("module:" + deepest, Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda d: d.execute_script("return ivy.selected()") is not None)
    assert len(browser.execute_script("return ivy.expanded()")) >= deepest.count(".") + 1
    shot(browser, tmp_path, f"{model}_nested")


EVIL_PROGRAM = textwrap.dedent("""
    import torch, torch.nn as nn, ivytrace
    m = nn.Sequential()
    m.add_module("evil\\x00\\x01</script><b>x", nn.Linear(4, 4))
    x = torch.ones(2, 4)
    with torch.no_grad(), ivytrace.region("fwd", inputs={"x": x}) as r:
        r.set_result(torch.relu(m(x)))
""")


def test_names_with_control_characters_and_markup_are_inert(browser, cli, tmp_path):
    prog = tmp_path / "evil.py"
    prog.write_text(EVIL_PROGRAM)
    trace = tmp_path / "evil.ivt"
    cli("record", "-o", trace, "--", sys.executable, prog, check=True)
    for ext in ["dot", "svg", "html"]:
        out = viz(cli, trace, tmp_path / f"evil.{ext}")
        data = out.read_bytes()
        assert b"\x00" not in data and b"\x01" not in data
    assert "evil\\\\x00\\\\x01</script><b>x" in (tmp_path / "evil.dot").read_text()
    assert "evil\\x00\\x01&lt;/script&gt;&lt;b&gt;x" in (tmp_path / "evil.svg").read_text()
    open_page(browser, tmp_path / "evil.html")
    groups = browser.find_elements(By.CSS_SELECTOR, ".group")
    assert [g.get_attribute("data-path") for g in groups] == ["evil\x00\x01</script><b>x"]
    assert groups[0].text.startswith("▾ evil\\x00\\x01</script><b>x")  # shown, control characters visible
    assert not browser.find_elements(By.CSS_SELECTOR, "#canvas b")  # no markup was made
    shot(browser, tmp_path, "evil")


def test_budgets_refuse_with_a_message_and_write_nothing(cli, cnn, tmp_path):
    for ext, flag in [("svg", []), ("dot", []), ("html", [])]:
        out = tmp_path / f"g.{ext}"
        proc = cli("viz", cnn["trace"], "-o", out, "--max-nodes", "10", *flag)
        assert proc.returncode == 2, proc.stderr
        assert "nodes to draw" in proc.stderr and "limited to 10" in proc.stderr and "--max-nodes" in proc.stderr
        assert not out.exists()
    proc = cli("viz", cnn["trace"], cnn["graph"], "-o", tmp_path / "d.svg")
    assert proc.returncode == 2 and "only as .html" in proc.stderr


def test_dot_and_svg_are_nested_top_down_with_real_titles(cli, cnn, tmp_path):
    dot = viz(cli, cnn["trace"], tmp_path / "g.dot").read_text()
    svg = viz(cli, cnn["trace"], tmp_path / "g.svg").read_text()
    assert "rankdir=TB" in dot and "layer1.weight" not in dot
    # layer1 > 0 > conv1: clusters nest, and the reused ReLU is two clusters.
    labels = re.findall(r'label="([^"]*)"; tooltip="([^"]*)"', dot)
    tips = {t for _, t in labels}
    assert {"layer1", "layer1.0", "layer1.0.conv1", "layer1.0.relu", "layer1.0.relu #2"} <= tips
    assert dot.index('tooltip="layer1"') < dot.index('tooltip="layer1.0"') < dot.index('tooltip="layer1.0.conv1"')
    names = graph_lines(cli, cnn["trace"])
    titles = {html_text.unescape(t) for t in re.findall(r"<title>(&#37;\d+)</title>", svg)}
    header = cli("inspect", cnn["trace"], "--graph", check=True).stdout.splitlines()[0]  # graph forward(%0 x: ...)
    inputs = set(re.findall(r"%\d+", header))
    assert inputs and titles == set(names) | inputs  # SVG titles are the names inspect --graph prints
    assert "conv1.weight" not in dot
    shown = viz(cli, cnn["trace"], tmp_path / "c.dot", "--show-constants").read_text()
    assert "conv1.weight" in shown
