"""Plain NumPy programs (no ivytrace in them) that the NumPy recorder records and the plan runtime
replays. tests/python/test_numpy_programs.py traces each with trace_graph and compares.

Run as a program (`ivytrace record --frameworks numpy -o run.ivytrace samples/numpy_programs.py`)
it runs each one inside an `ivytrace.region` (a no-op when not recording) on random inputs.
"""
import numpy as np

_rng = np.random.RandomState(0)
# Weights: module-level arrays made before any recording, read as constants.
W1 = _rng.randn(8, 16).astype(np.float32) * 0.3
B1 = _rng.randn(16).astype(np.float32) * 0.1
W2 = _rng.randn(16, 4).astype(np.float32) * 0.3
B2 = _rng.randn(4).astype(np.float32) * 0.1
K = _rng.randn(4, 2, 3, 3).astype(np.float32) * 0.3     # conv: out channels, in channels, kh, kw
KB = _rng.randn(4).astype(np.float32) * 0.1
WQ, WK, WV = (_rng.randn(8, 8).astype(np.float32) * 0.3 for _ in range(3))
WX = _rng.randn(3, 6).astype(np.float32) * 0.5
WH = _rng.randn(6, 6).astype(np.float32) * 0.5
BH = np.zeros(6, dtype=np.float32)


def mlp(x):
    h = np.maximum(x @ W1 + B1, 0)
    return np.tanh(np.dot(h, W2) + B2)


def cnn(x):
    """3x3 convolution by im2col with slicing + einsum, ReLU, global average pool."""
    n, c, hh, ww = x.shape
    ho, wo = hh - 2, ww - 2
    cols = np.stack([x[:, :, i:i + ho, j:j + wo] for i in range(3) for j in range(3)], axis=2)
    y = np.einsum("nckhw,ock->nohw", cols, K.reshape(4, 2, 9)) + KB[None, :, None, None]
    y = np.maximum(y, 0.0)
    return y.mean(axis=(2, 3))


def attention(x):
    q, k, v = x @ WQ, x @ WK, x @ WV
    s = q @ k.swapaxes(-1, -2) / np.sqrt(np.float32(8))
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.concatenate([p @ v, x], axis=-1)


def rnn(xs):
    h = np.zeros(6, dtype=np.float32)
    outs = []
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ WX + h @ WH + BH)
        outs.append(h)
    return np.stack(outs), h


def inplace(a, b):
    c = a.copy()
    c += 1
    np.add(c, b, out=c)
    c[1:3] = 0
    v = c[2:]
    v *= 2                                   # writes c through a view
    np.multiply(c, 3, out=c, where=c > 1)
    acc = np.add.accumulate(c)
    red = np.add.reduce(c)
    d = c.T.reshape(-1).astype(np.float64)
    a -= 0.5                                 # writes the caller's array
    return c, acc, red, d


def random_ops(x):
    noise = np.random.randn(*x.shape)
    mask = np.random.rand(*x.shape) > 0.5
    return x * mask + 0.1 * noise + np.random.randint(0, 10, size=x.shape)


def guarded(x):
    if float(x.sum()) > 0:                   # the value leaves NumPy: a guard
        return x * 2
    return x - 1


PROGRAMS = {
    "mlp": (mlp, lambda r: (r.randn(5, 8).astype(np.float32),)),
    "cnn": (cnn, lambda r: (r.randn(2, 2, 6, 6).astype(np.float32),)),
    "attention": (attention, lambda r: (r.randn(2, 5, 8).astype(np.float32),)),
    "rnn": (rnn, lambda r: (r.randn(4, 3).astype(np.float32),)),
    "inplace": (inplace, lambda r: (r.randn(5).astype(np.float32), r.randn(5).astype(np.float32))),
    "random_ops": (random_ops, lambda r: (r.randn(3, 4),)),
    "guarded": (guarded, lambda r: (np.abs(r.randn(4)) + 0.1,)),
}


if __name__ == "__main__":
    import ivytrace
    np.random.seed(1)
    for name, (fn, make) in PROGRAMS.items():
        args = make(np.random)   # np.random's functions: recorded arrays when recording
        with ivytrace.region(name, inputs=dict(zip(("x", "y"), args))) as reg:
            out = fn(*args)
            reg.set_result(out)
        print(name, "ok")
