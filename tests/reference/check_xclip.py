"""Multimodal (X-CLIP, video-text retrieval) against a float64 PyTorch XCLIPModel written from the
published definition.

Reference: Ni et al. 2022 and Hugging Face's X-CLIP (modeling_x_clip.py):
  vision: CLIP's embeddings (class_embedding, bias-free patch conv, positions) and pre_layernorm
    over every frame; each XCLIPVisionEncoderLayer first makes a message token per frame
    (message_fc of the class token; + message_attn(message_ln(msg)) across the video's frames),
    appends it to the frame's tokens for the self-attention (pre-LN, residual), drops it, then
    runs the MLP (quick_gelu); post_layernorm on the class token, visual_projection;
  MIT: + position_embedding, CLIP encoder layers, + the MIT's input (residual), mean over frames;
  prompts: the last layer's patch tokens -> prompts_visual_layernorm -> @ prompts_visual_projection
    -> mean over frames; the text embeddings (CLIP text tower, argmax-EOS pooling,
    text_projection) refined per video by prompts_generator (layernorm on the visual tokens;
    layers x += cross_attn(norm1(x), visual) (q/k/v without bias), x += mlp(norm3(x)); alpha * x)
    and added: text + alpha * x;
  logits_per_video = exp(logit_scale) * video · text per video, both L2-normalised.

Cases: a catalog-config file, and a Hugging Face directory (config.json with XCLIPConfig's keys, two
BF16 shards) over a wrong catalog config.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

VIDEOS, FRAMES, TEXTS, LEN = 2, 3, 3, 8
CONFIG = {"variant": "xclip", "vision_image_size": 16, "vision_patch": 8, "vision_layers": 2, "vision_hidden": 32,
          "vision_heads": 4, "vision_intermediate": 64, "vision_activation": "quick_gelu", "text_layers": 2,
          "text_hidden": 24, "text_heads": 4, "text_intermediate": 48, "text_activation": "quick_gelu", "vocab": 50,
          "max_positions": 12, "projection_dim": 16, "norm_eps": 1e-5, "frames": FRAMES, "mit_layers": 1,
          "mit_heads": 2, "mit_intermediate": 32, "prompt_layers": 2, "prompt_heads": 2, "prompt_alpha": 0.1}
HF_CONFIG = {
    "model_type": "xclip", "architectures": ["XCLIPModel"], "projection_dim": 16, "prompt_layers": 2,
    "prompt_alpha": 0.1, "prompt_hidden_act": "quick_gelu", "prompt_num_attention_heads": 2,
    "logit_scale_init_value": 2.6592,
    "text_config": {"model_type": "xclip_text_model", "num_hidden_layers": 2, "hidden_size": 24,
                    "num_attention_heads": 4, "intermediate_size": 48, "vocab_size": 50,
                    "max_position_embeddings": 12, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5},
    "vision_config": {"model_type": "xclip_vision_model", "num_hidden_layers": 2, "hidden_size": 32,
                      "num_attention_heads": 4, "intermediate_size": 64, "image_size": 16, "patch_size": 8,
                      "num_frames": FRAMES, "mit_hidden_size": 16, "mit_intermediate_size": 32,
                      "mit_num_hidden_layers": 1, "mit_num_attention_heads": 2, "hidden_act": "quick_gelu",
                      "layer_norm_eps": 1e-5},
}
WRONG_CATALOG = dict(CONFIG, mit_layers=2, prompt_layers=1, vision_layers=1, text_activation="gelu")


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def make_weights(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    vh, th, p, proj = cfg["vision_hidden"], cfg["text_hidden"], cfg["vision_patch"], cfg["projection_dim"]
    tokens = 1 + (cfg["vision_image_size"] // p) ** 2
    w = {}

    def lin(name, fout, fin, bias=True):
        w[name + ".weight"] = n(fout, fin, std=fin ** -0.5)
        if bias:
            w[name + ".bias"] = n(fout, std=0.05)

    def norm(name, h):
        w[name + ".weight"] = n(h, std=0.1, mean=1.0)
        w[name + ".bias"] = n(h, std=0.05)

    def clip_layer(b, h, inter):
        for proj_name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            lin(b + "self_attn." + proj_name, h, h)
        norm(b + "layer_norm1", h)
        lin(b + "mlp.fc1", inter, h)
        lin(b + "mlp.fc2", h, inter)
        norm(b + "layer_norm2", h)

    vm = "vision_model."
    w[vm + "embeddings.class_embedding"] = n(vh, std=0.3)
    w[vm + "embeddings.patch_embedding.weight"] = n(vh, 3, p, p, std=(3 * p * p) ** -0.5)
    w[vm + "embeddings.position_embedding.weight"] = n(tokens, vh, std=0.1)
    norm(vm + "pre_layernorm", vh)
    for l in range(cfg["vision_layers"]):
        b = f"{vm}encoder.layers.{l}."
        lin(b + "message_fc", vh, vh)
        norm(b + "message_ln", vh)
        for proj_name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            lin(b + "message_attn." + proj_name, vh, vh)
        clip_layer(b, vh, cfg["vision_intermediate"])
    norm(vm + "post_layernorm", vh)
    lin("visual_projection", proj, vh, bias=False)
    w["text_model.embeddings.token_embedding.weight"] = n(cfg["vocab"], th, std=0.02)
    w["text_model.embeddings.position_embedding.weight"] = n(cfg["max_positions"], th, std=0.01)
    for l in range(cfg["text_layers"]):
        clip_layer(f"text_model.encoder.layers.{l}.", th, cfg["text_intermediate"])
    norm("text_model.final_layer_norm", th)
    lin("text_projection", proj, th, bias=False)
    w["logit_scale"] = torch.tensor(math.log(50.0))
    w["mit.position_embedding"] = n(1, FRAMES, proj, std=0.1)
    for l in range(cfg["mit_layers"]):
        clip_layer(f"mit.encoder.layers.{l}.", proj, cfg["mit_intermediate"])
    norm("prompts_visual_layernorm", vh)
    w["prompts_visual_projection"] = n(vh, proj, std=vh ** -0.5)
    norm("prompts_generator.layernorm", proj)
    for l in range(cfg["prompt_layers"]):
        b = f"prompts_generator.decoder.{l}."
        norm(b + "norm1", proj)
        for proj_name in ("q_proj", "k_proj", "v_proj"):
            lin(b + "cross_attn." + proj_name, proj, proj, bias=False)
        lin(b + "cross_attn.proj", proj, proj)
        norm(b + "norm3", proj)
        lin(b + "mlp.0", 4 * proj, proj)
        lin(b + "mlp.3", proj, 4 * proj)
    w["prompts_generator.alpha"] = n(proj, std=0.05, mean=0.5)
    return w


def xclip_logits(w, cfg, pixels, ids, *, messages=True, mit_residual=True, act=quick_gelu, alpha_scalar=None,
                 prompts=True, eps=1e-5):
    F = torch.nn.functional
    ln = lambda x, name: F.layer_norm(x, (x.shape[-1],), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0.0)

    def attend(q_in, kv_in, name, heads, mask=0.0, q_name="q_proj", out="out_proj"):
        B, Q, H = q_in.shape
        d = H // heads
        q = (lin(q_in, f"{name}.{q_name}") * d ** -0.5).view(B, Q, heads, d).transpose(1, 2)
        k = lin(kv_in, name + ".k_proj").view(B, -1, heads, d).transpose(1, 2)
        v = lin(kv_in, name + ".v_proj").view(B, -1, heads, d).transpose(1, 2)
        ctx = (torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1) @ v).transpose(1, 2).reshape(B, Q, H)
        return lin(ctx, f"{name}.{out}")

    def mlp(x, b):
        return lin(act(lin(x, b + "mlp.fc1")), b + "mlp.fc2")

    def clip_layer(x, b, heads, mask=0.0):
        a = ln(x, b + "layer_norm1")
        x = x + attend(a, a, b + "self_attn", heads, mask)
        return x + mlp(ln(x, b + "layer_norm2"), b)

    vh, vheads, p = cfg["vision_hidden"], cfg["vision_heads"], cfg["vision_patch"]
    vm = "vision_model."
    x = F.conv2d(pixels, w[vm + "embeddings.patch_embedding.weight"], stride=p).flatten(2).transpose(1, 2)
    N = x.shape[0]
    x = torch.cat([w[vm + "embeddings.class_embedding"].expand(N, 1, vh), x], dim=1)
    x = ln(x + w[vm + "embeddings.position_embedding.weight"], vm + "pre_layernorm")
    S = x.shape[1]
    for l in range(cfg["vision_layers"]):
        b = f"{vm}encoder.layers.{l}."
        if messages:
            msg = lin(x[:, 0], b + "message_fc").view(VIDEOS, FRAMES, vh)
            msg = msg + attend(ln(msg, b + "message_ln"), ln(msg, b + "message_ln"), b + "message_attn", vheads)
            ext = torch.cat([x, msg.reshape(N, 1, vh)], dim=1)
            a = ln(ext, b + "layer_norm1")
            ext = ext + attend(a, a, b + "self_attn", vheads)
            x = ext[:, :S]
            x = x + mlp(ln(x, b + "layer_norm2"), b)
        else:
            x = clip_layer(x, b, vheads)
    proj = cfg["projection_dim"]
    frames = lin(ln(x[:, 0], vm + "post_layernorm"), "visual_projection").view(VIDEOS, FRAMES, proj)
    m = frames + w["mit.position_embedding"]
    for l in range(cfg["mit_layers"]):
        m = clip_layer(m, f"mit.encoder.layers.{l}.", cfg["mit_heads"])
    video = (m + frames if mit_residual else m).mean(dim=1)
    img = ln(x[:, 1:], "prompts_visual_layernorm") @ w["prompts_visual_projection"]
    img = img.view(VIDEOS, FRAMES, -1, proj).mean(dim=1)
    T, L = ids.shape
    y = w["text_model.embeddings.token_embedding.weight"][ids] + w["text_model.embeddings.position_embedding.weight"][:L]
    causal = torch.full((L, L), float("-inf")).triu(1)
    for l in range(cfg["text_layers"]):
        y = clip_layer(y, f"text_model.encoder.layers.{l}.", cfg["text_heads"], causal)
    y = ln(y, "text_model.final_layer_norm")
    text = lin(y[torch.arange(T), ids.argmax(dim=-1)], "text_projection")
    text = text[None].expand(VIDEOS, -1, -1)
    if prompts:
        vis = ln(img, "prompts_generator.layernorm")
        t = text
        for l in range(cfg["prompt_layers"]):
            b = f"prompts_generator.decoder.{l}."
            t = t + attend(ln(t, b + "norm1"), vis, b + "cross_attn", cfg["prompt_heads"], out="proj")
            t = t + lin(act(lin(ln(t, b + "norm3"), b + "mlp.0")), b + "mlp.3")
        alpha = w["prompts_generator.alpha"] if alpha_scalar is None else alpha_scalar
        text = text + alpha * t
    video = video / video.norm(dim=-1, keepdim=True)
    text = text / text.norm(dim=-1, keepdim=True)
    return torch.einsum("bd,bkd->bk", video, w["logit_scale"].exp() * text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "multimodal", "multimodal (X-CLIP) vs PyTorch XCLIPModel")
    cfg = CONFIG
    g = torch.Generator().manual_seed(61)
    size = cfg["vision_image_size"]
    pixels = torch.randn(VIDEOS * FRAMES, 3, size, size, generator=g).to(torch.float32).to(torch.float64)
    ids = torch.zeros(TEXTS, LEN, dtype=torch.long)
    for t, length in enumerate([8, 6, 4]):
        ids[t, :length - 1] = torch.randint(1, cfg["vocab"] - 1, (length - 1,), generator=g)
        ids[t, length - 1] = cfg["vocab"] - 1
    inputs = {"batch": VIDEOS, "pixels": pixels.permute(0, 2, 3, 1).flatten().tolist(), "texts": TEXTS,
              "text_len": LEN, "ids": ids.flatten().tolist()}
    weights = make_weights(cfg, seed=62)
    for case, dtype, hf in (("xclip-file", "F32", None), ("xclip-hf-dir-bf16-2-shards", "BF16", HF_CONFIG)):
        w = as_stored(weights, dtype)
        ours = check.run_ours(case, WRONG_CATALOG if hf else cfg, weights, inputs, VIDEOS, TEXTS, hf_config=hf,
                              shards=2, dtype=dtype)
        run = lambda **kw: xclip_logits(w, cfg, pixels, ids, **kw)
        check.compare(case, ours, run(), {
            "no cross-frame message tokens (our old graph)": run(messages=False),
            "MIT without its residual (our old graph)": run(mit_residual=False),
            "GELU (erf) for quick_gelu": run(act=lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))),
            "prompt alpha as the scalar prompt_alpha, not the learned vector": run(alpha_scalar=cfg["prompt_alpha"]),
            "no video-specific prompts": run(prompts=False),
            "LayerNorm eps 1e-6 instead of 1e-5": run(eps=1e-6),
        })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
