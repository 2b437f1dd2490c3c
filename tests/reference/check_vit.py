"""Vision (ViT) against a float64 PyTorch ViTForImageClassification written from the published
definition.

Reference: Dosovitskiy et al. 2021 and Hugging Face's ViT (modeling_vit.py): patch embedding as a
Conv2d(channels, hidden, kernel = stride = patch) over pixel_values [B, C, H, W], patches in
row-major order (flatten(2).transpose(1, 2)); the class token in front; learned position
embeddings over [class, patches]; pre-LN encoder (layernorm_before -> self-attention scaled by
1/sqrt(head_dim) -> residual; layernorm_after -> GELU(erf) MLP -> residual); final LayerNorm;
classifier on the class token. Our graph takes the same pixels channels-last
([batch*H*W, channels]), the layout its seeded images have.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

CONFIG = {"image_size": 32, "patch": 8, "channels": 3, "layers": 2, "hidden": 64, "heads": 4, "intermediate": 256,
          "num_classes": 10, "norm_eps": 1e-12}
BATCH = 3


def make_weights(cfg, seed, distilled=False):
    """Seeded weights at a trained ViT's scales: patch conv ~ 1/sqrt(fan_in), class token and
    positions O(0.1–0.3), linear weights ~ 1/sqrt(fan_in) (attention scores O(1)), LN gammas ~ 1.
    distilled: DeiTForImageClassificationWithTeacher's names and distillation token / head."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    h, i, c, p = cfg["hidden"], cfg["intermediate"], cfg["channels"], cfg["patch"]
    tokens = (2 if distilled else 1) + (cfg["image_size"] // p) ** 2
    v = "deit." if distilled else "vit."
    w = {
        v + "embeddings.cls_token": n(1, 1, h, std=0.3),
        v + "embeddings.position_embeddings": n(1, tokens, h, std=0.1),
        v + "embeddings.patch_embeddings.projection.weight": n(h, c, p, p, std=(c * p * p) ** -0.5),
        v + "embeddings.patch_embeddings.projection.bias": n(h, std=0.05),
        v + "layernorm.weight": n(h, std=0.1, mean=1.0),
        v + "layernorm.bias": n(h, std=0.05),
    }
    heads = ("cls_classifier", "distillation_classifier") if distilled else ("classifier",)
    for head in heads:
        w[head + ".weight"] = n(cfg["num_classes"], h, std=h ** -0.5)
        w[head + ".bias"] = n(cfg["num_classes"], std=0.05)
    if distilled:
        w[v + "embeddings.distillation_token"] = n(1, 1, h, std=0.3)
    for l in range(cfg["layers"]):
        b = f"{v}encoder.layer.{l}."
        for name, (out_f, in_f) in {"attention.attention.query": (h, h), "attention.attention.key": (h, h),
                                    "attention.attention.value": (h, h), "attention.output.dense": (h, h),
                                    "intermediate.dense": (i, h), "output.dense": (h, i)}.items():
            w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
            w[b + name + ".bias"] = n(out_f, std=0.05)
        for ln in ("layernorm_before", "layernorm_after"):
            w[b + ln + ".weight"] = n(h, std=0.1, mean=1.0)
            w[b + ln + ".bias"] = n(h, std=0.05)
    return w


def vit_logits(w, cfg, pixels, *, gelu=lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))),
               transpose_patch_kernel=False, class_token_position=True, distilled=False, one_head=False):
    """ViTForImageClassification logits [B, classes] (distilled: DeiT with teacher, the mean of its
    two heads); keywords only for the wrong variants."""
    h, heads, eps, p = cfg["hidden"], cfg["heads"], cfg["norm_eps"], cfg["patch"]
    v = "deit." if distilled else "vit."
    d = h // heads
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (h,), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
    kernel = w[v + "embeddings.patch_embeddings.projection.weight"]
    if transpose_patch_kernel:
        kernel = kernel.transpose(-1, -2)
    x = torch.nn.functional.conv2d(pixels, kernel, w[v + "embeddings.patch_embeddings.projection.bias"], stride=p)
    x = x.flatten(2).transpose(1, 2)  # [B, patches, hidden], row-major patches
    B, N = x.shape[0], x.shape[1]
    extra = [w[v + "embeddings.cls_token"].expand(B, 1, h)]
    if distilled:
        extra.append(w[v + "embeddings.distillation_token"].expand(B, 1, h))
    pos = w[v + "embeddings.position_embeddings"]
    if class_token_position:
        x = torch.cat(extra + [x], dim=1) + pos
    else:  # positions added to the patches before the class token is prepended
        x = torch.cat(extra + [x + pos[:, :N]], dim=1)
    S = x.shape[1]
    for l in range(cfg["layers"]):
        b = f"{v}encoder.layer.{l}."
        a = ln(x, b + "layernorm_before")
        split = lambda t: t.view(B, S, heads, d).transpose(1, 2)
        q, k, val = (split(lin(a, b + f"attention.attention.{n}")) for n in ("query", "key", "value"))
        ctx = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ val).transpose(1, 2).reshape(B, S, h)
        x = x + lin(ctx, b + "attention.output.dense")
        x = x + lin(gelu(lin(ln(x, b + "layernorm_after"), b + "intermediate.dense")), b + "output.dense")
    x = ln(x, v + "layernorm")
    if not distilled:
        return lin(x[:, 0], "classifier")
    if one_head:
        return lin(x[:, 0], "cls_classifier")
    return (lin(x[:, 0], "cls_classifier") + lin(x[:, 1], "distillation_classifier")) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "vision", "vision (ViT) vs PyTorch ViTForImageClassification")
    cfg = CONFIG
    g = torch.Generator().manual_seed(7)
    size = cfg["image_size"]
    pixels = torch.randn(BATCH, cfg["channels"], size, size, generator=g).to(torch.float32).to(torch.float64)
    channels_last = pixels.permute(0, 2, 3, 1).flatten()
    inputs = {"batch": BATCH, "pixels": channels_last.tolist()}
    # DeiT (distilled, with teacher) as a Hugging Face directory: config.json (DeiTConfig's keys,
    # id2label for the classes) over a wrong catalog config, BF16, two shards.
    deit_hf = {"model_type": "deit", "architectures": ["DeiTForImageClassificationWithTeacher"], "image_size": 32,
               "patch_size": 8, "num_channels": 3, "num_hidden_layers": 2, "hidden_size": 64,
               "num_attention_heads": 4, "intermediate_size": 256, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
               "qkv_bias": True, "id2label": {str(i): f"class {i}" for i in range(cfg["num_classes"])}}
    wrong = dict(cfg, layers=1, norm_eps=1e-6, num_classes=3)
    for seed, (case, distilled, catalog, hf, dtype) in enumerate(
            (("vit-32px-patch8", False, cfg, None, "F32"),
             ("deit-distilled-hf-dir-bf16-2-shards", True, wrong, deit_hf, "BF16")), start=2024):
        weights = make_weights(cfg, seed, distilled)
        w = as_stored(weights, dtype)
        ours = check.run_ours(case, catalog, weights, inputs, BATCH, cfg["num_classes"], hf_config=hf, shards=2,
                              dtype=dtype)
        run = lambda **kw: vit_logits(w, cfg, pixels, distilled=distilled, **kw)
        variants = {
            "tanh GELU instead of erf": run(gelu=lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
            "patch kernel transposed (h and w swapped)": run(transpose_patch_kernel=True),
            "class token without its position embedding": run(class_token_position=False),
        }
        if distilled:
            variants["the class head alone (no distillation head)"] = run(one_head=True)
        check.compare(case, ours, run(), variants)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
