"""Vision (DETR) against a float64 PyTorch DetrForObjectDetection written from the published
definition.

Reference: Carion et al. 2020 and Hugging Face's DETR (modeling_detr.py) with timm's ResNet:
  backbone: conv1 7x7/2 -> frozen BatchNorm (y = (x - mean) * gamma / sqrt(var + 1e-5) + beta)
    -> ReLU -> maxpool 3x3/2 -> bottlenecks (1x1, 3x3 carrying the stage stride, 1x1; each conv
    followed by its frozen BatchNorm; a 1x1 conv + BatchNorm downsample on each stage's first
    block; ReLU after the sum);
  input_projection (1x1 conv with bias) to d_model; DetrSinePositionEmbedding (normalised by the
    map's extent, scale 2*pi, y features then x features);
  encoder (post-LN): q = k = x + pos, v = x; decoder (post-LN) from zeros: self-attention with
    q = k = tgt + query_pos, v = tgt; cross-attention with q = tgt + query_pos, k = memory + pos,
    v = memory; decoder.layernorm;
  heads: class_labels_classifier (num_labels + 1) and bbox_predictor (3-layer ReLU MLP, sigmoid).
Output rows: per object query, class logits then the box (cx, cy, w, h).

The config.json translation of a DETR checkpoint (backbone "resnet50" -> depths 3-4-6-3) is held
by the unit tests (kernels_checkpoint_config_test); a full ResNet-50 is too slow for this check.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

CONFIG = {"variant": "detr", "image_size": 96, "channels": 3, "backbone_width": 8, "backbone_depths": [1, 1, 1, 1],
          "backbone_expansion": 4, "hidden": 32, "encoder_layers": 2, "decoder_layers": 2, "heads": 4,
          "intermediate": 64, "num_queries": 6, "num_classes": 5, "activation": "relu", "norm_eps": 1e-5}
BATCH = 2
BB = "model.backbone.conv_encoder.model."


def make_weights(cfg, seed):
    """Seeded weights at a trained DETR's scales: He-scaled convolutions, BatchNorm statistics of a
    trained net (means ~0.1, variances in [0.5, 1.5]; the last BN of each bottleneck with small
    gammas so the residual stream stays bounded), linear weights ~ 1/sqrt(fan_in), object queries
    N(0, 1) as initialised."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    u = lambda *shape, lo, hi: torch.rand(*shape, generator=g) * (hi - lo) + lo
    w = {}

    def conv_bn(conv, bn, cin, cout, k, gamma=1.0):
        w[conv + ".weight"] = n(cout, cin, k, k, std=(2.0 / (cin * k * k)) ** 0.5)
        w[bn + ".weight"] = n(cout, std=0.1 * gamma, mean=gamma)
        w[bn + ".bias"] = n(cout, std=0.05)
        w[bn + ".running_mean"] = n(cout, std=0.1)
        w[bn + ".running_var"] = u(cout, lo=0.5, hi=1.5)
        w[bn + ".num_batches_tracked"] = torch.tensor(1000.0)   # in real files (I64); the loader ignores it

    width, exp = cfg["backbone_width"], cfg["backbone_expansion"]
    conv_bn(BB + "conv1", BB + "bn1", cfg["channels"], width, 7)
    cin, mid = width, width
    for s, depth in enumerate(cfg["backbone_depths"]):
        for b in range(depth):
            p = f"{BB}layer{s + 1}.{b}."
            conv_bn(p + "conv1", p + "bn1", cin, mid, 1)
            conv_bn(p + "conv2", p + "bn2", mid, mid, 3)
            conv_bn(p + "conv3", p + "bn3", mid, mid * exp, 1, gamma=0.3)
            if b == 0:
                conv_bn(p + "downsample.0", p + "downsample.1", cin, mid * exp, 1, gamma=0.3)
            cin = mid * exp
        mid *= 2
    h, i = cfg["hidden"], cfg["intermediate"]
    w["model.input_projection.weight"] = n(h, cin, 1, 1, std=cin ** -0.5)
    w["model.input_projection.bias"] = n(h, std=0.05)
    w["model.query_position_embeddings.weight"] = n(cfg["num_queries"], h)

    def linear(name, out_f, in_f):
        w[name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
        w[name + ".bias"] = n(out_f, std=0.05)

    def norm(name):
        w[name + ".weight"] = n(h, std=0.1, mean=1.0)
        w[name + ".bias"] = n(h, std=0.05)

    for side, layers in (("encoder", cfg["encoder_layers"]), ("decoder", cfg["decoder_layers"])):
        for l in range(layers):
            p = f"model.{side}.layers.{l}."
            attns = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
            for a in attns:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    linear(p + f"{a}.{proj}", h, h)
                norm(p + f"{a}_layer_norm")
            linear(p + "fc1", i, h)
            linear(p + "fc2", h, i)
            norm(p + "final_layer_norm")
    norm("model.decoder.layernorm")
    linear("class_labels_classifier", cfg["num_classes"] + 1, h)
    linear("bbox_predictor.layers.0", h, h)
    linear("bbox_predictor.layers.1", h, h)
    linear("bbox_predictor.layers.2", 4, h)
    return w


def sine_positions(H, W, d, normalize=True, swap=False):
    """DetrSinePositionEmbedding(embedding_dim = d/2, temperature 10000, normalize) of an unpadded
    map: [H*W, d]."""
    feats = d // 2
    y = torch.arange(1, H + 1, dtype=torch.float64)[:, None].expand(H, W)
    x = torch.arange(1, W + 1, dtype=torch.float64)[None, :].expand(H, W)
    if normalize:
        y = y / (H + 1e-6) * 2 * math.pi
        x = x / (W + 1e-6) * 2 * math.pi
    dim_t = 10000 ** (2 * torch.div(torch.arange(feats), 2, rounding_mode="floor") / feats)
    px, py = x[..., None] / dim_t, y[..., None] / dim_t
    px = torch.stack((px[..., 0::2].sin(), px[..., 1::2].cos()), dim=3).flatten(2)
    py = torch.stack((py[..., 0::2].sin(), py[..., 1::2].cos()), dim=3).flatten(2)
    pos = torch.cat((px, py) if swap else (py, px), dim=2)
    return pos.reshape(H * W, d)


def detr_rows(w, cfg, pixels, *, bn_eps=1e-5, positions="every_layer", query_pos_in_cross=True,
              decoder_input="zeros", normalize_positions=True, swap_xy=False):
    """[B*queries, classes+1+4]; the keywords only build the wrong variants."""
    F = torch.nn.functional

    def conv_bn(x, conv, bn, stride=1, padding=0):
        x = F.conv2d(x, w[conv + ".weight"], stride=stride, padding=padding)
        return F.batch_norm(x, w[bn + ".running_mean"], w[bn + ".running_var"], w[bn + ".weight"], w[bn + ".bias"],
                            False, 0.0, bn_eps)

    x = F.max_pool2d(F.relu(conv_bn(pixels, BB + "conv1", BB + "bn1", 2, 3)), 3, 2, 1)
    for s, depth in enumerate(cfg["backbone_depths"]):
        for b in range(depth):
            p = f"{BB}layer{s + 1}.{b}."
            stride = 2 if s > 0 and b == 0 else 1
            y = F.relu(conv_bn(x, p + "conv1", p + "bn1"))
            y = F.relu(conv_bn(y, p + "conv2", p + "bn2", stride, 1))
            y = conv_bn(y, p + "conv3", p + "bn3")
            short = conv_bn(x, p + "downsample.0", p + "downsample.1", stride) if b == 0 else x
            x = F.relu(y + short)
    x = F.conv2d(x, w["model.input_projection.weight"], w["model.input_projection.bias"])
    B, d, H, W = x.shape
    src = x.flatten(2).transpose(1, 2)
    pos = sine_positions(H, W, d, normalize_positions, swap_xy)[None]
    heads = cfg["heads"]
    hd = d // heads
    ln = lambda t, name: F.layer_norm(t, (d,), w[name + ".weight"], w[name + ".bias"], cfg["norm_eps"])
    lin = lambda t, name: t @ w[name + ".weight"].T + w[name + ".bias"]

    def attn(q_in, k_in, v_in, name):
        Q, K = q_in.shape[1], k_in.shape[1]
        q = (lin(q_in, name + ".q_proj") * hd ** -0.5).view(B, Q, heads, hd).transpose(1, 2)
        k = lin(k_in, name + ".k_proj").view(B, K, heads, hd).transpose(1, 2)
        v = lin(v_in, name + ".v_proj").view(B, K, heads, hd).transpose(1, 2)
        ctx = (torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v).transpose(1, 2).reshape(B, Q, d)
        return lin(ctx, name + ".out_proj")

    ffn = lambda t, p: lin(F.relu(lin(t, p + "fc1")), p + "fc2")
    if positions == "input_once":   # the old simplification: positions added to the input only
        src = src + pos
        pos_l = torch.zeros_like(pos)
    else:
        pos_l = pos
    for l in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{l}."
        qk = src + pos_l
        src = ln(src + attn(qk, qk, src, p + "self_attn"), p + "self_attn_layer_norm")
        src = ln(src + ffn(src, p), p + "final_layer_norm")
    qpos = w["model.query_position_embeddings.weight"][None].expand(B, -1, -1)
    tgt = torch.zeros_like(qpos) if decoder_input == "zeros" else qpos.clone()
    for l in range(cfg["decoder_layers"]):
        p = f"model.decoder.layers.{l}."
        qk = tgt + (qpos if decoder_input == "zeros" else 0.0)
        tgt = ln(tgt + attn(qk, qk, tgt, p + "self_attn"), p + "self_attn_layer_norm")
        q_in = tgt + (qpos if query_pos_in_cross and decoder_input == "zeros" else 0.0)
        tgt = ln(tgt + attn(q_in, src + pos_l, src, p + "encoder_attn"), p + "encoder_attn_layer_norm")
        tgt = ln(tgt + ffn(tgt, p), p + "final_layer_norm")
    tgt = ln(tgt, "model.decoder.layernorm")
    logits = lin(tgt, "class_labels_classifier")
    box = torch.sigmoid(lin(F.relu(lin(F.relu(lin(tgt, "bbox_predictor.layers.0")), "bbox_predictor.layers.1")),
                            "bbox_predictor.layers.2"))
    return torch.cat([logits, box], dim=-1).reshape(B * cfg["num_queries"], -1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "vision", "vision (DETR) vs PyTorch DetrForObjectDetection")
    cfg, case = CONFIG, "detr-resnet-tiny-96px"
    weights = make_weights(cfg, seed=404)
    w = as_stored(weights)
    g = torch.Generator().manual_seed(405)
    size = cfg["image_size"]
    pixels = torch.randn(BATCH, cfg["channels"], size, size, generator=g).to(torch.float32).to(torch.float64)
    inputs = {"batch": BATCH, "pixels": pixels.permute(0, 2, 3, 1).flatten().tolist()}
    ours = check.run_ours(case, cfg, weights, inputs, BATCH * cfg["num_queries"], cfg["num_classes"] + 1 + 4)
    run = lambda **kw: detr_rows(w, cfg, pixels, **kw)
    check.compare(case, ours, run(), {
        "BatchNorm eps 1e-3 instead of 1e-5": run(bn_eps=1e-3),
        "positions added once to the encoder input (our old graph)": run(positions="input_once"),
        "decoder input = object queries, no query positions (our old graph)": run(decoder_input="queries"),
        "no query positions in cross-attention": run(query_pos_in_cross=False),
        "x and y position features swapped": run(swap_xy=True),
        "sine positions not normalised": run(normalize_positions=False),
    })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
