"""State-space (RWKV-4) against a float64 PyTorch RwkvForCausalLM written from the published
definition, recurrent decoding included.

Reference: Peng et al. 2023 and Hugging Face's RWKV (modeling_rwkv.py, rwkv_linear_attention_cpu):
embeddings -> pre_ln (block 0); per block, with token shift s(x)_t = x_{t-1} (zero at t = 0) taken
after the block's LayerNorm and mixes x*m + s(x)*(1-m):
    time mix:    k = K(mix_k), v = V(mix_v), r = sigmoid(R(mix_r)); with w = -exp(time_decay),
                 u = time_first: wkv_t = (sum_{i<t} e^{(t-1-i)w + k_i} v_i + e^{u + k_t} v_t) /
                 (sum_{i<t} e^{(t-1-i)w + k_i} + e^{u + k_t}); out = O(r * wkv)
    channel mix: out = sigmoid(R(mix_r)) * V(relu(K(mix_k))^2)
final ln_out and an untied head. The reference evaluates the WKV sums directly (no running-max
form), in float64; ours runs the stable recurrence in f32, prefill then token by token.
(HF's rescale_every halves hidden states every 6 layers in fp16 inference; with 2 layers it never
applies, and in f32 it is an exact no-op up to LayerNorm eps.)
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

BATCH, PROMPT, STEPS = 2, 12, 4
CONFIG = {"variant": "rwkv", "layers": 2, "hidden": 64, "intermediate": 256, "vocab": 96, "norm_eps": 1e-5,
          "decode_steps": STEPS}


def make_weights(cfg, seed):
    """Seeded weights at RWKV-4's scales: its decay schedule (-5 + 8 (j/(C-1))^(0.7 + 1.3 l/(L-1)),
    perturbed), bonus around log(0.3), mixes in (0, 1), projections ~ 1/sqrt(fan_in), LN ~ 1."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    C, I, L = cfg["hidden"], cfg["intermediate"], cfg["layers"]
    w = {"rwkv.embeddings.weight": n(cfg["vocab"], C, std=0.1),
         "rwkv.blocks.0.pre_ln.weight": n(C, std=0.1, mean=1.0), "rwkv.blocks.0.pre_ln.bias": n(C, std=0.05),
         "rwkv.ln_out.weight": n(C, std=0.1, mean=1.0), "rwkv.ln_out.bias": n(C, std=0.05),
         "head.weight": n(cfg["vocab"], C, std=C ** -0.5)}
    for l in range(L):
        b = f"rwkv.blocks.{l}."
        ratio = l / (L - 1) if L > 1 else 0.0
        j = torch.arange(C, dtype=torch.float64)
        w[b + "attention.time_decay"] = -5 + 8 * (j / (C - 1)) ** (0.7 + 1.3 * ratio) + n(C, std=0.3)
        w[b + "attention.time_first"] = n(C, std=0.5, mean=math.log(0.3))
        for ln in ("ln1", "ln2"):
            w[b + ln + ".weight"] = n(C, std=0.1, mean=1.0)
            w[b + ln + ".bias"] = n(C, std=0.05)
        for name in ("attention.time_mix_key", "attention.time_mix_value", "attention.time_mix_receptance",
                     "feed_forward.time_mix_key", "feed_forward.time_mix_receptance"):
            w[b + name] = torch.rand(1, 1, C, generator=g)
        for name in ("key", "value", "receptance", "output"):
            w[b + f"attention.{name}.weight"] = n(C, C, std=C ** -0.5)
        w[b + "feed_forward.key.weight"] = n(I, C, std=C ** -0.5)
        w[b + "feed_forward.receptance.weight"] = n(C, C, std=C ** -0.5)
        w[b + "feed_forward.value.weight"] = n(C, I, std=I ** -0.5)
    return w


def wkv(k, v, time_decay, time_first, *, decay=lambda d: -torch.exp(d), bonus=True, lag=1):
    """Direct sums of the WKV definition: k, v [B, T, C] -> [B, T, C]."""
    B, T, C = k.shape
    wd = decay(time_decay)
    u = time_first if bonus else torch.zeros_like(time_first)
    out = torch.empty_like(v)
    for t in range(T):
        i = torch.arange(t)
        weights = torch.exp((t - lag - i)[None, :, None] * wd + k[:, :t]) if t else torch.zeros(B, 0, C)
        now = torch.exp(u + k[:, t])
        out[:, t] = ((weights * v[:, :t]).sum(1) + now * v[:, t]) / (weights.sum(1) + now)
    return out


def rwkv_logits(w, cfg, tokens, *, shift=True, mix_swapped=False, eps=None, **wkv_kw):
    """Logits [B, T, vocab]; the keyword arguments only build the wrong variants."""
    C, eps = cfg["hidden"], cfg["norm_eps"] if eps is None else eps
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (C,), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T

    def token_shift(x):
        if not shift:
            return x
        return torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)

    def mix(x, shifted, m):
        return x * (1 - m) + shifted * m if mix_swapped else x * m + shifted * (1 - m)

    x = ln(w["rwkv.embeddings.weight"][tokens], "rwkv.blocks.0.pre_ln")
    for l in range(cfg["layers"]):
        b = f"rwkv.blocks.{l}."
        a, f = b + "attention.", b + "feed_forward."
        h = ln(x, b + "ln1")
        s = token_shift(h)
        k = lin(mix(h, s, w[a + "time_mix_key"]), a + "key")
        v = lin(mix(h, s, w[a + "time_mix_value"]), a + "value")
        r = torch.sigmoid(lin(mix(h, s, w[a + "time_mix_receptance"]), a + "receptance"))
        x = x + lin(r * wkv(k, v, w[a + "time_decay"], w[a + "time_first"], **wkv_kw), a + "output")
        h = ln(x, b + "ln2")
        s = token_shift(h)
        kk = torch.square(torch.relu(lin(mix(h, s, w[f + "time_mix_key"]), f + "key")))
        x = x + torch.sigmoid(lin(mix(h, s, w[f + "time_mix_receptance"]), f + "receptance")) * lin(kk, f + "value")
    return lin(ln(x, "rwkv.ln_out"), "head")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "state-space", "state-space (RWKV-4) vs PyTorch RwkvForCausalLM, recurrent decoding")
    cfg, case, seed = CONFIG, "rwkv4-l2-h64", 808
    weights = make_weights(cfg, seed)
    w = as_stored(weights)
    g = torch.Generator().manual_seed(seed + 1000)
    tokens = torch.randint(0, cfg["vocab"], (BATCH, PROMPT + STEPS), generator=g)
    inputs = {"batch": BATCH, "prompt_len": PROMPT, "prompt": tokens[:, :PROMPT].flatten().tolist(),
              "forced": tokens[:, PROMPT:].flatten().tolist()}
    ours = check.run_ours(case, cfg, weights, inputs, BATCH * (STEPS + 1), cfg["vocab"])
    run = lambda **kw: rwkv_logits(w, cfg, tokens, **kw)[:, PROMPT - 1: PROMPT + STEPS].reshape(-1, cfg["vocab"])
    check.compare(case, ours, run(), {
        "decay -time_decay (exp missing)": run(decay=lambda d: -d),
        "LayerNorm eps 1e-6 instead of 1e-5": run(eps=1e-6),
        "no time_first bonus": run(bonus=False),
        "history decayed once more (t - i for t - 1 - i)": run(lag=0),
        "no token shift": run(shift=False),
        "mix weights swapped (x (1-m) + shift m)": run(mix_swapped=True),
    })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
