"""Checks an ONNX export and plans against the output torch produced when the trace was recorded.

    python scripts/check_exports.py IO.pt MODEL.onnx MODEL.plan [EXACT.plan]

IO.pt holds {"input": tensor, "output": tensor} (samples/run_model.py --save-io writes it).
MODEL.onnx and MODEL.plan come from the default pipeline, whose conv + batch-norm folding changes
the arithmetic: they must match within rtol 1e-4, atol 1e-5. EXACT.plan, from a pipeline without
fold-conv-bn, replays the recorded calls themselves and must match bit for bit.
"""
import sys

import numpy as np
import onnxruntime as ort
import torch

import ivytrace


def main(io_path, onnx_path, plan_path, exact_plan_path=None):
    io = torch.load(io_path)
    x, expected = io["input"], io["output"]
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    onnx_err = float(np.max(np.abs(got - expected.numpy())))
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-4, atol=1e-5)
    print(f"onnxruntime vs torch: max abs difference {onnx_err:.2e} (rtol 1e-4, atol 1e-5): ok")
    with torch.no_grad():
        replayed = ivytrace.load_plan(plan_path)(x)
    plan_err = float((replayed - expected).abs().max())
    torch.testing.assert_close(replayed, expected, rtol=1e-4, atol=1e-5)
    print(f"plan replay vs torch: max abs difference {plan_err:.2e} (rtol 1e-4, atol 1e-5): ok")
    if exact_plan_path is None:
        return 0
    with torch.no_grad():
        exact = torch.equal(ivytrace.load_plan(exact_plan_path)(x), expected)
    print(f"plan replay without conv-bn folding vs torch: {'bit-for-bit equal' if exact else 'DIFFERENT'}")
    return 0 if exact else 1


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
