"""Checks an ONNX export and a plan against the output torch produced when the trace was recorded.

    python scripts/check_exports.py IO.pt MODEL.onnx MODEL.plan
IO.pt holds {"input": tensor, "output": tensor} (samples/run_model.py --save-io writes it).
"""
import sys

import numpy as np
import onnxruntime as ort
import torch

import ivytrace


def main(io_path, onnx_path, plan_path):
    io = torch.load(io_path)
    x, expected = io["input"], io["output"]
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    onnx_err = float(np.max(np.abs(got - expected.numpy())))
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        replayed = ivytrace.load_plan(plan_path)(x)
    exact = torch.equal(replayed, expected)
    print(f"onnxruntime vs torch: max abs difference {onnx_err:.2e} (rtol 1e-4, atol 1e-5): ok")
    print(f"plan replay vs torch: {'bit-for-bit equal' if exact else 'DIFFERENT'}")
    return 0 if exact else 1


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
