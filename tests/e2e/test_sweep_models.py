"""Real models nobody here wrote that bench/sweep_models.py (a differential sweep over
transformers, flax, jax.numpy and NumPy programs) found broken, each fixed and checked here on the
real model (small config, random weights, no hub): traced at one shape, replayed at others against
eager, exported to ONNX and run in onnxruntime against eager at other batch sizes and lengths.

- ConvNeXtV2: its GRN layer's `torch.linalg.vector_norm` was not in the schemas: trace_graph
  failed (the plan's allow-list refused it) and the ONNX export had no lowering.
- BEiT: `torch.meshgrid` (its relative position index) was not in the schemas: trace_graph failed.
- DeBERTa (v1): `rel_embeddings[m - span : m + span]` with span a 0-d tensor
  (`torch.tensor(min(seq_len, m))`) had no ONNX lowering.
- jnp.take_along_axis: its lax.gather (batching dims) had no ONNX lowering.
"""
import copy
import os

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


def _session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _ort(sess, *arrays):
    return sess.run(None, {i.name: np.asarray(a) for i, a in zip(sess.get_inputs(), arrays)})[0]


def _check(got, want, what):
    got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def test_convnextv2_vector_norm_replays_and_exports_at_other_image_sizes(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.ConvNextV2Config(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)
    model = transformers.ConvNextV2Model(cfg).eval()
    with torch.no_grad():   # GRN's weight and bias start at zero, which would hide the norm
        for name, p in model.named_parameters():
            if "grn" in name:
                p.normal_()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 32, 32, generator=g)
    graph = ivytrace.trace_graph(forward, args=(x,))
    path = ivytrace.export(forward, tmp_path / "convnextv2.onnx", args=(x,))
    sess = _session(path)
    for b, n in ((2, 32), (3, 48), (1, 64)):
        xb = torch.randn(b, 3, n, n, generator=g)
        want = forward(xb)
        _check(graph(xb), want, f"replay at batch {b}, {n}x{n}")
        # No shape read and no weight fixes the image size: it is dynamic in the model too.
        _check(_ort(sess, xb), want, f"onnx at batch {b}, {n}x{n}")
    assert [i.shape for i in sess.get_inputs()] == [["batch", 3, "pixel_values_dim2", "pixel_values_dim3"]]


@pytest.mark.parametrize("ord_", [2, 1, float("inf"), -float("inf"), 3.0, 0])
def test_vector_norm_orders_export(ord_, tmp_path):
    def f(x):
        return torch.linalg.vector_norm(x, ord=ord_, dim=(1, 2), keepdim=ord_ == 2) + x.sum()

    x = torch.randn(2, 3, 4, 5)
    x[0, 0, 0] = 0.0
    path = ivytrace.export(f, tmp_path / "n.onnx", args=(x,))
    sess = _session(path)
    for xb in (x, torch.randn(4, 3, 4, 5)):
        _check(_ort(sess, xb), f(xb), f"ord {ord_}")


def test_numpy_linalg_norm_exports_and_a_matrix_norm_is_refused(tmp_path):
    def vec(x):
        return np.linalg.norm(x, axis=-1) + np.linalg.norm(x)   # 2-norms; Frobenius of the whole

    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    sess = _session(ivytrace.export(vec, tmp_path / "v.onnx", args=(x,)))
    _check(_ort(sess, x), vec(x), "numpy norm")

    def nuclear(x):
        return np.linalg.norm(x, ord=2)   # a matrix's spectral norm: no ONNX lowering

    with pytest.raises(ivytrace.CLIError, match="matrix norm"):
        ivytrace.export(nuclear, tmp_path / "m.onnx", args=(x,))
    assert not (tmp_path / "m.onnx").exists()


def test_beit_meshgrid_replays_at_other_batches(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.BeitConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                  image_size=32, patch_size=8, use_relative_position_bias=True)
    model = transformers.BeitModel(cfg).eval()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    g = torch.Generator().manual_seed(0)
    graph = ivytrace.trace_graph(forward, args=(torch.randn(2, 3, 32, 32, generator=g),))
    sess = _session(graph.export(tmp_path / "beit.onnx"))
    for b in (2, 3):
        x = torch.randn(b, 3, 32, 32, generator=g)
        _check(graph(x), forward(x), f"replay at batch {b}")
        _check(_ort(sess, x), forward(x), f"onnx at batch {b}")


def test_deberta_slice_with_tensor_bounds_exports(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.DebertaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                     intermediate_size=64, relative_attention=True, pos_att_type=["p2c", "c2p"],
                                     max_relative_positions=16)
    model = transformers.DebertaModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    ids = _ids(2, 8, 0)
    graph = ivytrace.trace_graph(forward, args=(ids,))
    sess = _session(ivytrace.export(forward, tmp_path / "deberta.onnx", args=(ids,), allow_specialized=True))
    for b, s in ((2, 8), (3, 5), (4, 16)):
        x = _ids(b, s, 10 + s)
        want = forward(x)
        _check(graph(x), want, f"replay at ({b}, {s})")
        _check(_ort(sess, x), want, f"onnx at ({b}, {s})")
    # Above max_relative_positions (16) the span is 16, not the length: min() took the other
    # branch, a guard both in the replay and in the ONNX model, never the traced path's answer.
    x = _ids(2, 20, 1)
    with pytest.raises(ivytrace.GuardError, match="modeling_deberta.py"):
        graph(x)
    with pytest.raises(Exception, match=r"ivytrace guard \d+: .*modeling_deberta.py"):
        _ort(sess, x)


def test_jnp_take_along_axis_exports(tmp_path):
    jnp = pytest.importorskip("jax.numpy")

    def f(x, idx):
        p = jnp.exp(x) / jnp.exp(x).sum(-1, keepdims=True)
        top = jnp.take_along_axis(p, jnp.argmax(p, axis=-1)[..., None], axis=-1)
        return jnp.concatenate([top, jnp.take_along_axis(x, idx, axis=1)[..., :1]], axis=1)

    r = np.random.RandomState(0)
    x = jnp.asarray(r.randn(3, 5, 4).astype(np.float32))
    idx = jnp.asarray(r.randint(-5, 5, (3, 2, 4)).astype(np.int32))   # negative: from the end
    sess = _session(ivytrace.export(f, tmp_path / "t.onnx", args=(x, idx)))
    for b in (3, 6):
        xb = jnp.asarray(r.randn(b, 5, 4).astype(np.float32))
        ib = jnp.asarray(r.randint(-5, 5, (b, 2, 4)).astype(np.int32))
        _check(_ort(sess, xb, ib), f(xb, ib), f"onnx at batch {b}")


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_follows_its_inputs_lengths(indexing, tmp_path):
    def f(x, y, z):
        gx, gy, gz = torch.meshgrid(torch.arange(x.shape[0]).float(), y, z, indexing=indexing)
        return gx * 100 + gy * 10 + gz + x.sum()

    args = (torch.randn(3), torch.arange(4.0), torch.arange(2.0))
    graph = ivytrace.trace_graph(f, args=args)
    sess = _session(graph.export(tmp_path / "m.onnx"))
    for a in (args, (torch.randn(5), torch.arange(4.0) - 1, torch.arange(2.0) + 1)):
        _check(graph(*a), f(*a), f"replay {indexing}")
        _check(_ort(sess, *a), f(*a), f"onnx {indexing}")


def test_repeat_interleave_with_a_count_read_from_a_shape(tmp_path):
    # canine repeats its last molecule `char_seq_length % rate + rate` times: a sym count, which
    # had no ONNX lowering ("repeats given as a tensor").
    def f(x):
        return torch.repeat_interleave(x[:, -1:, :], repeats=x.shape[1] % 3 + 2, dim=-2) * 2.0

    x = torch.randn(2, 8, 4)
    graph = ivytrace.trace_graph(f, args=(x,))
    sess = _session(ivytrace.export(f, tmp_path / "r.onnx", args=(x,)))
    for b, s in ((2, 8), (3, 5), (1, 9)):
        xb = torch.randn(b, s, 4)
        _check(graph(xb), f(xb), f"replay at ({b}, {s})")
        _check(_ort(sess, xb), f(xb), f"onnx at ({b}, {s})")


def test_canine_exports_and_guards_its_length(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.CanineConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                    downsampling_rate=2, num_hash_buckets=64, num_hash_functions=2,
                                    local_transformer_stride=4)
    model = transformers.CanineModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    sess = _session(ivytrace.export(forward, tmp_path / "canine.onnx", args=(_ids(2, 8, 0),), allow_specialized=True))
    for b in (2, 3):
        x = _ids(b, 8, b)
        _check(_ort(sess, x), forward(x), f"onnx at batch {b}")
    with pytest.raises(Exception, match=r"ivytrace guard \d+: .*modeling_canine.py"):
        _ort(sess, _ids(2, 5, 1))


def test_numpy_augmented_write_through_a_view_replays():
    # `x2[:, 0] += 1` is a write through the view x2[:, 0], then x2.__setitem__ on x2's later
    # version: the plan's record of the write named a slot no step defined (a PlanError at
    # trace_graph).
    def f(x):
        x2 = x.copy()
        x2[:, 0] += 1.0
        x2[1:, -1] *= 2.0
        return x2 + x

    x = np.random.RandomState(0).randn(2, 8).astype(np.float32)
    graph = ivytrace.trace_graph(f, args=(x,))
    for shape in ((2, 8), (3, 5), (6, 2)):
        y = np.random.RandomState(sum(shape)).randn(*shape).astype(np.float32)
        _check(graph(y), f(y), f"replay at {shape}")


def test_numpy_sort_and_argsort_replay_and_export(tmp_path):
    def f(x):
        s = np.sort(x, axis=-1)
        i = np.argsort(x, axis=0)
        return s[:, :2].astype(np.float64) + np.argsort(x)[:, :2] + i[:2].sum()

    r = np.random.RandomState(0)
    x = r.permutation(16).reshape(2, 8).astype(np.float32)   # distinct values: one argsort order
    graph = ivytrace.trace_graph(f, args=(x,))
    sess = _session(ivytrace.export(f, tmp_path / "s.onnx", args=(x,)))
    for b in (2, 5):
        y = r.permutation(b * 8).reshape(b, 8).astype(np.float32)
        _check(graph(y), f(y), f"replay at batch {b}")
        _check(_ort(sess, y), f(y), f"onnx at batch {b}")

    def flat(x):
        return np.sort(x, axis=None)

    with pytest.raises(ivytrace.CLIError, match="axis None"):
        ivytrace.export(flat, tmp_path / "f.onnx", args=(x,))


def test_numpy_factories_with_a_numpy_dtype_export(tmp_path):
    # np.zeros(..., dtype=np.float32) and np.array(..., dtype=x.dtype): the ONNX lowering knew only
    # torch's dtype names ("dtype numpy.float32" refused).
    def f(x):
        z = np.zeros((x.shape[0], 3), dtype=np.float32)
        c = np.array([1.5, 2.5], dtype=x.dtype)
        return x[:, :2] * c + z[:, 1:] + np.ones(2, dtype=np.float64).astype(np.float32)

    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    sess = _session(ivytrace.export(f, tmp_path / "f.onnx", args=(x,)))
    for b in (4, 7):
        y = np.random.RandomState(b).randn(b, 5).astype(np.float32)
        got = _ort(sess, y)
        assert got.dtype == np.float32
        _check(got, f(y), f"onnx at batch {b}")


def test_attention_over_a_fully_padded_row_is_zero_as_in_torch_not_nan(tmp_path):
    # torch's scaled_dot_product_attention gives 0 for a query row every key is masked out of; the
    # ONNX lowering's plain Softmax gave NaN there, silently: DistilBERT (and Qwen2, GPT-2, OPT...)
    # on a batch whose first row is all padding differed from eager only in onnxruntime.
    torch.manual_seed(0)
    cfg = transformers.DistilBertConfig(vocab_size=100, dim=32, n_layers=1, n_heads=4, hidden_dim=64,
                                        max_position_embeddings=64)
    model = transformers.DistilBertModel(cfg).eval()

    def forward(input_ids, attention_mask):
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def inputs(b, s, seed):
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, -2:] = 0
        return _ids(b, s, seed), mask

    sess = _session(ivytrace.export(forward, tmp_path / "distilbert.onnx", args=inputs(2, 8, 0),
                                    allow_specialized=True))
    for b, s in ((2, 8), (2, 2), (3, 2)):   # at length 2 the first row is all padding
        ids, mask = inputs(b, s, s)
        want = forward(ids, mask)
        assert not torch.isnan(want).any()
        _check(_ort(sess, ids, mask), want, f"onnx at ({b}, {s})")


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_rows(kind, tmp_path):
    F = torch.nn.functional

    def f(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 4, 8, generator=g) for _ in range(3))
    keep = torch.rand(2, 1, 4, 4, generator=g) > 0.3
    keep[0, :, 1] = False                       # query 1 of batch 0 sees no key
    mask = keep if kind == "bool" else torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))
    sess = _session(ivytrace.export(f, tmp_path / "a.onnx", args=(q, k, v, mask)))
    _check(_ort(sess, q, k, v, mask), f(q, k, v, mask), kind)


def test_wav2vec2_module_trace_with_weight_norm_replays_and_exports(tmp_path):
    # A traced module reads its parameters live, so Wav2Vec2's weight-normed positional conv calls
    # torch._weight_norm(v, g) on every replay: it was not in the schemas (trace_graph(model)
    # failed), and had no ONNX lowering.
    import copy
    torch.manual_seed(0)
    cfg = transformers.Wav2Vec2Config(vocab_size=32, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                      intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                      conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                      num_conv_pos_embedding_groups=4, do_stable_layer_norm=True,
                                      feat_extract_norm="layer")
    eager = transformers.Wav2Vec2Model(cfg).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 400, generator=g)
    traced = ivytrace.trace_graph(copy.deepcopy(eager), kwargs={"input_values": x})
    for b, n in ((2, 400), (3, 250)):
        xb = torch.randn(b, n, generator=g)
        with torch.no_grad():
            want = eager(input_values=xb).last_hidden_state
        _check(traced(input_values=xb).last_hidden_state, want, f"module replay at ({b}, {n})")
    sess = _session(ivytrace.graph_of(traced).export(tmp_path / "w2v.onnx"))
    feeds = {i.name for i in sess.get_inputs()}
    assert "input_values" in feeds
    xb = torch.randn(3, 400, generator=g)
    params = dict(eager.named_parameters())
    params.update(dict(eager.named_buffers()))
    # The module's parameters are inputs of its graph too, named "param:<qualified name>".
    got = sess.run(None, {k: (xb if k == "input_values" else params[k.split(":", 1)[1]].detach()).numpy()
                          for k in feeds})[0]
    with torch.no_grad():
        _check(got, eager(input_values=xb).last_hidden_state, "onnx at batch 3")


def test_clip_model_normalizes_embeddings_with_tensor_norm(tmp_path):
    # CLIPModel divides its embeddings by `x.norm(p=2, dim=-1, keepdim=True)`: torch.norm and
    # Tensor.norm had no canonical op (bound positionally only), so no ONNX lowering.
    torch.manual_seed(0)
    cfg = transformers.CLIPConfig(
        text_config=dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, max_position_embeddings=64, eos_token_id=2),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                           image_size=32, patch_size=8),
        projection_dim=16)
    model = transformers.CLIPModel(cfg).eval()

    def forward(input_ids, pixel_values):
        with torch.no_grad():
            return model(input_ids=input_ids, pixel_values=pixel_values).logits_per_image

    g = torch.Generator().manual_seed(0)
    args = (_ids(2, 8, 0), torch.randn(3, 3, 32, 32, generator=g))
    sess = _session(ivytrace.export(forward, tmp_path / "clip.onnx", args=args, allow_specialized=True))
    for b, s, n in ((2, 8, 3), (4, 5, 2)):
        ids, px = _ids(b, s, s), torch.randn(n, 3, 32, 32, generator=g)
        _check(_ort(sess, ids, px), forward(ids, px), f"onnx at texts ({b}, {s}), {n} images")


@pytest.mark.parametrize("p", ["fro", 2, 1, 3.0, float("inf")])
def test_torch_norm_orders_export(p, tmp_path):
    def f(x):
        return x / x.norm(p=p, dim=-1, keepdim=True) + torch.norm(x, p, dim=(0, 1)) + x.norm()

    x = torch.randn(2, 3, 4)
    sess = _session(ivytrace.export(f, tmp_path / "n.onnx", args=(x,)))
    for xb in (x, torch.randn(5, 3, 4)):
        _check(_ort(sess, xb), f(xb), f"p={p}")


def test_dinov2_at_another_image_size_fails_in_its_guard_not_in_a_broadcast(tmp_path):
    # DINOv2 interpolates its position embeddings only when the patch count differs from the
    # recorded one: a guard. Every value read after a guard's check waits on all checks before it,
    # not only the newest's, so onnxruntime stops at the guard, naming the user's line, before a
    # value from the traced path meets the new image size in an Add.
    torch.manual_seed(0)
    cfg = transformers.Dinov2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, mlp_ratio=2,
                                    image_size=32, patch_size=8)
    model = transformers.Dinov2Model(cfg).eval()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    def images(b, n, seed):
        return torch.randn(b, 3, n, n, generator=torch.Generator().manual_seed(seed))

    sess = _session(ivytrace.export(forward, tmp_path / "dinov2.onnx", args=(images(2, 32, 0),),
                                    allow_specialized=True))
    for b in (1, 3):
        x = images(b, 32, b)
        _check(_ort(sess, x), forward(x), f"onnx at batch {b}")
    for b, n in ((3, 56), (4, 48), (2, 40)):
        with pytest.raises(Exception, match=r"ivytrace guard \d+: .*modeling_dinov2.py"):
            _ort(sess, images(b, n, n))


def test_levit_reshape_as_exports_and_runs_at_other_batches(tmp_path):
    # LeViT's MLPLayerWithBN: batch_norm(h.flatten(0, 1)).reshape_as(h). reshape_as's shape comes
    # from its `other` tensor; the lowering read a `shape` it does not have and emitted a Reshape
    # to [] (a 0-d value), on which libonnx's shape inference crashed the CLI (SIGSEGV).
    torch.manual_seed(0)
    cfg = transformers.LevitConfig(image_size=32, hidden_sizes=[16, 32], num_attention_heads=[2, 4], depths=[1, 1],
                                   key_dim=[8, 8], drop_path_rate=0, mlp_ratio=[2, 2], attention_ratio=[2, 2],
                                   down_ops=[["Subsample", 8, 2, 2, 2, 2], [""]])
    model = transformers.LevitModel(cfg).eval()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 32, 32, generator=g)
    sess = _session(ivytrace.export(forward, tmp_path / "levit.onnx", args=(x,)))
    for b in (2, 3, 1):
        xb = torch.randn(b, 3, 32, 32, generator=g)
        _check(_ort(sess, xb), forward(xb), f"onnx at batch {b}")


@pytest.mark.parametrize("method", ["view_as", "reshape_as"])
def test_reshape_as_follows_the_other_tensors_shape(method, tmp_path):
    def f(x, y):
        return getattr(x.flatten(), method)(y) * 2.0 + y

    for i, (x, y) in enumerate([(torch.randn(2, 3, 4), torch.randn(6, 4)),
                                (torch.randn(1, 1, 1), torch.randn(1, 1))]):   # one element: not a 0-d
        sess = _session(ivytrace.export(f, tmp_path / f"r{i}.onnx", args=(x, y)))
        _check(_ort(sess, x, y), f(x, y), f"{method} of {tuple(x.shape)} as {tuple(y.shape)}")


def test_autoencoder_tiny_byte_quantization_replays_and_exports(tmp_path):
    # diffusers' AutoencoderTiny.forward quantizes its latents with `.mul_(255).round_().byte()`:
    # torch.Tensor.byte (and .char/.short) were not in the schemas: trace_graph and export refused.
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.AutoencoderTiny(in_channels=3, out_channels=3, encoder_block_out_channels=(8, 8),
                                      decoder_block_out_channels=(8, 8), num_encoder_blocks=(1, 1),
                                      num_decoder_blocks=(1, 1), latent_channels=4).eval()

    def forward(sample):
        with torch.no_grad():
            return model(sample).sample

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 16, 16, generator=g)
    graph = ivytrace.trace_graph(forward, args=(x,))
    sess = _session(ivytrace.export(forward, tmp_path / "taesd.onnx", args=(x,)))
    for b in (2, 3):
        xb = torch.randn(b, 3, 16, 16, generator=g)
        want = forward(xb)
        _check(graph(xb), want, f"replay at batch {b}")
        _check(_ort(sess, xb), want, f"onnx at batch {b}")


def test_integer_casts_byte_char_short(tmp_path):
    def f(x):
        return x.byte().float() + x.char().float() * 2 + x.short().float() * 3

    x = torch.tensor([1.5, 200.7, 0.4, 127.9, -100.0, 4.0, 255.0])
    graph = ivytrace.trace_graph(f, args=(x,))
    sess = _session(ivytrace.export(f, tmp_path / "c.onnx", args=(x,)))
    _check(graph(x), f(x), "replay")
    _check(_ort(sess, x), f(x), "onnx")


def test_swin_pooler_adaptive_avg_pool1d_replays_and_exports(tmp_path):
    # Swin's pooler is nn.AdaptiveAvgPool1d(1): torch.nn.functional.adaptive_avg_pool1d was not in
    # the schemas, so the model's pooled output could be neither replayed nor exported.
    torch.manual_seed(0)
    cfg = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
                                  window_size=4)
    model = transformers.SwinModel(cfg).eval()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).pooler_output

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 32, 32, generator=g)
    traced = ivytrace.trace_graph(copy.deepcopy(model), kwargs={"pixel_values": x})   # replaces its forward
    sess = _session(ivytrace.export(forward, tmp_path / "swin.onnx", args=(x,)))
    for b in (2, 3):
        xb = torch.randn(b, 3, 32, 32, generator=g)
        want = forward(xb)
        _check(traced(pixel_values=xb).pooler_output, want, f"module replay at batch {b}")
        _check(_ort(sess, xb), want, f"onnx at batch {b}")


@pytest.mark.parametrize("size", [1, 4, (2,)])
def test_adaptive_avg_pool1d_exports(size, tmp_path):
    F = torch.nn.functional

    def f(x):
        return F.adaptive_avg_pool1d(x, size) * 2.0

    for x in (torch.randn(2, 3, 8), torch.randn(3, 8)):   # batched and unbatched
        sess = _session(ivytrace.export(f, tmp_path / f"p{x.dim()}.onnx", args=(x,)))
        _check(ivytrace.trace_graph(f, args=(x,))(x), f(x), f"replay, rank {x.dim()}")
        _check(_ort(sess, x), f(x), f"onnx, rank {x.dim()}")


def test_adaptive_avg_pool1d_that_does_not_divide_exports_torchs_overlapping_windows(tmp_path):
    # Once refused (the lowering reshaped into equal windows); now torch's overlapping windows.
    def f(x):
        return torch.nn.functional.adaptive_avg_pool1d(x, 3)

    path = tmp_path / "p.onnx"
    ivytrace.export(f, path, args=(torch.randn(2, 3, 8),))
    sess = ort.InferenceSession(str(path))
    for b in (2, 5):
        x = torch.randn(b, 3, 8)
        _check(_ort(sess, x), f(x), f"onnx, batch {b}")


def test_falcon_alibi_bfloat16_product_runs_in_onnxruntime(tmp_path):
    # Falcon's build_alibi_tensor multiplies bfloat16 slopes by the positions (int64):
    # onnxruntime's CPU provider has no bfloat16 Mul, so the exported model did not load.
    torch.manual_seed(0)
    cfg = transformers.FalconConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                    use_cache=False, alibi=True)
    model = transformers.FalconModel(cfg).eval()

    def forward(input_ids, attention_mask):
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def inputs(b, s, seed):
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, -2:] = 0
        return _ids(b, s, seed), mask

    sess = _session(ivytrace.export(forward, tmp_path / "falcon.onnx", args=inputs(2, 8, 0)))
    for b, s in ((2, 8), (3, 5), (4, 16)):
        a = inputs(b, s, b + s)
        _check(_ort(sess, *a), forward(*a), f"onnx at {b}x{s}")


def test_bfloat16_arithmetic_rounds_as_torch(tmp_path):
    # torch rounds each tensor operand to bfloat16, computes in float32 and rounds once; a Python
    # number (and alpha) is rounded to bfloat16 for add/sub/pow, not for mul/div. Same bits here.
    def f(xf, yf, n):
        x, y = xf.bfloat16(), yf.bfloat16()
        return torch.stack([x * n, x + 0.1, torch.add(x, y, alpha=0.3), x - y, x / y,
                            y ** 1.7, x * 0.3, x / 0.3, x - 0.7, x * y]).float()

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(4, 33, generator=g) * 50, torch.rand(4, 33, generator=g) + 0.5,
            torch.randint(-300, 300, (4, 33), generator=g))
    sess = _session(ivytrace.export(f, tmp_path / "bf.onnx", args=args))
    np.testing.assert_array_equal(_ort(sess, *args), f(*args).numpy())


def test_torch_scatter_and_scatter_add_replay_and_export(tmp_path):
    # torch.scatter / Tensor.scatter / scatter_add were not in the schemas (the sweep's torch_fops
    # program): trace_graph and the export refused them. src larger than the index: torch reads
    # only the part the index covers.
    def f(x, s, i):
        perm = torch.argsort(s[:, :6], dim=1)[:, :3]   # unique per row: scatter's duplicates are unspecified
        return torch.cat([torch.zeros_like(x).scatter(1, perm, s), x.scatter(1, perm, value=2.5),
                          torch.scatter_add(x, 1, i, s), x.scatter_add(0, i[:2] % 2, s[:2] * 3)], 1)

    def inputs(b, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 6, generator=g), torch.randn(b, 7, generator=g), torch.randint(0, 6, (b, 4), generator=g)

    graph = ivytrace.trace_graph(f, args=inputs(4, 0))
    sess = _session(ivytrace.export(f, tmp_path / "scatter.onnx", args=inputs(4, 0)))
    for b in (4, 2, 9):
        a = inputs(b, b)
        _check(graph(*a), f(*a), f"replay at batch {b}")
        _check(_ort(sess, *a), f(*a), f"onnx at batch {b}")


def test_scatter_with_reduce_exports_and_matches(tmp_path):
    # Refused when the sweep found it; session 15 lowers reduce= to ScatterElements' reduction
    # (repeated indices multiply or add again, as in torch).
    def f(x, i):
        return x.scatter(1, i, 2.0, reduce="multiply"), x.scatter(1, i, x * 3, reduce="add")

    gen = torch.Generator().manual_seed(0)
    sess = _session(ivytrace.export(f, tmp_path / "r.onnx", args=(torch.randn(2, 4), torch.randint(0, 4, (2, 3), generator=gen))))
    for b in (2, 5):
        x, i = torch.randn(b, 4, generator=gen), torch.randint(0, 4, (b, 3), generator=gen)
        got = sess.run(None, {"x": x.numpy(), "i": i.numpy()})
        for g, w in zip(got, f(x, i)):
            np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_replays_and_exports_with_nan_and_ties(right, tmp_path):
    # torch.bucketize was not in the schemas (the sweep's torch_fops program). A NaN falls past
    # every boundary, and a value equal to a boundary goes left or right as `right` says.
    def f(x):
        return torch.bucketize(x, torch.tensor([-1.0, 0.0, 0.5, 1.0]), right=right) * 10 + x.shape[0]

    x = torch.tensor([[float("nan"), -5.0, 0.0, 0.5, 1.0, 7.0], [float("inf"), -float("inf"), -1.0, 0.2, 0.7, 2.0]])
    graph = ivytrace.trace_graph(f, args=(x,))
    sess = _session(ivytrace.export(f, tmp_path / "b.onnx", args=(x,)))
    for xb in (x, torch.cat([x, torch.randn(3, 6)])):
        _check(graph(xb), f(xb), "replay")
        _check(_ort(sess, xb), f(xb), "onnx")


def test_grid_sample_replays_and_exports(tmp_path):
    F = torch.nn.functional

    def f(x, grid):
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False) + \
            F.grid_sample(x, grid.flip(-1), mode="bilinear", padding_mode="reflection", align_corners=True)

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(2, 3, 5, 6, generator=g), torch.rand(2, 4, 3, 2, generator=g) * 2.4 - 1.2)
    graph = ivytrace.trace_graph(f, args=args)
    sess = _session(ivytrace.export(f, tmp_path / "g.onnx", args=args))
    for b in (2, 3):
        a = (torch.randn(b, 3, 5, 6, generator=g), torch.rand(b, 4, 3, 2, generator=g) * 2.4 - 1.2)
        _check(graph(*a), f(*a), f"replay at batch {b}")
        _check(_ort(sess, *a), f(*a), f"onnx at batch {b}")


def test_swin_shifted_windows_roll_exports_at_other_batches(tmp_path):
    # Swin rolls its feature map by shift_size = window_size // 2 when the window is smaller than
    # the resolution: torch.roll had no ONNX lowering, so Swin at any real image size did not export.
    torch.manual_seed(0)
    cfg = transformers.SwinConfig(image_size=64, patch_size=4, embed_dim=16, depths=[2, 1], num_heads=[2, 4],
                                  window_size=4)
    model = transformers.SwinModel(cfg).eval()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 64, 64, generator=g)
    sess = _session(ivytrace.export(forward, tmp_path / "swin.onnx", args=(x,)))
    for b in (2, 3):
        xb = torch.randn(b, 3, 64, 64, generator=g)
        _check(_ort(sess, xb), forward(xb), f"onnx at batch {b}")


@pytest.mark.parametrize("shifts,dims", [(3, 1), ((1, -2), (1, 2)), (-13, -1), (4, None)])
def test_roll_follows_the_run_time_length(shifts, dims, tmp_path):
    def f(x):
        return torch.roll(x, shifts, dims) * x.shape[1]   # the length is read: dynamic in the model

    sess = _session(ivytrace.export(f, tmp_path / "roll.onnx", args=(torch.randn(2, 5, 3),)))
    for shape in ((2, 5, 3), (3, 7, 3), (1, 2, 3)):
        x = torch.randn(*shape)
        _check(_ort(sess, x), f(x), f"roll {shifts} over {dims} of {shape}")


def test_logsumexp_replays_and_exports_with_infinities(tmp_path):
    # torch.logsumexp had no canonical op (the sweep's torch_fops program): no ONNX lowering. Large
    # values must not overflow, a row of -inf gives -inf and a row holding +inf gives +inf.
    def f(x):
        return torch.cat([torch.logsumexp(x * 100, dim=1), x.logsumexp(-1, keepdim=True).flatten(),
                          torch.logsumexp(x, (0, 1)).reshape(1)])

    x = torch.randn(3, 4)
    x[1] = -float("inf")
    x[2, 1] = float("inf")
    graph = ivytrace.trace_graph(f, args=(x,))
    sess = _session(ivytrace.export(f, tmp_path / "lse.onnx", args=(x,)))
    for xb in (x, torch.randn(3, 4)):
        _check(graph(xb), f(xb), "replay")
        _check(_ort(sess, xb), f(xb), "onnx")


def test_a_write_to_a_captured_tensor_is_replayed_not_silence():
    # The sweep's resnet_train_bn row: a function closing over a ResNet in train() mode. Its
    # BatchNorm writes the module's buffers, which the graph of the function did not write back:
    # replays matched eager's outputs but left the running statistics behind, saying nothing
    # (session 14 made that a StateWarning). The closure's tensors are the replay's state now:
    # the statistics move as eager's do, call after call.
    import copy
    torch.manual_seed(0)
    cfg = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")
    model = transformers.ResNetModel(cfg).train()
    reference = copy.deepcopy(model)

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    def forward_reference(pixel_values):
        with torch.no_grad():
            return reference(pixel_values=pixel_values).last_hidden_state

    x = torch.randn(2, 3, 32, 32)
    graph = ivytrace.trace_graph(forward, args=(x,))
    forward_reference(x)
    for seed in (1, 2):
        xs = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
        _check(graph(xs), forward_reference(xs), f"replay {seed}")
        for (name, got), (_, want) in zip(model.named_buffers(), reference.named_buffers()):
            torch.testing.assert_close(got, want, msg=name)

    counter = torch.zeros(3)

    def accumulate(v):
        counter.add_(v.sum(0))
        return v * 2

    v = torch.randn(2, 3)
    g = ivytrace.trace_graph(accumulate, args=(v,))
    g(v)
    torch.testing.assert_close(counter, v.sum(0) * 2)


# ---------------------------------------------------------------------------------------- round 3
def _mixtral(impl, experts=8, top_k=1):
    torch.manual_seed(0)
    cfg = transformers.MixtralConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=experts,
                                     num_experts_per_tok=top_k, use_cache=False, experts_implementation=impl)
    model = transformers.MixtralModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state
    return forward


@pytest.mark.parametrize("impl", ["eager", "grouped_mm"])
def test_mixtral_routing_replays_right_or_guards_at_the_same_shape(impl):
    """Mixtral's experts: the eager loop runs over `expert_hit = ....nonzero()` (as many iterations as
    experts some token picked), `torch.where(mask)` finds each expert's tokens and `index_add_` sums their
    outputs; grouped_mm sorts the tokens by expert (`histc`, `torch._grouped_mm`). `nonzero`, `greater`,
    `index_add_`, `histc` and `_grouped_mm` were not in the schemas: trace_graph was refused. Now every input
    of the traced shape replays: another routing with as many experts hit gives eager's numbers (the expert
    ids are graph values), another count is a GuardError (the loop's unbind count), never a wrong number."""
    forward = _mixtral(impl)
    graph = ivytrace.trace_graph(forward, args=(_ids(2, 3, 0),))
    counts = {"ok": 0, "guard": 0}
    for seed in range(1, 25):
        ids = _ids(2, 3, seed)
        want = forward(ids)
        try:
            got = graph(ids)
        except ivytrace.GuardError:
            counts["guard"] += 1
            continue
        _check(got, want, f"replay of seed {seed}")
        counts["ok"] += 1
    assert counts["ok"] >= 5, counts
    if impl == "eager":   # 6 tokens over 8 experts: some inputs hit other counts of experts
        assert counts["guard"] >= 1, counts
    else:                 # no data-dependent shape on this path: right at any routing and shape
        assert counts["guard"] == 0, counts
        _check(graph(_ids(3, 5, 99)), forward(_ids(3, 5, 99)), "replay at 3x5")


def test_index_add_and_nonzero_replay():
    def f(x, idx, src):
        y = x.index_add(0, idx, src, alpha=2.0)
        z = torch.zeros_like(x)
        z.index_add_(1, idx[:2] % 3, x[:, :2])
        nz = torch.nonzero(x > 0)
        rows, cols = torch.where(x > 0.5)
        return y.sum() + z.sum() + nz.sum() + rows.sum() * 10 + cols.sum() + torch.greater(x, 0).sum()

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(4, 3, generator=g), torch.tensor([0, 2, 2]), torch.randn(3, 3, generator=g))
    graph = ivytrace.trace_graph(f, args=args)
    for seed in range(5):
        g = torch.Generator().manual_seed(seed)
        a = (torch.randn(4, 3, generator=g), torch.randint(0, 4, (3,), generator=g), torch.randn(3, 3, generator=g))
        _check(graph(*a), f(*a), f"seed {seed}")   # nothing here reads a data-dependent size in Python


def test_patchtst_unfold_and_clamp_min_replay_at_other_batches(tmp_path):
    """PatchTST patches its series with `Tensor.unfold` (sliding windows) and scales by
    `clamp_min`: neither was in the schemas (trace_graph refused). clamp_min/clamp_max are `clip`
    with one bound; unfold lowers to a Gather of window indices computed from the run-time length."""
    torch.manual_seed(0)
    cfg = transformers.PatchTSTConfig(num_input_channels=3, context_length=32, patch_length=8, patch_stride=4,
                                      num_hidden_layers=1, d_model=32, num_attention_heads=4, ffn_dim=64)
    model = transformers.PatchTSTModel(cfg).eval()

    def forward(past_values):
        with torch.no_grad():
            return model(past_values=past_values).last_hidden_state

    g = torch.Generator().manual_seed(0)
    graph = ivytrace.trace_graph(forward, args=(torch.randn(2, 32, 3, generator=g),))
    for b in (2, 3, 5):
        x = torch.randn(b, 32, 3, generator=g) * 3 + 1
        _check(graph(x), forward(x), f"replay at batch {b}")
    sess = _session(ivytrace.export(forward, tmp_path / "patchtst.onnx", args=(torch.randn(2, 32, 3),)))
    for b in (2, 4):
        x = torch.randn(b, 32, 3, generator=g)
        _check(_ort(sess, x), forward(x), f"onnx at batch {b}")

    def windows(x):   # the window count follows the run-time length (read as a shape: a dynamic dim)
        return x.unfold(1, 4, 3).sum(-1) / x.shape[1] + x.unfold(1, 2, 2).amax(-1)[:, :1]

    path = ivytrace.export(windows, tmp_path / "windows.onnx", args=(torch.randn(2, 11),))
    for n in (11, 4, 17):
        xn = torch.randn(3, n, generator=g)
        _check(_ort(_session(path), xn), windows(xn), f"unfold over length {n}")

    def clamps(x):
        return x.clamp_min(0.25) + torch.clamp_max(x, -0.5) + x.clone().clamp_min_(0.0)

    x = torch.randn(4, 5, generator=g)
    path = ivytrace.export(clamps, tmp_path / "clamps.onnx", args=(x,))
    for b in (4, 7):
        xb = torch.randn(b, 5, generator=g)
        _check(ivytrace.trace_graph(clamps, args=(x,))(xb), clamps(xb), f"replay at batch {b}")
        _check(_ort(_session(path), xb), clamps(xb), f"onnx at batch {b}")


def test_vqmodel_cdist_nearest_code_replays_and_exports(tmp_path):
    """diffusers' VectorQuantizer picks each latent's nearest code by `torch.cdist` + argmin: cdist was not
    in the schemas (trace_graph refused) and had no ONNX lowering. Its p=2 lowering follows torch's choice
    of algorithm (a matrix product past 25 rows), so the distances round as torch's do."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.VQModel(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                              up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16),
                              layers_per_block=1, latent_channels=4, num_vq_embeddings=16, norm_num_groups=4,
                              vq_embed_dim=4, sample_size=16).eval()

    def forward(sample):
        with torch.no_grad():
            return model(sample).sample

    g = torch.Generator().manual_seed(0)
    graph = ivytrace.trace_graph(forward, args=(torch.randn(2, 3, 16, 16, generator=g),))
    sess = _session(ivytrace.export(forward, tmp_path / "vq.onnx", args=(torch.randn(2, 3, 16, 16, generator=g),)))
    for b in (2, 2, 3):
        x = torch.randn(b, 3, 16, 16, generator=g)
        _check(graph(x), forward(x), f"replay at batch {b}")
        _check(_ort(sess, x), forward(x), f"onnx at batch {b}")


def test_numpy_bincount_histogram_searchsorted_replay():
    """np.bincount (a length of max + 1, at least minlength), np.histogram and np.searchsorted were not in
    the schemas: trace_graph refused them. Replayed with labels whose maximum differs from the traced
    one, so bincount's length differs too."""
    def f(labels, x, edges):
        c = np.bincount(labels)
        w = np.bincount(labels, weights=x, minlength=6)
        h, e = np.histogram(x, bins=5, range=(-2.0, 2.0))
        pos = np.searchsorted(edges, x, side="right") + edges.searchsorted(0.5)
        return np.concatenate([c.astype(np.float64), w, h.astype(np.float64), e, pos.astype(np.float64)])

    r = np.random.RandomState(0)
    edges = np.array([-1.0, 0.0, 0.5, 2.0])
    graph = ivytrace.trace_graph(f, args=(r.randint(0, 4, 10), r.randn(10), edges))
    for n, hi in ((10, 4), (10, 9), (7, 2)):
        a = (r.randint(0, hi, n), r.randn(n), edges)
        want = f(*a)
        got = graph(*a)
        _check(got, want, f"replay with {n} labels below {hi}")


def test_torch_max_and_min_over_a_dim_export_with_ties_and_nan(tmp_path):
    """xLSTM's `torch.max(x, dim)` (values and indices) was refused by the ONNX exporter. It lowers to
    ArgMax/ArgMin (the first extreme, as torch) with the value read at that index; a run holding a NaN gives
    NaN and the first NaN's index, as torch does (onnxruntime's ArgMax alone ignores NaN)."""
    def f(x):
        v, i = torch.max(x, dim=1)
        w, j = x.min(-1, keepdim=True)
        return torch.cat([v.flatten(), i.flatten().float(), w.flatten(), j.flatten().float()])

    x = torch.tensor([[[1.0, 3.0, 3.0], [3.0, 0.0, -1.0]], [[float("nan"), 2.0, 2.0], [0.5, float("nan"), 7.0]]])
    path = ivytrace.export(f, tmp_path / "maxdim.onnx", args=(x,))
    sess = _session(path)
    _check(_ort(sess, x), f(x), "ties and NaN")
    g = torch.Generator().manual_seed(0)
    for b in (1, 4):
        xb = torch.randint(-2, 3, (b, 2, 3), generator=g).float()   # many ties
        xb[0, 1, 2] = float("nan")
        _check(_ort(sess, xb), f(xb), f"batch {b}")


def test_xlstm_exports_with_torch_var_and_its_default_correction(tmp_path):
    """xLSTM's layer norm computes `x.var(dim=-1, keepdim=True, unbiased=False)`: torch.var/std had no
    canonical op (no ONNX lowering). They lower through the NumPy var/std lowering with torch's correction
    (1 by default, unlike NumPy's ddof 0; `unbiased=`, `correction=`, and a bool in the dim slot)."""
    torch.manual_seed(0)
    cfg = transformers.xLSTMConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_heads=4, chunk_size=4,
                                   use_cache=False, autocast_kernel_dtype="float32", mode="inference")
    model = transformers.xLSTMModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    path = ivytrace.export(forward, tmp_path / "xlstm.onnx", args=(_ids(2, 8, 0),), allow_specialized=True)
    sess = _session(path)
    for seed in (0, 1):
        ids = _ids(2, 8, seed)
        _check(_ort(sess, ids), forward(ids), f"onnx, seed {seed}")

    def f(x):
        return torch.cat([x.var(1).flatten(), x.std(1, keepdim=True).flatten(), torch.var(x, False).reshape(1),
                          torch.std(x, dim=0, correction=0).flatten()])

    x = torch.randn(3, 4)
    sess = _session(ivytrace.export(f, tmp_path / "var.onnx", args=(x,)))
    for b in (3, 6):
        xb = torch.randn(b, 4)
        _check(_ort(sess, xb), f(xb), f"var/std at batch {b}")


def test_a_loop_over_a_data_dependent_length_is_a_guard_in_onnxruntime_too(tmp_path):
    """`for v in x[x > 0]` (MoE's `for expert in expert_hit`) unrolls into an unbind of the recorded count.
    The replay raised a GuardError at another count, but onnxruntime failed inside the Split, naming no
    guard. The unbind now checks its length first, in a node named as an ivytrace guard."""
    def f(x):
        out = torch.zeros(())
        for v in x[x > 0]:
            out = out + v * 2
        return out

    x = torch.tensor([1.0, -1.0, 2.0, -3.0])
    graph = ivytrace.trace_graph(f, args=(x,))
    sess = _session(ivytrace.export(f, tmp_path / "loop.onnx", args=(x,), allow_specialized=True))
    same = torch.tensor([5.0, -1.0, 7.0, -3.0])
    _check(graph(same), f(same), "replay, as many positives")
    _check(_ort(sess, same), f(same), "onnx, as many positives")
    for other in (torch.tensor([1.0, 1.0, 2.0, -3.0]), torch.tensor([-1.0, -1.0, 2.0, -3.0])):
        with pytest.raises(ivytrace.GuardError):
            graph(other)
        with pytest.raises(Exception, match="ivytrace guard"):
            _ort(sess, other)


def test_mixtral_eager_experts_export_right_or_refuse_by_a_guard(tmp_path):
    """The eager experts loop exports: `nonzero` (NonZero), `torch.where(mask)` (NonZero rows),
    `weights[token_idx, k_idx, None]` (GatherND + Unsqueeze) and `index_add_` (ScatterElements with
    reduction add) had no lowering. Other routings at the traced shape give eager's numbers in
    onnxruntime when as many experts are hit, and another count fails in the loop's unbind guard."""
    forward = _mixtral("eager")
    sess = _session(ivytrace.export(forward, tmp_path / "mixtral.onnx", args=(_ids(2, 3, 0),),
                                    allow_specialized=True))
    counts = {"ok": 0, "guard": 0}
    for seed in range(1, 25):
        ids = _ids(2, 3, seed)
        want = forward(ids)
        try:
            got = _ort(sess, ids)
        except Exception as e:  # noqa: BLE001
            assert "ivytrace guard" in str(e), e
            counts["guard"] += 1
            continue
        _check(got, want, f"onnx, seed {seed}")
        counts["ok"] += 1
    assert counts["ok"] >= 5 and counts["guard"] >= 1, counts


def test_jetmoe_tolist_guard_is_checked_in_onnx_not_silently_wrong(tmp_path):
    """JetMoE splits the routed tokens by `expert_size.tolist()`. Exported with allow_specialized, that guard
    (a list value) was only listed in the model's metadata, never checked: another routing at the traced
    shape ran the recorded split in onnxruntime and gave a silently wrong output (max |d| 0.6). A list-valued
    guard is now checked like a number: the run-time shape and every element against the recorded list."""
    torch.manual_seed(0)
    cfg = transformers.JetMoeConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_key_value_heads=2,
                                    kv_channels=8, intermediate_size=64, num_local_experts=8, num_experts_per_tok=2,
                                    use_cache=False)
    model = transformers.JetMoeModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    sess = _session(ivytrace.export(forward, tmp_path / "jetmoe.onnx", args=(_ids(2, 8, 0),), allow_specialized=True))
    _check(_ort(sess, _ids(2, 8, 0)), forward(_ids(2, 8, 0)), "the traced input")
    for seed in (1, 2, 3):   # other routings: another expert_size list
        with pytest.raises(Exception, match="ivytrace guard"):
            _ort(sess, _ids(2, 8, seed))


@pytest.mark.parametrize("dtype", ["int", "float", "bool"])
def test_a_tolist_guard_checks_shape_and_every_element(dtype, tmp_path):
    def f(x, y):
        sizes = (x > 0).long().sum(0) if dtype == "int" else x[1] if dtype == "float" else x[0] > 0
        vals = sizes.tolist()
        out = y * 2
        if dtype == "int":
            return torch.cat([p.sum(0, keepdim=True) for p in out.split(vals)])
        return out + len([v for v in vals if v])

    x = torch.tensor([[1.0, -1.0, 2.0], [float("nan"), 3.0, -2.0]])
    y = torch.arange(6.0).reshape(3, 2) if dtype == "int" else torch.arange(6.0).reshape(2, 3)
    if dtype == "int":
        x = torch.tensor([[1.0, -1.0, 2.0], [1.0, 3.0, -2.0], [-1.0, 1.0, 1.0]])   # split sizes [2, 2, 2]
        y = torch.arange(12.0).reshape(6, 2)
    sess = _session(ivytrace.export(f, tmp_path / "tolist.onnx", args=(x, y), allow_specialized=True))
    _check(_ort(sess, x, y), f(x, y), "the traced values")
    same = x.clone()
    _check(_ort(sess, same, y * 3), f(same, y * 3), "the same list, other y")
    other = x.clone()
    if dtype == "int":      # split sizes [1, 3, 2]: as many rows, another split
        other[0, 0], other[0, 1] = -1.0, 5.0
    elif dtype == "float":  # [nan, 5, -2]: the NaN still matches, the 5 does not
        other[1, 1] = 5.0
    else:                   # flags [True, True, True]
        other[0, 1] = 5.0
    with pytest.raises(Exception, match="ivytrace guard"):
        _ort(sess, other, y)


def test_mixtral_grouped_mm_experts_export_at_any_routing(tmp_path):
    """transformers' default experts path sorts tokens by expert, counts them with `histc`, multiplies with
    `torch._grouped_mm` and restores the order through `torch.empty_like` + an index write: none had an
    ONNX lowering. No shape depends on the routing there, so every routing and batch matches eager."""
    forward = _mixtral("grouped_mm")
    sess = _session(ivytrace.export(forward, tmp_path / "mixtral_gmm.onnx", args=(_ids(2, 3, 0),),
                                    allow_specialized=True))
    for seed in range(1, 9):
        ids = _ids(2, 3, seed)
        _check(_ort(sess, ids), forward(ids), f"onnx, seed {seed}")
    _check(_ort(sess, _ids(2, 7, 99)), forward(_ids(2, 7, 99)), "onnx at 2x7")


def test_unbind_count_checks_of_one_line_have_distinct_node_names(tmp_path):
    """One source line unbinding once per loop iteration gave several checks of one name: onnxruntime
    refused to load the model (Hiera, ViTDet: "two nodes with same node name")."""
    def g(x):
        out = torch.zeros(())
        for row in x:
            for v in row[row > 0]:
                out = out + v
        return out

    x = torch.tensor([[1.0, -1.0, 2.0], [3.0, -2.0, 1.0]])
    sess = _session(ivytrace.export(g, tmp_path / "rows.onnx", args=(x,), allow_specialized=True))
    _check(_ort(sess, x * 2), g(x * 2), "as many positives per row")
    with pytest.raises(Exception, match="ivytrace guard"):
        _ort(sess, -x)


def test_repeat_interleave_with_output_size_exports(tmp_path):
    # diffusers' Flux rotary embedding: `freqs.cos().repeat_interleave(2, dim=1, output_size=n * 2)`.
    # output_size only checks the length; the export refused it as an unread parameter.
    def rope(pos):
        freqs = torch.outer(pos, 1.0 / 10000 ** (torch.arange(0, 8, 2, dtype=torch.float32) / 8))
        return freqs.cos().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2) * pos[:, None]

    pos = torch.arange(6, dtype=torch.float32)
    sess = _session(ivytrace.export(rope, tmp_path / "rope.onnx", args=(pos,)))
    for n in (6, 11):
        p = torch.arange(n, dtype=torch.float32) * 0.5
        _check(_ort(sess, p), rope(p), f"rope over {n} positions")
