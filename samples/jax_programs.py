"""Plain JAX programs (no ivytrace in them) that the JAX recorder records and the plan runtime
replays. tests/python/test_jax_programs.py records each through the CLI (record -> optimize ->
export --to plan -> replay) and with trace_graph, and compares.

Run as a program (`ivytrace record --frameworks jax -o run.ivytrace -- python samples/jax_programs.py`)
it runs each one inside an `ivytrace.region` (a no-op when not recording) on random inputs.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_rng = np.random.RandomState(0)


def _w(*shape, scale=0.3):
    return jnp.asarray(_rng.randn(*shape).astype(np.float32) * scale)


# Weights: module-level arrays made before any recording, read as constants.
W1, B1, W2, B2 = _w(8, 16), _w(16, scale=0.1), _w(16, 4), _w(4, scale=0.1)
K1, KB1 = _w(4, 2, 3, 3), _w(4, scale=0.1)          # conv: out channels, in channels, kh, kw
K2, KB2 = _w(6, 4, 3, 3), _w(6, scale=0.1)
WQ, WK, WV, WO = (_w(8, 8) for _ in range(4))
LN_G, LN_B = jnp.ones(8), jnp.zeros(8)
WX, WH, BH = _w(3, 6, scale=0.5), _w(6, 6, scale=0.5), jnp.zeros(6)


@jax.jit
def _dense(x, w, b):
    return x @ w + b


@jax.jit
def mlp(x):
    """jit around jit: _dense is inlined twice."""
    h = jax.nn.relu(_dense(x, W1, B1))
    return jnp.tanh(_dense(h, W2, B2))


def cnn(x):
    """Two convolutions (NCHW, lax.conv_general_dilated), ReLU, a 2x2 max pool, global average pool."""
    y = lax.conv_general_dilated(x, K1, window_strides=(1, 1), padding="SAME",
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    y = jax.nn.relu(y + KB1[None, :, None, None])
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    y = lax.conv_general_dilated(y, K2, (1, 1), ((1, 1), (1, 1)))
    y = jax.nn.gelu(y + KB2[None, :, None, None])
    return y.mean(axis=(2, 3))


def _layer_norm(x, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + eps) * LN_G + LN_B


@jax.jit
def attention(x):
    """One pre-norm self-attention block with a causal mask and a residual."""
    h = _layer_norm(x)
    q, k, v = h @ WQ, h @ WK, h @ WV
    s = jnp.einsum("btd,bsd->bts", q, k) / jnp.sqrt(jnp.float32(8))
    t = x.shape[1]
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    s = jnp.where(mask, s, -1e9)
    p = jax.nn.softmax(s, axis=-1)
    return x + (p @ v) @ WO


def rnn(xs):
    """An Elman RNN twice: a Python loop over time steps, and lax.scan under jit."""
    h = jnp.zeros(6, dtype=jnp.float32)
    outs = []
    for t in range(xs.shape[0]):
        h = jnp.tanh(xs[t] @ WX + h @ WH + BH)
        outs.append(h)

    @jax.jit
    def scanned(xs):
        def step(h, x):
            h = jnp.tanh(x @ WX + h @ WH + BH)
            return h, h
        return lax.scan(step, jnp.zeros(6, dtype=jnp.float32), xs)

    h2, ys = scanned(xs)
    return jnp.stack(outs), h, ys, h2


def inplace(a, b):
    """Functional "in-place" updates (x.at[...]), reshapes, transposes, slicing."""
    c = a.at[1:3].set(0.0)
    c = c.at[0].add(b[0])
    c = c.at[jnp.array([3, 4])].multiply(2.0)
    c = c.at[::2].max(b[::2])
    m = jnp.concatenate([c, b]).reshape(2, 5).T          # (5, 2)
    m = m.at[:, 1].set(m[:, 0] * 3)
    row = m[2:, ::-1].reshape(-1)
    d = jnp.swapaxes(m[None], 0, 2).squeeze(2)           # (2, 5)
    e = jnp.where(d > 0, d, 0.5 * d)
    return c, m, row, e.astype(jnp.float16), jnp.cumsum(a)


def random_ops(x, key):
    """jax.random with an explicit key: split, normal, uniform/bernoulli, randint, dropout."""
    k1, k2, k3 = jax.random.split(key, 3)
    noise = jax.random.normal(k1, x.shape)
    keep = jax.random.bernoulli(k2, 0.7, x.shape)
    ints = jax.random.randint(k3, x.shape, 0, 10)
    dropped = jnp.where(keep, x / 0.7, 0.0)
    return dropped + 0.1 * noise + ints, ints


def guarded(x):
    if float(x.sum()) > 0:                   # the value leaves JAX: a guard
        return x * 2
    return x - 1


@jax.jit
def _step(h, x):
    return jnp.tanh(h @ WH + x @ WX)


@jax.jit
def jit_nested(xs):
    """A jitted loop over a jitted step, with lax.fori_loop and lax.cond inside jit."""
    h = jnp.zeros(6, dtype=jnp.float32)
    h = lax.fori_loop(0, xs.shape[0], lambda i, h: _step(h, xs[i]), h)
    # cond's predicate is a traced value: recorded as a guard (the branch taken is specialized)
    return lax.cond(h.sum() > -100.0, lambda v: v * 2.0, lambda v: v - 1.0, h)


def _f32(r, *shape):
    return jnp.asarray(r.randn(*shape).astype(np.float32))


PROGRAMS = {
    "mlp": (mlp, lambda r: (_f32(r, 5, 8),)),
    "cnn": (cnn, lambda r: (_f32(r, 2, 2, 8, 8),)),
    "attention": (attention, lambda r: (_f32(r, 2, 5, 8),)),
    "rnn": (rnn, lambda r: (_f32(r, 4, 3),)),
    "inplace": (inplace, lambda r: (_f32(r, 5), _f32(r, 5))),
    "random_ops": (random_ops, lambda r: (_f32(r, 3, 4), jax.random.PRNGKey(int(r.randint(0, 2**31 - 1))))),
    "jit_nested": (jit_nested, lambda r: (_f32(r, 4, 3),)),
    "guarded": (guarded, lambda r: (jnp.asarray(np.abs(r.randn(4)).astype(np.float32) + 0.1),)),
}


if __name__ == "__main__":
    import ivytrace
    r = np.random.RandomState(1)
    for name, (fn, make) in PROGRAMS.items():
        args = make(r)
        # The decorator form: ivytrace sees the function, so it can ask JAX which dims its shapes
        # follow (a `with ivytrace.region(...)` block is specialized on its inputs' shapes).
        ivytrace.region(name)(fn)(*args)
        print(name, "ok")
