"""Capture-to-ONNX for transformers models, beside torch's exporters, measured in the same run.

For each model (random weights, no hub): ivytrace.export (record one call and export it with
the CLI; no plan; also with static=True, the recorded shapes, as the torch exporters export by
default), ivytrace's longer path (freeze, i.e. trace + plan export + load_plan, then save
the trace and `ivytrace export --to onnx`), torch.onnx.export with the TorchScript exporter (dynamo=False) and the dynamo exporter
(dynamo=True, needs onnxscript), and torch.export.export (capture only, no ONNX); time (best of
--repeat) and ONNX node counts, also after onnx-simplifier (onnxsim) on each ONNX file.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_onnx_export.py [--repeat 3] [--models resnet50,gpt2,bert]
Benchmarks are not tests: nothing here asserts on time.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import onnx  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from timing import best_of  # noqa: E402

import ivytrace  # noqa: E402

BIN = os.environ.get("IVYTRACE_BIN") or str(REPO / "build" / "ivytrace")


def make(name):
    import transformers as tf
    torch.manual_seed(0)
    if name == "resnet50":      # transformers' default ResNetConfig is ResNet-50 (25.6M parameters)
        m = tf.ResNetModel(tf.ResNetConfig())
        return m.eval(), (torch.randn(1, 3, 224, 224),)
    if name == "gpt2":          # 6 layers of GPT-2 small's width
        m = tf.GPT2Model(tf.GPT2Config(n_layer=6, use_cache=False))
        return m.eval(), (torch.randint(0, 50257, (1, 64)),)
    if name == "bert":          # BERT-base width, 4 layers
        m = tf.BertModel(tf.BertConfig(num_hidden_layers=4))
        return m.eval(), (torch.randint(0, 30522, (1, 64)),)
    if name == "bert_mask":     # BERT-4 called with input_ids and attention_mask, as it is served
        m = tf.BertModel(tf.BertConfig(num_hidden_layers=4))
        ids = torch.randint(0, 30522, (2, 64))
        return m.eval(), (ids, torch.ones_like(ids))
    if name == "llama":         # 4 layers, hidden 512, grouped-query attention (~21M parameters)
        m = tf.LlamaModel(tf.LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376,
                                         num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                                         use_cache=False))
        return m.eval(), (torch.randint(0, 32000, (1, 64)),)
    if name == "t5":            # T5-small's encoder (~35M parameters)
        m = tf.T5EncoderModel(tf.T5Config())
        return m.eval(), (torch.randint(0, 32128, (1, 64)),)
    if name == "vit":           # ViT-base width, 4 layers (~31M parameters)
        m = tf.ViTModel(tf.ViTConfig(num_hidden_layers=4), add_pooling_layer=False)
        return m.eval(), (torch.randn(1, 3, 224, 224),)
    if name == "mobilenet_v2":  # the default MobileNetV2 (~2.2M parameters: under the 10M of the time target)
        m = tf.MobileNetV2Model(tf.MobileNetV2Config())
        return m.eval(), (torch.randn(1, 3, 224, 224),)
    raise ValueError(name)


class First(torch.nn.Module):
    """The model's first output as a plain tensor (what every exporter sees the same way)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *x):
        return self.m(*x)[0]


def nodes(path):
    return len(onnx.load(str(path), load_external_data=False).graph.node)


def simplified_nodes(path):
    try:
        import onnxsim
    except ImportError:
        return None
    try:
        model, ok = onnxsim.simplify(onnx.load(str(path)))
        return len(model.graph.node) if ok else None
    except Exception:
        return None


def run(name, repeat, tmp):
    model, args = make(name)
    wrapped = First(model).eval()
    params = sum(p.numel() for p in model.parameters())
    out = tmp / f"{name}_ivytrace.onnx"
    out_direct = tmp / f"{name}_ivytrace_direct.onnx"

    def ivy():
        with torch.no_grad():
            graph = ivytrace.freeze(wrapped, args=args)   # frozen weights: an inference export
        trace = graph.save(tmp / f"{name}.ivt")
        subprocess.run([BIN, "export", str(trace), "--to", "onnx", "-o", str(out), "--allow-specialized"],
                       check=True, capture_output=True)

    def ivy_direct():
        with torch.no_grad():
            ivytrace.export(wrapped, out_direct, args=args, allow_specialized=True)

    out_static = tmp / f"{name}_ivytrace_static.onnx"

    def ivy_static():   # the recorded shapes, as the torch exporters' (dynamic_shapes not given)
        with torch.no_grad():
            ivytrace.export(wrapped, out_static, args=args, allow_specialized=True, static=True)

    def torch_export(path, dynamo):
        def export():
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(wrapped, args, str(path), dynamo=dynamo, opset_version=17)
        return export

    def texport():
        with torch.no_grad():
            torch.export.export(wrapped, args)

    tools = {
        "ivytrace freeze + save + export": (ivy, out),
        "ivytrace.export": (ivy_direct, out_direct),
        "ivytrace.export(static=True)": (ivy_static, out_static),
        "torch.onnx.export (TorchScript)": (torch_export(tmp / f"{name}_ts.onnx", False), tmp / f"{name}_ts.onnx"),
        "torch.onnx.export (dynamo)": (torch_export(tmp / f"{name}_dynamo.onnx", True), tmp / f"{name}_dynamo.onnx"),
        "torch.export.export (capture only)": (texport, None),
    }
    # Rounds, each running every tool once (interleaved: a load change on the shared machine
    # hits all of them alike); a tool's figure is its best round. A tool that fails is dropped.
    times = {label: [] for label in tools}
    for _ in range(repeat):
        for label, (fn, _path) in list(tools.items()):
            t0 = time.perf_counter()
            try:
                fn()
            except Exception as e:
                print(f"  {label} failed on {name}: {type(e).__name__}: {str(e)[:120]}")
                del tools[label], times[label]
                continue
            times[label].append(time.perf_counter() - t0)
    rows = {label: (min(times[label]), path) for label, (_fn, path) in tools.items()}
    # The I/O floor: what ivytrace.export writes (the trace, then the model), written as one
    # buffer of that many bytes into a new file in the same directory, in this run.
    trace_bytes = os.path.getsize(tmp / f"{name}.ivt")
    written = trace_bytes + os.path.getsize(out_direct)
    floor = best_of(lambda: _write_bytes(tmp / "floor.bin", written), repeat)[0]
    base = rows["ivytrace.export"][0]
    print(f"\n{name}: {params / 1e6:.1f}M parameters, best of {repeat}")
    print(f"  {'tool':38s} {'best s':>8s} {'/ ivytrace.export':>18s} {'ONNX nodes':>11s} {'after onnxsim':>14s}")
    for label, (t, path) in rows.items():
        n = nodes(path) if path else "-"
        s = simplified_nodes(path) if path else "-"
        print(f"  {label:38s} {t:8.2f} {t / base:18.2f} {str(n):>11s} {str(s if s is not None else 'n/a'):>14s}")
    dynamo = rows.get("torch.onnx.export (dynamo)")
    if dynamo and "ivytrace.export(static=True)" in rows:
        # dynamo's model has the recorded shapes (no dynamic_shapes given): the like-for-like
        # count is ivytrace's static export, against onnxsim's output of dynamo's (the target).
        target = simplified_nodes(dynamo[1]) or nodes(dynamo[1])
        mine = nodes(rows["ivytrace.export(static=True)"][1])
        print(f"  static nodes: ivytrace {mine} vs dynamo+onnxsim {target}: "
              f"{'met' if mine <= target else 'NOT met'} (target: no more)")
    exporters = [t for label, (t, _) in rows.items() if label.startswith("torch.onnx.export")]
    print(f"  I/O floor: {written / 1e6:.0f} MB written (trace {trace_bytes / 1e6:.0f} MB + model) in {floor:.2f} s "
          f"({written / floor / 1e9:.2f} GB/s); ivytrace.export is {base / floor:.2f}x the floor (target <= 2x)")
    if exporters:
        print(f"  ivytrace.export / fastest torch ONNX exporter: {base / min(exporters):.2f}x (target < 1x)")


def _write_bytes(path, n):
    """Write n bytes into a new file, as an exporter writes its output (page cache, no fsync)."""
    buf = _write_bytes.buf if getattr(_write_bytes, "buf", None) is not None and len(_write_bytes.buf) == n else None
    if buf is None:
        buf = _write_bytes.buf = os.urandom(1 << 20) * (n >> 20) + os.urandom(n & ((1 << 20) - 1))
    with open(path, "wb") as f:
        f.write(buf)
    os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="resnet50,gpt2,bert,bert_mask,llama,t5,vit,mobilenet_v2")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for name in a.models.split(","):
            run(name, a.repeat, Path(d))


if __name__ == "__main__":
    main()
