"""Encoder-decoder (T5, flan-T5) against a float64 PyTorch T5ForConditionalGeneration written from
the published definition, cached decoding with cross-attention to a padded source included.

Reference: Raffel et al. 2020 and Hugging Face's T5 (modeling_t5.py):
  - shared token table; no embedding scaling and no absolute positions;
  - pre-norm blocks with T5LayerNorm (RMS, no mean, no bias), eps 1e-6;
  - attention WITHOUT 1/sqrt(d_kv) scaling; a learned relative position bias [buckets, heads] of
    the stack's first block, added in every layer's self-attention: buckets of
    (key position - query position), bidirectional in the encoder (half the buckets per sign),
    causal in the decoder, exact below num_buckets/2 (of the half), log-spaced up to max_distance;
  - the source padding mask in the encoder's self-attention and the decoder's cross-attention;
  - feed-forward wo(relu(wi x)) (v1.0) or wo(gelu_new(wi_0 x) * wi_1 x) (v1.1 / flan-T5);
  - final norm; a tied head multiplies the decoder output by d_model^-0.5 first.
The decoder starts from token 0 (pad) and is teacher-forced on the given tokens; ours decodes with
a KV cache, the reference runs the whole decoder sequence in one pass.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

BATCH, SRC, STEPS = 2, 20, 12
LENGTHS = [20, 12]
COMMON = {"layers": 2, "hidden": 64, "heads": 4, "head_dim": 16, "intermediate": 128, "vocab": 96,
          "rel_buckets": 16, "rel_max_distance": 20, "decode_steps": STEPS}
CASES = {
    # Few buckets and a short max_distance, so sources of 20 and 12 decode steps reach both the
    # log-spaced buckets and the clamp at the last one.
    "t5-v1.0-relu-tied": dict(COMMON, activation="relu", tie_embeddings=True),
    "flan-t5-gated-gelu-untied": dict(COMMON, activation="gelu_new", gated_ffn=True, tie_embeddings=False),
}


def make_weights(cfg, seed):
    """Seeded weights at T5's scales (its init factors, which trained checkpoints keep): shared table
    N(0, 1), q N(0, (d_model d_kv)^-1/2) (T5 folds the attention scale into q), k/v N(0, d_model^-1/2),
    o N(0, (heads d_kv)^-1/2), wi d_model^-1/2, wo d_ff^-1/2; relative biases O(1) as trained ones
    are; norm weights N(1, 0.1)."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    h, dff, heads, dkv = cfg["hidden"], cfg["intermediate"], cfg["heads"], cfg["head_dim"]
    inner = heads * dkv
    w = {"shared.weight": n(cfg["vocab"], h)}
    if not cfg["tie_embeddings"]:
        w["lm_head.weight"] = n(cfg["vocab"], h, std=h ** -0.5)
    for side in ("encoder", "decoder"):
        w[f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = n(cfg["rel_buckets"], heads, std=0.5)
        w[f"{side}.final_layer_norm.weight"] = n(h, std=0.1, mean=1.0)
        for l in range(cfg["layers"]):
            b = f"{side}.block.{l}.layer."
            attns = [("0.SelfAttention", "0")]
            if side == "decoder":
                attns.append(("1.EncDecAttention", "1"))
            for prefix, norm in attns:
                w[b + f"{norm}.layer_norm.weight"] = n(h, std=0.1, mean=1.0)
                w[b + f"{prefix}.q.weight"] = n(inner, h, std=(h * dkv) ** -0.5)
                w[b + f"{prefix}.k.weight"] = n(inner, h, std=h ** -0.5)
                w[b + f"{prefix}.v.weight"] = n(inner, h, std=h ** -0.5)
                w[b + f"{prefix}.o.weight"] = n(h, inner, std=inner ** -0.5)
            ff = "2" if side == "decoder" else "1"
            w[b + f"{ff}.layer_norm.weight"] = n(h, std=0.1, mean=1.0)
            if cfg.get("gated_ffn", False):
                w[b + f"{ff}.DenseReluDense.wi_0.weight"] = n(dff, h, std=h ** -0.5)
                w[b + f"{ff}.DenseReluDense.wi_1.weight"] = n(dff, h, std=h ** -0.5)
            else:
                w[b + f"{ff}.DenseReluDense.wi.weight"] = n(dff, h, std=h ** -0.5)
            w[b + f"{ff}.DenseReluDense.wo.weight"] = n(h, dff, std=dff ** -0.5)
    return w


def relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """T5Attention._relative_position_bucket, as published (the log in float32, as there)."""
    relative_buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return relative_buckets + torch.where(is_small, relative_position, large)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def t5_logits(w, cfg, src, src_mask, dec_ids, *, scaled=False, decoder_bidirectional=False, flip_relative=False,
              cross_mask=True, rescale_tied=True, act=None):
    """Logits [B, T, vocab]; the keyword arguments only build the wrong variants."""
    h, heads, dkv, eps = cfg["hidden"], cfg["heads"], cfg["head_dim"], 1e-6
    rms = lambda x, g: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    lin = lambda x, name: x @ w[name + ".weight"].T
    finfo_min = torch.finfo(torch.float64).min

    def bias_for(side, q_len, k_len, bidirectional):
        ctx_pos = torch.arange(q_len)[:, None]
        mem_pos = torch.arange(k_len)[None, :]
        rel = (ctx_pos - mem_pos) if flip_relative else (mem_pos - ctx_pos)
        buckets = relative_position_bucket(rel, bidirectional, cfg["rel_buckets"], cfg["rel_max_distance"])
        table = w[f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        return table[buckets].permute(2, 0, 1)[None]  # [1, heads, q, k]

    def attention(x, kv, name, bias):
        B, Q, K = x.shape[0], x.shape[1], kv.shape[1]
        q = lin(x, name + ".q").view(B, Q, heads, dkv).transpose(1, 2)
        k = lin(kv, name + ".k").view(B, K, heads, dkv).transpose(1, 2)
        v = lin(kv, name + ".v").view(B, K, heads, dkv).transpose(1, 2)
        scores = q @ k.transpose(-1, -2)
        if scaled:
            scores = scores / math.sqrt(dkv)
        probs = torch.softmax(scores + bias, dim=-1)
        return lin((probs @ v).transpose(1, 2).reshape(B, Q, heads * dkv), name + ".o")

    def ffn(x, prefix):
        if cfg.get("gated_ffn", False):
            return lin((act or gelu_new)(lin(x, prefix + ".wi_0")) * lin(x, prefix + ".wi_1"), prefix + ".wo")
        return lin(torch.relu(lin(x, prefix + ".wi")), prefix + ".wo")

    B, S = src.shape
    T = dec_ids.shape[1]
    pad = (1.0 - src_mask[:, None, None, :].to(torch.float64)) * finfo_min  # [B, 1, 1, S]
    x = w["shared.weight"][src]
    enc_bias = bias_for("encoder", S, S, True) + pad
    for l in range(cfg["layers"]):
        b = f"encoder.block.{l}.layer."
        x = x + attention(rms(x, w[b + "0.layer_norm.weight"]), rms(x, w[b + "0.layer_norm.weight"]),
                          b + "0.SelfAttention", enc_bias)
        x = x + ffn(rms(x, w[b + "1.layer_norm.weight"]), b + "1.DenseReluDense")
    memory = rms(x, w["encoder.final_layer_norm.weight"])

    y = w["shared.weight"][dec_ids]
    causal = torch.full((T, T), finfo_min).triu(1)[None, None]
    dec_bias = bias_for("decoder", T, T, decoder_bidirectional) + causal
    cross_bias = pad if cross_mask else torch.zeros_like(pad)
    for l in range(cfg["layers"]):
        b = f"decoder.block.{l}.layer."
        a = rms(y, w[b + "0.layer_norm.weight"])
        y = y + attention(a, a, b + "0.SelfAttention", dec_bias)
        y = y + attention(rms(y, w[b + "1.layer_norm.weight"]), memory, b + "1.EncDecAttention", cross_bias)
        y = y + ffn(rms(y, w[b + "2.layer_norm.weight"]), b + "2.DenseReluDense")
    y = rms(y, w["decoder.final_layer_norm.weight"])
    if cfg["tie_embeddings"]:
        return (y * h ** -0.5 if rescale_tied else y) @ w["shared.weight"].T
    return y @ w["lm_head.weight"].T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "encoder-decoder", "encoder-decoder (T5, flan-T5) vs PyTorch T5ForConditionalGeneration, cached decoding")
    # flan-T5 again as a Hugging Face directory: config.json (T5Config's keys; "gated-gelu" means
    # gelu_new, gated) over a wrong catalog config (T5 v1.0's), F16.
    hf = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "num_layers": 2, "num_decoder_layers": 2,
          "d_model": 64, "num_heads": 4, "d_kv": 16, "d_ff": 128, "vocab_size": 96, "relative_attention_num_buckets": 16,
          "relative_attention_max_distance": 20, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
          "layer_norm_epsilon": 1e-6, "decoder_start_token_id": 0, "is_encoder_decoder": True}
    cases = [(case, cfg, cfg, None, "F32") for case, cfg in CASES.items()]
    flan = CASES["flan-t5-gated-gelu-untied"]
    wrong = dict(COMMON, activation="relu", tie_embeddings=True, rel_buckets=32, rel_max_distance=128)
    cases.append(("flan-t5-hf-dir-f16", flan, wrong, hf, "F16"))
    for seed, (case, cfg, catalog, hf_config, dtype) in enumerate(cases, start=300):
        weights = make_weights(cfg, seed)
        w = as_stored(weights, dtype)
        g = torch.Generator().manual_seed(seed + 1000)
        src = torch.randint(1, cfg["vocab"], (BATCH, SRC), generator=g)
        mask = torch.zeros(BATCH, SRC, dtype=torch.int64)
        for b, n in enumerate(LENGTHS):
            mask[b, :n] = 1
            src[b, n:] = 0
        forced = torch.randint(1, cfg["vocab"], (BATCH, STEPS), generator=g)
        dec_ids = torch.cat([torch.zeros(BATCH, 1, dtype=torch.int64), forced], dim=1)  # start token 0
        inputs = {"batch": BATCH, "src_len": SRC, "src": src.flatten().tolist(), "src_mask": mask.flatten().tolist(),
                  "forced": forced.flatten().tolist()}
        ours = check.run_ours(case, catalog, weights, inputs, BATCH * (STEPS + 1), cfg["vocab"], hf_config=hf_config,
                              dtype=dtype)
        run = lambda **kw: t5_logits(w, cfg, src, mask, dec_ids, **kw).reshape(-1, cfg["vocab"])
        variants = {
            "attention scaled by 1/sqrt(d_kv)": run(scaled=True),
            "bidirectional buckets in the decoder": run(decoder_bidirectional=True),
            "relative position as query - key": run(flip_relative=True),
            "source padding not masked in cross-attention": run(cross_mask=False),
        }
        if cfg.get("gated_ffn", False):
            variants["erf GELU instead of gelu_new (tanh)"] = run(act=torch.nn.functional.gelu)
        if cfg["tie_embeddings"]:
            variants["tied head without the d_model^-0.5 rescale"] = run(rescale_tied=False)
        check.compare(case, ours, run(), variants)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
