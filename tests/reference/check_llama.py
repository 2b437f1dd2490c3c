"""Decoder-only (LLaMA family) against a float64 PyTorch LlamaForCausalLM written from the published
definition, cached decoding included.

Reference: Touvron et al. 2023 and Hugging Face's LlamaModel (modeling_llama.py): token embedding;
per layer, pre-norm:
    x = x + o_proj(Attention(RMSNorm(x)))       causal, RoPE (rotate_half: the two halves of each
                                                 head), grouped-query: kv head j serves query
                                                 heads j*n_rep .. j*n_rep + n_rep - 1 (repeat_kv)
    x = x + down_proj(SiLU(gate_proj(x')) * up_proj(x')),  x' = RMSNorm(x)
final RMSNorm, lm_head (tied to the embedding when the file has none and the config ties it).
Qwen2 adds q/k/v biases (attention_bias).

Ours prefills the prompt into a KV cache and decodes the forced tokens one at a time; the
reference runs the whole sequence (prompt + forced) in one uncached causal pass and takes the
logits at positions prompt_len-1 .. prompt_len-1+steps. So the check also proves the cache.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

BATCH, PROMPT, STEPS = 2, 12, 4
CASES = {
    # Llama-3-like: GQA (2 query heads per kv head), untied head, rope_theta 500000, eps 1e-5.
    "llama-gqa-untied": {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "intermediate": 160, "vocab": 128,
                         "max_positions": 64, "norm_eps": 1e-5, "rope_theta": 500000.0, "decode_steps": STEPS},
    # Qwen2-like: q/k/v biases, 4 query heads per kv head, tied embeddings (no lm_head.weight in the file).
    "qwen2-bias-gqa4-tied": {"layers": 2, "hidden": 64, "heads": 8, "kv_heads": 2, "intermediate": 160, "vocab": 128,
                            "max_positions": 64, "norm_eps": 1e-6, "rope_theta": 1000000.0, "attention_bias": True,
                            "tie_embeddings": True, "decode_steps": STEPS},
}


def make_weights(cfg, seed):
    """Seeded weights at a trained LLaMA's scales: embeddings std 0.02 (so RMSNorm's eps matters, as in
    the real model), projections ~ 1/sqrt(fan_in) (attention scores O(1)), norm gammas around 1."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    h, i, hd = cfg["hidden"], cfg["intermediate"], cfg["hidden"] // cfg["heads"]
    q_out, kv_out = cfg["heads"] * hd, cfg["kv_heads"] * hd
    w = {"model.embed_tokens.weight": n(cfg["vocab"], h, std=0.02), "model.norm.weight": n(h, std=0.1, mean=1.0)}
    if not cfg.get("tie_embeddings", False):
        w["lm_head.weight"] = n(cfg["vocab"], h, std=h ** -0.5)
    for l in range(cfg["layers"]):
        b = f"model.layers.{l}."
        w[b + "input_layernorm.weight"] = n(h, std=0.1, mean=1.0)
        w[b + "post_attention_layernorm.weight"] = n(h, std=0.1, mean=1.0)
        for name, (out_f, in_f) in {"self_attn.q_proj": (q_out, h), "self_attn.k_proj": (kv_out, h),
                                    "self_attn.v_proj": (kv_out, h), "self_attn.o_proj": (h, q_out),
                                    "mlp.gate_proj": (i, h), "mlp.up_proj": (i, h), "mlp.down_proj": (h, i)}.items():
            w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
        if cfg.get("attention_bias", False):
            for name, out_f in (("q_proj", q_out), ("k_proj", kv_out), ("v_proj", kv_out)):
                w[b + f"self_attn.{name}.bias"] = n(out_f, std=0.1)
        # HF checkpoints of that era carry rotary caches; the loader ignores them.
        w[b + "self_attn.rotary_emb.inv_freq"] = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2) / hd))
    return w


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_half_split(x, pos, theta):
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(pos.to(torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def rope_interleaved(x, pos, theta):
    """GPT-J / Meta's original complex-pair layout: pairs (0,1), (2,3), ... — wrong for HF weights."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = torch.outer(pos.to(torch.float64), inv_freq)
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def llama_mlp(w, p, x):
    """LlamaMLP: down_proj(SiLU(gate_proj(x)) * up_proj(x)), no biases."""
    lin = lambda t, n: t @ w[p + n + ".weight"].T
    return lin(torch.nn.functional.silu(lin(x, "mlp.gate_proj")) * lin(x, "mlp.up_proj"), "mlp.down_proj")


def llama_logits(w, cfg, tokens, *, rope=rope_half_split, eps=None, theta=None, kv_map="repeat_interleave",
                 decode_shift=0, ffn=llama_mlp, embeds=None, decode_from=PROMPT):
    """Logits [B, S, vocab] of LlamaForCausalLM in float64, one uncached causal pass. The keyword
    arguments only build the deliberately wrong variants (and `ffn` Mixtral's sparse block);
    defaults are the published model. `embeds` [B, S, hidden] replaces the token embedding (LLaVA's
    spliced inputs); `decode_from` is where decoding starts (for decode_shift)."""
    eps = cfg["norm_eps"] if eps is None else eps
    theta = cfg["rope_theta"] if theta is None else theta
    B, S = (tokens.shape if embeds is None else embeds.shape[:2])
    h, nh, nkv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    hd = h // nh
    rms = lambda x, g: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    lin = lambda x, p: x @ w[p + ".weight"].T + (w[p + ".bias"] if p + ".bias" in w else 0.0)
    pos = torch.arange(S)
    pos[decode_from:] += decode_shift   # a cache bug: decode steps one position past the cache's
    causal = torch.full((S, S), float("-inf")).triu(1)
    x = w["model.embed_tokens.weight"][tokens] if embeds is None else embeds
    for l in range(cfg["layers"]):
        p = f"model.layers.{l}."
        a = rms(x, w[p + "input_layernorm.weight"])
        q = lin(a, p + "self_attn.q_proj").view(B, S, nh, hd).transpose(1, 2)
        k = lin(a, p + "self_attn.k_proj").view(B, S, nkv, hd).transpose(1, 2)
        v = lin(a, p + "self_attn.v_proj").view(B, S, nkv, hd).transpose(1, 2)
        q, k = rope(q, pos, theta), rope(k, pos, theta)
        if kv_map == "repeat_interleave":   # HF repeat_kv
            k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
        else:                               # the classic bug: query head i reads kv head i % kv_heads
            k, v = k.repeat(1, nh // nkv, 1, 1), v.repeat(1, nh // nkv, 1, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + causal
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, S, nh * hd)
        x = x + lin(ctx, p + "self_attn.o_proj")
        f = rms(x, w[p + "post_attention_layernorm.weight"])
        x = x + ffn(w, p, f)
    x = rms(x, w["model.norm.weight"])
    head = w["model.embed_tokens.weight"] if cfg.get("tie_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


def generated_rows(logits):
    """Rows ours produces: the prediction after the prompt, then after each forced token."""
    return logits[:, PROMPT - 1: PROMPT + STEPS, :].reshape(-1, logits.shape[-1])


# Qwen2 as a Hugging Face directory: config.json (Qwen2Config's keys: q/k/v biases are implied by
# the model_type) over a wrong catalog config, two BF16 shards, and a stale lm_head.weight in the
# file that tie_word_embeddings = true must ignore (transformers ties it on load).
QWEN2_HF = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 2, "hidden_size": 64,
            "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
            "hidden_act": "silu", "use_sliding_window": False, "rope_scaling": None}
QWEN2_WRONG_CATALOG = {"layers": 1, "hidden": 64, "heads": 4, "kv_heads": 4, "intermediate": 160, "vocab": 128,
                       "max_positions": 64, "norm_eps": 1e-5, "rope_theta": 10000.0, "decode_steps": STEPS}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "decoder-only", "decoder-only (LLaMA/Qwen2) vs PyTorch LlamaForCausalLM, cached decoding")
    cases = [(case, cfg, cfg, None, "F32") for case, cfg in CASES.items()]
    cases.append(("qwen2-hf-dir-bf16-2-shards-stale-head", CASES["qwen2-bias-gqa4-tied"], QWEN2_WRONG_CATALOG, QWEN2_HF,
                  "BF16"))
    for seed, (case, cfg, catalog, hf, dtype) in enumerate(cases, start=77):
        weights = make_weights(cfg, seed)
        if hf is not None:
            g = torch.Generator().manual_seed(seed + 500)
            weights["lm_head.weight"] = torch.randn(cfg["vocab"], cfg["hidden"], generator=g) * cfg["hidden"] ** -0.5
        w = as_stored(weights, dtype)
        g = torch.Generator().manual_seed(seed + 1000)
        tokens = torch.randint(0, cfg["vocab"], (BATCH, PROMPT + STEPS), generator=g)
        inputs = {"batch": BATCH, "prompt_len": PROMPT, "prompt": tokens[:, :PROMPT].flatten().tolist(),
                  "forced": tokens[:, PROMPT:].flatten().tolist()}
        ours = check.run_ours(case, catalog, weights, inputs, BATCH * (STEPS + 1), cfg["vocab"], hf_config=hf,
                              shards=2, dtype=dtype)
        run = lambda **kw: generated_rows(llama_logits(w, cfg, tokens, **kw))
        wrong_eps = 1e-6 if cfg["norm_eps"] != 1e-6 else 1e-5
        variants = {
            "interleaved (GPT-J) RoPE instead of half-split": run(rope=rope_interleaved),
            f"RMSNorm eps {wrong_eps:g} instead of {cfg['norm_eps']:g}": run(eps=wrong_eps),
            f"rope_theta 10000 instead of {cfg['rope_theta']:g}": run(theta=10000.0),
            "GQA head i -> kv head i % kv_heads": run(kv_map="repeat"),
            # (A shift of every position would pass, rightly: RoPE scores depend on distances only.)
            "decode positions one past the prompt's": run(decode_shift=1),
        }
        if hf is not None:
            untied = dict(cfg, tie_embeddings=False)
            variants["the file's lm_head.weight despite tie_word_embeddings"] = generated_rows(llama_logits(w, untied, tokens))
        check.compare(case, ours, run(), variants)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
