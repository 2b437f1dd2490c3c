"""Vision-encoder-text-decoder (CLIP) against a float64 PyTorch CLIPModel written from the
published definition.

Reference: Radford et al. 2021 and Hugging Face's CLIP (modeling_clip.py):
  vision: Conv2d patch embedding without bias over pixel_values [B, C, H, W], class_embedding in
    front, learned positions, pre_layrnorm, pre-LN layers (x + attn(layer_norm1(x)), x +
    fc2(quick_gelu(fc1(layer_norm2(x))))), post_layernorm on the class token, visual_projection;
  text: token + position embeddings, the same layers under a causal mask, final_layer_norm,
    pooled at each text's EOS (the legacy rule: the position of the largest id), text_projection;
  both L2-normalised; logits_per_image = exp(logit_scale) * image · text^T.
Our graph takes the pixels channels-last. Output compared: image embeddings, text embeddings and
logits_per_image, concatenated.

Cases: a catalog-config case on one .safetensors file, and a Hugging Face directory (config.json
with CLIPConfig's keys, two BF16 shards) whose config.json must override a deliberately wrong
catalog config — the text eps, vision width and the legacy-EOS rule come only from config.json.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

CONFIG = {"variant": "clip", "vision_image_size": 32, "vision_patch": 8, "vision_layers": 2, "vision_hidden": 64,
          "vision_heads": 4, "vision_intermediate": 256, "vision_activation": "quick_gelu",
          "text_layers": 2, "text_hidden": 48, "text_heads": 4, "text_intermediate": 192,
          "text_activation": "quick_gelu", "vocab": 100, "max_positions": 16, "projection_dim": 32,
          "norm_eps": 1e-5}
# The same model as transformers' config.json (CLIPConfig / CLIPTextConfig / CLIPVisionConfig keys).
HF_CONFIG = {
    "model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 32, "logit_scale_init_value": 2.6592,
    "text_config": {"model_type": "clip_text_model", "num_hidden_layers": 2, "hidden_size": 48,
                    "num_attention_heads": 4, "intermediate_size": 192, "vocab_size": 100,
                    "max_position_embeddings": 16, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5,
                    "eos_token_id": 2},
    "vision_config": {"model_type": "clip_vision_model", "num_hidden_layers": 2, "hidden_size": 64,
                      "num_attention_heads": 4, "intermediate_size": 256, "image_size": 32, "patch_size": 8,
                      "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5},
}
# A catalog config the directory's config.json must override (wrong eps, width and activation).
WRONG_CATALOG = dict(CONFIG, vision_hidden=32, vision_heads=2, norm_eps=1e-6, text_activation="gelu")
BATCH, TEXTS, LEN = 3, 3, 10
LENGTHS = [10, 7, 5]


def make_weights(cfg, seed):
    """Seeded weights at a trained CLIP's scales: patch conv ~ 1/sqrt(fan_in), class embedding and
    positions O(0.1), token embeddings std 0.02 (so LayerNorm's eps shows), linear weights ~
    1/sqrt(fan_in), LN gammas ~ 1, logit_scale ln(100) as trained models reach."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    vh, th, p, c = cfg["vision_hidden"], cfg["text_hidden"], cfg["vision_patch"], 3
    tokens = 1 + (cfg["vision_image_size"] // p) ** 2
    w = {
        "vision_model.embeddings.class_embedding": n(vh, std=0.3),
        "vision_model.embeddings.patch_embedding.weight": n(vh, c, p, p, std=(c * p * p) ** -0.5),
        "vision_model.embeddings.position_embedding.weight": n(tokens, vh, std=0.1),
        "vision_model.pre_layrnorm.weight": n(vh, std=0.1, mean=1.0), "vision_model.pre_layrnorm.bias": n(vh, std=0.05),
        "vision_model.post_layernorm.weight": n(vh, std=0.1, mean=1.0),
        "vision_model.post_layernorm.bias": n(vh, std=0.05),
        "visual_projection.weight": n(cfg["projection_dim"], vh, std=vh ** -0.5),
        "text_model.embeddings.token_embedding.weight": n(cfg["vocab"], th, std=0.02),
        "text_model.embeddings.position_embedding.weight": n(cfg["max_positions"], th, std=0.01),
        "text_model.final_layer_norm.weight": n(th, std=0.1, mean=1.0),
        "text_model.final_layer_norm.bias": n(th, std=0.05),
        "text_projection.weight": n(cfg["projection_dim"], th, std=th ** -0.5),
        "logit_scale": torch.tensor(math.log(100.0)),
    }
    for tower, h, inter, layers in (("vision_model", vh, cfg["vision_intermediate"], cfg["vision_layers"]),
                                    ("text_model", th, cfg["text_intermediate"], cfg["text_layers"])):
        for l in range(layers):
            b = f"{tower}.encoder.layers.{l}."
            for name, (out_f, in_f) in {"self_attn.q_proj": (h, h), "self_attn.k_proj": (h, h),
                                        "self_attn.v_proj": (h, h), "self_attn.out_proj": (h, h),
                                        "mlp.fc1": (inter, h), "mlp.fc2": (h, inter)}.items():
                w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
                w[b + name + ".bias"] = n(out_f, std=0.05)
            for ln in ("layer_norm1", "layer_norm2"):
                w[b + ln + ".weight"] = n(h, std=0.1, mean=1.0)
                w[b + ln + ".bias"] = n(h, std=0.05)
    return w


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def clip_outputs(w, cfg, pixels, ids, *, act=quick_gelu, eps=1e-5, pre_layrnorm=True, causal=True, pool_last=False,
                 exp_scale=True):
    """[image embeds; text embeds; logits_per_image] flattened; keywords only for wrong variants."""
    def ln(x, name, h):
        return torch.nn.functional.layer_norm(x, (h,), w[name + ".weight"], w[name + ".bias"], eps)

    def lin(x, name):
        return x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0.0)

    def encoder(x, tower, layers, heads, mask):
        B, S, h = x.shape
        d = h // heads
        for l in range(layers):
            b = f"{tower}.encoder.layers.{l}."
            a = ln(x, b + "layer_norm1", h)
            split = lambda t: t.view(B, S, heads, d).transpose(1, 2)
            q = split(lin(a, b + "self_attn.q_proj") * d ** -0.5)
            k, v = split(lin(a, b + "self_attn.k_proj")), split(lin(a, b + "self_attn.v_proj"))
            ctx = (torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1) @ v).transpose(1, 2).reshape(B, S, h)
            x = x + lin(ctx, b + "self_attn.out_proj")
            x = x + lin(act(lin(ln(x, b + "layer_norm2", h), b + "mlp.fc1")), b + "mlp.fc2")
        return x

    vh, th, p = cfg["vision_hidden"], cfg["text_hidden"], cfg["vision_patch"]
    x = torch.nn.functional.conv2d(pixels, w["vision_model.embeddings.patch_embedding.weight"], stride=p)
    x = x.flatten(2).transpose(1, 2)
    B = x.shape[0]
    x = torch.cat([w["vision_model.embeddings.class_embedding"].expand(B, 1, vh), x], dim=1)
    x = x + w["vision_model.embeddings.position_embedding.weight"]
    if pre_layrnorm:
        x = ln(x, "vision_model.pre_layrnorm", vh)
    x = encoder(x, "vision_model", cfg["vision_layers"], cfg["vision_heads"], 0.0)
    image = lin(ln(x[:, 0], "vision_model.post_layernorm", vh), "visual_projection")

    T, L = ids.shape
    y = w["text_model.embeddings.token_embedding.weight"][ids] + w["text_model.embeddings.position_embedding.weight"][:L]
    mask = torch.full((L, L), float("-inf")).triu(1) if causal else 0.0
    y = ln(encoder(y, "text_model", cfg["text_layers"], cfg["text_heads"], mask), "text_model.final_layer_norm", th)
    eos = torch.full((T,), L - 1, dtype=torch.long) if pool_last else ids.argmax(dim=-1)
    text = lin(y[torch.arange(T), eos], "text_projection")

    image = image / image.norm(dim=-1, keepdim=True)
    text = text / text.norm(dim=-1, keepdim=True)
    scale = w["logit_scale"].exp() if exp_scale else w["logit_scale"]
    logits = scale * image @ text.T
    return torch.cat([image.flatten(), text.flatten(), logits.flatten()])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "vision-encoder-text-decoder", "vision-encoder-text-decoder (CLIP) vs PyTorch CLIPModel")
    cfg = CONFIG
    g = torch.Generator().manual_seed(77)
    size = cfg["vision_image_size"]
    pixels = torch.randn(BATCH, 3, size, size, generator=g).to(torch.float32).to(torch.float64)
    # Texts as CLIP's tokenizer pads them: ids below EOS, EOS (the largest id) last, then padding 0.
    ids = torch.zeros(TEXTS, LEN, dtype=torch.long)
    for t, n in enumerate(LENGTHS):
        ids[t, :n - 1] = torch.randint(1, cfg["vocab"] - 1, (n - 1,), generator=g)
        ids[t, n - 1] = cfg["vocab"] - 1
    inputs = {"batch": BATCH, "pixels": pixels.permute(0, 2, 3, 1).flatten().tolist(), "texts": TEXTS,
              "text_len": LEN, "ids": ids.flatten().tolist()}
    size_out = BATCH * cfg["projection_dim"] + TEXTS * cfg["projection_dim"] + BATCH * TEXTS
    weights = make_weights(cfg, seed=31)
    for case, dtype, hf in (("clip-file", "F32", None), ("clip-hf-dir-bf16-2-shards", "BF16", HF_CONFIG)):
        w = as_stored(weights, dtype)
        catalog = WRONG_CATALOG if hf else cfg
        ours = check.run_ours(case, catalog, weights, inputs, 1, size_out, hf_config=hf, shards=2, dtype=dtype)[0]
        run = lambda **kw: clip_outputs(w, cfg, pixels, ids, **kw)
        check.compare(case, ours, run(), {
            "GELU (erf) for quick_gelu": run(act=lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))),
            "LayerNorm eps 1e-6 instead of 1e-5": run(eps=1e-6),
            "no pre_layrnorm": run(pre_layrnorm=False),
            "text pooled at the last position, not EOS": run(pool_last=True),
            "bidirectional text attention": run(causal=False),
            "logit_scale used without exp": run(exp_scale=False),
        })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
