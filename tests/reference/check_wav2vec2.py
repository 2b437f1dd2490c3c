"""Speech (Wav2Vec2) against a float64 PyTorch Wav2Vec2Model written from the published definition.

Reference: Baevski et al. 2020 and Hugging Face's Wav2Vec2 (modeling_wav2vec2.py):
  feature encoder: raw audio [B, 1, samples] -> Conv1d layers without bias (kernel/stride per
    layer), GroupNorm with one group per channel after the first ("group" norm, PyTorch's eps
    1e-5), GELU after each;
  feature_projection: LayerNorm(conv_dim) -> Linear(conv_dim, hidden);
  encoder: positional Conv1d(hidden, hidden, k, padding=k//2, groups) with weight_norm over the
    kernel axis (weight = g * v / |v| per kernel tap), the last frame dropped for even k
    (Wav2Vec2SamePadLayer), GELU, added to the states; LayerNorm; post-LN layers
    (x = LN(x + attn(x)); x = LN(x + fc2(GELU(fc1(x))))).
Output: last_hidden_state [batch*frames, hidden].

Cases: a Wav2Vec2Model file (bare names, weight_g / weight_v) with the catalog config, and a
Wav2Vec2ForCTC directory (config.json with Wav2Vec2Config's keys, "wav2vec2." names, the
parametrizations.weight.original0/1 spelling of newer PyTorch, F16) over a wrong catalog config.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

FRAMES, BATCH = 12, 2
CONFIG = {"style": "wav2vec2", "layers": 2, "hidden": 48, "heads": 4, "intermediate": 96, "conv_dim": 32,
          "conv_kernel": [10, 3, 3, 2], "conv_stride": [5, 2, 2, 2], "feat_extract_norm": "group",
          "pos_conv_kernel": 8, "pos_conv_groups": 4, "activation": "gelu", "norm_eps": 1e-5}
HF_CONFIG = {"model_type": "wav2vec2", "architectures": ["Wav2Vec2ForCTC"], "num_hidden_layers": 2, "hidden_size": 48,
             "num_attention_heads": 4, "intermediate_size": 96, "conv_dim": [32, 32, 32, 32],
             "conv_kernel": [10, 3, 3, 2], "conv_stride": [5, 2, 2, 2], "conv_bias": False,
             "feat_extract_norm": "group", "feat_extract_activation": "gelu", "num_conv_pos_embeddings": 8,
             "num_conv_pos_embedding_groups": 4, "hidden_act": "gelu", "layer_norm_eps": 1e-5,
             "do_stable_layer_norm": False, "vocab_size": 32}
WRONG_CATALOG = dict(CONFIG, layers=1, pos_conv_kernel=4, norm_eps=1e-6)


def samples_for(cfg, frames):
    n = frames
    for k, s in reversed(list(zip(cfg["conv_kernel"], cfg["conv_stride"]))):
        n = (n - 1) * s + k
    return n


def make_weights(cfg, seed, prefix="", parametrized=False):
    """Seeded weights at trained scales: convolutions He-scaled for the GELU after them, linear
    weights ~ 1/sqrt(fan_in), LN gammas ~ 1; the positional conv as weight_norm stores it (g per
    kernel tap, v)."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    c, h, i, k, grp = cfg["conv_dim"], cfg["hidden"], cfg["intermediate"], cfg["pos_conv_kernel"], cfg["pos_conv_groups"]
    w = {}
    for l, kern in enumerate(cfg["conv_kernel"]):
        cin = 1 if l == 0 else c
        w[f"feature_extractor.conv_layers.{l}.conv.weight"] = n(c, cin, kern, std=(2.0 / (cin * kern)) ** 0.5)
    w["feature_extractor.conv_layers.0.layer_norm.weight"] = n(c, std=0.1, mean=1.0)
    w["feature_extractor.conv_layers.0.layer_norm.bias"] = n(c, std=0.05)
    w["feature_projection.layer_norm.weight"] = n(c, std=0.1, mean=1.0)
    w["feature_projection.layer_norm.bias"] = n(c, std=0.05)
    w["feature_projection.projection.weight"] = n(h, c, std=c ** -0.5)
    w["feature_projection.projection.bias"] = n(h, std=0.05)
    pos = "encoder.pos_conv_embed.conv."
    w[pos + ("parametrizations.weight.original0" if parametrized else "weight_g")] = n(1, 1, k, std=0.3, mean=1.0)
    w[pos + ("parametrizations.weight.original1" if parametrized else "weight_v")] = n(h, h // grp, k)
    w[pos + "bias"] = n(h, std=0.05)
    w["encoder.layer_norm.weight"] = n(h, std=0.1, mean=1.0)
    w["encoder.layer_norm.bias"] = n(h, std=0.05)
    for l in range(cfg["layers"]):
        b = f"encoder.layers.{l}."
        for name, (out_f, in_f) in {"attention.q_proj": (h, h), "attention.k_proj": (h, h), "attention.v_proj": (h, h),
                                    "attention.out_proj": (h, h), "feed_forward.intermediate_dense": (i, h),
                                    "feed_forward.output_dense": (h, i)}.items():
            w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
            w[b + name + ".bias"] = n(out_f, std=0.05)
        for ln in ("layer_norm", "final_layer_norm"):
            w[b + ln + ".weight"] = n(h, std=0.1, mean=1.0)
            w[b + ln + ".bias"] = n(h, std=0.05)
    # A CTC head and a masked-time embedding, as in Wav2Vec2ForCTC files; the encoder ignores them.
    w["masked_spec_embed"] = n(h, std=0.1)
    out = {prefix + name: t for name, t in w.items()}
    if prefix:
        out["lm_head.weight"] = n(32, h, std=h ** -0.5)
        out["lm_head.bias"] = n(32, std=0.05)
    return out


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def wav2vec2_states(w, cfg, audio, *, prefix="", parametrized=False, stem_gelu=gelu, weight_norm=True,
                    same_pad="drop_last", norm="group", post_ln=True, eps=1e-5):
    """last_hidden_state [B*frames, hidden]; the keywords only build the wrong variants."""
    W = lambda name: w[prefix + name]
    h, heads, k = cfg["hidden"], cfg["heads"], cfg["pos_conv_kernel"]
    d = h // heads
    x = audio[:, None, :]
    for l, stride in enumerate(cfg["conv_stride"]):
        x = torch.nn.functional.conv1d(x, W(f"feature_extractor.conv_layers.{l}.conv.weight"), stride=stride)
        if l == 0:
            g, b = W("feature_extractor.conv_layers.0.layer_norm.weight"), W("feature_extractor.conv_layers.0.layer_norm.bias")
            groups = x.shape[1] if norm == "group" else 1
            x = torch.nn.functional.group_norm(x, groups, g, b, 1e-5)
        x = stem_gelu(x)
    x = x.transpose(1, 2)
    ln = lambda t, name: torch.nn.functional.layer_norm(t, (t.shape[-1],), W(name + ".weight"), W(name + ".bias"), eps)
    lin = lambda t, name: t @ W(name + ".weight").T + W(name + ".bias")
    x = lin(ln(x, "feature_projection.layer_norm"), "feature_projection.projection")
    pos = "encoder.pos_conv_embed.conv."
    wg = W(pos + ("parametrizations.weight.original0" if parametrized else "weight_g"))
    wv = W(pos + ("parametrizations.weight.original1" if parametrized else "weight_v"))
    weight = wg * wv / wv.pow(2).sum(dim=(0, 1), keepdim=True).sqrt() if weight_norm else wv
    p = torch.nn.functional.conv1d(x.transpose(1, 2), weight, W(pos + "bias"), padding=k // 2,
                                   groups=cfg["pos_conv_groups"])
    if k % 2 == 0:
        p = p[:, :, :-1] if same_pad == "drop_last" else p[:, :, 1:]
    x = x + gelu(p).transpose(1, 2)
    x = ln(x, "encoder.layer_norm")
    B, S, _ = x.shape
    for l in range(cfg["layers"]):
        b = f"encoder.layers.{l}."
        a = x if post_ln else ln(x, b + "layer_norm")
        split = lambda t: t.view(B, S, heads, d).transpose(1, 2)
        q = split(lin(a, b + "attention.q_proj") * d ** -0.5)
        kk, v = split(lin(a, b + "attention.k_proj")), split(lin(a, b + "attention.v_proj"))
        ctx = (torch.softmax(q @ kk.transpose(-1, -2), dim=-1) @ v).transpose(1, 2).reshape(B, S, h)
        ffn = lambda t: lin(gelu(lin(t, b + "feed_forward.intermediate_dense")), b + "feed_forward.output_dense")
        if post_ln:
            x = ln(x + lin(ctx, b + "attention.out_proj"), b + "layer_norm")
            x = ln(x + ffn(x), b + "final_layer_norm")
        else:
            x = x + lin(ctx, b + "attention.out_proj")
            x = x + ffn(ln(x, b + "final_layer_norm"))
    return x.reshape(B * S, h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "speech", "speech (Wav2Vec2) vs PyTorch Wav2Vec2Model")
    cfg = CONFIG
    n = samples_for(cfg, FRAMES)
    g = torch.Generator().manual_seed(5)
    audio = torch.randn(BATCH, n, generator=g).to(torch.float32).to(torch.float64)
    inputs = {"batch": BATCH, "seq_len": FRAMES, "audio": audio.flatten().tolist()}
    cases = (("wav2vec2-file", "", False, "F32", None, cfg),
             ("wav2vec2-ctc-hf-dir-f16", "wav2vec2.", True, "F16", HF_CONFIG, WRONG_CATALOG))
    for seed, (case, prefix, parametrized, dtype, hf, catalog) in enumerate(cases, start=91):
        weights = make_weights(cfg, seed, prefix, parametrized)
        w = as_stored(weights, dtype)
        ours = check.run_ours(case, catalog, weights, inputs, BATCH * FRAMES, cfg["hidden"], hf_config=hf, dtype=dtype)
        run = lambda **kw: wav2vec2_states(w, cfg, audio, prefix=prefix, parametrized=parametrized, **kw)
        check.compare(case, ours, run(), {
            "tanh GELU in the feature encoder": run(stem_gelu=lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
            "positional conv: first frame dropped, not the last": run(same_pad="drop_first"),
            "positional conv without weight normalisation": run(weight_norm=False),
            "GroupNorm as one group (LayerNorm over channels x time)": run(norm="layer"),
            "pre-LN layers (stable layer norm) instead of post-LN": run(post_ln=False),
            "LayerNorm eps 1e-3 instead of 1e-5": run(eps=1e-3),
        })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
