"""Speech (Whisper) against a float64 PyTorch WhisperForConditionalGeneration written from the
published definition, cached decoding included.

Reference: Radford et al. 2022 and Hugging Face's Whisper (modeling_whisper.py):
  encoder: log-mel features [B, n_mels, frames] -> GELU(conv1 k3 p1) -> GELU(conv2 k3 s2 p1) ->
    + embed_positions (sinusoids) -> pre-LN layers (self-attention, queries scaled by
    head_dim^-0.5, k_proj without bias; GELU MLP) -> layer_norm;
  decoder: embed_tokens + learned embed_positions -> pre-LN layers (causal self-attention,
    cross-attention to the encoder output, GELU MLP) -> layer_norm -> proj_out tied to
    embed_tokens.
The decoder prompt is 4 tokens (<|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>, here
random ids) then teacher-forced tokens; ours decodes with caches, the reference in one pass.
Our graph takes the features channels-last ([batch*frames, n_mels]).
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

BATCH, SRC, PROMPT, STEPS = 2, 12, 4, 4
CONFIG = {"layers": 2, "decoder_layers": 2, "hidden": 64, "heads": 4, "intermediate": 256, "vocab": 100,
          "n_mels": 16, "max_source_positions": SRC, "max_target_positions": 16, "decode_steps": STEPS}


def sinusoids(length, channels, max_timescale=10000):
    """Whisper's encoder positions (modeling_whisper.sinusoids)."""
    inc = math.log(max_timescale) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2, dtype=torch.float64))
    t = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([t.sin(), t.cos()], dim=1)


def make_weights(cfg, seed):
    """Seeded weights at Whisper's scales: conv stem ~ sqrt(2/fan_in), projections ~ 1/sqrt(fan_in),
    token and decoder position embeddings N(0, 0.02) (so LayerNorm's eps shows), LN gammas ~ 1."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    h, i, m = cfg["hidden"], cfg["intermediate"], cfg["n_mels"]
    w = {
        "model.encoder.conv1.weight": n(h, m, 3, std=(2 / (3 * m)) ** 0.5), "model.encoder.conv1.bias": n(h, std=0.05),
        "model.encoder.conv2.weight": n(h, h, 3, std=(2 / (3 * h)) ** 0.5), "model.encoder.conv2.bias": n(h, std=0.05),
        "model.encoder.embed_positions.weight": sinusoids(cfg["max_source_positions"], h),
        "model.decoder.embed_tokens.weight": n(cfg["vocab"], h, std=0.02),
        "model.decoder.embed_positions.weight": n(cfg["max_target_positions"], h, std=0.02),
    }
    for side, layers in (("encoder", cfg["layers"]), ("decoder", cfg["decoder_layers"])):
        w[f"model.{side}.layer_norm.weight"] = n(h, std=0.1, mean=1.0)
        w[f"model.{side}.layer_norm.bias"] = n(h, std=0.05)
        for l in range(layers):
            b = f"model.{side}.layers.{l}."
            attns = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
            for a in attns:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    w[b + f"{a}.{proj}.weight"] = n(h, h, std=h ** -0.5)
                    if proj != "k_proj":
                        w[b + f"{a}.{proj}.bias"] = n(h, std=0.05)
                w[b + f"{a}_layer_norm.weight"] = n(h, std=0.1, mean=1.0)
                w[b + f"{a}_layer_norm.bias"] = n(h, std=0.05)
            w[b + "fc1.weight"], w[b + "fc1.bias"] = n(i, h, std=h ** -0.5), n(i, std=0.05)
            w[b + "fc2.weight"], w[b + "fc2.bias"] = n(h, i, std=i ** -0.5), n(h, std=0.05)
            w[b + "final_layer_norm.weight"] = n(h, std=0.1, mean=1.0)
            w[b + "final_layer_norm.bias"] = n(h, std=0.05)
    return w


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def whisper_logits(w, cfg, features, dec_ids, *, stem_gelu=gelu, eps=1e-5, encoder_positions=True, scale_q=True):
    """Logits [B, T, vocab]; the keyword arguments only build the wrong variants."""
    h, heads = cfg["hidden"], cfg["heads"]
    d = h // heads
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (h,), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0.0)

    def attention(x, kv, name, mask):
        B, Q, K = x.shape[0], x.shape[1], kv.shape[1]
        q = lin(x, name + ".q_proj") * (d ** -0.5 if scale_q else 1.0)
        q = q.view(B, Q, heads, d).transpose(1, 2)
        k = lin(kv, name + ".k_proj").view(B, K, heads, d).transpose(1, 2)
        v = lin(kv, name + ".v_proj").view(B, K, heads, d).transpose(1, 2)
        probs = torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1)
        return lin((probs @ v).transpose(1, 2).reshape(B, Q, h), name + ".out_proj")

    def layer(x, b, memory=None, mask=0.0):
        a = ln(x, b + "self_attn_layer_norm")
        x = x + attention(a, a, b + "self_attn", mask)
        if memory is not None:
            x = x + attention(ln(x, b + "encoder_attn_layer_norm"), memory, b + "encoder_attn", 0.0)
        return x + lin(gelu(lin(ln(x, b + "final_layer_norm"), b + "fc1")), b + "fc2")

    x = stem_gelu(torch.nn.functional.conv1d(features, w["model.encoder.conv1.weight"], w["model.encoder.conv1.bias"],
                                             padding=1))
    x = stem_gelu(torch.nn.functional.conv1d(x, w["model.encoder.conv2.weight"], w["model.encoder.conv2.bias"],
                                             stride=2, padding=1))
    x = x.permute(0, 2, 1)
    if encoder_positions:
        x = x + w["model.encoder.embed_positions.weight"][: x.shape[1]]
    for l in range(cfg["layers"]):
        x = layer(x, f"model.encoder.layers.{l}.")
    memory = ln(x, "model.encoder.layer_norm")
    T = dec_ids.shape[1]
    y = w["model.decoder.embed_tokens.weight"][dec_ids] + w["model.decoder.embed_positions.weight"][:T]
    causal = torch.full((T, T), float("-inf")).triu(1)
    for l in range(cfg["decoder_layers"]):
        y = layer(y, f"model.decoder.layers.{l}.", memory, causal)
    y = ln(y, "model.decoder.layer_norm")
    return y @ w["model.decoder.embed_tokens.weight"].T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "speech", "speech (Whisper) vs PyTorch WhisperForConditionalGeneration, cached decoding")
    cfg, seed = CONFIG, 4242
    weights = make_weights(cfg, seed)
    g = torch.Generator().manual_seed(seed + 1000)
    features = (torch.randn(BATCH, cfg["n_mels"], 2 * SRC, generator=g) * 0.5).to(torch.float32).to(torch.float64)
    tokens = torch.randint(0, cfg["vocab"], (BATCH, PROMPT + STEPS), generator=g)
    inputs = {"batch": BATCH, "seq_len": SRC, "features": features.permute(0, 2, 1).flatten().tolist(),
              "prompt": tokens[:, :PROMPT].flatten().tolist(), "forced": tokens[:, PROMPT:].flatten().tolist()}
    # The same model as a Hugging Face directory: config.json (WhisperConfig's keys) over a wrong
    # catalog config, F16, two shards.
    hf = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"], "encoder_layers": 2,
          "decoder_layers": 2, "d_model": 64, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
          "encoder_ffn_dim": 256, "decoder_ffn_dim": 256, "vocab_size": 100, "num_mel_bins": 16,
          "max_source_positions": SRC, "max_target_positions": 16, "activation_function": "gelu",
          "scale_embedding": False}
    wrong = dict(cfg, layers=1, heads=2, n_mels=80, norm_eps=1e-6, activation="gelu_new")
    for case, dtype, catalog, hf_config in (("whisper-l2-h64-mel16", "F32", cfg, None),
                                            ("whisper-hf-dir-f16-2-shards", "F16", wrong, hf)):
        w = as_stored(weights, dtype)
        ours = check.run_ours(case, catalog, weights, inputs, BATCH * (STEPS + 1), cfg["vocab"], hf_config=hf_config,
                              shards=2, dtype=dtype)
        run = lambda **kw: whisper_logits(w, cfg, features, tokens, **kw)[:, PROMPT - 1:].reshape(-1, cfg["vocab"])
        check.compare(case, ours, run(), {
            "tanh GELU in the conv stem": run(stem_gelu=lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
            "LayerNorm eps 1e-6 instead of 1e-5": run(eps=1e-6),
            "no encoder positions": run(encoder_positions=False),
            "queries not scaled by head_dim^-0.5": run(scale_q=False),
        })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
