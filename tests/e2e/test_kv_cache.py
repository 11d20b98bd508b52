"""Decoding with a KV cache, as ML engineers run and export LLMs: transformers models (small
configs, random weights, no hub) take and return their DynamicCache, and the traced graph must
follow it like eager code does, or say why not.

Found by trying it: an argument object holding tensors in its attributes (a dataclass, a
transformers cache) had its tensors read once, when traced, and baked into the graph, so a replay
with another cache computed with the traced one's keys and values without a word (Llama: off by
0.14 at the traced shape). A one-token decoding step also failed: transformers' SDPA passes
`is_causal = q_len > 1 and ...`, a symbolic bool, which torch's argument parser refuses before
the recorder sees the call.
"""
from __future__ import annotations

import dataclasses
import os
import re
import warnings

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

import ivytrace  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg).eval()


def _ids(b, t, seed):
    return torch.randint(0, 100, (b, t), generator=torch.Generator().manual_seed(seed))


def _prefix(model, b, t, seed):
    with torch.no_grad():
        return model(input_ids=_ids(b, t, seed), use_cache=True).past_key_values


def _assert_same_cache(got, want):
    assert type(got) is type(want) and len(got.layers) == len(want.layers)
    for a, b in zip(got.layers, want.layers):
        torch.testing.assert_close(a.keys, b.keys, rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(a.values, b.values, rtol=RTOL, atol=ATOL)


@pytest.fixture(scope="module")
def llama():
    return _llama()


def test_decoding_steps_follow_the_cache_they_are_given(llama):
    def decode(ids, past):
        return llama(input_ids=ids, past_key_values=past, use_cache=True).logits

    with torch.no_grad():
        g = ivytrace.trace_graph(decode, args=(_ids(2, 1, 0), _prefix(llama, 2, 6, 0)))
        # Another cache at the traced shape (this was the silent one), other past lengths and
        # batches: three greedy steps each, the replay's cache grown in place as eager's is.
        for b, t in ((2, 6), (2, 9), (3, 4)):
            mine, theirs = _prefix(llama, b, t, 7), _prefix(llama, b, t, 7)
            x = y = _ids(b, 1, 8)
            for step in range(3):
                got, want = g(x, mine), decode(y, theirs)
                torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
                assert mine.get_seq_length() == t + step + 1
                _assert_same_cache(mine, theirs)
                x, y = got[:, -1:].argmax(-1), want[:, -1:].argmax(-1)
    assert ivytrace.graph_of(g).traces == 1


def test_prefill_returns_a_cache_that_decoding_continues(llama):
    def prefill(ids):
        out = llama(input_ids=ids, use_cache=True)
        return out.logits, out.past_key_values

    def decode(ids, past):
        return llama(input_ids=ids, past_key_values=past, use_cache=True).logits

    with torch.no_grad():
        gp = ivytrace.trace_graph(prefill, args=(_ids(2, 6, 0),))
        gd = ivytrace.trace_graph(decode, args=(_ids(2, 1, 0), _prefix(llama, 2, 6, 1)))
        ids = _ids(3, 9, 2)
        (la, ca), (lb, cb) = gp(ids), prefill(ids)
        torch.testing.assert_close(la, lb, rtol=RTOL, atol=ATOL)
        _assert_same_cache(ca, cb)
        x, y = la[:, -1:].argmax(-1), lb[:, -1:].argmax(-1)
        for _ in range(2):
            got, want = gd(x, ca), decode(y, cb)
            torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
            x, y = got[:, -1:].argmax(-1), want[:, -1:].argmax(-1)
        _assert_same_cache(ca, cb)


def test_a_traced_model_returns_its_cache():
    model, eager = _llama(), _llama()   # trace_graph of a module routes the module's calls to the graph
    g = ivytrace.trace_graph(model, kwargs=dict(input_ids=_ids(2, 6, 0), use_cache=True))
    ids = _ids(3, 4, 1)
    got = g(input_ids=ids, use_cache=True)
    with torch.no_grad():
        want = eager(input_ids=ids, use_cache=True)
    torch.testing.assert_close(got.logits, want.logits, rtol=RTOL, atol=ATOL)
    _assert_same_cache(got.past_key_values, want.past_key_values)


def test_a_decoder_with_past_exports_to_onnx(llama, tmp_path):
    ort = pytest.importorskip("onnxruntime")

    def decode(ids, past):
        out = llama(input_ids=ids, past_key_values=past, use_cache=True)
        return out.logits, out.past_key_values

    path = tmp_path / "decoder_with_past.onnx"
    with torch.no_grad():
        ivytrace.export(decode, path, args=(_ids(2, 1, 0), _prefix(llama, 2, 6, 0)))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    assert names == ["ids"] + [f"past.layers[{k}].{kv}" for k in range(2) for kv in ("keys", "values")]
    # The grown cache is written in place and returned: one output each, named by where it is returned.
    assert [o.name for o in sess.get_outputs()] == \
        ["output.0"] + [f"output.1.layers.{k}.{kv}" for k in range(2) for kv in ("keys", "values")]
    for b, t in ((2, 6), (3, 11)):
        past = _prefix(llama, b, t, 5)
        x = _ids(b, 1, 6)
        feeds = {"ids": x.numpy()}
        for k, layer in enumerate(past.layers):
            feeds[f"past.layers[{k}].keys"] = layer.keys.numpy()
            feeds[f"past.layers[{k}].values"] = layer.values.numpy()
        got = sess.run(None, feeds)
        with torch.no_grad():
            logits, present = decode(x, past)
        np.testing.assert_allclose(got[0], logits.numpy(), rtol=RTOL, atol=ATOL)
        # The present keys and values follow the logits, in the cache's layer order.
        for k, layer in enumerate(present.layers):
            np.testing.assert_allclose(got[1 + 2 * k], layer.keys.numpy(), rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(got[2 + 2 * k], layer.values.numpy(), rtol=RTOL, atol=ATOL)
            assert got[1 + 2 * k].shape[2] == t + 1


def test_an_empty_cache_filled_by_the_call_is_not_silent(llama):
    # The layers the call creates in an empty cache are new objects the replay does not build.
    def prefill(ids, cache):
        return llama(input_ids=ids, past_key_values=cache, use_cache=True).logits

    with torch.no_grad(), pytest.warns(ivytrace.StateWarning, match=r"cache\.layers\[0\].*prefilled cache"):
        ivytrace.trace_graph(prefill, args=(_ids(2, 5, 0), transformers.DynamicCache()))


@dataclasses.dataclass
class _Weights:
    w: torch.Tensor
    scale: float = 2.0


class _Holder:
    def __init__(self, w):
        self.w = w


@dataclasses.dataclass(frozen=True)
class _Frozen:
    w: torch.Tensor
    scale: float = 2.0


def test_a_frozen_dataclass_argument_is_read_on_every_call():
    # Its number field is a graph input while traced (set on the frozen instance, then put back).
    def f(x, p):
        return x @ p.w * p.scale

    g = ivytrace.trace_graph(f, args=(torch.randn(2, 3), _Frozen(torch.randn(3, 4))))
    x, p = torch.randn(5, 3), _Frozen(torch.randn(3, 6), 3.0)
    torch.testing.assert_close(g(x, p), f(x, p))
    assert p.scale == 3.0


@pytest.mark.parametrize("make", [_Weights, _Holder], ids=["dataclass", "object"])
def test_tensors_in_argument_objects_are_read_on_every_call(make):
    def f(x, p):
        return x @ p.w

    def grow(x, p):   # writes the object, as a cache's update does
        p.w = torch.cat([p.w, x.t()], dim=1)
        return p.w.sum(0)

    torch.manual_seed(0)
    g = ivytrace.trace_graph(f, args=(torch.randn(2, 3), make(torch.randn(3, 4))))
    x, w = torch.randn(5, 3), torch.randn(3, 6)
    torch.testing.assert_close(g(x, make(w)), x @ w)
    h = ivytrace.trace_graph(grow, args=(torch.randn(2, 3), make(torch.randn(3, 4))))
    a, b = make(w.clone()), make(w.clone())
    torch.testing.assert_close(h(x, a), grow(x, b))
    torch.testing.assert_close(a.w, b.w)
    assert a.w.shape == (3, 11)


def test_a_symbolic_is_causal_is_a_guard_not_a_type_error():
    # torch's parser refuses a symbolic bool for SDPA's `is_causal`; the recorder reads it as a
    # plain bool with a guard, so another query length that flips it traces again.
    import torch.nn.functional as F

    def attend(q):
        return F.scaled_dot_product_attention(q, q, q, is_causal=q.shape[2] > 1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # the guard is announced
        g = ivytrace.trace_graph(attend, args=(torch.randn(2, 2, 1, 8),))
        q = torch.randn(3, 2, 1, 8)
        torch.testing.assert_close(g(q), attend(q))
        with pytest.raises(ivytrace.GuardError, match=r"q.shape\[2\] > 1"):
            g(torch.randn(2, 2, 4, 8))
        lazy = ivytrace.trace_graph(attend, args=(torch.randn(2, 2, 1, 8),), retrace=True)
        q4 = torch.randn(2, 2, 4, 8)
        torch.testing.assert_close(lazy(q4), attend(q4))
        assert ivytrace.graph_of(lazy).traces == 2


# Other cache layouts: GPT-2's own attention, Mistral's sliding-window layers (an int state per
# layer beside the keys and values), T5's encoder-decoder cache (self- and cross-attention).
_ARCHS = {
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                                   bos_token_id=0, eos_token_id=0)),
    "mistral_sliding": ("MistralForCausalLM", "MistralConfig",
                        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             intermediate_size=64, sliding_window=4)),
    "t5": ("T5ForConditionalGeneration", "T5Config",
           dict(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, decoder_start_token_id=0)),
}


@pytest.mark.parametrize("arch", list(_ARCHS))
def test_other_cache_layouts_decode_and_export(arch, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    cls, cfg_cls, kw = _ARCHS[arch]
    torch.manual_seed(0)
    model = getattr(transformers, cls)(getattr(transformers, cfg_cls)(vocab_size=100, **kw)).eval()
    seq2seq = arch == "t5"

    def prefill(b, t, seed):
        x = _ids(b, t, seed)
        with torch.no_grad():
            if seq2seq:
                out = model(input_ids=x, decoder_input_ids=x[:, :3], use_cache=True)
                return out.past_key_values, (out.encoder_last_hidden_state,)
            return model(input_ids=x, use_cache=True).past_key_values, ()

    def step(tok, past, *enc):
        if seq2seq:
            out = model(encoder_outputs=enc, decoder_input_ids=tok, past_key_values=past, use_cache=True)
        else:
            out = model(input_ids=tok, past_key_values=past, use_cache=True)
        return out.logits, out.past_key_values

    past, enc = prefill(2, 6, 0)
    with torch.no_grad():
        g = ivytrace.trace_graph(lambda tok, past, *enc: step(tok, past, *enc)[0], args=(_ids(2, 1, 1), past, *enc))
        for b, t in ((2, 6), (3, 9)):   # past 9 > the sliding window: the layers crop
            (mine, enc_a), (theirs, enc_b) = prefill(b, t, 7), prefill(b, t, 7)
            x = y = _ids(b, 1, 8)
            for _ in range(3):
                got, want = g(x, mine, *enc_a), step(y, theirs, *enc_b)[0]
                torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
                x, y = got[:, -1:].argmax(-1), want[:, -1:].argmax(-1)
        path = ivytrace.export(step, tmp_path / f"{arch}.onnx", args=(_ids(2, 1, 1), past, *enc))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for b, t in ((2, 6), (3, 9)):
        past, enc = prefill(b, t, 5)
        x = _ids(b, 1, 6)
        feeds = {}
        for i in sess.get_inputs():
            if i.name == "tok":
                feeds[i.name] = x.numpy()
            elif i.name.startswith("enc"):
                feeds[i.name] = enc[0].numpy()
            else:   # past.layers[0].keys, past.self_attention_cache.layers[0].values, ...
                obj = past
                for attr, index in re.findall(r"\.(\w+)|\[(\d+)\]", i.name[len("past"):]):
                    obj = getattr(obj, attr) if attr else obj[int(index)]
                feeds[i.name] = obj.numpy() if hasattr(obj, "numpy") else np.asarray(obj, np.int64)
        with torch.no_grad():
            want = step(x, prefill(b, t, 5)[0], *enc)[0]
        np.testing.assert_allclose(sess.run(None, feeds)[0], want.numpy(), rtol=RTOL, atol=ATOL)
