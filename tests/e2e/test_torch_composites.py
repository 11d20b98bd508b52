"""torch's own Python-level building blocks, on code nobody here wrote.

- nn.MultiheadAttention, nn.TransformerEncoderLayer/DecoderLayer and nn.Transformer call
  `F.multi_head_attention_forward`, which dispatches to `__torch_function__` itself and is not in
  schemas/: recorded as one call, trace_graph refused every such program ("not in schemas/: the
  runtime's allow-list refuses it") and so did the ONNX export. The recorder now runs its body
  with the mode on (recorder/names.py DESCEND), so the linear/unflatten/SDPA calls inside it are
  what is recorded; they replay and lower.
- A padding mask reaches `torch._check_with(cond)` on a symbolic bool, which reads `cond.node`
  (torch.fx.experimental.symbolic_shapes.expect_true): AttributeError before.
- max_pool2d(return_indices=True), adaptive_max_pool2d(return_indices=True), torch.atleast_2d,
  torch.stft, torch.unravel_index: Python functions each holding one C call, now in schemas/.

Each is traced at one shape and replayed at others against eager, and (where ONNX can express
it) exported and run in onnxruntime at another batch and length.
"""
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
F = torch.nn.functional

import ivytrace  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _pad_mask(b, s):
    m = torch.zeros(b, s, dtype=torch.bool)
    m[0, -2:] = True
    return m


def _models():
    torch.manual_seed(0)
    enc = torch.nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True).eval()
    stack = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=True), 2,
        enable_nested_tensor=False).eval()
    dec = torch.nn.TransformerDecoderLayer(16, 4, 32, batch_first=True).eval()
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    mha_kv = torch.nn.MultiheadAttention(16, 4, kdim=8, vdim=12, add_bias_kv=True, add_zero_attn=True).eval()
    full = torch.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                                dim_feedforward=32, batch_first=True).eval()
    causal = torch.nn.Transformer.generate_square_subsequent_mask
    return {
        "encoder_layer": (lambda x: enc(x), lambda b, s: (torch.randn(b, s, 16),)),
        "encoder_layer_padding_mask": (lambda x, m: enc(x, src_key_padding_mask=m),
                                       lambda b, s: (torch.randn(b, s, 16), _pad_mask(b, s))),
        "encoder_causal": (lambda x: stack(x, mask=causal(x.shape[1]), is_causal=True),
                           lambda b, s: (torch.randn(b, s, 16),)),
        "decoder_layer": (lambda x, memory: dec(x, memory),
                          lambda b, s: (torch.randn(b, s, 16), torch.randn(b, s + 1, 16))),
        "mha_per_head_weights": (lambda x: mha(x, x, x, need_weights=True, average_attn_weights=False),
                                 lambda b, s: (torch.randn(b, s, 16),)),
        "mha_kdim_vdim_bias_kv": (lambda q, k, v: mha_kv(q, k, v)[0],
                                  lambda b, s: (torch.randn(s, b, 16), torch.randn(s + 2, b, 8),
                                                torch.randn(s + 2, b, 12))),
        "transformer": (lambda src, tgt: full(src, tgt),
                        lambda b, s: (torch.randn(b, s, 16), torch.randn(b, s - 1, 16))),
    }


MODELS = _models()


def _no_grad(fn):
    def f(*args):
        with torch.no_grad():
            return fn(*args)
    return f


def _tuple(y):
    return y if isinstance(y, tuple) else (y,)


def _close(got, want, what):
    for g, w in zip(_tuple(got), _tuple(want), strict=True):
        g = g.detach().numpy() if hasattr(g, "detach") else np.asarray(g)
        assert g.shape == tuple(w.shape), what
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_attention_modules_replay_at_other_shapes(name, cli):
    fn, make = MODELS[name]
    f = _no_grad(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ivytrace.RetraceWarning)
        g = ivytrace.trace_graph(f, args=make(2, 6))
        for b, s in ((2, 6), (3, 4), (1, 9)):
            args = make(b, s)
            _close(g(*args), f(*args), f"{name} at batch {b}, length {s}")
    assert g.traces == 1
    # The composite is not a call of its own in the plan: what replays is its body.
    ops = json.loads(cli("inspect", "--json", g.plan_path, check=True).stdout)["ops"]
    assert "torch.nn.functional.linear" in ops
    assert not [op for op in ops if "multi_head_attention" in op]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_attention_modules_export_to_onnx(name, tmp_path):
    fn, make = MODELS[name]
    f = _no_grad(fn)
    path = tmp_path / f"{name}.onnx"
    ivytrace.export(f, path, args=make(2, 6))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for b, s in ((2, 6), (3, 4)):
        args = make(b, s)
        got = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)})
        _close(tuple(got), f(*args), f"onnxruntime, {name} at batch {b}, length {s}")


def test_padding_mask_layer_traced_at_batch_one_replays_at_batch_three():
    fn, make = MODELS["encoder_layer_padding_mask"]
    f = _no_grad(fn)
    g = ivytrace.trace_graph(f, args=make(1, 5))
    args = make(3, 7)
    _close(g(*args), f(*args), "batch 3 from a batch-1 trace")


def test_torch_check_on_a_symbolic_size_is_a_guard():
    def f(x):
        torch._check(x.shape[1] >= 2, lambda: "need two columns")
        return x[:, :2] * 2

    g = ivytrace.trace_graph(f, args=(torch.randn(2, 4),))
    x = torch.randn(3, 5)
    _close(g(x), f(x), "torch._check that holds")
    with pytest.raises(ivytrace.GuardError):
        g(torch.randn(3, 1))


PY_FUNCTIONS = {
    "max_pool2d_return_indices": lambda x: F.max_pool2d(x, 2, return_indices=True),
    "max_pool1d_return_indices": lambda x: F.max_pool1d(x.flatten(2), 2, return_indices=True),
    "adaptive_max_pool2d_return_indices": lambda x: F.adaptive_max_pool2d(x, 1, return_indices=True),
    "max_unpool2d": lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2),
    "atleast_2d": lambda x: torch.atleast_2d(x.sum()) + 1,
    "atleast_3d": lambda x: torch.atleast_3d(x[0, 0]),
    "unravel_index": lambda x: torch.unravel_index(x.flatten().argmax(), x.shape),
    "stft": lambda x: torch.stft(x.flatten(), 8, window=torch.hann_window(8), return_complex=True).abs(),
}


@pytest.mark.parametrize("name", sorted(PY_FUNCTIONS))
def test_python_level_torch_functions_replay(name):
    fn = PY_FUNCTIONS[name]
    g = ivytrace.trace_graph(fn, args=(torch.randn(2, 3, 4, 4),))
    for shape in ((2, 3, 4, 4), (3, 3, 6, 6)):
        x = torch.randn(*shape)
        _close(g(x), fn(x), f"{name} at {shape}")


def _layer_built_inside(x):
    # A layer made inside the traced function (BigBird's forward does this when it switches its
    # attention type): torch.nn.init's functions dispatch to __torch_function__ themselves.
    w = torch.empty(x.shape[1], 4)
    torch.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    b = torch.nn.init.constant_(torch.empty(4), 0.5)
    return torch.nn.Linear(4, 3)(x @ w + b)


def _replays_the_same_draws(what):
    torch.manual_seed(0)
    g = ivytrace.trace_graph(_layer_built_inside, args=(torch.randn(2, 5),))
    x = torch.randn(3, 5)
    torch.manual_seed(7)
    want = _layer_built_inside(x)
    torch.manual_seed(7)
    _close(g(x), want, what)


def test_torch_nn_init_inside_the_function_replays_its_draws():
    _replays_the_same_draws("the same draws from the same seed")


def test_a_descended_function_that_dispatches_again_is_recorded_as_one_call(monkeypatch):
    # kaiming_uniform_ checks `torch.overrides.has_torch_function_variadic`, which the body
    # without the check does not replace: descending into it re-dispatches. It must be recorded
    # as one call (it is in schemas/), not recurse without end.
    from ivytrace.recorder import names
    monkeypatch.setattr(names, "DESCEND_TORCH", names.DESCEND_TORCH | {"torch.nn.init.kaiming_uniform_"})
    _replays_the_same_draws("kaiming_uniform_ recorded as one call")


def _recurrent():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 16, 2, batch_first=True).eval()
    gru = torch.nn.GRU(8, 16, 1, bidirectional=True).eval()
    rnn = torch.nn.RNN(8, 16, 1, nonlinearity="relu", batch_first=True).eval()
    cell = torch.nn.LSTMCell(8, 16).eval()
    gcell = torch.nn.GRUCell(8, 16).eval()

    def cells(x):   # a loop over the length, as a decoder steps
        h = c = torch.zeros(x.shape[0], 16)
        g = torch.zeros(x.shape[0], 16)
        for t in range(x.shape[1]):
            h, c = cell(x[:, t], (h, c))
            g = gcell(x[:, t], g)
        return h + g

    def packed(x, lengths):
        seq = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h, _) = lstm(seq)
        return torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0].sum(1) + h[-1]

    return {
        "lstm_2_layers": (lambda x: lstm(x), lambda b, s: (torch.randn(b, s, 8),)),
        "lstm_with_state": (lambda x, h, c: lstm(x, (h, c))[1],
                            lambda b, s: (torch.randn(b, s, 8), torch.randn(2, b, 16), torch.randn(2, b, 16))),
        "gru_bidirectional": (lambda x: gru(x), lambda b, s: (torch.randn(s, b, 8),)),
        "rnn_relu": (lambda x: rnn(x)[0], lambda b, s: (torch.randn(b, s, 8),)),
        "cells": (cells, lambda b, s: (torch.randn(b, s, 8),)),
        "packed_sequence": (packed, lambda b, s: (torch.randn(b, s, 8), torch.arange(b) % s + 1)),
    }


RECURRENT = _recurrent()


@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_recurrent_layers_replay_at_other_shapes(name):
    # nn.LSTM/GRU/RNN and their cells call torch.lstm/gru/rnn_*(_cell) through torch._VF, which
    # were not in schemas/: trace_graph refused every program with a recurrent layer.
    fn, make = RECURRENT[name]
    f = _no_grad(fn)
    g = ivytrace.trace_graph(f, args=make(2, 5))
    for b, s in ((2, 5), (3, 5), (4, 7)):
        args = make(b, s)
        try:
            got = g(*args)
        except ivytrace.GuardError:
            assert name in ("cells", "packed_sequence"), f"{name}: a guard at batch {b}, length {s}"
            continue   # a Python loop over the length, or the lengths' values, are guarded
        want = f(*args)
        flat = lambda y: [t for o in _tuple(y) for t in _tuple(o)]   # noqa: E731
        _close(tuple(flat(got)), tuple(flat(want)), f"{name} at batch {b}, length {s}")
