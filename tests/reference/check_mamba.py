"""State-space (Mamba) against a float64 PyTorch MambaForCausalLM written from the published
definition, recurrent decoding included.

Reference: Gu & Dao 2023 and Hugging Face's MambaMixer.slow_forward (modeling_mamba.py): per layer,
    x = x + out_proj(y),  with, on h = RMSNorm(x):
    (u, z) = in_proj(h) split in halves (hidden_states, gate)
    u = SiLU(causal depthwise conv1d(u))       Conv1d(groups=inner, padding=kernel-1)[..., :L]
    (dt, B, C) = x_proj(u) split [dt_rank, state, state]
    delta = softplus(dt_proj(dt))              dt_proj with bias
    A = -exp(A_log)
    s_t = exp(delta_t A) * s_{t-1} + delta_t B_t u_t;   y_t = s_t C_t + D u_t
    y = y * SiLU(z)
final RMSNorm (norm_f) and a head tied to the embeddings. Ours prefills the prompt and decodes the
forced tokens one at a time carrying the conv window and scan state; the reference runs the whole
sequence at once with an explicit loop over time.
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

BATCH, PROMPT, STEPS = 2, 12, 4
CONFIG = {"variant": "mamba", "layers": 2, "hidden": 64, "intermediate": 128, "state_size": 16, "conv_kernel": 4,
          "dt_rank": 8, "vocab": 96, "norm_eps": 1e-5, "decode_steps": STEPS}


def make_weights(cfg, seed):
    """Seeded weights at Mamba's scales: its dt initialisation (dt ~ logU(1e-3, 1e-1), bias =
    softplus^-1(dt)), A_log around log(1..N) (perturbed, as trained ones are), D around 1, conv taps
    U(±1/sqrt(kernel)), projections ~ 1/sqrt(fan_in), embeddings N(0, 0.02), norm weights ~ 1."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    u = lambda *shape, bound: (torch.rand(*shape, generator=g) * 2 - 1) * bound
    h, inner, N, k, r = cfg["hidden"], cfg["intermediate"], cfg["state_size"], cfg["conv_kernel"], cfg["dt_rank"]
    w = {"backbone.embeddings.weight": n(cfg["vocab"], h, std=0.02), "backbone.norm_f.weight": n(h, std=0.1, mean=1.0)}
    for l in range(cfg["layers"]):
        b = f"backbone.layers.{l}."
        x = b + "mixer."
        dt = torch.exp(torch.rand(inner, generator=g) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        w.update({
            b + "norm.weight": n(h, std=0.1, mean=1.0),
            x + "in_proj.weight": n(2 * inner, h, std=h ** -0.5),
            x + "conv1d.weight": u(inner, 1, k, bound=k ** -0.5),
            x + "conv1d.bias": u(inner, bound=k ** -0.5),
            x + "x_proj.weight": n(r + 2 * N, inner, std=inner ** -0.5),
            x + "dt_proj.weight": u(inner, r, bound=r ** -0.5),
            x + "dt_proj.bias": dt + torch.log(-torch.expm1(-dt)),
            x + "A_log": torch.log(torch.arange(1, N + 1, dtype=torch.float64)).repeat(inner, 1) + n(inner, N, std=0.3),
            x + "D": n(inner, std=0.1, mean=1.0),
            x + "out_proj.weight": n(h, inner, std=inner ** -0.5),
        })
    return w


def mamba_logits(w, cfg, tokens, *, a_from_log=lambda a_log: -torch.exp(a_log), skip_d=True, flip_conv=False,
                 dt_activation=torch.nn.functional.softplus):
    """Logits [B, L, vocab]; the keyword arguments only build the wrong variants."""
    eps, inner, N, k, r = cfg["norm_eps"], cfg["intermediate"], cfg["state_size"], cfg["conv_kernel"], cfg["dt_rank"]
    rms = lambda t, g: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * g
    B, L = tokens.shape
    x = w["backbone.embeddings.weight"][tokens]
    for l in range(cfg["layers"]):
        p = f"backbone.layers.{l}.mixer."
        proj = rms(x, w[f"backbone.layers.{l}.norm.weight"]) @ w[p + "in_proj.weight"].T   # [B, L, 2*inner]
        hs, gate = proj.transpose(1, 2).chunk(2, dim=1)                                      # [B, inner, L] each
        kernel = w[p + "conv1d.weight"].flip(-1) if flip_conv else w[p + "conv1d.weight"]
        hs = torch.nn.functional.conv1d(hs, kernel, w[p + "conv1d.bias"], padding=k - 1, groups=inner)[..., :L]
        hs = torch.nn.functional.silu(hs)
        ssm = hs.transpose(1, 2) @ w[p + "x_proj.weight"].T
        dt, Bm, Cm = torch.split(ssm, [r, N, N], dim=-1)
        delta = dt @ w[p + "dt_proj.weight"].T + w[p + "dt_proj.bias"]
        delta = dt_activation(delta).transpose(1, 2)                                       # [B, inner, L]
        A = a_from_log(w[p + "A_log"])
        dA = torch.exp(A[None, :, None, :] * delta[:, :, :, None])                       # [B, inner, L, N]
        dBu = delta[:, :, :, None] * Bm[:, None, :, :] * hs[:, :, :, None]
        state = torch.zeros(B, inner, N)
        ys = []
        for t in range(L):
            state = dA[:, :, t] * state + dBu[:, :, t]
            ys.append((state @ Cm[:, t, :, None])[..., 0])                                # [B, inner]
        y = torch.stack(ys, dim=-1)
        if skip_d:
            y = y + hs * w[p + "D"][None, :, None]
        y = y * torch.nn.functional.silu(gate)
        x = x + y.transpose(1, 2) @ w[p + "out_proj.weight"].T
    x = rms(x, w["backbone.norm_f.weight"])
    return x @ w["backbone.embeddings.weight"].T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "state-space", "state-space (Mamba) vs PyTorch MambaForCausalLM, recurrent decoding")
    cfg, case, seed = CONFIG, "mamba-l2-h64-n16", 555
    weights = make_weights(cfg, seed)
    w = as_stored(weights)
    g = torch.Generator().manual_seed(seed + 1000)
    tokens = torch.randint(0, cfg["vocab"], (BATCH, PROMPT + STEPS), generator=g)
    inputs = {"batch": BATCH, "prompt_len": PROMPT, "prompt": tokens[:, :PROMPT].flatten().tolist(),
              "forced": tokens[:, PROMPT:].flatten().tolist()}
    ours = check.run_ours(case, cfg, weights, inputs, BATCH * (STEPS + 1), cfg["vocab"])
    run = lambda **kw: mamba_logits(w, cfg, tokens, **kw)[:, PROMPT - 1: PROMPT + STEPS].reshape(-1, cfg["vocab"])
    check.compare(case, ours, run(), {
        "A = -A_log (exp missing)": run(a_from_log=lambda a_log: -a_log),
        "no D skip": run(skip_d=False),
        "conv taps reversed": run(flip_conv=True),
        "exp(dt) for softplus(dt) (equal as dt -> 0)": run(dt_activation=torch.exp),
    })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
