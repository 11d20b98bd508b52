"""More real models nobody here wrote (small configs, random weights, no hub), each one a case a
sweep over transformers/diffusers/flax found broken: traced at one shape, replayed at another
against eager, exported with `ivytrace export --to onnx` and run in onnxruntime at other shapes.

- BART (full seq2seq forward): shift_tokens_right builds the decoder ids with
  `ids.new_zeros(ids.shape)` and two index writes; the ONNX model took the recorded size and
  wrote the recorded box (onnxruntime failed at any other shape).
- Falcon (multi-query): `fused_qkv[..., [-2], :]`, indexing with a list, had no lowering.
- Swin: `F.pad` with pads computed from the feature map's size had no lowering (checked where
  the pad is not zero: 40x40 images make 10x10 patches, padded to windows of 4).
- diffusers UNet1DModel: `timestep.broadcast_to(...)` was not in the schemas (trace_graph failed),
  and `weight[idx, idx] = kernel` had no lowering.
- flax: `nn.Embed` is a lax.gather, which had no lowering.
- ConvBERT: `F.unfold` was not in the schemas (trace_graph failed) and had no lowering; GPT-J:
  nor was `torch.repeat_interleave`.
"""
import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

import ivytrace  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _ids(b, s, seed):
    return torch.randint(3, 100, (b, s), generator=torch.Generator().manual_seed(seed))


def _export(graph, tmp_path, cli, name):
    trace = graph.save(tmp_path / f"{name}.ivt")
    out = tmp_path / f"{name}.onnx"
    proc = cli("export", trace, "--to", "onnx", "-o", out, "--allow-specialized")
    assert proc.returncode == 0, proc.stderr
    return ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])


def _ort(sess, *arrays):
    return sess.run(None, {i.name: np.asarray(a) for i, a in zip(sess.get_inputs(), arrays)})[0]


def _check(got, want, what):
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def test_bart_seq2seq_decoder_ids_follow_the_input_shape(cli, tmp_path):
    torch.manual_seed(0)
    cfg = transformers.BartConfig(vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
                                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                  decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False)
    model = transformers.BartModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    graph = ivytrace.trace_graph(forward, args=(_ids(2, 8, 0),))
    _check(graph(_ids(3, 5, 1)).numpy(), forward(_ids(3, 5, 1)), "replay at (3, 5)")
    sess = _export(graph, tmp_path, cli, "bart")
    for b, s in ((2, 8), (3, 5), (4, 16)):
        ids = _ids(b, s, 10 + b)
        _check(_ort(sess, ids), forward(ids), f"onnx at ({b}, {s})")


def test_falcon_multi_query_list_index(cli, tmp_path):
    torch.manual_seed(0)
    cfg = transformers.FalconConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                    multi_query=True, use_cache=False)
    model = transformers.FalconModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    graph = ivytrace.trace_graph(forward, args=(_ids(2, 8, 0),))
    sess = _export(graph, tmp_path, cli, "falcon")
    for b, s in ((2, 8), (3, 5), (1, 13)):
        ids = _ids(b, s, 20 + b)
        _check(_ort(sess, ids), forward(ids), f"onnx at ({b}, {s})")


def test_swin_pads_windows_computed_from_the_image_size(cli, tmp_path):
    torch.manual_seed(0)
    cfg = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1], num_heads=[2],
                                  window_size=4)
    model = transformers.SwinModel(cfg).eval()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 40, 40, generator=g)     # 10x10 patches: padded to 12x12 windows
    graph = ivytrace.trace_graph(forward, args=(x,))
    sess = _export(graph, tmp_path, cli, "swin")
    for b in (2, 3):
        x = torch.randn(b, 3, 40, 40, generator=g)
        _check(_ort(sess, x), forward(x), f"onnx at batch {b}")


def test_diffusers_unet1d_traces_and_exports(cli, tmp_path):
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.UNet1DModel(sample_size=32, in_channels=2, out_channels=2, extra_in_channels=64,
                                  block_out_channels=(32, 32, 64)).eval()

    def forward(sample, timestep):
        with torch.no_grad():
            return model(sample, timestep).sample

    g = torch.Generator().manual_seed(0)
    t = torch.tensor(5.0)
    graph = ivytrace.trace_graph(forward, args=(torch.randn(2, 2, 32, generator=g), t))
    x3 = torch.randn(3, 2, 32, generator=g)
    _check(graph(x3, t).numpy(), forward(x3, t), "replay at batch 3")
    sess = _export(graph, tmp_path, cli, "unet1d")
    feeds = {i.name for i in sess.get_inputs()}
    for b in (2, 3):
        x = torch.randn(b, 2, 32, generator=g)
        got = sess.run(None, {k: v.numpy() for k, v in (("sample", x), ("timestep", t)) if k in feeds})[0]
        _check(got, forward(x, t), f"onnx at batch {b}")


def test_flax_embedding_model_exports(cli, tmp_path):
    pytest.importorskip("flax")
    import jax
    import jax.numpy as jnp
    import flax.linen as nn

    class LM(nn.Module):
        @nn.compact
        def __call__(self, ids):
            emb = nn.Embed(100, 16)
            x = emb(ids)
            x = x + nn.SelfAttention(num_heads=2, qkv_features=16)(
                nn.LayerNorm()(x), mask=nn.make_causal_mask(ids))
            return emb.attend(nn.LayerNorm()(x))

    m = LM()
    ids = jnp.asarray(np.random.RandomState(0).randint(0, 100, (2, 8)).astype(np.int32))
    params = m.init(jax.random.PRNGKey(0), ids)

    def forward(input_ids):
        return m.apply(params, input_ids)

    graph = ivytrace.trace_graph(forward, args=(ids,))
    sess = _export(graph, tmp_path, cli, "flax_lm")
    other = jnp.asarray(np.random.RandomState(1).randint(0, 100, (2, 8)).astype(np.int32))
    for x in (ids, other):
        _check(_ort(sess, x), forward(x), "onnx")


def test_convbert_unfold_replays_and_exports(cli, tmp_path):
    # F.unfold (its span-based dynamic convolution) was not in the schemas: trace_graph failed;
    # and it had no ONNX lowering.
    torch.manual_seed(0)
    cfg = transformers.ConvBertConfig(vocab_size=100, embedding_size=32, hidden_size=32, num_hidden_layers=1,
                                      num_attention_heads=4, intermediate_size=64)
    model = transformers.ConvBertModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    graph = ivytrace.trace_graph(forward, args=(_ids(2, 8, 0),))
    for b, s in ((3, 5), (4, 16)):
        ids = _ids(b, s, 30 + b)
        _check(graph(ids).numpy(), forward(ids), f"replay at ({b}, {s})")
    sess = _export(graph, tmp_path, cli, "convbert")
    for b, s in ((2, 8), (4, 16)):
        ids = _ids(b, s, 50 + b)
        _check(_ort(sess, ids), forward(ids), f"onnx at ({b}, {s})")


def test_gptj_rotary_repeat_interleave(cli, tmp_path):
    # torch.repeat_interleave (GPT-J's rotary embedding) was not in the schemas: trace_graph failed.
    torch.manual_seed(0)
    cfg = transformers.GPTJConfig(vocab_size=100, n_embd=32, n_layer=1, n_head=4, rotary_dim=4, n_positions=64,
                                  use_cache=False, bos_token_id=0, eos_token_id=0)
    model = transformers.GPTJModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    graph = ivytrace.trace_graph(forward, args=(_ids(2, 8, 0),))
    _check(graph(_ids(3, 5, 1)).numpy(), forward(_ids(3, 5, 1)), "replay at (3, 5)")
    sess = _export(graph, tmp_path, cli, "gptj")
    for b, s in ((2, 8), (4, 16)):
        ids = _ids(b, s, 40 + b)
        _check(_ort(sess, ids), forward(ids), f"onnx at ({b}, {s})")
