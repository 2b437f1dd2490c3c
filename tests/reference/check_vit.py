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


def make_weights(cfg, seed):
    """Seeded weights at a trained ViT's scales: patch conv ~ 1/sqrt(fan_in), class token and
    positions O(0.1–0.3), linear weights ~ 1/sqrt(fan_in) (attention scores O(1)), LN gammas ~ 1."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    h, i, c, p = cfg["hidden"], cfg["intermediate"], cfg["channels"], cfg["patch"]
    tokens = 1 + (cfg["image_size"] // p) ** 2
    w = {
        "vit.embeddings.cls_token": n(1, 1, h, std=0.3),
        "vit.embeddings.position_embeddings": n(1, tokens, h, std=0.1),
        "vit.embeddings.patch_embeddings.projection.weight": n(h, c, p, p, std=(c * p * p) ** -0.5),
        "vit.embeddings.patch_embeddings.projection.bias": n(h, std=0.05),
        "vit.layernorm.weight": n(h, std=0.1, mean=1.0),
        "vit.layernorm.bias": n(h, std=0.05),
        "classifier.weight": n(cfg["num_classes"], h, std=h ** -0.5),
        "classifier.bias": n(cfg["num_classes"], std=0.05),
    }
    for l in range(cfg["layers"]):
        b = f"vit.encoder.layer.{l}."
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
               transpose_patch_kernel=False, class_token_position=True):
    """ViTForImageClassification logits [B, classes]; keywords only for the wrong variants."""
    h, heads, eps, p = cfg["hidden"], cfg["heads"], cfg["norm_eps"], cfg["patch"]
    d = h // heads
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (h,), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
    kernel = w["vit.embeddings.patch_embeddings.projection.weight"]
    if transpose_patch_kernel:
        kernel = kernel.transpose(-1, -2)
    x = torch.nn.functional.conv2d(pixels, kernel, w["vit.embeddings.patch_embeddings.projection.bias"], stride=p)
    x = x.flatten(2).transpose(1, 2)  # [B, patches, hidden], row-major patches
    B, N = x.shape[0], x.shape[1]
    cls = w["vit.embeddings.cls_token"].expand(B, 1, h)
    pos = w["vit.embeddings.position_embeddings"]
    if class_token_position:
        x = torch.cat([cls, x], dim=1) + pos
    else:  # positions added to the patches before the class token is prepended
        x = torch.cat([cls, x + pos[:, :N]], dim=1)
    S = N + 1
    for l in range(cfg["layers"]):
        b = f"vit.encoder.layer.{l}."
        a = ln(x, b + "layernorm_before")
        split = lambda t: t.view(B, S, heads, d).transpose(1, 2)
        q, k, v = (split(lin(a, b + f"attention.attention.{n}")) for n in ("query", "key", "value"))
        ctx = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v).transpose(1, 2).reshape(B, S, h)
        x = x + lin(ctx, b + "attention.output.dense")
        x = x + lin(gelu(lin(ln(x, b + "layernorm_after"), b + "intermediate.dense")), b + "output.dense")
    x = ln(x, "vit.layernorm")
    return lin(x[:, 0], "classifier")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "vision", "vision (ViT) vs PyTorch ViTForImageClassification")
    cfg, case = CONFIG, "vit-32px-patch8"
    weights = make_weights(cfg, seed=2024)
    w = as_stored(weights)
    g = torch.Generator().manual_seed(7)
    size = cfg["image_size"]
    pixels = torch.randn(BATCH, cfg["channels"], size, size, generator=g).to(torch.float32).to(torch.float64)
    channels_last = pixels.permute(0, 2, 3, 1).flatten()
    inputs = {"batch": BATCH, "pixels": channels_last.tolist()}
    ours = check.run_ours(case, cfg, weights, inputs, BATCH, cfg["num_classes"])
    run = lambda **kw: vit_logits(w, cfg, pixels, **kw)
    check.compare(case, ours, run(), {
        "tanh GELU instead of erf": run(gelu=lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
        "patch kernel transposed (h and w swapped)": run(transpose_patch_kernel=True),
        "class token without its position embedding": run(class_token_position=False),
    })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
