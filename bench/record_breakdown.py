"""Where the recorded conv forward's extra time goes (issue 3): the sample CNN's forward timed
unrecorded, under a no-op TorchFunctionMode (with and without no-op global module hooks), and
recorded with parts switched off one at a time, all in one process, by this thread's CPU time
(best of 60 per row, two rounds). Not a test: nothing here asserts on time.

    PYTHONPATH=python .venv/bin/python bench/record_breakdown.py
"""
import sys, time, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "samples"))
from models import make_model, make_input
from torch.overrides import TorchFunctionMode
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
import ivytrace
torch.set_num_threads(1)
model = make_model("cnn").eval(); xb = make_input("cnn", batch=32)
class Noop(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
def best(f, k=60):
    ts=[]
    for _ in range(k):
        t=time.thread_time(); f(); ts.append(time.thread_time()-t)
    return min(ts)*1e3
fwd = ivytrace.region("forward")(model)
r = {}
import tempfile
with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
    for rep in range(2):
        r.setdefault("unrecorded", []).append(best(lambda: model(xb)))
        with Noop():
            r.setdefault("no-op mode", []).append(best(lambda: model(xb)))
            h1 = register_module_forward_pre_hook(lambda m, a: None)
            h2 = register_module_forward_hook(lambda m, a, o: None, always_call=True)
            r.setdefault("no-op mode + no-op global module hooks", []).append(best(lambda: model(xb)))
            h1.remove(); h2.remove()
        with ivytrace.Recorder(str(Path(tmp) / "bd.ivt")) as rec:
            fwd(xb)
            r.setdefault("ivytrace, region per call", []).append(best(lambda: fwd(xb)))
            rid = rec.torch.region_begin("r", [("x", xb)])
            model(xb)
            r.setdefault("ivytrace, ops only (one open region)", []).append(best(lambda: model(xb)))
            for h in rec.torch._hooks: h.remove()
            r.setdefault("ivytrace, ops only, no scope hooks", []).append(best(lambda: model(xb)))
base = min(r["unrecorded"])
for k, v in r.items(): print(f"  {k:42s} {min(v):6.2f} ms  +{(min(v)-base):5.2f} ms  x{min(v)/base:.3f}")
