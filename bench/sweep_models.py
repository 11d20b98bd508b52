"""Differential sweep over real models nobody here wrote (not run in CI).

Each case is a program (transformers / diffusers model with a small config and random weights,
flax.linen, jax.numpy or NumPy) with named inputs at a given (batch, sequence). For each:

  replay: ivytrace.trace_graph(fn, args=inputs(2, 8)), then the graph against eager at the traced
          inputs, at three other inputs of the traced shape (label 2x8#k: another MoE routing, another
          pivot row) and at other (batch, sequence) sizes. A GuardError anywhere but the traced inputs
          is acceptable ("guard"); a different number is WRONG.
  module: the same with the transformers model itself, trace_graph(model, kwargs=...) (its
          parameters read live on every call).
  onnx:   ivytrace.export(fn, path, args=inputs(2, 8), allow_specialized=True), then onnxruntime
          against eager at the recorded inputs and at other sizes (rtol 1e-4, atol 1e-5). An
          onnxruntime failure naming an ivytrace guard is acceptable ("guard").

Every case runs in its own subprocess (a crash or a hang is one row). Usage:

    HF_HUB_OFFLINE=1 .venv/bin/python bench/sweep_models.py [NAME ...] [--timeout 300]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RTOL, ATOL = 1e-4, 1e-5
TRACE_AT = (2, 8)
OTHER = ((3, 5), (4, 16))
SAME_SHAPE_SEEDS = (2, 3, 4)   # other values at the traced shape: another MoE routing, another pivot


def _points(base):
    """(b, s, seed, label) to check: the traced inputs, other values at the traced shape, other shapes."""
    b0, s0 = TRACE_AT
    pts = [(b0, s0, 1, f"{b0}x{s0}")]
    pts += [(b0, s0, base + 5 + k, f"{b0}x{s0}#{k + 2}") for k in range(len(SAME_SHAPE_SEEDS))]
    pts += [(b, s, base + i, f"{b}x{s}") for i, (b, s) in enumerate(OTHER)]
    return pts


# --------------------------------------------------------------------------------------- torch
def _torch_first(out):
    for k in ("last_hidden_state", "logits", "sample", "latent_dist", "pred_masks"):
        v = getattr(out, k, None)
        if v is not None:
            return v.mean if k == "latent_dist" else v
    if isinstance(out, (tuple, list)):
        return out[0]
    return out


def _hf(cls_name, cfg_name, arg="input_ids", **cfg):
    """A transformers model of input_ids (or another single input), first output."""
    def case():
        import torch
        import transformers
        torch.manual_seed(0)
        model = getattr(transformers, cls_name)(getattr(transformers, cfg_name)(**cfg)).eval()
        return model
    return case, arg


def _text_case(cls_name, cfg_name, **cfg):
    case, _ = _hf(cls_name, cfg_name, **cfg)

    def build():
        import torch
        model = case()

        def forward(input_ids):
            with torch.no_grad():
                return _torch_first(model(input_ids=input_ids))

        def inputs(b, s, seed):
            return (torch.randint(3, 99, (b, s), generator=torch.Generator().manual_seed(seed)),)
        forward.model = model
        return forward, inputs
    return build


def _text_mask_case(cls_name, cfg_name, **cfg):
    case, _ = _hf(cls_name, cfg_name, **cfg)

    def build():
        import torch
        model = case()

        def forward(input_ids, attention_mask):
            with torch.no_grad():
                return _torch_first(model(input_ids=input_ids, attention_mask=attention_mask))

        def inputs(b, s, seed):
            ids = torch.randint(3, 99, (b, s), generator=torch.Generator().manual_seed(seed))
            mask = torch.ones(b, s, dtype=torch.long)
            mask[0, -2:] = 0
            return ids, mask
        forward.model = model
        return forward, inputs
    return build


def _image_case(cls_name, cfg_name, size, channels=3, vary=False, **cfg):
    case, _ = _hf(cls_name, cfg_name, **cfg)

    def build():
        import torch
        model = case()

        def forward(pixel_values):
            with torch.no_grad():
                return _torch_first(model(pixel_values=pixel_values))

        def inputs(b, s, seed):   # the batch follows b; with vary, the image size follows s too
            n = size if not vary or s == TRACE_AT[1] else size + 8 * (s % 3 + 1)
            return (torch.randn(b, channels, n, n, generator=torch.Generator().manual_seed(seed)),)
        forward.model = model
        return forward, inputs
    return build


def _audio_case(cls_name, cfg_name, length, **cfg):
    case, _ = _hf(cls_name, cfg_name, **cfg)

    def build():
        import torch
        model = case()

        def forward(input_values):
            with torch.no_grad():
                return _torch_first(model(input_values=input_values))

        def inputs(b, s, seed):   # s scales the length
            return (torch.randn(b, length * s // 8, generator=torch.Generator().manual_seed(seed)),)
        forward.model = model
        return forward, inputs
    return build


def _whisper_encoder():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
                                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                     decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=32,
                                     max_target_positions=32, pad_token_id=1, bos_token_id=1, eos_token_id=2,
                                     decoder_start_token_id=1)
    model = transformers.WhisperModel(cfg).get_encoder().eval()

    def forward(input_features):
        with torch.no_grad():
            return model(input_features=input_features).last_hidden_state

    def inputs(b, s, seed):   # Whisper takes exactly 2 * max_source_positions frames
        return (torch.randn(b, 16, 64, generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _t5_full():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1,
                                num_heads=4, decoder_start_token_id=0, use_cache=False)
    model = transformers.T5Model(cfg).eval()

    def forward(input_ids, decoder_input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids, decoder_input_ids=decoder_input_ids).last_hidden_state

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randint(3, 99, (b, s), generator=g), torch.randint(3, 99, (b, s // 2 + 1), generator=g)
    return forward, inputs


def _clip_text():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.CLIPTextConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, max_position_embeddings=64, eos_token_id=2)
    model = transformers.CLIPTextModel(cfg).eval()

    def forward(input_ids):
        with torch.no_grad():
            out = model(input_ids=input_ids)
            return out.pooler_output

    def inputs(b, s, seed):
        return (torch.randint(3, 99, (b, s), generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _vae():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(8, 16), layers_per_block=1,
                                    down_block_types=("DownEncoderBlock2D",) * 2,
                                    up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4,
                                    norm_num_groups=4, sample_size=16).eval()

    def forward(sample):
        with torch.no_grad():
            return model(sample, sample_posterior=False).sample

    def inputs(b, s, seed):
        return (torch.randn(b, 3, 16, 16, generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _unet_cond():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, block_out_channels=(16, 32), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16, attention_head_dim=4, norm_num_groups=8).eval()

    def forward(sample, timestep, encoder_hidden_states):
        with torch.no_grad():
            return model(sample, timestep, encoder_hidden_states).sample

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(b, 4, 16, 16, generator=g), torch.tensor(7.0), torch.randn(b, s, 16, generator=g))
    return forward, inputs


# ---------------------------------------------------------------------------------- flax / jax
def _flax_transformer():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import flax.linen as nn

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            h = nn.MultiHeadDotProductAttention(num_heads=4, qkv_features=32, deterministic=True)(h, h)
            x = x + nn.Dropout(0.1, deterministic=True)(h)
            h = nn.Dense(64)(nn.LayerNorm()(x))
            x = x + nn.Dense(32)(nn.gelu(h))
            return nn.BatchNorm(use_running_average=True)(x)

    m = Block()
    x0 = jnp.zeros((2, 8, 32), jnp.float32)
    params = m.init(jax.random.PRNGKey(0), x0)
    params = jax.tree_util.tree_map(lambda p: p + 0.1 * jax.random.normal(jax.random.PRNGKey(1), p.shape), params)

    def forward(x):
        return m.apply(params, x)

    def inputs(b, s, seed):
        return (jnp.asarray(np.random.RandomState(seed).randn(b, s, 32).astype(np.float32)),)
    return forward, inputs


def _jnp_program():
    import jax.numpy as jnp
    import numpy as np

    def forward(x, w):
        h = jnp.tanh(x @ w)
        h = h - h.max(axis=-1, keepdims=True)
        p = jnp.exp(h) / jnp.exp(h).sum(-1, keepdims=True)
        idx = jnp.argmax(p, axis=-1)
        picked = jnp.take_along_axis(p, idx[..., None], axis=-1)
        return jnp.concatenate([p, picked, jnp.cumsum(p, axis=1)], axis=-1).mean(axis=0)

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return jnp.asarray(r.randn(b, s, 16).astype(np.float32)), jnp.asarray(r.randn(16, 8).astype(np.float32))
    return forward, inputs


# -------------------------------------------------------------------------------------- numpy
def _np_softmax_layernorm():
    import numpy as np

    def forward(x, gamma):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        mu = p.mean(-1, keepdims=True)
        var = ((p - mu) ** 2).mean(-1, keepdims=True)
        return (p - mu) / np.sqrt(var + 1e-5) * gamma

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return r.randn(b, s, 16).astype(np.float32), r.randn(16).astype(np.float32)
    return forward, inputs


def _np_kmeans():
    import numpy as np

    def forward(points, centers):
        for _ in range(3):
            d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
            assign = d.argmin(axis=1)
            onehot = (assign[:, None] == np.arange(centers.shape[0])[None, :]).astype(points.dtype)
            counts = onehot.sum(0)[:, None]
            centers = (onehot.T @ points) / np.maximum(counts, 1.0)
        return centers

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return r.randn(b * s * 4, 3).astype(np.float32), r.randn(4, 3).astype(np.float32)
    return forward, inputs


def _np_fancy():
    import numpy as np

    def forward(x, idx):
        y = x[idx]                       # gather rows
        y = y[:, ::2] * 2.0
        z = x[np.arange(x.shape[0]), idx % x.shape[1]]
        m = np.where(y > 0, y, 0.1 * y)
        return m.sum(axis=1) + z[: m.shape[0]].sum()

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        n = b * s
        return r.randn(n, 6).astype(np.float32), r.randint(0, n, size=(n,)).astype(np.int64)
    return forward, inputs


def _np_intmath():
    import numpy as np

    def forward(x, y):
        a = np.stack([x // 3, x % 3, np.floor_divide(x, -2), np.remainder(x, -4), np.sign(x), np.abs(x),
                      np.cumsum(x, axis=-1), np.sort(x, axis=-1), np.clip(x, -5, 5), np.maximum(x, 2)], 0)
        b = y / 7.0 + np.floor(y) - np.round(y * 10) / 10 + np.mean(x, axis=-1, keepdims=True)   # float64
        return a.astype(np.float64).sum(0) + b + np.where(x > 0, y, -y) + (x > 0).sum(-1, keepdims=True)

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return r.randint(-50, 50, (b, s)).astype(np.int64), r.randn(b, s) * 10   # float64

    return forward, inputs


def _torch_intmath():
    import torch

    def forward(x, y):
        a = torch.stack([torch.div(x, 3, rounding_mode="floor"), torch.div(x, -3, rounding_mode="trunc"), x % 3,
                         torch.fmod(x, 3), torch.remainder(x, -4), x.sign(), x.abs(), x.cumsum(-1),
                         x.clamp(-5, 5), torch.maximum(x, torch.tensor(2))], 0)
        b = y / 7 + y.floor() - torch.round(y, decimals=1) + x.float().mean(-1, keepdim=True) + x / 4
        top = torch.topk(y, 3, dim=-1).values.sum(-1, keepdim=True)
        return a.double().sum(0) + b + torch.where(x > 0, y, -y) + (x > 0).sum(-1, keepdim=True) + top

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randint(-50, 50, (b, s), generator=g), torch.randn(b, s, generator=g, dtype=torch.float64) * 10

    return forward, inputs


def _np_boolmask():
    import numpy as np

    def forward(x):
        pos = x[x > 0]                   # a data-dependent shape
        x2 = x.copy()
        x2[x2 < -1] = 0.0                # a masked write
        x2[:, 0] += 1.0
        return np.concatenate([np.array([pos.sum(), pos.size], dtype=x.dtype), x2.ravel()])

    def inputs(b, s, seed):
        return (np.random.RandomState(seed).randn(b, s).astype(np.float32),)
    return forward, inputs


# ------------------------------------------------------------------------------- round 2 cases
def _seq2seq_case(cls_name, cfg_name, **cfg):
    """An encoder-decoder called with input_ids and decoder_input_ids (half as long, + 1)."""
    case, _ = _hf(cls_name, cfg_name, **cfg)

    def build():
        import torch
        model = case()

        def forward(input_ids, decoder_input_ids):
            with torch.no_grad():
                return _torch_first(model(input_ids=input_ids, decoder_input_ids=decoder_input_ids))

        def inputs(b, s, seed):
            g = torch.Generator().manual_seed(seed)
            return torch.randint(3, 99, (b, s), generator=g), torch.randint(3, 99, (b, s // 2 + 1), generator=g)
        forward.model = model
        return forward, inputs
    return build


def _whisper_full():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
                                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                     decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=32,
                                     max_target_positions=32, pad_token_id=1, bos_token_id=1, eos_token_id=2,
                                     decoder_start_token_id=1, use_cache=False)
    model = transformers.WhisperModel(cfg).eval()

    def forward(input_features, decoder_input_ids):
        with torch.no_grad():
            return model(input_features=input_features, decoder_input_ids=decoder_input_ids).last_hidden_state

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 16, 64, generator=g), torch.randint(3, 99, (b, s), generator=g)
    forward.model = model
    return forward, inputs


def _llama_structured():
    """output_hidden_states / output_attentions: a structured output, all of it compared (stacked)."""
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=64, use_cache=False,
                                   attn_implementation="eager")
    model = transformers.LlamaModel(cfg).eval()

    def forward(input_ids, attention_mask):
        with torch.no_grad():
            out = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True,
                        output_attentions=True)
            return torch.cat([t.flatten() for t in out.hidden_states + out.attentions])

    def inputs(b, s, seed):
        ids = torch.randint(3, 99, (b, s), generator=torch.Generator().manual_seed(seed))
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, -2:] = 0
        return ids, mask
    return forward, inputs


def _bert_train_mode():
    """A model left in train() mode with dropout p=0 (BatchNorm-free): dropout calls recorded as ops."""
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                  intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertModel(cfg).train()

    def forward(input_ids):
        with torch.no_grad():
            return model(input_ids=input_ids).last_hidden_state

    def inputs(b, s, seed):
        return (torch.randint(3, 99, (b, s), generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _resnet_train_bn():
    """ResNet in train() mode: BatchNorm uses the batch's statistics and updates running stats."""
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")
    model = transformers.ResNetModel(cfg).train()

    def forward(pixel_values):
        with torch.no_grad():
            return model(pixel_values=pixel_values).last_hidden_state

    def inputs(b, s, seed):
        return (torch.randn(b, 3, 32, 32, generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _unet1d():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.UNet1DModel(block_out_channels=(8, 8, 16, 16), in_channels=4, out_channels=4,
                                  time_embedding_type="positional", use_timestep_embedding=True,
                                  flip_sin_to_cos=False, freq_shift=1.0, out_block_type="OutConv1DBlock",
                                  mid_block_type="MidResTemporalBlock1D", down_block_types=("DownResnetBlock1D",) * 4,
                                  up_block_types=("UpResnetBlock1D",) * 3, act_fn="swish", norm_num_groups=8,
                                  layers_per_block=1, extra_in_channels=0).eval()

    def forward(sample, timestep):
        with torch.no_grad():
            return model(sample, timestep).sample

    def inputs(b, s, seed):   # the length follows s (2x, a multiple of the 3 down-samplings' 8)
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 4, 16 * (s // 4 if s % 4 == 0 else 2), generator=g), torch.rand(b, generator=g) * 10
    return forward, inputs


def _unet2d():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, block_out_channels=(8, 16),
                                  layers_per_block=1, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                  up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4,
                                  attention_head_dim=4).eval()

    def forward(sample, timestep):
        with torch.no_grad():
            return model(sample, timestep).sample

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 3, 16, 16, generator=g), torch.full((b,), float(s))
    return forward, inputs


def _vae_tiny():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.AutoencoderTiny(in_channels=3, out_channels=3, encoder_block_out_channels=(8, 8),
                                      decoder_block_out_channels=(8, 8), num_encoder_blocks=(1, 1),
                                      num_decoder_blocks=(1, 1), latent_channels=4).eval()

    def forward(sample):
        with torch.no_grad():
            return model(sample).sample

    def inputs(b, s, seed):
        return (torch.randn(b, 3, 16, 16, generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _transformer2d():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.Transformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=16,
                                         num_layers=1, norm_num_groups=4, cross_attention_dim=16).eval()

    def forward(hidden_states, encoder_hidden_states):
        with torch.no_grad():
            return model(hidden_states, encoder_hidden_states=encoder_hidden_states).sample

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 16, 4, 4, generator=g), torch.randn(b, s, 16, generator=g)
    return forward, inputs


def _vit_mae():
    """ViTMAE shuffles its patches by argsort(noise): the noise is an input (else eager is random)."""
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.ViTMAEConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                    image_size=32, patch_size=8, mask_ratio=0.5)
    model = transformers.ViTMAEModel(cfg).eval()

    def forward(pixel_values, noise):
        with torch.no_grad():
            out = model(pixel_values=pixel_values, noise=noise)
            return torch.cat([out.last_hidden_state.flatten(1), out.mask, out.ids_restore.float()], 1)

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 3, 32, 32, generator=g), torch.rand(b, 16, generator=g)
    return forward, inputs


def _torch_fops2():
    """The torch_fops ops that have schemas (interpolate modes, einsum, pads, tril/triu, topk, ...)."""
    import torch
    import torch.nn.functional as F

    def forward(x, idx):
        b, c, h, w = x.shape
        u = F.unfold(x, kernel_size=2, stride=2)
        up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        dn = F.interpolate(up, size=(h, w), mode="nearest")
        bc = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True)[..., ::2, ::2]
        ar = F.interpolate(x, size=(h + 3, w + 1), mode="bilinear", align_corners=True)[..., :h, :w]
        nx = F.interpolate(x, scale_factor=1.5, mode="nearest-exact")[..., :h, :w]
        e = torch.einsum("bchw,bcxw->bhx", x, x * 0.5)
        cs = torch.cumsum(x, dim=-1)
        tk = torch.topk(x.flatten(2), 3, dim=-1)
        g = torch.gather(x.flatten(2), 2, tk.indices)
        mf = x.masked_fill(x > 0.5, -1.0)
        p1 = F.pad(x, (1, 2, 0, 1), mode="reflect")[..., :h, :w]
        p2 = F.pad(x, (1, 1, 1, 1), mode="replicate")[..., 1:-1, 1:-1]
        p3 = F.pad(x, (1, 1, 2, 0), mode="circular")[..., 2:, 1:-1]
        p4 = F.pad(x, (0, 1, 1, 0), value=0.5)[..., 1:, :-1]
        t = torch.tril(x, diagonal=-1) + torch.triu(x, diagonal=2)
        bo = ((x > 0) & ~(x > 1) | (x < -2)).float() + torch.logical_xor(x > 0, idx.float()[:, None, None, None] > 1).float()
        am = x.amax(dim=(2, 3), keepdim=True) - x.amin(dim=(2, 3), keepdim=True)
        sel = torch.index_select(x, 0, idx)
        mp = F.max_pool2d(x, 3, stride=1, padding=1) + F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        ad = F.adaptive_avg_pool2d(x, (2, 4)).mean()
        out = dn + bc + ar + nx + cs + mf + p1 + p2 + p3 + p4 + t + bo + am + sel + mp + ad
        return torch.cat([out.flatten(1), e.flatten(1), u.flatten(1), g.flatten(1), tk.values.flatten(1),
                          tk.indices.flatten(1).float()], 1)

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 3, s, s, generator=g), torch.randint(0, b, (b,), generator=g)
    return forward, inputs


def _flax_cnn_bn():
    """flax.linen CNN with BatchNorm in training mode: batch_stats mutable, returned with the output."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import flax.linen as nn

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            x = nn.Conv(8, (3, 3), padding="SAME")(x)
            x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
            x = nn.relu(x)
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = nn.Conv(8, (3, 3), strides=(2, 2))(x)
            x = nn.BatchNorm(use_running_average=not train)(x)
            return nn.Dense(4)(x.mean(axis=(1, 2)))

    m = CNN()
    variables = m.init(jax.random.PRNGKey(0), jnp.zeros((2, 8, 8, 3)), train=False)

    def forward(x):
        y, upd = m.apply(variables, x, train=True, mutable=["batch_stats"])
        stats = jax.tree_util.tree_leaves(upd["batch_stats"])
        return jnp.concatenate([y.ravel()] + [s.ravel() for s in stats])

    def inputs(b, s, seed):
        return (jnp.asarray(np.random.RandomState(seed).randn(b, s, s, 3).astype(np.float32)),)
    return forward, inputs


def _torch_fops():
    """torch.nn.functional ops unusual enough to miss schemas."""
    import torch
    import torch.nn.functional as F

    def forward(x, idx):
        b, c, h, w = x.shape
        u = F.unfold(x, kernel_size=2, stride=2)                                     # (b, c*4, L)
        f = F.fold(u * 2.0, output_size=(h, w), kernel_size=2, stride=2)
        up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        dn = F.interpolate(up, size=(h, w), mode="nearest")
        bc = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True)[..., ::2, ::2]
        e = torch.einsum("bchw,bcxw->bhx", x, f)                                    # (b, h, h)
        cs = torch.cumsum(x, dim=-1) + torch.cumprod(torch.sigmoid(x), dim=2)
        tk = torch.topk(x.flatten(2), 3, dim=-1)
        g = torch.gather(x.flatten(2), 2, tk.indices)                              # == values
        sc = torch.zeros_like(x.flatten(2)).scatter(2, tk.indices, 1.0)
        sa = torch.zeros_like(x.flatten(2)).scatter_add(2, tk.indices, g)
        mf = x.masked_fill(x > 0.5, -1.0)
        p1 = F.pad(x, (1, 2, 0, 1), mode="reflect")[..., :h, :w]
        p2 = F.pad(x, (1, 1, 1, 1), mode="replicate")[..., 1:-1, 1:-1]
        p3 = F.pad(x, (1, 1, 2, 0), mode="circular")[..., 2:, 1:-1]
        r = torch.roll(x, shifts=(1, -2), dims=(2, 3))
        t = torch.tril(x, diagonal=-1) + torch.triu(x, diagonal=2)
        bk = torch.bucketize(x, torch.tensor([-1.0, 0.0, 0.5, 1.0])).float()
        bo = ((x > 0) & ~(x > 1) | (x < -2)).float() + torch.logical_xor(x > 0, idx.float()[:, None, None, None] > 1).float()
        lse = torch.logsumexp(x, dim=1, keepdim=True)
        am = x.amax(dim=(2, 3), keepdim=True) - x.amin(dim=(2, 3), keepdim=True)
        grid = torch.tanh(x[:, :2].permute(0, 2, 3, 1))
        gs = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        sel = torch.index_select(x, 0, idx)
        out = (f + dn + bc + cs + mf + p1 + p2 + p3 + r + t + bk + bo + lse + am + gs + sel)
        return torch.cat([out.flatten(1), e.flatten(1), sc.flatten(1), sa.flatten(1), tk.values.flatten(1)], 1)

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(b, 3, s, s, generator=g), torch.randint(0, b, (b,), generator=g)
    return forward, inputs


# ------------------------------------------------------------------------------- round 3 cases
def _moe_case(cls_name, cfg_name, **cfg):
    """A mixture-of-experts decoder with a padded mask: routing (topk, one_hot, nonzero, index_add_) depends
    on the values, so the same shape with other tokens is another path (the runner replays 3 more seeds at the
    traced shape)."""
    return _text_mask_case(cls_name, cfg_name, **cfg)


def _fixed_len(build, n):
    """A case whose model takes one sequence length only (the batch still follows b)."""
    def wrapped():
        forward, inputs = build()
        return forward, (lambda b, s, seed: inputs(b, n, seed))
    return wrapped


def _ssm_case(cls_name, cfg_name, **cfg):
    """A recurrent / state-space model of input_ids (no mask: several of them take none)."""
    return _text_case(cls_name, cfg_name, **cfg)


def _ast():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.ASTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                 patch_size=16, frequency_stride=8, time_stride=8, max_length=48, num_mel_bins=32)
    model = transformers.ASTModel(cfg).eval()

    def forward(input_values):
        with torch.no_grad():
            return model(input_values=input_values).last_hidden_state

    def inputs(b, s, seed):   # the spectrogram's size is fixed by the position embeddings
        return (torch.randn(b, 48, 32, generator=torch.Generator().manual_seed(seed)),)
    forward.model = model
    return forward, inputs


def _patchtst():
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.PatchTSTConfig(num_input_channels=3, context_length=32, patch_length=8, patch_stride=4,
                                      num_hidden_layers=1, d_model=32, num_attention_heads=4, ffn_dim=64,
                                      scaling="std", norm_type="batchnorm", prediction_length=8)
    model = transformers.PatchTSTModel(cfg).eval()

    def forward(past_values, past_observed_mask):
        with torch.no_grad():
            out = model(past_values=past_values, past_observed_mask=past_observed_mask)
            return torch.cat([out.last_hidden_state.flatten(1), out.loc.flatten(1), out.scale.flatten(1)], 1)

    def inputs(b, s, seed):   # the batch follows b; the context length is fixed by the config
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(b, 32, 3, generator=g) * 3 + 1
        m = (torch.rand(b, 32, 3, generator=g) > 0.1).float()
        return x, m
    return forward, inputs


def _controlnet():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.ControlNetModel(
        in_channels=4, block_out_channels=(16, 32), layers_per_block=1, cross_attention_dim=16,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), attention_head_dim=(2, 4), norm_num_groups=8,
        conditioning_embedding_out_channels=(8, 16)).eval()

    def forward(sample, timestep, encoder_hidden_states, controlnet_cond):
        with torch.no_grad():
            out = model(sample, timestep, encoder_hidden_states, controlnet_cond, conditioning_scale=0.7)
            return torch.cat([t.flatten(1) for t in out.down_block_res_samples] + [out.mid_block_res_sample.flatten(1)], 1)

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(b, 4, 16, 16, generator=g), torch.tensor(11), torch.randn(b, s, 16, generator=g),
                torch.randn(b, 3, 32, 32, generator=g))
    return forward, inputs


def _unet_cond_heads():
    """UNet2DConditionModel with an attention_head_dim per block, a cross-attention mid block and a class-free
    timestep per sample (a 1-d timestep tensor)."""
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, block_out_channels=(16, 32), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
        attention_head_dim=(2, 4), norm_num_groups=8, transformer_layers_per_block=(1, 2),
        upcast_attention=True).eval()

    def forward(sample, timestep, encoder_hidden_states):
        with torch.no_grad():
            return model(sample, timestep, encoder_hidden_states).sample

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(b, 4, 16, 16, generator=g), torch.randint(0, 1000, (b,), generator=g),
                torch.randn(b, s, 16, generator=g))
    return forward, inputs


def _vqmodel():
    """VQModel: the quantizer picks each latent's nearest code (argmin over distances): a value-dependent
    gather."""
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.VQModel(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                              up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16),
                              layers_per_block=1, latent_channels=4, num_vq_embeddings=16, norm_num_groups=4,
                              vq_embed_dim=4, sample_size=16).eval()

    def forward(sample):
        with torch.no_grad():
            return model(sample).sample

    def inputs(b, s, seed):
        return (torch.randn(b, 3, 16, 16, generator=torch.Generator().manual_seed(seed)),)
    return forward, inputs


def _prior_transformer():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.PriorTransformer(num_attention_heads=2, attention_head_dim=8, num_layers=1, embedding_dim=16,
                                       num_embeddings=4, additional_embeddings=4).eval()

    def forward(hidden_states, timestep, proj_embedding, encoder_hidden_states, attention_mask):
        with torch.no_grad():
            return model(hidden_states, timestep, proj_embedding, encoder_hidden_states=encoder_hidden_states,
                         attention_mask=attention_mask).predicted_image_embedding

    def inputs(b, s, seed):   # the text length is fixed by num_embeddings; the mask pads the last token
        g = torch.Generator().manual_seed(seed)
        mask = torch.ones(b, 4, dtype=torch.bool)
        mask[0, -1] = False
        return (torch.randn(b, 16, generator=g), torch.tensor(5), torch.randn(b, 16, generator=g),
                torch.randn(b, 4, 16, generator=g), mask)
    return forward, inputs


# hand-written scientific NumPy / jax.numpy
def _np_kalman():
    """A constant-velocity Kalman filter over a sequence of measurements: `for t in range(z.shape[0])`."""
    import numpy as np
    F = np.array([[1.0, 1.0], [0.0, 1.0]], np.float32)
    H = np.array([[1.0, 0.0]], np.float32)
    Q = np.eye(2, dtype=np.float32) * 0.01
    R = np.array([[0.5]], np.float32)

    def forward(z, x0):
        x, P = x0, np.eye(2, dtype=np.float32)
        out = []
        for t in range(z.shape[0]):
            x = F @ x
            P = F @ P @ F.T + Q
            S = H @ P @ H.T + R
            K = P @ H.T @ np.linalg.inv(S)
            x = x + K @ (z[t][:, None] - H @ x)
            P = (np.eye(2, dtype=np.float32) - K @ H) @ P
            out.append(x[:, 0])
        return np.stack(out)

    def inputs(b, s, seed):   # the sequence length follows s
        r = np.random.RandomState(seed)
        return (np.cumsum(r.randn(s, 1), axis=0).astype(np.float32), r.randn(2, 1).astype(np.float32))
    return forward, inputs


def _np_rnn():
    """An Elman RNN over time in NumPy: `for t in range(x.shape[0])`, then a softmax cross-entropy with
    integer labels (fancy indexing of the log-probabilities)."""
    import numpy as np
    r = np.random.RandomState(0)
    Wx, Wh, Wo = (r.randn(6, 16) * 0.3).astype(np.float32), (r.randn(16, 16) * 0.3).astype(np.float32), \
        (r.randn(16, 5) * 0.3).astype(np.float32)

    def forward(x, labels):
        h = np.zeros((x.shape[1], 16), np.float32)
        hs = []
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ Wx + h @ Wh)
            hs.append(h)
        logits = np.stack(hs) @ Wo                                     # (T, B, 5)
        m = logits.max(-1, keepdims=True)
        logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
        T, B = labels.shape
        nll = -logp[np.arange(T)[:, None], np.arange(B)[None, :], labels]
        return np.concatenate([nll.mean(0), logp.reshape(-1)])

    def inputs(b, s, seed):   # time follows s, batch follows b
        r = np.random.RandomState(seed)
        return r.randn(s, b, 6).astype(np.float32), r.randint(0, 5, (s, b)).astype(np.int64)
    return forward, inputs


def _np_gauss():
    """Gaussian elimination with partial pivoting: the pivot row is an argmax, so other values at the same
    shape take another path (row swaps by fancy indexing)."""
    import numpy as np

    def forward(A, b):
        A = A.copy()
        b = b.copy()
        n = A.shape[0]
        for k in range(n - 1):
            p = k + np.argmax(np.abs(A[k:, k]))
            if p != k:
                A[[k, p]] = A[[p, k]]
                b[[k, p]] = b[[p, k]]
            f = A[k + 1:, k] / A[k, k]
            A[k + 1:] -= f[:, None] * A[k]
            b[k + 1:] -= f * b[k]
        x = np.zeros_like(b)
        for i in range(n - 1, -1, -1):
            x[i] = (b[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
        return x

    def inputs(b, s, seed):   # an s x s system whose pivot rows differ from seed to seed
        r = np.random.RandomState(seed)
        return (r.randn(s, s) + np.eye(s)).astype(np.float64), r.randn(s).astype(np.float64)
    return forward, inputs


def _np_hist():
    """Histograms: np.bincount with minlength and weights, np.histogram over a fixed range, np.unique counts
    (a data-dependent length)."""
    import numpy as np

    def forward(labels, x):
        c = np.bincount(labels, minlength=8).astype(np.float32)
        w = np.bincount(labels, weights=x, minlength=8).astype(np.float32)
        h, _ = np.histogram(x, bins=6, range=(-3.0, 3.0))
        return np.concatenate([c, w / np.maximum(c, 1), h.astype(np.float32)])

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return r.randint(0, 8, b * s).astype(np.int64), r.randn(b * s).astype(np.float32)
    return forward, inputs


def _np_einsum():
    """einsum-heavy tensor code: batched bilinear forms, attention, a trace, an outer product, a contraction
    over three operands."""
    import numpy as np
    r = np.random.RandomState(0)
    W = r.randn(8, 8, 4).astype(np.float32) * 0.2

    def forward(x, y):
        bil = np.einsum("bsi,ijk,bsj->bsk", x, W, y)
        att = np.einsum("bqd,bkd->bqk", x, y) / np.sqrt(x.shape[-1])
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = np.einsum("bqk,bkd->bqd", att, y)
        tr = np.einsum("bii->b", np.einsum("bqd,bkd->bqk", ctx, x))
        outer = np.einsum("bi,bj->bij", x.mean(1), y.sum(1))
        return np.concatenate([bil.ravel(), ctx.ravel(), tr, outer.ravel(), np.einsum("...d,d", x, W[:, 0, 0]).ravel()])

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return r.randn(b, s, 8).astype(np.float32), r.randn(b, s, 8).astype(np.float32)
    return forward, inputs


def _np_rank():
    """Ranking and masks: argsort of argsort (ranks), cumsum of sorted values, np.where with three arguments,
    np.where(mask)[0] (a data-dependent length), boolean-mask reads and writes, np.searchsorted."""
    import numpy as np

    def forward(x, thr):
        ranks = np.argsort(np.argsort(x, axis=1), axis=1)
        srt = np.sort(x, axis=1)
        cs = np.cumsum(srt, axis=1)
        top = np.where(ranks >= x.shape[1] - 2, x, np.zeros_like(x))
        flat = x.ravel()
        idx = np.where(flat > thr)[0]
        picked = flat[idx]
        y = x.copy()
        y[y < -thr] = -thr
        pos = np.searchsorted(srt[0], np.array([-1.0, 0.0, 1.0], np.float32))
        return np.concatenate([ranks.ravel().astype(np.float32), cs.ravel(), top.ravel(), y.ravel(),
                               np.array([picked.sum(), idx.size, idx.sum()], np.float32), pos.astype(np.float32)])

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return r.randn(b, s).astype(np.float32), np.float32(0.5)
    return forward, inputs


def _jnp_science():
    """The NumPy programs' jax.numpy counterparts: a Kalman-style scan with jax.lax.scan, ranking by argsort,
    jnp.where with three arguments, softmax cross-entropy with integer labels, bincount with a length."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    def forward(z, labels, x):
        def step(carry, zt):
            m, v = carry
            v = v + 0.01
            k = v / (v + 0.5)
            m = m + k * (zt - m)
            return (m, (1 - k) * v), m
        _, ms = jax.lax.scan(step, (jnp.zeros(z.shape[1]), jnp.ones(z.shape[1])), z)
        ranks = jnp.argsort(jnp.argsort(x, axis=1), axis=1)
        logp = jax.nn.log_softmax(x, axis=-1)
        ce = -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
        cnt = jnp.bincount(labels, length=x.shape[1])
        w = jnp.where(x > 0, x, jnp.exp(x) - 1)
        return jnp.concatenate([ms.ravel(), ranks.ravel().astype(jnp.float32), ce, cnt.astype(jnp.float32),
                                w.ravel(), jnp.cumsum(x, axis=0).ravel()])

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        return (jnp.asarray(r.randn(s, b).astype(np.float32)), jnp.asarray(r.randint(0, s, b).astype(np.int32)),
                jnp.asarray(r.randn(b, s).astype(np.float32)))
    return forward, inputs


def _flax_lstm():
    """flax.linen LSTMCell run over time by nn.RNN (a lax.scan) then a dense head."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import flax.linen as nn

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.RNN(nn.OptimizedLSTMCell(16))(x)
            h2 = nn.RNN(nn.GRUCell(8), reverse=True, keep_order=True)(h)
            return nn.Dense(4)(jnp.concatenate([h, h2], -1))

    m = M()
    params = m.init(jax.random.PRNGKey(0), jnp.zeros((2, 8, 6)))

    def forward(x):
        return m.apply(params, x)

    def inputs(b, s, seed):
        return (jnp.asarray(np.random.RandomState(seed).randn(b, s, 6).astype(np.float32)),)
    return forward, inputs


def _flax_attn_mask():
    """flax attention with a padding mask (nn.make_attention_mask) and a causal mask combined."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import flax.linen as nn

    class M(nn.Module):
        @nn.compact
        def __call__(self, x, valid):
            mask = nn.combine_masks(nn.make_attention_mask(valid, valid), nn.make_causal_mask(valid))
            h = nn.MultiHeadDotProductAttention(num_heads=4, qkv_features=32, deterministic=True)(x, x, mask=mask)
            return nn.LayerNorm()(x + h)

    m = M()
    params = m.init(jax.random.PRNGKey(0), jnp.zeros((2, 8, 32)), jnp.ones((2, 8)))

    def forward(x, valid):
        return m.apply(params, x, valid)

    def inputs(b, s, seed):
        r = np.random.RandomState(seed)
        valid = np.ones((b, s), np.float32)
        valid[0, -2:] = 0
        return jnp.asarray(r.randn(b, s, 32).astype(np.float32)), jnp.asarray(valid)
    return forward, inputs


def _flax_conv_same():
    """flax Conv with SAME padding (and a strided one, and a ConvTranspose) at a fixed image size: only the
    batch varies."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import flax.linen as nn

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(8, (3, 3), padding="SAME")(x))
            x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME")(x))
            x = nn.GroupNorm(num_groups=4)(x)
            x = nn.ConvTranspose(4, (2, 2), strides=(2, 2))(x)
            x = nn.max_pool(x, (2, 2), strides=(2, 2), padding="SAME")
            return nn.Dense(3)(x.reshape(x.shape[0], -1))

    m = M()
    params = m.init(jax.random.PRNGKey(0), jnp.zeros((2, 12, 12, 3)))

    def forward(x):
        return m.apply(params, x)

    def inputs(b, s, seed):
        return (jnp.asarray(np.random.RandomState(seed).randn(b, 12, 12, 3).astype(np.float32)),)
    return forward, inputs


# round 4 (session 14): diffusers transformers of the latest image models
def _sd3_transformer():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=1,
                                            attention_head_dim=8, num_attention_heads=2, joint_attention_dim=16,
                                            caption_projection_dim=16, pooled_projection_dim=8,
                                            out_channels=4, pos_embed_max_size=16).eval()

    def forward(hidden_states, encoder_hidden_states, pooled_projections, timestep):
        with torch.no_grad():
            return model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                         pooled_projections=pooled_projections, timestep=timestep).sample

    def inputs(b, s, seed):   # the text length follows s
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(b, 4, 8, 8, generator=g), torch.randn(b, s, 16, generator=g),
                torch.randn(b, 8, generator=g), torch.full((b,), 3.0))
    return forward, inputs


def _flux_transformer():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.FluxTransformer2DModel(patch_size=1, in_channels=8, num_layers=1, num_single_layers=1,
                                             attention_head_dim=8, num_attention_heads=2, joint_attention_dim=16,
                                             pooled_projection_dim=8, axes_dims_rope=(2, 2, 4)).eval()

    def forward(hidden_states, encoder_hidden_states, pooled_projections, timestep, img_ids, txt_ids):
        with torch.no_grad():
            return model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                         pooled_projections=pooled_projections, timestep=timestep, img_ids=img_ids,
                         txt_ids=txt_ids).sample

    def inputs(b, s, seed):   # 16 image tokens, s text tokens
        g = torch.Generator().manual_seed(seed)
        img_ids = torch.stack(torch.meshgrid(torch.zeros(1), torch.arange(4.0), torch.arange(4.0),
                                             indexing="ij"), -1).reshape(16, 3)
        return (torch.randn(b, 16, 8, generator=g), torch.randn(b, s, 16, generator=g),
                torch.randn(b, 8, generator=g), torch.full((b,), 0.5), img_ids, torch.zeros(s, 3))
    return forward, inputs


def _dit():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                            num_layers=1, sample_size=8, patch_size=2, num_embeds_ada_norm=10,
                                            out_channels=4).eval()

    def forward(hidden_states, timestep, class_labels):
        with torch.no_grad():
            return model(hidden_states, timestep=timestep, class_labels=class_labels).sample

    def inputs(b, s, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(b, 4, 8, 8, generator=g), torch.randint(0, 100, (b,), generator=g),
                torch.randint(0, 10, (b,), generator=g))
    return forward, inputs


CASES = {
    "distilbert": _text_mask_case("DistilBertModel", "DistilBertConfig", vocab_size=100, dim=32, n_layers=2, n_heads=4,
                                  hidden_dim=64, max_position_embeddings=64),
    "roberta": _text_mask_case("RobertaModel", "RobertaConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=64, max_position_embeddings=64),
    "xlm_roberta": _text_case("XLMRobertaModel", "XLMRobertaConfig", vocab_size=100, hidden_size=32,
                              num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                              max_position_embeddings=64),
    "albert": _text_mask_case("AlbertModel", "AlbertConfig", vocab_size=100, embedding_size=16, hidden_size=32,
                              num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    "electra": _text_mask_case("ElectraModel", "ElectraConfig", vocab_size=100, embedding_size=16, hidden_size=32,
                               num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    "deberta_v2": _text_mask_case("DebertaV2Model", "DebertaV2Config", vocab_size=100, hidden_size=32,
                                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                  max_position_embeddings=64, relative_attention=True, position_buckets=16,
                                  pos_att_type=["p2c", "c2p"]),
    "deberta": _text_case("DebertaModel", "DebertaConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=4, intermediate_size=64, relative_attention=True,
                          pos_att_type=["p2c", "c2p"], max_relative_positions=16),
    "mpnet": _text_mask_case("MPNetModel", "MPNetConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=64, max_position_embeddings=64),
    "mobilebert": _text_case("MobileBertModel", "MobileBertConfig", vocab_size=100, hidden_size=32,
                             embedding_size=16, num_hidden_layers=1, num_attention_heads=4, intermediate_size=32,
                             intra_bottleneck_size=16, true_hidden_size=16),
    "mistral": _text_case("MistralModel", "MistralConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, use_cache=False),
    "qwen2": _text_case("Qwen2Model", "Qwen2Config", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, use_cache=False),
    "qwen3": _text_case("Qwen3Model", "Qwen3Config", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=64,
                        use_cache=False),
    "phi": _text_case("PhiModel", "PhiConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=64, use_cache=False),
    "phi3": _text_case("Phi3Model", "Phi3Config", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                       num_attention_heads=4, intermediate_size=64, use_cache=False, pad_token_id=0),
    "gemma": _text_case("GemmaModel", "GemmaConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=1, head_dim=8, intermediate_size=64,
                        use_cache=False),
    "gemma2": _text_case("Gemma2Model", "Gemma2Config", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=8, intermediate_size=64,
                         use_cache=False, sliding_window=4),
    "gpt_neo": _text_case("GPTNeoModel", "GPTNeoConfig", vocab_size=100, hidden_size=32, num_layers=2, num_heads=4,
                          attention_types=[[["global", "local"], 1]], window_size=4, max_position_embeddings=64,
                          use_cache=False),
    "gpt_neox": _text_case("GPTNeoXModel", "GPTNeoXConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64, use_cache=False),
    "gpt_bigcode": _text_case("GPTBigCodeModel", "GPTBigCodeConfig", vocab_size=100, n_embd=32, n_layer=2, n_head=4,
                              n_positions=64, use_cache=False),
    "codegen": _text_case("CodeGenModel", "CodeGenConfig", vocab_size=100, n_embd=32, n_layer=1, n_head=4,
                          rotary_dim=4, n_positions=64, n_ctx=64, use_cache=False),
    "opt": _text_mask_case("OPTModel", "OPTConfig", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, ffn_dim=64, word_embed_proj_dim=32, max_position_embeddings=64,
                           use_cache=False),
    "bloom": _text_mask_case("BloomModel", "BloomConfig", vocab_size=100, hidden_size=32, n_layer=2, n_head=4,
                             use_cache=False),
    "mpt": _text_case("MptModel", "MptConfig", vocab_size=100, d_model=32, n_layers=1, n_heads=4, max_seq_len=64,
                      use_cache=False),
    "stablelm": _text_case("StableLmModel", "StableLmConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                           num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, use_cache=False),
    "clip_text": _clip_text,
    "mistral_swa_mask": _text_mask_case("MistralModel", "MistralConfig", vocab_size=100, hidden_size=32,
                                        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                                        intermediate_size=64, use_cache=False, sliding_window=4),
    "qwen2_mask": _text_mask_case("Qwen2Model", "Qwen2Config", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                  num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
                                  use_cache=False),
    "gemma2_mask": _text_mask_case("Gemma2Model", "Gemma2Config", vocab_size=100, hidden_size=32,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                                   intermediate_size=64, use_cache=False, sliding_window=4),
    "gpt_neox_mask": _text_mask_case("GPTNeoXModel", "GPTNeoXConfig", vocab_size=100, hidden_size=32,
                                     num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                     use_cache=False),
    "gpt2_mask": _text_mask_case("GPT2Model", "GPT2Config", vocab_size=100, n_embd=32, n_layer=1, n_head=4,
                                 n_positions=64, use_cache=False),
    "llama_lm_mask": _text_mask_case("LlamaForCausalLM", "LlamaConfig", vocab_size=100, hidden_size=32,
                                     num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                                     intermediate_size=64, use_cache=False, tie_word_embeddings=True),
    "bert_cls": _text_mask_case("BertForSequenceClassification", "BertConfig", vocab_size=100, hidden_size=32,
                                num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, num_labels=3),

    "dinov2_varsize": _image_case("Dinov2Model", "Dinov2Config", 32, vary=True, hidden_size=32, num_hidden_layers=1,
                                  num_attention_heads=4, mlp_ratio=2, image_size=32, patch_size=8),
    "funnel": _text_case("FunnelBaseModel", "FunnelConfig", vocab_size=100, d_model=32, n_head=4, d_head=8,
                         d_inner=64, block_sizes=[1, 1], num_decoder_layers=1),
    "squeezebert": _text_case("SqueezeBertModel", "SqueezeBertConfig", vocab_size=100, hidden_size=32,
                              num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                              embedding_size=32, q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2,
                              intermediate_groups=2, output_groups=2),
    "xlnet": _text_case("XLNetModel", "XLNetConfig", vocab_size=100, d_model=32, n_layer=1, n_head=4, d_inner=64,
                        use_mems_eval=False),
    "t5_full": _t5_full,
    "nezha_like_ernie": _text_case("ErnieModel", "ErnieConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                   num_attention_heads=4, intermediate_size=64, max_position_embeddings=64),
    "rembert": _text_case("RemBertModel", "RemBertConfig", vocab_size=100, hidden_size=32, input_embedding_size=16,
                          output_embedding_size=16, num_hidden_layers=1, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=64),
    "canine": _text_case("CanineModel", "CanineConfig", hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                         intermediate_size=64, downsampling_rate=2, num_hash_buckets=64, num_hash_functions=2,
                         local_transformer_stride=4),
    "olmo": _text_case("OlmoModel", "OlmoConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                       num_attention_heads=4, intermediate_size=64, use_cache=False, pad_token_id=0),
    "persimmon": _text_case("PersimmonModel", "PersimmonConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                            num_attention_heads=4, intermediate_size=64, use_cache=False),

    "convnext": _image_case("ConvNextModel", "ConvNextConfig", 32, vary=True, hidden_sizes=[8, 16], depths=[1, 1],
                            num_stages=2, out_features=None),
    "convnextv2": _image_case("ConvNextV2Model", "ConvNextV2Config", 32, vary=True, hidden_sizes=[8, 16], depths=[1, 1],
                              num_stages=2),
    "deit": _image_case("DeiTModel", "DeiTConfig", 32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, image_size=32, patch_size=8),
    "beit": _image_case("BeitModel", "BeitConfig", 32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, image_size=32, patch_size=8, use_relative_position_bias=True),
    "segformer": _image_case("SegformerModel", "SegformerConfig", 32, vary=True, num_encoder_blocks=2, depths=[1, 1],
                             sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[7, 3], strides=[4, 2],
                             num_attention_heads=[1, 2], mlp_ratios=[2, 2]),
    "clip_vision": _image_case("CLIPVisionModel", "CLIPVisionConfig", 32, hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8),
    "dinov2": _image_case("Dinov2Model", "Dinov2Config", 32, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=4, mlp_ratio=2, image_size=32, patch_size=8),
    "regnet": _image_case("RegNetModel", "RegNetConfig", 32, vary=True, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                          groups_width=8),
    "poolformer": _image_case("PoolFormerModel", "PoolFormerConfig", 32, vary=True, hidden_sizes=[8, 16], depths=[1, 1],
                              num_encoder_blocks=2, patch_sizes=[7, 3], strides=[4, 2], padding=[2, 1]),
    "efficientnet": _image_case("EfficientNetModel", "EfficientNetConfig", 32, vary=True, width_coefficient=0.25,
                                depth_coefficient=0.25, image_size=32, hidden_dim=320),
    "mobilevit": _image_case("MobileViTModel", "MobileViTConfig", 32, vary=True, image_size=32, hidden_sizes=[16, 16, 16],
                             neck_hidden_sizes=[8, 8, 8, 8, 8, 8, 16]),
    "wav2vec2": _audio_case("Wav2Vec2Model", "Wav2Vec2Config", 400, vocab_size=32, hidden_size=32,
                            num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                            conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                            do_stable_layer_norm=True, feat_extract_norm="layer"),
    "hubert": _audio_case("HubertModel", "HubertConfig", 400, vocab_size=32, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=4, intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                          conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4),
    "whisper_encoder": _whisper_encoder,
    "vae": _vae,
    "unet2d_cond": _unet_cond,
    "flax_transformer": _flax_transformer,
    "jnp_program": _jnp_program,
    "np_softmax_ln": _np_softmax_layernorm,
    "np_kmeans": _np_kmeans,
    "np_fancy": _np_fancy,
    "np_intmath": _np_intmath,
    "torch_intmath": _torch_intmath,
    "np_boolmask": _np_boolmask,
    # ---- round 2 (session 10)
    "bart": _seq2seq_case("BartModel", "BartConfig", vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False),
    "mbart": _seq2seq_case("MBartModel", "MBartConfig", vocab_size=100, d_model=32, encoder_layers=1,
                           decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False),
    "marian": _seq2seq_case("MarianMTModel", "MarianConfig", vocab_size=100, d_model=32, encoder_layers=1,
                            decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False,
                            pad_token_id=0, decoder_start_token_id=0),
    "pegasus": _seq2seq_case("PegasusModel", "PegasusConfig", vocab_size=100, d_model=32, encoder_layers=1,
                             decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                             encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False),
    "m2m100": _seq2seq_case("M2M100Model", "M2M100Config", vocab_size=100, d_model=32, encoder_layers=1,
                            decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False,
                            pad_token_id=1),
    "blenderbot_small": _seq2seq_case("BlenderbotSmallModel", "BlenderbotSmallConfig", vocab_size=100, d_model=32,
                                      encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                                      decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                                      max_position_embeddings=64, use_cache=False),
    "whisper_full": _whisper_full,
    "gptj": _text_case("GPTJModel", "GPTJConfig", vocab_size=100, n_embd=32, n_layer=1, n_head=4, rotary_dim=4,
                       n_positions=64, use_cache=False),
    "falcon": _text_mask_case("FalconModel", "FalconConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                              num_attention_heads=4, use_cache=False, new_decoder_architecture=False,
                              multi_query=True, alibi=False),
    "falcon_alibi": _text_mask_case("FalconModel", "FalconConfig", vocab_size=100, hidden_size=32,
                                    num_hidden_layers=1, num_attention_heads=4, use_cache=False, alibi=True),
    "biogpt": _text_mask_case("BioGptModel", "BioGptConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                              num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                              use_cache=False),
    "xglm": _text_mask_case("XGLMModel", "XGLMConfig", vocab_size=100, d_model=32, num_layers=1,
                            attention_heads=4, ffn_dim=64, max_position_embeddings=64, use_cache=False),
    "ctrl": _text_case("CTRLModel", "CTRLConfig", vocab_size=100, n_embd=32, n_layer=1, n_head=4, dff=64,
                       n_positions=64, use_cache=False),
    "bigbird": _text_mask_case("BigBirdModel", "BigBirdConfig", vocab_size=100, hidden_size=32,
                               num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                               max_position_embeddings=64, attention_type="block_sparse", block_size=2,
                               num_random_blocks=1),
    "longformer": _text_mask_case("LongformerModel", "LongformerConfig", vocab_size=100, hidden_size=32,
                                  num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                  max_position_embeddings=80, attention_window=4),
    "led": _seq2seq_case("LEDModel", "LEDConfig", vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                         decoder_ffn_dim=64, max_encoder_position_embeddings=64,
                         max_decoder_position_embeddings=64, attention_window=4, use_cache=False),
    "llama_structured": _llama_structured,
    "bert_train_mode": _bert_train_mode,
    "resnet_train_bn": _resnet_train_bn,
    "swin": _image_case("SwinModel", "SwinConfig", 32, image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                        num_heads=[2, 4], window_size=4),
    "swin_shift": _image_case("SwinModel", "SwinConfig", 64, image_size=64, patch_size=4, embed_dim=16,
                              depths=[2, 1], num_heads=[2, 4], window_size=4),
    "swinv2": _image_case("Swinv2Model", "Swinv2Config", 32, image_size=32, patch_size=4, embed_dim=16,
                          depths=[1, 1], num_heads=[2, 4], window_size=4),
    "levit": _image_case("LevitModel", "LevitConfig", 32, image_size=32, hidden_sizes=[16, 32], num_attention_heads=[2, 4],
                         depths=[1, 1], key_dim=[8, 8], drop_path_rate=0, mlp_ratio=[2, 2], attention_ratio=[2, 2],
                         down_ops=[["Subsample", 8, 2, 2, 2, 2]] + [[""]]),
    "mobilenet_v1": _image_case("MobileNetV1Model", "MobileNetV1Config", 32, vary=True, depth_multiplier=0.25,
                                image_size=32),
    "mobilenet_v2": _image_case("MobileNetV2Model", "MobileNetV2Config", 32, vary=True, depth_multiplier=0.25,
                                image_size=32),
    "resnet": _image_case("ResNetModel", "ResNetConfig", 32, vary=True, embedding_size=8, hidden_sizes=[8, 16],
                          depths=[1, 1], layer_type="bottleneck"),
    "vit_mae": _vit_mae,
    "yolos": _image_case("YolosModel", "YolosConfig", 32, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                         intermediate_size=64, image_size=[32, 32], patch_size=8, num_detection_tokens=4),
    "unet1d": _unet1d,
    "unet2d": _unet2d,
    "vae_tiny": _vae_tiny,
    "transformer2d": _transformer2d,
    "flax_cnn_bn": _flax_cnn_bn,
    "torch_fops": _torch_fops,
    "torch_fops2": _torch_fops2,
    # ---- round 3 (session 11)
    # mixture of experts: value-dependent routing (the runner replays 3 more inputs at the traced shape)
    "mixtral": _moe_case("MixtralModel", "MixtralConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, num_local_experts=8,
                         num_experts_per_tok=2, use_cache=False),
    "mixtral_eager": _moe_case("MixtralModel", "MixtralConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                               num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                               num_local_experts=8, num_experts_per_tok=2, use_cache=False,
                               experts_implementation="eager"),
    "qwen2_moe": _moe_case("Qwen2MoeModel", "Qwen2MoeConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                           moe_intermediate_size=32, shared_expert_intermediate_size=32, num_experts=8,
                           num_experts_per_tok=2, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                           use_cache=False, experts_implementation="eager"),
    "olmoe": _moe_case("OlmoeModel", "OlmoeConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, num_experts=8,
                       num_experts_per_tok=2, use_cache=False, experts_implementation="eager"),
    "jetmoe": _moe_case("JetMoeModel", "JetMoeConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                        num_key_value_heads=2, kv_channels=8, intermediate_size=64, num_local_experts=8,
                        num_experts_per_tok=2, use_cache=False),
    "granitemoe": _moe_case("GraniteMoeModel", "GraniteMoeConfig", vocab_size=100, hidden_size=32,
                            intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                            num_local_experts=8, num_experts_per_tok=2, use_cache=False),
    "phimoe": _moe_case("PhimoeModel", "PhimoeConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, num_local_experts=8,
                        num_experts_per_tok=2, use_cache=False, experts_implementation="eager"),
    "dbrx": _moe_case("DbrxModel", "DbrxConfig", d_model=32, n_heads=4, n_layers=1, max_seq_len=64, vocab_size=100,
                      attn_config={"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0}, ffn_config={"ffn_hidden_size": 64, "moe_num_experts": 8,
                                                                 "moe_top_k": 2}, use_cache=False),
    # recurrent / state-space / hybrid: Python loops over the sequence
    "mamba": _ssm_case("MambaModel", "MambaConfig", vocab_size=100, hidden_size=32, state_size=8,
                       num_hidden_layers=1, use_cache=False),
    "mamba2": _ssm_case("Mamba2Model", "Mamba2Config", num_heads=4, head_dim=16, vocab_size=100, hidden_size=32,
                        state_size=8, num_hidden_layers=1, n_groups=1, chunk_size=4, use_cache=False),
    "rwkv": _ssm_case("RwkvModel", "RwkvConfig", vocab_size=100, context_length=64, hidden_size=32,
                      num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64, use_cache=False),
    "recurrent_gemma": _ssm_case("RecurrentGemmaModel", "RecurrentGemmaConfig", num_hidden_layers=2, vocab_size=100,
                                 hidden_size=32, intermediate_size=64, num_attention_heads=4, lru_width=32,
                                 attention_window_size=16, block_types=("recurrent", "attention"), use_cache=False),
    "xlstm": _ssm_case("xLSTMModel", "xLSTMConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1, num_heads=4,
                       chunk_size=4, use_cache=False, autocast_kernel_dtype="float32", mode="inference"),
    "jamba": _moe_case("JambaModel", "JambaConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, num_experts=4,
                       num_experts_per_tok=2, expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2,
                       attn_layer_offset=0, use_mamba_kernels=False, mamba_d_state=8, use_cache=False),
    # other encoders / decoders
    "convbert": _text_mask_case("ConvBertModel", "ConvBertConfig", vocab_size=100, hidden_size=32,
                                num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, embedding_size=32,
                                head_ratio=2, conv_kernel_size=3, max_position_embeddings=64),
    "roformer": _text_mask_case("RoFormerModel", "RoFormerConfig", vocab_size=100, hidden_size=32, embedding_size=32,
                                num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                max_position_embeddings=64),
    "esm": _text_mask_case("EsmModel", "EsmConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                           num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                           position_embedding_type="rotary", pad_token_id=1, mask_token_id=2,
                           token_dropout=True),
    "nystromformer": _fixed_len(_text_case("NystromformerModel", "NystromformerConfig", vocab_size=100,
                                                hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                                intermediate_size=64, max_position_embeddings=80, num_landmarks=4,
                                                segment_means_seq_len=16, conv_kernel_size=3), 16),
    "yoso": _text_mask_case("YosoModel", "YosoConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                            num_attention_heads=4, intermediate_size=64, max_position_embeddings=80,
                            use_expectation=True, conv_window=3),
    "starcoder2": _text_mask_case("Starcoder2Model", "Starcoder2Config", vocab_size=100, hidden_size=32,
                                  intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                                  num_key_value_heads=2, sliding_window=4, use_cache=False),
    "sew": _audio_case("SEWModel", "SEWConfig", 400, vocab_size=32, hidden_size=32, num_hidden_layers=1,
                       num_attention_heads=4, intermediate_size=64, squeeze_factor=2, conv_dim=(16, 16),
                       conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                       num_conv_pos_embedding_groups=4),
    "ast": _ast,
    "patchtst": _patchtst,
    # vision
    "pvt": _image_case("PvtModel", "PvtConfig", 32, image_size=32, num_encoder_blocks=2, depths=(1, 1),
                       sequence_reduction_ratios=(2, 1), hidden_sizes=(16, 32), patch_sizes=(4, 2), strides=(4, 2),
                       num_attention_heads=(1, 2), mlp_ratios=(2, 2)),
    "focalnet": _image_case("FocalNetModel", "FocalNetConfig", 32, vary=True, image_size=32, patch_size=4,
                            embed_dim=16, depths=(1, 1), focal_levels=(2, 2), focal_windows=(3, 3),
                            hidden_sizes=(16, 32)),
    "vitdet": _image_case("VitDetModel", "VitDetConfig", 32, vary=True, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, image_size=32, pretrain_image_size=32, patch_size=8,
                          window_block_indices=(0,), window_size=2, use_relative_position_embeddings=True),
    "hiera": _image_case("HieraModel", "HieraConfig", 64, embed_dim=8, image_size=(64, 64), patch_size=(7, 7),
                         patch_stride=(4, 4), depths=(1, 1), num_heads=(1, 2), num_query_pool=1,
                         masked_unit_size=(8, 8), masked_unit_attention=(True, False)),
    # diffusers
    "unet2d_cond_heads": _unet_cond_heads,
    "controlnet": _controlnet,
    "vqmodel": _vqmodel,
    "prior_transformer": _prior_transformer,
    # hand-written NumPy / jax.numpy / flax
    "np_kalman": _np_kalman,
    "np_rnn": _np_rnn,
    "np_gauss": _np_gauss,
    "np_hist": _np_hist,
    "np_einsum": _np_einsum,
    "np_rank": _np_rank,
    "jnp_science": _jnp_science,
    "flax_lstm": _flax_lstm,
    "flax_attn_mask": _flax_attn_mask,
    "flax_conv_same": _flax_conv_same,
    # round 4 (session 14)
    "modernbert": _text_mask_case("ModernBertModel", "ModernBertConfig", vocab_size=100, hidden_size=32,
                                  intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  global_attn_every_n_layers=2, local_attention=4, pad_token_id=0),
    "cohere": _text_case("CohereModel", "CohereConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, use_cache=False,
                         pad_token_id=0),
    "granite": _text_case("GraniteModel", "GraniteConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, use_cache=False,
                          embedding_multiplier=2.0, attention_multiplier=0.5, residual_multiplier=0.5),
    "olmo2": _text_case("Olmo2Model", "Olmo2Config", vocab_size=100, hidden_size=32, intermediate_size=64,
                        num_hidden_layers=1, num_attention_heads=4, use_cache=False, pad_token_id=0),
    "helium": _text_case("HeliumModel", "HeliumConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                         use_cache=False),
    "glm": _text_case("GlmModel", "GlmConfig", vocab_size=100, hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                      use_cache=False, pad_token_id=0),
    "gemma3_text": _text_case("Gemma3TextModel", "Gemma3TextConfig", vocab_size=100, hidden_size=32,
                              intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, head_dim=8, sliding_window=4, use_cache=False),
    "data2vec_text": _text_mask_case("Data2VecTextModel", "Data2VecTextConfig", vocab_size=100, hidden_size=32,
                                     num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64),
    "ibert": _text_mask_case("IBertModel", "IBertConfig", vocab_size=100, hidden_size=32, num_hidden_layers=1,
                             num_attention_heads=4, intermediate_size=64, max_position_embeddings=64),
    "bert_generation": _text_case("BertGenerationEncoder", "BertGenerationConfig", vocab_size=100,
                                  hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64),
    "layoutlm": _text_mask_case("LayoutLMModel", "LayoutLMConfig", vocab_size=100, hidden_size=32,
                                num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                max_position_embeddings=64),
    "cvt": _image_case("CvtModel", "CvtConfig", 32, vary=True, embed_dim=(8, 16), num_heads=(1, 2), depth=(1, 2),
                       patch_sizes=(7, 3), patch_stride=(4, 2), patch_padding=(2, 1), mlp_ratio=(2.0, 2.0),
                       cls_token=(False, True), drop_path_rate=(0.0, 0.0), qkv_projection_method=("dw_bn", "dw_bn"),
                       kernel_qkv=(3, 3), padding_kv=(1, 1), stride_kv=(2, 2), padding_q=(1, 1), stride_q=(1, 1),
                       attention_drop_rate=(0.0, 0.0), drop_rate=(0.0, 0.0), qkv_bias=(True, True)),
    "bit": _image_case("BitModel", "BitConfig", 32, vary=True, embedding_size=8, hidden_sizes=(8, 16),
                       depths=(1, 1), layer_type="preactivation", global_padding="SAME", num_groups=4),
    "swiftformer": _image_case("SwiftFormerModel", "SwiftFormerConfig", 32, vary=True, depths=(1, 1),
                               embed_dims=(8, 16), mlp_ratio=2, downsamples=(True, True)),
    "data2vec_vision": _image_case("Data2VecVisionModel", "Data2VecVisionConfig", 32, hidden_size=32,
                                   num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                   image_size=32, patch_size=8, use_relative_position_bias=True),
    "dpt": _image_case("DPTModel", "DPTConfig", 32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, image_size=32, patch_size=8, backbone_out_indices=(0, 1),
                       neck_hidden_sizes=(8, 16), fusion_hidden_size=16, readout_type="project"),
    "glpn": _image_case("GLPNModel", "GLPNConfig", 32, vary=True, num_encoder_blocks=2, depths=(1, 1),
                        sr_ratios=(2, 1), hidden_sizes=(8, 16), patch_sizes=(7, 3), strides=(4, 2),
                        num_attention_heads=(1, 2), mlp_ratios=(2, 2), decoder_hidden_size=16),
    "wavlm": _audio_case("WavLMModel", "WavLMConfig", 400, vocab_size=32, hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=4, intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                         conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                         num_buckets=16, max_bucket_distance=32),
    "unispeech": _audio_case("UniSpeechModel", "UniSpeechConfig", 400, vocab_size=32, hidden_size=32,
                             num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, conv_dim=(16, 16),
                             conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                             num_conv_pos_embedding_groups=4),
    "data2vec_audio": _audio_case("Data2VecAudioModel", "Data2VecAudioConfig", 400, vocab_size=32, hidden_size=32,
                                  num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                  conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                                  num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                  conv_pos_kernel_size=5, num_conv_pos_embeddings_layers=1),
    "sd3_transformer": _sd3_transformer,
    "flux_transformer": _flux_transformer,
    "dit": _dit,
}


# --------------------------------------------------------------------------------------- runner
def _np(v):
    import numpy as np
    if hasattr(v, "detach"):
        return v.detach().numpy()
    return np.asarray(v)


def _compare(got, want):
    import numpy as np
    got, want = _np(got), _np(want)
    if got.shape != want.shape:
        return f"WRONG shape {got.shape} vs {want.shape}"
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
        err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
        return f"WRONG max|d|={err:.3g}"
    return None


def _is_guard(e) -> bool:
    return "Guard" in type(e).__name__ or "ivytrace guard" in str(e)


def _short(e) -> str:
    msg = [m.strip() for m in str(e).strip().splitlines() if m.strip()]
    line = msg[0] if msg else ""
    if type(e).__name__ == "CLIError":   # the CLI's reason, not its command line
        i = next((i for i, m in enumerate(msg) if "error:" in m), None)
        if i is not None:
            line = " ".join(msg[i:i + 2])
    if "Got invalid dimensions for input" in line:   # onnxruntime refusing a static dim
        line = "static dim refused: " + line.split("for input:")[1].split(" for ")[0].strip()
    return f"{type(e).__name__}: {line[:200]}"


def run_case(name):
    import inspect
    forward, inputs = CASES[name]()
    names = list(inspect.signature(forward).parameters)
    res = {"name": name, "replay": "", "onnx": "", "ort": ""}
    args = inputs(*TRACE_AT, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # replay
        try:
            graph = __import__("ivytrace").trace_graph(forward, args=args)
            notes = []
            for b, s, seed, at in _points(10):
                a = inputs(b, s, seed)
                want = forward(*a)
                try:
                    got = graph(*a)
                except Exception as e:  # noqa: BLE001
                    if _is_guard(e) and seed != 1:
                        notes.append(f"guard@{at}")
                        continue
                    raise
                bad = _compare(got, want)
                if bad:
                    notes.append(f"{bad}@{at}")
            res["replay"] = "ok" if not notes else " ".join(notes)
        except Exception as e:  # noqa: BLE001
            res["replay"] = "ERR " + _short(e)
            res["replay_tb"] = traceback.format_exc()[-3000:]
        # module: trace_graph(model, kwargs=...) replaces its forward; parameters read live
        model = getattr(forward, "model", None)
        if model is not None:
            import copy
            import torch
            try:
                traced = __import__("ivytrace").trace_graph(copy.deepcopy(model), kwargs=dict(zip(names, args)))
                notes = []
                for b, s, seed, at in _points(30):
                    a = dict(zip(names, inputs(b, s, seed)))
                    with torch.no_grad():
                        want = _torch_first(model(**a))
                    try:
                        got = _torch_first(traced(**a))
                    except Exception as e:  # noqa: BLE001
                        if _is_guard(e) and seed != 1:
                            notes.append(f"guard@{at}")
                            continue
                        raise
                    bad = _compare(got, want)
                    if bad:
                        notes.append(f"{bad}@{at}")
                res["module"] = "ok" if not notes else " ".join(notes)
            except Exception as e:  # noqa: BLE001
                res["module"] = "ERR " + _short(e)
                res["module_tb"] = traceback.format_exc()[-3000:]
        # onnx
        import ivytrace
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, f"{name}.onnx")
            try:
                ivytrace.export(forward, path, args=args, allow_specialized=True)
                res["onnx"] = "ok"
            except Exception as e:  # noqa: BLE001
                res["onnx"] = "ERR " + _short(e)
                res["onnx_tb"] = traceback.format_exc()[-3000:]
                return res
            try:
                import onnxruntime as ort
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                feeds_names = [i.name for i in sess.get_inputs()]
                notes = []
                for b, s, seed, at in _points(20):
                    a = inputs(b, s, seed)
                    by_name = dict(zip(names, a))
                    feeds = {n: _np(by_name[n]) for n in feeds_names}
                    want = forward(*a)
                    try:
                        got = sess.run(None, feeds)[0]
                    except Exception as e:  # noqa: BLE001
                        if _is_guard(e) and seed != 1:
                            notes.append(f"guard@{at}")
                            continue
                        notes.append(f"ERR@{at} " + _short(e))
                        continue
                    bad = _compare(got, want)
                    if bad:
                        notes.append(f"{bad}@{at}")
                res["ort"] = "ok" if not notes else " ".join(notes)
            except Exception as e:  # noqa: BLE001
                res["ort"] = "ERR " + _short(e)
                res["ort_tb"] = traceback.format_exc()[-3000:]
    return res


def main(argv):
    timeout = 300
    if "--timeout" in argv:
        i = argv.index("--timeout")
        timeout = int(argv[i + 1])
        del argv[i:i + 2]
    if argv and argv[0] == "--case":
        print("SWEEP-RESULT " + json.dumps(run_case(argv[1])), flush=True)
        return 0
    verbose = "-v" in argv
    argv = [a for a in argv if a != "-v"]
    names = argv or list(CASES)
    rows = []
    for name in names:
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True,
                               timeout=timeout)
            line = next((l for l in p.stdout.splitlines() if l.startswith("SWEEP-RESULT ")), None)
            if line:
                r = json.loads(line[len("SWEEP-RESULT "):])
            else:
                tail = (p.stderr.strip().splitlines() or ["?"])[-1]
                r = {"name": name, "replay": f"CRASH rc={p.returncode} {tail[:200]}", "onnx": "", "ort": ""}
        except subprocess.TimeoutExpired:
            r = {"name": name, "replay": f"TIMEOUT {timeout}s", "onnx": "", "ort": ""}
        r["secs"] = time.time() - t0
        rows.append(r)
        print(f"{name:18s} {r['secs']:6.1f}s | replay: {r['replay']} | module: {r.get('module', '-')} | "
              f"onnx: {r['onnx']} | ort: {r['ort']}",
              flush=True)
        if verbose:
            for k in ("replay_tb", "module_tb", "onnx_tb", "ort_tb"):
                if r.get(k):
                    print(r[k])
    print()
    print("| model | trace_graph(fn) replay (2x8, 3x5, 4x16) | trace_graph(module) | ONNX export | "
          "onnxruntime (2x8, 3x5, 4x16) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['replay']} | {r.get('module', '-')} | {r['onnx']} | {r['ort']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
