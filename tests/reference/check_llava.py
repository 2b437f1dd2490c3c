"""Multimodal (LLaVA-1.5, LLaVA-NeXT) against a float64 PyTorch LlavaForConditionalGeneration /
LlavaNextForConditionalGeneration written from the published definition, cached decoding included.

Reference: Liu et al. 2023/2024 and Hugging Face's LLaVA (modeling_llava.py, modeling_llava_next.py):
  image features = CLIPVisionModel hidden_states[vision_feature_layer = -2] (the output of all but
    the last layer, pre_layrnorm applied first), class token dropped ("default" strategy), then
    multi_modal_projector: linear_2(GELU(linear_1(x)));
  LLaVA-NeXT (AnyRes): the base view's features, then the tiles' features re-laid as one grid
    (rows*side x cols*side), the learned image_newline appended after every grid row (the image
    fills its grid pinpoint exactly, so unpad_image removes nothing);
  the prompt's one <image> token is replaced by those features in the input embeddings, and the
    LLaMA decoder (check_llama.py's reference) runs over the spliced sequence.
Ours prefills the spliced prompt into a KV cache and decodes forced tokens one at a time; the
reference runs it all in one pass.

Cases: LLaVA-1.5 on one .safetensors file under transformers' classic names
(language_model.model.*) with the catalog config; LLaVA-NeXT as a Hugging Face directory
(config.json with LlavaNextConfig's keys, two F16 shards) under the later layout
(model.language_model.*, lm_head.weight), overriding a wrong catalog config.
"""

import argparse
import math
import sys

from check_llama import llama_logits
from reference_common import Check, as_stored, torch

PROMPT, IMAGE_AT, STEPS, BATCH = 6, 2, 3, 2
IMAGE_TOKEN = 120
VISION = {"vision_image_size": 28, "vision_patch": 7, "vision_layers": 3, "vision_hidden": 48, "vision_heads": 4,
          "vision_intermediate": 96, "vision_activation": "quick_gelu", "vision_norm_eps": 1e-5}
TEXT = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "intermediate": 128, "vocab": 128,
        "max_positions": 128, "rope_theta": 10000.0, "norm_eps": 1e-5}
LLAVA = dict(VISION, **TEXT, variant="llava", image_token_index=IMAGE_TOKEN, decode_steps=STEPS)
NEXT = dict(LLAVA, image_grid=[2, 2])
HF_NEXT = {
    "model_type": "llava_next", "architectures": ["LlavaNextForConditionalGeneration"],
    "image_token_index": IMAGE_TOKEN, "projector_hidden_act": "gelu", "vision_feature_layer": -2,
    "vision_feature_select_strategy": "default", "image_grid_pinpoints": [[56, 56]],
    "vision_config": {"model_type": "clip_vision_model", "image_size": 28, "patch_size": 7, "num_hidden_layers": 3,
                      "hidden_size": 48, "num_attention_heads": 4, "intermediate_size": 96,
                      "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5},
    # As many published LLaVA configs, text_config states only what differs from LlamaConfig's defaults.
    "text_config": {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 128,
                    "max_position_embeddings": 128, "rms_norm_eps": 1e-5},
}
WRONG_CATALOG = dict(NEXT, vision_layers=2, norm_eps=1e-6, rope_theta=500000.0, image_token_index=5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def make_weights(cfg, seed, layout):
    """Seeded weights at trained scales (see check_clip.py and check_llama.py), under `layout`'s
    names: "classic" (transformers < 4.52) or "nested" (model.*)."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    vh, p, inter = cfg["vision_hidden"], cfg["vision_patch"], cfg["vision_intermediate"]
    h, i, hd = cfg["hidden"], cfg["intermediate"], cfg["hidden"] // cfg["heads"]
    q_out, kv_out = cfg["heads"] * hd, cfg["kv_heads"] * hd
    vt = "vision_tower.vision_model." if layout == "classic" else "model.vision_tower.vision_model."
    pj = "multi_modal_projector." if layout == "classic" else "model.multi_modal_projector."
    lm = "language_model.model." if layout == "classic" else "model.language_model."
    head = "language_model.lm_head.weight" if layout == "classic" else "lm_head.weight"
    tokens = 1 + (cfg["vision_image_size"] // p) ** 2
    w = {
        vt + "embeddings.class_embedding": n(vh, std=0.3),
        vt + "embeddings.patch_embedding.weight": n(vh, 3, p, p, std=(3 * p * p) ** -0.5),
        vt + "embeddings.position_embedding.weight": n(tokens, vh, std=0.1),
        vt + "pre_layrnorm.weight": n(vh, std=0.1, mean=1.0), vt + "pre_layrnorm.bias": n(vh, std=0.05),
        # Present in real checkpoints, unused by LLaVA (features come before it).
        vt + "post_layernorm.weight": n(vh, std=0.1, mean=1.0), vt + "post_layernorm.bias": n(vh, std=0.05),
        pj + "linear_1.weight": n(h, vh, std=vh ** -0.5), pj + "linear_1.bias": n(h, std=0.05),
        pj + "linear_2.weight": n(h, h, std=h ** -0.5), pj + "linear_2.bias": n(h, std=0.05),
        lm + "embed_tokens.weight": n(cfg["vocab"], h, std=0.02), lm + "norm.weight": n(h, std=0.1, mean=1.0),
        head: n(cfg["vocab"], h, std=h ** -0.5),
    }
    if "image_grid" in cfg:
        w["image_newline" if layout == "classic" else "model.image_newline"] = n(h, std=h ** -0.5)
    for l in range(cfg["vision_layers"]):
        b = f"{vt}encoder.layers.{l}."
        for name, (out_f, in_f) in {"self_attn.q_proj": (vh, vh), "self_attn.k_proj": (vh, vh),
                                    "self_attn.v_proj": (vh, vh), "self_attn.out_proj": (vh, vh),
                                    "mlp.fc1": (inter, vh), "mlp.fc2": (vh, inter)}.items():
            w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
            w[b + name + ".bias"] = n(out_f, std=0.05)
        for ln in ("layer_norm1", "layer_norm2"):
            w[b + ln + ".weight"] = n(vh, std=0.1, mean=1.0)
            w[b + ln + ".bias"] = n(vh, std=0.05)
    for l in range(cfg["layers"]):
        b = f"{lm}layers.{l}."
        w[b + "input_layernorm.weight"] = n(h, std=0.1, mean=1.0)
        w[b + "post_attention_layernorm.weight"] = n(h, std=0.1, mean=1.0)
        for name, (out_f, in_f) in {"self_attn.q_proj": (q_out, h), "self_attn.k_proj": (kv_out, h),
                                    "self_attn.v_proj": (kv_out, h), "self_attn.o_proj": (h, q_out),
                                    "mlp.gate_proj": (i, h), "mlp.up_proj": (i, h), "mlp.down_proj": (h, i)}.items():
            w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
    return w


def llava_rows(w, cfg, layout, pixels, tokens, *, feature_layer=-2, keep_class=False, act=gelu, splice_first=False,
               newline=True, tiles_column_major=False, eps=None):
    """Logits rows ours produces: after the spliced prompt, then after each forced token."""
    vt = "vision_tower.vision_model." if layout == "classic" else "model.vision_tower.vision_model."
    pj = "multi_modal_projector." if layout == "classic" else "model.multi_modal_projector."
    lm = "language_model.model." if layout == "classic" else "model.language_model."
    vh, p, heads = cfg["vision_hidden"], cfg["vision_patch"], cfg["vision_heads"]
    d = vh // heads
    veps = cfg["vision_norm_eps"]
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (vh,), w[name + ".weight"], w[name + ".bias"], veps)
    lin = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
    # CLIPVisionModel with every hidden state kept.
    x = torch.nn.functional.conv2d(pixels, w[vt + "embeddings.patch_embedding.weight"], stride=p)
    x = x.flatten(2).transpose(1, 2)
    N = x.shape[0]
    x = torch.cat([w[vt + "embeddings.class_embedding"].expand(N, 1, vh), x], dim=1)
    x = ln(x + w[vt + "embeddings.position_embedding.weight"], vt + "pre_layrnorm")
    states = [x]
    S = x.shape[1]
    for l in range(cfg["vision_layers"]):
        b = f"{vt}encoder.layers.{l}."
        a = ln(x, b + "layer_norm1")
        split = lambda t: t.view(N, S, heads, d).transpose(1, 2)
        q, k, v = (split(lin(a, b + f"self_attn.{n}_proj")) for n in ("q", "k", "v"))
        ctx = (torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5, dim=-1) @ v).transpose(1, 2).reshape(N, S, vh)
        x = x + lin(ctx, b + "self_attn.out_proj")
        m = lin(ln(x, b + "layer_norm2"), b + "mlp.fc1")
        x = x + lin(m * torch.sigmoid(1.702 * m), b + "mlp.fc2")   # quick_gelu
        states.append(x)
    feats = states[feature_layer]
    if not keep_class:
        feats = feats[:, 1:]
    feats = lin(act(lin(feats, pj + "linear_1")), pj + "linear_2")   # [crops of all images, patches, hidden]
    h = feats.shape[-1]
    B = tokens.shape[0]
    crops = N // B
    per_image = []
    for b in range(B):
        f = feats[b * crops:(b + 1) * crops]
        if "image_grid" not in cfg:
            per_image.append(f.reshape(-1, h))
            continue
        rows, cols = cfg["image_grid"]
        side = cfg["vision_image_size"] // p
        tiles = f[1:].view(rows, cols, side, side, h)
        if tiles_column_major:
            tiles = f[1:].view(cols, rows, side, side, h).transpose(0, 1)
        grid = tiles.permute(0, 2, 1, 3, 4).reshape(rows * side, cols * side, h)
        if newline:
            nl = w["image_newline" if layout == "classic" else "model.image_newline"]
            grid = torch.cat([grid, nl.expand(rows * side, 1, h)], dim=1)
        per_image.append(torch.cat([f[0], grid.reshape(-1, h)], dim=0))
    # The decoder's weights under LlamaForCausalLM's names, for check_llama's reference.
    if layout == "classic":
        lmw = {k[len("language_model."):]: v for k, v in w.items() if k.startswith("language_model.")}
    else:
        lmw = {"model." + k[len(lm):]: v for k, v in w.items() if k.startswith(lm)}
        lmw["lm_head.weight"] = w["lm_head.weight"]
    embeds = []
    for b in range(B):
        t = lmw["model.embed_tokens.weight"][tokens[b]]
        at = int((tokens[b, :PROMPT] == IMAGE_TOKEN).nonzero()[0])
        if splice_first:
            embeds.append(torch.cat([per_image[b], t[:at], t[at + 1:]], dim=0))
        else:
            embeds.append(torch.cat([t[:at], per_image[b], t[at + 1:]], dim=0))
    embeds = torch.stack(embeds)
    prefill = embeds.shape[1] - STEPS
    logits = llama_logits(lmw, cfg, tokens, embeds=embeds, eps=eps, decode_from=prefill)
    return logits[:, prefill - 1:, :].reshape(-1, cfg["vocab"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "multimodal", "multimodal (LLaVA, LLaVA-NeXT) vs PyTorch LlavaForConditionalGeneration")
    cases = (("llava-1.5-file", LLAVA, "classic", "F32", None, LLAVA),
             ("llava-next-hf-dir-f16-2-shards", NEXT, "nested", "F16", HF_NEXT, WRONG_CATALOG))
    for seed, (case, cfg, layout, dtype, hf, catalog) in enumerate(cases, start=11):
        weights = make_weights(cfg, seed, layout)
        w = as_stored(weights, dtype)
        g = torch.Generator().manual_seed(seed + 100)
        crops = 1 + (cfg["image_grid"][0] * cfg["image_grid"][1] if "image_grid" in cfg else 0)
        size = cfg["vision_image_size"]
        pixels = torch.randn(BATCH * crops, 3, size, size, generator=g).to(torch.float32).to(torch.float64)
        tokens = torch.randint(0, IMAGE_TOKEN, (BATCH, PROMPT + STEPS), generator=g)
        tokens[:, IMAGE_AT] = IMAGE_TOKEN
        inputs = {"batch": BATCH, "prompt_len": PROMPT, "pixels": pixels.permute(0, 2, 3, 1).flatten().tolist(),
                  "prompt": tokens[:, :PROMPT].flatten().tolist(), "forced": tokens[:, PROMPT:].flatten().tolist()}
        ours = check.run_ours(case, catalog, weights, inputs, BATCH * (STEPS + 1), cfg["vocab"], hf_config=hf,
                              shards=2, dtype=dtype)
        run = lambda **kw: llava_rows(w, cfg, layout, pixels, tokens, **kw)
        variants = {
            "tanh GELU in the projector": run(act=lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
            "features of the last vision layer (-1)": run(feature_layer=-1),
            "image tokens before the prompt, not at <image>": run(splice_first=True),
            "RMSNorm eps 1e-6 instead of 1e-5": run(eps=1e-6),
        }
        if "image_grid" not in cfg:
            variants["class token kept (\"full\" strategy)"] = run(keep_class=True)
        else:
            variants["no image_newline after grid rows"] = run(newline=False)
            variants["AnyRes tiles read column-major"] = run(tiles_column_major=True)
        check.compare(case, ours, run(), variants)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
