"""KV-cache decoding over transformers' causal LMs (and T5's encoder-decoder cache), as ML engineers
run and export them: small configs, random weights, no hub.

For each model: prefill eagerly, trace one decoding step `m(input_ids=tok, past_key_values=past)`
with trace_graph (the cache is an argument object: its layers' keys and values are read on every
call and written back), replay three greedy steps at other batch sizes and past lengths against
eager (another cache of the traced shape first: that one was silently wrong before session 15),
then `ivytrace.export` the step with its present keys/values to ONNX and run it in onnxruntime at
another batch and past length.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/sweep_kv_cache.py [model ...]

Prints one line per model; bench/SWEEP.md has the table."""
import os, shutil, sys, tempfile, time, warnings
os.environ["HF_HUB_OFFLINE"] = "1"
import re

import numpy as np, torch, transformers, ivytrace
warnings.simplefilter("ignore")
ROWS = {
  "gpt2": ("GPT2LMHeadModel", "GPT2Config", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
  "llama": ("LlamaForCausalLM", "LlamaConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64)),
  "mistral_swa": ("MistralForCausalLM", "MistralConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, sliding_window=4)),
  "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64)),
  "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=64)),
  "phi": ("PhiForCausalLM", "PhiConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)),
  "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, pad_token_id=0)),
  "gemma": ("GemmaForCausalLM", "GemmaConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=8, intermediate_size=64)),
  "gemma2": ("Gemma2ForCausalLM", "Gemma2Config", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=8, intermediate_size=64, sliding_window=4)),
  "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=8, intermediate_size=64, sliding_window=4)),
  "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)),
  "gpt_neo": ("GPTNeoForCausalLM", "GPTNeoConfig", dict(hidden_size=32, num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]], window_size=4, max_position_embeddings=64)),
  "gpt_bigcode": ("GPTBigCodeForCausalLM", "GPTBigCodeConfig", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
  "codegen": ("CodeGenForCausalLM", "CodeGenConfig", dict(n_embd=32, n_layer=1, n_head=4, rotary_dim=4, n_positions=64, n_ctx=64)),
  "opt": ("OPTForCausalLM", "OPTConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64, word_embed_proj_dim=32, max_position_embeddings=64)),
  "bloom": ("BloomForCausalLM", "BloomConfig", dict(hidden_size=32, n_layer=2, n_head=4)),
  "falcon": ("FalconForCausalLM", "FalconConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4)),
  "stablelm": ("StableLmForCausalLM", "StableLmConfig", dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64)),
  "olmo": ("OlmoForCausalLM", "OlmoConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)),
  "granite": ("GraniteForCausalLM", "GraniteConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64)),
  "cohere": ("CohereForCausalLM", "CohereConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64)),
  "starcoder2": ("Starcoder2ForCausalLM", "Starcoder2Config", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64)),
  "mixtral": ("MixtralForCausalLM", "MixtralConfig", dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, num_local_experts=4, num_experts_per_tok=2)),
  "t5": ("T5ForConditionalGeneration", "T5Config", dict(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, decoder_start_token_id=0)),
}
def ids(b, t, seed): return torch.randint(3, 100, (b, t), generator=torch.Generator().manual_seed(seed))
def run(name):
    cls, cfgn, kw = ROWS[name]
    torch.manual_seed(0)
    cfg = getattr(transformers, cfgn)(vocab_size=100, **kw)
    m = getattr(transformers, cls)(cfg).eval()
    enc = name == "t5"
    def prefill(b, t, seed):
        with torch.no_grad():
            if enc:
                x = ids(b, t, seed)
                o = m(input_ids=x, decoder_input_ids=x[:, :3], use_cache=True)
                return o.past_key_values, o.encoder_last_hidden_state
            return m(input_ids=ids(b, t, seed), use_cache=True).past_key_values, None
    if enc:
        def decode(tok, past, enc_out):
            return m(encoder_outputs=(enc_out,), decoder_input_ids=tok, past_key_values=past, use_cache=True).logits
    else:
        def decode(tok, past):
            return m(input_ids=tok, past_key_values=past, use_cache=True).logits
    res = {}
    try:
        with torch.no_grad():
            p, e = prefill(2, 6, 0)
            g = ivytrace.trace_graph(decode, args=(ids(2, 1, 1), p) + ((e,) if enc else ()), retrace=False)
            bad = []
            for b, t in ((2, 6), (2, 9), (3, 4)):
                (pa, ea), (pb, eb) = prefill(b, t, 7), prefill(b, t, 7)
                xa = xb = ids(b, 1, 8)
                for step in range(3):
                    try:
                        a = g(xa, pa, *((ea,) if enc else ()))
                    except ivytrace.GuardError as ex:
                        bad.append(f"guard@{b}x{t}#{step}: {str(ex)[:80]}"); break
                    w = decode(xb, pb, *((eb,) if enc else ()))
                    d = (a - w).abs().max().item()
                    if d > 1e-4: bad.append(f"WRONG@{b}x{t}#{step} {d:.2e}"); break
                    xa, xb = a[:, -1:].argmax(-1), w[:, -1:].argmax(-1)
            res["replay"] = "ok" if not bad else "; ".join(bad)
    except Exception as ex:
        res["replay"] = f"ERR {type(ex).__name__}: {str(ex)[:150]}"
    try:
        import onnxruntime as ort
        def dec2(tok, past, *rest):
            o = m(input_ids=tok, past_key_values=past, use_cache=True) if not enc else \
                m(encoder_outputs=(rest[0],), decoder_input_ids=tok, past_key_values=past, use_cache=True)
            return o.logits, o.past_key_values
        tmp = tempfile.mkdtemp(prefix="ivytrace-kv-")
        path = os.path.join(tmp, f"{name}.onnx")
        with torch.no_grad():
            p, e = prefill(2, 6, 0)
            ivytrace.export(dec2, path, args=(ids(2, 1, 1), p) + ((e,) if enc else ()))
        s = ort.InferenceSession(path)
        bad = []
        for b, t in ((2, 6), (3, 9)):
            p, e = prefill(b, t, 5)
            x = ids(b, 1, 6)
            # feed by order: ids, then the cache tensors in the traced holder order, then enc
            with torch.no_grad():
                want = dec2(x, prefill(b, t, 5)[0], *((e,) if enc else ()))[0].numpy()
            feeds = {}
            for i in s.get_inputs():
                n = i.name
                if n == "tok": feeds[n] = x.numpy(); continue
                if n.startswith("rest"): feeds[n] = e.numpy(); continue
                obj = p
                for part in re.findall(r"\.(\w+)|\[(\d+)\]", n[len("past"):]):
                    obj = getattr(obj, part[0]) if part[0] else obj[int(part[1])]
                feeds[n] = obj.numpy() if hasattr(obj, 'numpy') else np.asarray(obj, dtype=i.type == 'tensor(int64)' and np.int64 or np.float64)
            got = s.run(None, feeds)[0]
            d = np.abs(got - want).max()
            if d > 1e-4: bad.append(f"WRONG@{b}x{t} {d:.2e}")
        res["onnx"] = "ok" if not bad else "; ".join(bad)
    except Exception as ex:
        res["onnx"] = f"ERR {type(ex).__name__}: {str(ex)[:200]}"
    finally:
        if "tmp" in locals():
            shutil.rmtree(tmp, ignore_errors=True)
    return res
names = sys.argv[1:] or list(ROWS)
for n in names:
    t0 = time.time()
    try:
        r = run(n)
    except Exception as ex:
        r = {"build": f"ERR {type(ex).__name__}: {str(ex)[:150]}"}
    print(f"{n:12s} {time.time()-t0:5.1f}s " + " | ".join(f"{k}: {v}" for k, v in r.items()), flush=True)
