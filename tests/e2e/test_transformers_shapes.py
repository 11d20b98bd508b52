"""transformers models nobody here wrote, built from small configs with random weights (no hub):
traced once, replayed at other batch sizes and sequence lengths, against eager."""
from __future__ import annotations

import copy
import os
import warnings

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

import ivytrace  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _gpt2():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg).eval()


def _bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64,
                                  vocab_size=100, max_position_embeddings=64)
    return transformers.BertModel(cfg).eval()


def _ids(b, t, seed):
    return torch.randint(0, 100, (b, t), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_bert_traced_at_batch_1_replays_other_batches_and_lengths_without_retrace():
    model = _bert()
    eager = copy.deepcopy(model)   # trace_graph(model) replaces model.forward by the replay
    ones = lambda b, t: torch.ones(b, t, dtype=torch.long)  # noqa: E731
    g = ivytrace.trace_graph(model, kwargs=dict(input_ids=_ids(1, 16, 0), attention_mask=ones(1, 16)))
    for i, (b, t) in enumerate(((3, 16), (3, 7), (1, 32), (3, 32))):
        ids = _ids(b, t, i + 1)
        out = g(input_ids=ids, attention_mask=ones(b, t))
        with torch.no_grad():
            want = eager(input_ids=ids, attention_mask=ones(b, t))
        assert type(out) is type(want)
        torch.testing.assert_close(out.last_hidden_state, want.last_hidden_state, rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(out.pooler_output, want.pooler_output, rtol=RTOL, atol=ATOL)
    assert ivytrace.graph_of(g).traces == 1
    # Traced with an all-ones mask: transformers skipped the mask (a tensor value read by Python),
    # so a padded mask is a guard, never a silently wrong answer.
    padded = ones(2, 9)
    padded[0, 5:] = 0
    with pytest.raises(ivytrace.GuardError, match="masking_utils"):
        g(input_ids=_ids(2, 9, 9), attention_mask=padded)


def test_gpt2_replays_other_batches_and_lengths_without_retrace():
    model = _gpt2()
    eager = copy.deepcopy(model)
    # transformers 5 takes another branch at batch 1 (masking_utils: `if batch_size !=
    # position_ids.shape[0]` expands the position ids), so the trace is made at batch 2.
    g = ivytrace.trace_graph(model, kwargs=dict(input_ids=_ids(2, 16, 0), use_cache=False))
    for i, (b, t) in enumerate(((3, 16), (3, 7), (2, 32), (3, 32))):
        ids = _ids(b, t, i + 1)
        out = g(input_ids=ids, use_cache=False)
        with torch.no_grad():
            want = eager(input_ids=ids, use_cache=False)
        torch.testing.assert_close(out.logits, want.logits, rtol=RTOL, atol=ATOL)
    assert ivytrace.graph_of(g).traces == 1


def test_gpt2_traced_at_batch_1_replays_other_batches_and_lengths_without_retrace():
    # transformers 5 branches on a batch of 1 (masking_utils: `if batch_size != position_ids.shape[0]`
    # expands the position ids), so the graph traced at batch 1 guards it; trace_graph then traces
    # once more at batch 2 (probe_batch_of_one) and keeps both specializations.
    model = _gpt2()
    eager = copy.deepcopy(model)
    g = ivytrace.trace_graph(model, kwargs=dict(input_ids=_ids(1, 16, 0), use_cache=False))
    assert ivytrace.graph_of(g).traces == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ivytrace.RetraceWarning)
        for i, (b, t) in enumerate(((3, 16), (3, 7), (1, 32), (3, 32), (1, 7))):
            ids = _ids(b, t, i + 1)
            with torch.no_grad():
                want = eager(input_ids=ids, use_cache=False).logits
            torch.testing.assert_close(g(input_ids=ids, use_cache=False).logits, want, rtol=RTOL, atol=ATOL)
    assert ivytrace.graph_of(g).traces == 2


def test_gpt2_batch_1_guard_without_the_probe_and_a_lazy_graph():
    model = _gpt2()
    eager = copy.deepcopy(model)
    g = ivytrace.trace_graph(model, kwargs=dict(input_ids=_ids(1, 16, 0), use_cache=False), probe_batch_of_one=False)
    assert ivytrace.graph_of(g).traces == 1
    with pytest.raises(ivytrace.GuardError, match="masking_utils"):
        g(input_ids=_ids(3, 16, 2), use_cache=False)
    lazy = ivytrace.trace_graph(copy.deepcopy(eager))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ivytrace.RetraceWarning)
        for i, (b, t) in enumerate(((1, 16), (3, 16), (3, 7), (1, 9))):
            ids = _ids(b, t, 10 + i)
            with torch.no_grad():
                want = eager(input_ids=ids, use_cache=False).logits
            torch.testing.assert_close(lazy(input_ids=ids, use_cache=False).logits, want, rtol=RTOL, atol=ATOL)
    assert ivytrace.graph_of(lazy).traces == 2   # traced at batch 1, and probed at batch 2


def test_resnet_output_keeps_logits_as_in_the_seeds_example():
    torch.manual_seed(0)
    cfg = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3)
    model = transformers.ResNetForImageClassification(cfg).eval()
    eager = copy.deepcopy(model)
    inputs = {"pixel_values": torch.randn(1, 3, 32, 32)}
    traced_graph = ivytrace.trace_graph(model, kwargs=inputs)
    logits = traced_graph(**inputs).logits
    with torch.no_grad():
        torch.testing.assert_close(logits, eager(**inputs).logits, rtol=RTOL, atol=ATOL)
    other = {"pixel_values": torch.randn(2, 3, 48, 48)}
    with torch.no_grad():
        torch.testing.assert_close(traced_graph(**other).logits, eager(**other).logits, rtol=RTOL, atol=ATOL)


def test_a_returned_cache_is_rebuilt_by_the_replay():
    # GPT2Model returns its DynamicCache unless use_cache=False: tensors inside layer objects. It
    # was refused when tracing (a TypeError naming use_cache=False); the replay now returns a
    # cache of the same type whose layers hold the replay's keys and values
    # (tests/e2e/test_kv_cache.py has the decoding loops).
    model = _gpt2().transformer
    g = ivytrace.trace_graph(model, kwargs=dict(input_ids=_ids(2, 8, 0)))
    ids = _ids(3, 5, 1)
    got = g(input_ids=ids)
    with torch.no_grad():
        want = model(input_ids=ids)
    assert type(got.past_key_values) is type(want.past_key_values)
    torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state, rtol=RTOL, atol=ATOL)
    for a, b in zip(got.past_key_values.layers, want.past_key_values.layers):
        torch.testing.assert_close(a.keys, b.keys, rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(a.values, b.values, rtol=RTOL, atol=ATOL)
    assert got.past_key_values.get_seq_length() == 5