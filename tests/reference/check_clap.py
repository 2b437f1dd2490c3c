"""Multimodal (CLAP, audio-text) against a float64 PyTorch ClapModel (HTSAT, unfused) written from
the published definition.

Reference: Wu et al. 2023 and Hugging Face's CLAP (modeling_clap.py), Swin's windowing
(modeling_swin.py):
  audio: input_features [B, 1, frames, mels] -> BatchNorm2d over the mel bins (eval) ->
    reshape_mel2img -> patch_embed (Conv2d, LayerNorm) -> stages of ClapAudioLayer blocks
    (layernorm_before; cyclic shift by -window/2 on odd blocks; window_partition; attention with
    relative_position_bias_table[relative_position_index] and, when shifted, the -100 mask of
    Swin's regions; window_reverse; shift back; residual; layernorm_after, GELU MLP, residual),
    ClapAudioPatchMerging between stages; norm; mean over positions (the avgpool);
    audio_projection (linear1, ReLU, linear2);
  text: RoBERTa (positions from pad_token_id + 1, padding at pad_token_id), pooler
    tanh(dense(first token)), text_projection;
  logits_per_audio = exp(logit_scale_a) * audio · text^T after L2 normalisation.

Cases: a catalog-config file, and a Hugging Face directory (config.json with ClapConfig's keys,
F16) over a wrong catalog config.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

BATCH, LEN, PAD = 3, 7, 1
LENGTHS = [7, 5, 4]
CONFIG = {"variant": "clap", "audio_image_size": 32, "audio_patch": 4, "audio_hidden": 16, "audio_depths": [2, 2],
          "audio_heads": [2, 4], "audio_window": 4, "audio_mel_bins": 8, "audio_frames": 128,
          "audio_activation": "gelu", "text_layers": 2, "text_hidden": 24, "text_heads": 4, "text_intermediate": 48,
          "text_norm_eps": 1e-5, "text_activation": "gelu", "text_type_vocab": 1, "text_position_offset": 2,
          "vocab": 40, "max_positions": 16, "projection_dim": 16, "norm_eps": 1e-5}
HF_CONFIG = {
    "model_type": "clap", "architectures": ["ClapModel"], "projection_dim": 16, "logit_scale_init_value": 14.29,
    "audio_config": {"model_type": "clap_audio_model", "spec_size": 32, "patch_size": 4, "patch_stride": [4, 4],
                     "patch_embeds_hidden_size": 16, "depths": [2, 2], "num_attention_heads": [2, 4],
                     "window_size": 4, "num_mel_bins": 8, "hidden_act": "gelu", "layer_norm_eps": 1e-5,
                     "enable_fusion": False, "enable_patch_layer_norm": True, "projection_hidden_act": "relu"},
    "text_config": {"model_type": "clap_text_model", "num_hidden_layers": 2, "hidden_size": 24,
                    "num_attention_heads": 4, "intermediate_size": 48, "vocab_size": 40,
                    "max_position_embeddings": 16, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
                    "hidden_act": "gelu", "pad_token_id": PAD, "projection_hidden_act": "relu"},
}
WRONG_CATALOG = dict(CONFIG, audio_depths=[1, 1], audio_window=2, text_position_offset=0, norm_eps=1e-6)
A = "audio_model.audio_encoder."


def make_weights(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    w = {}

    def lin(name, fout, fin, bias=True):
        w[name + ".weight"] = n(fout, fin, std=fin ** -0.5)
        if bias:
            w[name + ".bias"] = n(fout, std=0.05)

    def norm(name, h):
        w[name + ".weight"] = n(h, std=0.1, mean=1.0)
        w[name + ".bias"] = n(h, std=0.05)

    mels, hid, p, win = cfg["audio_mel_bins"], cfg["audio_hidden"], cfg["audio_patch"], cfg["audio_window"]
    w[A + "batch_norm.weight"] = n(mels, std=0.1, mean=1.0)
    w[A + "batch_norm.bias"] = n(mels, std=0.05)
    w[A + "batch_norm.running_mean"] = n(mels, std=0.5)
    w[A + "batch_norm.running_var"] = torch.rand(mels, generator=g) + 0.5
    w[A + "patch_embed.proj.weight"] = n(hid, 1, p, p, std=1.0 / p)
    w[A + "patch_embed.proj.bias"] = n(hid, std=0.05)
    norm(A + "patch_embed.norm", hid)
    ch = hid
    for s, (depth, heads) in enumerate(zip(cfg["audio_depths"], cfg["audio_heads"])):
        for b in range(depth):
            pre = f"{A}layers.{s}.blocks.{b}."
            norm(pre + "layernorm_before", ch)
            for name in ("query", "key", "value"):
                lin(pre + "attention.self." + name, ch, ch)
            w[pre + "attention.self.relative_position_bias_table"] = n((2 * win - 1) ** 2, heads, std=0.5)
            lin(pre + "attention.output.dense", ch, ch)
            norm(pre + "layernorm_after", ch)
            lin(pre + "intermediate.dense", 4 * ch, ch)
            lin(pre + "output.dense", ch, 4 * ch)
        if s + 1 < len(cfg["audio_depths"]):
            norm(f"{A}layers.{s}.downsample.norm", 4 * ch)
            lin(f"{A}layers.{s}.downsample.reduction", 2 * ch, 4 * ch, bias=False)
            ch *= 2
    norm(A + "norm", ch)
    proj = cfg["projection_dim"]
    lin("audio_projection.linear1", proj, ch)
    lin("audio_projection.linear2", proj, proj)
    th, ti = cfg["text_hidden"], cfg["text_intermediate"]
    t = "text_model."
    w[t + "embeddings.word_embeddings.weight"] = n(cfg["vocab"], th, std=0.05)
    w[t + "embeddings.position_embeddings.weight"] = n(cfg["max_positions"], th, std=0.03)
    w[t + "embeddings.token_type_embeddings.weight"] = n(1, th, std=0.03)
    norm(t + "embeddings.LayerNorm", th)
    for l in range(cfg["text_layers"]):
        b = f"{t}encoder.layer.{l}."
        for name, (o, i) in {"attention.self.query": (th, th), "attention.self.key": (th, th),
                             "attention.self.value": (th, th), "attention.output.dense": (th, th),
                             "intermediate.dense": (ti, th), "output.dense": (th, ti)}.items():
            lin(b + name, o, i)
        norm(b + "attention.output.LayerNorm", th)
        norm(b + "output.LayerNorm", th)
    lin(t + "pooler.dense", th, th)
    lin("text_projection.linear1", proj, th)
    lin("text_projection.linear2", proj, proj)
    w["logit_scale_a"] = torch.tensor(math.log(30.0))
    w["logit_scale_t"] = torch.tensor(math.log(20.0))
    return w


def window_partition(x, win):
    B, H, W, C = x.shape
    x = x.view(B, H // win, win, W // win, win, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, win, win, C)


def window_reverse(windows, win, H, W):
    B = windows.shape[0] // (H * W // win // win)
    x = windows.view(B, H // win, W // win, win, win, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, -1)


def swin_mask(H, W, win, shift):
    img = torch.zeros(1, H, W, 1)
    cnt = 0
    for hs in (slice(0, -win), slice(-win, -shift), slice(-shift, None)):
        for ws in (slice(0, -win), slice(-win, -shift), slice(-shift, None)):
            img[:, hs, ws, :] = cnt
            cnt += 1
    mw = window_partition(img, win).view(-1, win * win)
    m = mw.unsqueeze(1) - mw.unsqueeze(2)
    return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)


def rel_index(win):
    coords = torch.stack(torch.meshgrid(torch.arange(win), torch.arange(win), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)
    rel[:, :, 0] += win - 1
    rel[:, :, 1] += win - 1
    rel[:, :, 0] *= 2 * win - 1
    return rel.sum(-1)


def clap_logits(w, cfg, mel, ids, mask, *, shifted=True, rel_bias=True, batch_norm=True, fold=True,
                roberta_positions=True, pooler=True, act=None, eps=1e-5):
    F = torch.nn.functional
    act = act or (lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))))
    ln = lambda x, name, e=1e-5: F.layer_norm(x, (x.shape[-1],), w[name + ".weight"], w[name + ".bias"], e)
    lin = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0.0)
    spec, mels, p, win = cfg["audio_image_size"], cfg["audio_mel_bins"], cfg["audio_patch"], cfg["audio_window"]
    x = mel[:, None]   # [B, 1, frames, mels]
    if batch_norm:
        x = F.batch_norm(x.transpose(1, 3), w[A + "batch_norm.running_mean"], w[A + "batch_norm.running_var"],
                         w[A + "batch_norm.weight"], w[A + "batch_norm.bias"], False, 0.0, 1e-5).transpose(1, 3)
    B, _, T, Fq = x.shape
    r = spec // mels
    if fold:  # reshape_mel2img
        x = x.reshape(B, r, T // r, Fq).permute(0, 1, 3, 2).reshape(B, 1, Fq * r, T // r)
    else:     # the spectrogram's elements read row by row into the image
        x = x.reshape(B, 1, spec, spec)
    x = F.conv2d(x, w[A + "patch_embed.proj.weight"], w[A + "patch_embed.proj.bias"], stride=p)
    res = x.shape[-1]
    x = ln(x.flatten(2).transpose(1, 2), A + "patch_embed.norm")
    ch = cfg["audio_hidden"]
    for s, (depth, heads) in enumerate(zip(cfg["audio_depths"], cfg["audio_heads"])):
        for b in range(depth):
            pre = f"{A}layers.{s}.blocks.{b}."
            wsz, shift = win, (win // 2 if b % 2 == 1 else 0)
            if res <= win:
                wsz, shift = res, 0
            if not shifted:
                shift = 0
            short = x
            h = ln(x, pre + "layernorm_before", eps).view(B, res, res, ch)
            if shift:
                h = torch.roll(h, shifts=(-shift, -shift), dims=(1, 2))
            hw = window_partition(h, wsz).view(-1, wsz * wsz, ch)
            nwin, S = hw.shape[0], wsz * wsz
            d = ch // heads
            split = lambda t: t.view(nwin, S, heads, d).transpose(1, 2)
            q, k, v = (split(lin(hw, pre + f"attention.self.{nm}")) for nm in ("query", "key", "value"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(d)
            if rel_bias:
                table = w[pre + "attention.self.relative_position_bias_table"]
                bias = table[rel_index(wsz).view(-1)].view(S, S, -1).permute(2, 0, 1)
                scores = scores + bias[None]
            if shift:
                m = swin_mask(res, res, wsz, shift)
                scores = (scores.view(-1, m.shape[0], heads, S, S) + m[None, :, None]).view(-1, heads, S, S)
            ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(nwin, S, ch)
            o = window_reverse(lin(ctx, pre + "attention.output.dense").view(-1, wsz, wsz, ch), wsz, res, res)
            if shift:
                o = torch.roll(o, shifts=(shift, shift), dims=(1, 2))
            x = short + o.reshape(B, res * res, ch)
            x = x + lin(act(lin(ln(x, pre + "layernorm_after", eps), pre + "intermediate.dense")), pre + "output.dense")
        if s + 1 < len(cfg["audio_depths"]):
            g = x.view(B, res, res, ch)
            g = torch.cat([g[:, 0::2, 0::2], g[:, 1::2, 0::2], g[:, 0::2, 1::2], g[:, 1::2, 1::2]], -1)
            x = lin(ln(g.reshape(B, -1, 4 * ch), f"{A}layers.{s}.downsample.norm"), f"{A}layers.{s}.downsample.reduction")
            res, ch = res // 2, ch * 2
    audio = ln(x, A + "norm").mean(dim=1)
    audio = lin(F.relu(lin(audio, "audio_projection.linear1")), "audio_projection.linear2")

    t, th, heads = "text_model.", cfg["text_hidden"], cfg["text_heads"]
    teps = cfg["text_norm_eps"]
    L = ids.shape[1]
    if roberta_positions:   # create_position_ids_from_input_ids
        real = (ids != PAD).long()
        pos = torch.cumsum(real, dim=1) * real + PAD
    else:
        pos = torch.arange(L)[None].expand(ids.shape[0], L)
    y = (w[t + "embeddings.word_embeddings.weight"][ids] + w[t + "embeddings.position_embeddings.weight"][pos] +
         w[t + "embeddings.token_type_embeddings.weight"][0])
    y = ln(y, t + "embeddings.LayerNorm", teps)
    keymask = torch.where(mask.bool(), 0.0, float("-inf"))[:, None, None, :]
    Bt = ids.shape[0]
    d = th // heads
    for l in range(cfg["text_layers"]):
        b = f"{t}encoder.layer.{l}."
        split = lambda z: z.view(Bt, L, heads, d).transpose(1, 2)
        q, k, v = (split(lin(y, b + f"attention.self.{nm}")) for nm in ("query", "key", "value"))
        ctx = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + keymask, dim=-1) @ v).transpose(1, 2).reshape(Bt, L, th)
        y = ln(y + lin(ctx, b + "attention.output.dense"), b + "attention.output.LayerNorm", teps)
        gl = lambda z: 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
        y = ln(y + lin(gl(lin(y, b + "intermediate.dense")), b + "output.dense"), b + "output.LayerNorm", teps)
    pooled = torch.tanh(lin(y[:, 0], t + "pooler.dense")) if pooler else y[:, 0]
    text = lin(F.relu(lin(pooled, "text_projection.linear1")), "text_projection.linear2")
    audio = audio / audio.norm(dim=-1, keepdim=True)
    text = text / text.norm(dim=-1, keepdim=True)
    return w["logit_scale_a"].exp() * audio @ text.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "multimodal", "multimodal (CLAP, HTSAT + RoBERTa) vs PyTorch ClapModel")
    cfg = CONFIG
    g = torch.Generator().manual_seed(71)
    mel = torch.randn(BATCH, cfg["audio_frames"], cfg["audio_mel_bins"], generator=g).to(torch.float32).to(torch.float64)
    ids = torch.full((BATCH, LEN), PAD, dtype=torch.long)
    mask = torch.zeros(BATCH, LEN, dtype=torch.long)
    for b, length in enumerate(LENGTHS):
        ids[b, :length] = torch.randint(3, cfg["vocab"], (length,), generator=g)
        mask[b, :length] = 1
    inputs = {"batch": BATCH, "text_len": LEN, "mel": mel.flatten().tolist(), "ids": ids.flatten().tolist(),
              "mask": mask.flatten().tolist()}
    weights = make_weights(cfg, seed=72)
    for case, dtype, hf in (("clap-file", "F32", None), ("clap-hf-dir-f16", "F16", HF_CONFIG)):
        w = as_stored(weights, dtype)
        ours = check.run_ours(case, WRONG_CATALOG if hf else cfg, weights, inputs, BATCH, BATCH, hf_config=hf,
                              dtype=dtype)
        run = lambda **kw: clap_logits(w, cfg, mel, ids, mask, **kw)
        check.compare(case, ours, run(), {
            "no shifted windows (our old graph)": run(shifted=False),
            "no relative position bias (our old graph)": run(rel_bias=False),
            "no mel BatchNorm (our old graph)": run(batch_norm=False),
            "spectrogram read into the image without reshape_mel2img": run(fold=False),
            "text positions from 0, not pad_token_id + 1": run(roberta_positions=False),
            "no tanh pooler (our old graph)": run(pooler=False),
            "tanh GELU in the Swin MLPs": run(act=lambda z: torch.nn.functional.gelu(z, approximate="tanh")),
        })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
