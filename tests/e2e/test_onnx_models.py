"""Real models from transformers/diffusers (small configs, random weights, no hub) exported to ONNX.

Each model is traced by ivytrace at batch 2 (sequence 8), exported with `ivytrace export --to onnx`
and run in onnxruntime against the model itself: on the recorded inputs, and on other batch sizes
and sequence lengths. The sizes the model reads from its inputs' shapes are `ivytrace.sym` values,
lowered to ONNX shape arithmetic, so the exported model follows the input's shape. Where the program
branched on a size (GPT-2/Llama's masking code asks whether the batch differs from the position ids'
batch of 1), the model carries that guard as a check: at batch 1 onnxruntime fails naming the
guard's line, never returns the batch-2 path's answer.
"""
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

import onnx  # noqa: E402

import ivytrace  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _text(model_cls, config):
    def build():
        torch.manual_seed(0)
        return model_cls(config()).eval()
    def inputs(b, s, g):
        return (torch.randint(0, 100, (b, s), generator=g),)
    return build, inputs


def _bert():
    from transformers import BertConfig, BertModel
    build, _ = _text(BertModel, lambda: BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=4, intermediate_size=64))
    def inputs(b, s, g):
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, -2:] = 0                      # a padded row: the mask is read, not specialized away
        return torch.randint(0, 100, (b, s), generator=g), mask
    return build, inputs


def _gpt2():
    from transformers import GPT2Config, GPT2Model
    return _text(GPT2Model, lambda: GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                               use_cache=False, bos_token_id=0, eos_token_id=0))


def _llama():
    from transformers import LlamaConfig, LlamaModel
    return _text(LlamaModel, lambda: LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                                 num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
                                                 use_cache=False))


def _t5():
    from transformers import T5Config, T5EncoderModel
    return _text(T5EncoderModel, lambda: T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                                  num_heads=4))


def _image(model_cls, config, size):
    def build():
        torch.manual_seed(0)
        return model_cls(config()).eval()
    def inputs(b, s, g):
        return (torch.randn(b, 3, size, size, generator=g),)
    return build, inputs


def _vit():
    from transformers import ViTConfig, ViTModel
    return _image(ViTModel, lambda: ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                              intermediate_size=64, image_size=32, patch_size=8), 32)


def _resnet():
    from transformers import ResNetConfig, ResNetModel
    return _image(ResNetModel, lambda: ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
                                                    layer_type="bottleneck"), 64)


def _mobilenet():
    from transformers import MobileNetV2Config, MobileNetV2Model
    return _image(MobileNetV2Model, lambda: MobileNetV2Config(depth_multiplier=0.35, image_size=64), 64)


def _unet():
    diffusers = pytest.importorskip("diffusers")
    def build():
        torch.manual_seed(0)
        return diffusers.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, block_out_channels=(16, 32),
                                     layers_per_block=1, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                     up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8).eval()
    def inputs(b, s, g):
        return torch.randn(b, 3, 16, 16, generator=g), torch.tensor(3)
    return build, inputs


# Input names of each model's traced function (they become the ONNX input names).
NAMES = {"bert": ("input_ids", "attention_mask"), "gpt2": ("input_ids",), "llama": ("input_ids",),
         "t5_encoder": ("input_ids",), "vit": ("pixel_values",), "resnet": ("pixel_values",),
         "mobilenet_v2": ("pixel_values",), "unet2d": ("sample", "timestep")}
# Models whose traced path depends on the batch being other than 1 (a guard checked in the model).
GUARDED_AT_BATCH_1 = {"gpt2", "llama"}

MODELS = {"bert": _bert, "gpt2": _gpt2, "llama": _llama, "t5_encoder": _t5, "vit": _vit, "resnet": _resnet,
          "mobilenet_v2": _mobilenet, "unet2d": _unet}
TEXT = {"bert", "gpt2", "llama", "t5_encoder"}


def _named(names, model):
    """A function of the model's inputs whose parameters carry their names."""
    if len(names) == 1:
        return {"input_ids": lambda input_ids: _run(model, (input_ids,)),
                "pixel_values": lambda pixel_values: _run(model, (pixel_values,))}[names[0]]
    if names == ("input_ids", "attention_mask"):
        return lambda input_ids, attention_mask: _run(model, (input_ids, attention_mask))
    return lambda sample, timestep: _run(model, (sample, timestep))


def _run(model, args):
    with torch.no_grad():
        out = model(*args)
    return out[0] if isinstance(out, tuple) else (out.sample if hasattr(out, "sample") else out[0])


@pytest.fixture(scope="module")
def exported(cli, tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            build, inputs = MODELS[name]()
            model = build()
            g = torch.Generator().manual_seed(1)
            args = inputs(2, 8, g)
            d = tmp_path_factory.mktemp(name)
            fn = _named(NAMES[name], model)
            graph = ivytrace.trace_graph(fn, args=args)
            trace = graph.save(d / f"{name}.ivt")
            out = d / f"{name}.onnx"
            proc = cli("export", trace, "--to", "onnx", "-o", out, "--allow-specialized")
            cache[name] = (model, inputs, args, out, proc)
        return cache[name]
    return get


def _ort(path, args):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("name", list(MODELS))
def test_model_exports_and_matches_on_the_recorded_inputs(name, exported):
    model, inputs, args, out, proc = exported(name)
    assert proc.returncode == 0, proc.stderr
    want = _run(model, args).numpy()
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == [n for n in NAMES[name] if n != "timestep"] + (
        ["timestep"] if name == "unet2d" else [])
    np.testing.assert_allclose(_ort(out, args), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", list(MODELS))
def test_model_at_other_batch_sizes_and_lengths(name, exported):
    model, inputs, args, out, proc = exported(name)
    assert proc.returncode == 0, proc.stderr
    g = torch.Generator().manual_seed(2)
    sizes = [(3, 8), (5, 8)] + ([(3, 5), (1, 13), (4, 32)] if name in TEXT else [(1, 8)])
    for b, s in sizes:
        other = inputs(b, s, g)
        want = _run(model, other).numpy()
        if b == 1 and name in GUARDED_AT_BATCH_1:
            with pytest.raises(Exception, match=r"ivytrace guard \d+: .*masking_utils.py"):
                _ort(out, other)
            continue
        got = _ort(out, other)
        assert got.shape == want.shape, f"{name} at batch {b}, sequence {s}"
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"{name} at batch {b}, sequence {s}")


def test_gpt2_reads_its_dims_from_the_input_not_from_every_activation(exported):
    # GPT-2's position ids are a Range over the sequence length, whose length ONNX shape inference
    # cannot work out; declared (AnnotateRangeLengths), and with the guards' gate a known 0-d bool
    # (CombineGuardChecks), every activation's dims are known, so `view(b, t, ...)` reads b and t
    # from input_ids. Left: the Shape of input_ids (there were about ten per layer, then two: the
    # causal mask's lengths, now 0-d dim reads that point at the input too). The model still follows batch and length
    # (test_model_at_other_batch_sizes_and_lengths).
    model, inputs, args, out, proc = exported("gpt2")
    m = onnx.load(str(out), load_external_data=False)
    inputs_ = {i.name for i in m.graph.input}
    reads = [n for n in m.graph.node if n.op_type == "Shape" and n.input[0] not in inputs_]
    assert reads == [], [n.name for n in reads]


@pytest.mark.parametrize("name", sorted(TEXT))
def test_text_models_declare_batch_and_sequence_dynamic(name, exported):
    model, inputs, args, out, proc = exported(name)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for i in sess.get_inputs():
        assert i.shape == ["batch", "input_ids_dim1"], (i.name, i.shape)



@pytest.mark.parametrize("name", ["bert", "gpt2", "t5_encoder"])
def test_head_reshapes_have_constant_shapes(name, exported):
    # `view(b, t, heads, d)` of a value whose dims are b and t is Reshape(x, [0, 0, heads, d]), and
    # the linear layers GPT-2 writes as view(-1, c) -> addmm -> view(b, t, n) are MatMul + Add
    # (ConstantKnownShapes): shape inference then knows the activations' dims, and no layer reads
    # a size from an activation. What is left computed: GPT-2's `view(b, t, c)` of its merged
    # heads, (b * t, c), which has two sizes a constant shape cannot copy (and its c_proj, a
    # view(-1, c) of a 4-d value, stays a Gemm). The models still follow
    # batch and length (test_model_at_other_batch_sizes_and_lengths). BERT takes input_ids and
    # attention_mask, both [batch, seq]: its dims are known from input_ids (the mask's dims of the
    # same names are not trusted to agree, onnxruntime does not check them).
    model, inputs, args, out, proc = exported(name)
    m = onnx.load(str(out), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    computed = [n.name for n in m.graph.node if n.op_type == "Reshape" and n.input[1] not in inits
                and not n.name.startswith("ivytrace guard")]
    assert len(computed) <= (model.config.n_layer if name == "gpt2" else 0), computed
    if name == "gpt2":   # of the four linears a layer has, only c_proj over the merged heads stays a Gemm
        assert sum(n.op_type == "Gemm" for n in m.graph.node) <= model.config.n_layer
