"""Encoder-only (BERT) against a float64 PyTorch BertModel written from the published definition.

Reference: Devlin et al. 2019 and Hugging Face's BertModel (modeling_bert.py): embeddings
(word + absolute position + token type) -> LayerNorm; per layer, post-LN:
    x = LayerNorm(x + Dense(SelfAttention(x)))         bidirectional, padding keys masked
    x = LayerNorm(x + Dense2(GELU_erf(Dense1(x))))
output = last_hidden_state [batch*seq, hidden], padding positions included (they attend to the
real tokens like every other query, as in BertModel).
"""

import argparse
import math
import sys

from reference_common import Check, as_stored, torch

CONFIG = {"layers": 2, "hidden": 64, "heads": 4, "intermediate": 256, "vocab": 120, "max_positions": 32,
          "type_vocab": 2, "norm_eps": 1e-12, "activation": "gelu"}
BATCH, SEQ = 3, 16
LENGTHS = [16, 11, 6]  # sample 0 full, the others padded


def make_weights(cfg, seed):
    """Seeded weights at the scales of a trained BERT: embeddings small (std 0.05, so the embedding
    LayerNorm's eps is not negligible), linear weights ~ 1/sqrt(fan_in) so attention scores are O(1)
    (not the near-uniform attention of N(0, 0.02) initial weights), LayerNorm gammas around 1."""
    g = torch.Generator().manual_seed(seed)
    n = lambda *shape, std=1.0, mean=0.0: torch.randn(*shape, generator=g) * std + mean
    h, i = cfg["hidden"], cfg["intermediate"]
    w = {
        "bert.embeddings.word_embeddings.weight": n(cfg["vocab"], h, std=0.05),
        "bert.embeddings.position_embeddings.weight": n(cfg["max_positions"], h, std=0.03),
        "bert.embeddings.token_type_embeddings.weight": n(cfg["type_vocab"], h, std=0.03),
        "bert.embeddings.LayerNorm.weight": n(h, std=0.1, mean=1.0),
        "bert.embeddings.LayerNorm.bias": n(h, std=0.05),
        # Heads and poolers our graph does not use are in real checkpoints; the loader ignores them.
        "bert.pooler.dense.weight": n(h, h, std=h ** -0.5),
        "bert.pooler.dense.bias": n(h, std=0.05),
    }
    for l in range(cfg["layers"]):
        b = f"bert.encoder.layer.{l}."
        for name, (out_f, in_f) in {"attention.self.query": (h, h), "attention.self.key": (h, h),
                                    "attention.self.value": (h, h), "attention.output.dense": (h, h),
                                    "intermediate.dense": (i, h), "output.dense": (h, i)}.items():
            w[b + name + ".weight"] = n(out_f, in_f, std=in_f ** -0.5)
            w[b + name + ".bias"] = n(out_f, std=0.05)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[b + ln + ".weight"] = n(h, std=0.1, mean=1.0)
            w[b + ln + ".bias"] = n(h, std=0.05)
    return w


def make_inputs(cfg, seed):
    g = torch.Generator().manual_seed(seed + 1)
    ids = torch.randint(1, cfg["vocab"], (BATCH, SEQ), generator=g)
    mask = torch.zeros(BATCH, SEQ, dtype=torch.int64)
    types = torch.zeros(BATCH, SEQ, dtype=torch.int64)
    for b, n in enumerate(LENGTHS):
        mask[b, :n] = 1
        types[b, n // 2:n] = 1   # a sentence pair
        ids[b, n:] = 0           # [PAD]
    return ids, types, mask


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def bert(w, cfg, ids, types, mask, *, gelu=gelu_erf, eps=None, mask_padding=True, attention_residual=True):
    """BertModel's last_hidden_state in float64. The keyword arguments exist only to build the
    deliberately wrong variants; their defaults are the published model."""
    eps = cfg["norm_eps"] if eps is None else eps
    h, heads = cfg["hidden"], cfg["heads"]
    d = h // heads
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (h,), w[p + ".weight"], w[p + ".bias"], eps)
    lin = lambda x, p: x @ w[p + ".weight"].T + w[p + ".bias"]
    B, S = ids.shape
    pos = torch.arange(S)
    x = (w["bert.embeddings.word_embeddings.weight"][ids] + w["bert.embeddings.position_embeddings.weight"][pos]
         + w["bert.embeddings.token_type_embeddings.weight"][types])
    x = ln(x, "bert.embeddings.LayerNorm")
    # HF's extended attention mask: (1 - mask) * finfo.min added to every query's scores.
    bias = (1.0 - mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
    for l in range(cfg["layers"]):
        p = f"bert.encoder.layer.{l}."
        split = lambda t: t.view(B, S, heads, d).transpose(1, 2)
        q, k, v = (split(lin(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        if mask_padding:
            scores = scores + bias
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, S, h)
        attn = lin(ctx, p + "attention.output.dense")
        x = ln(x + attn if attention_residual else attn, p + "attention.output.LayerNorm")
        ffn = lin(gelu(lin(x, p + "intermediate.dense")), p + "output.dense")
        x = ln(x + ffn, p + "output.LayerNorm")
    return x.reshape(B * S, h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    check = Check(args.runner, "encoder-only", "encoder-only (BERT) vs PyTorch BertModel")
    cfg = CONFIG
    weights = make_weights(cfg, seed=1234)
    ids, types, mask = make_inputs(cfg, seed=1234)
    inputs = {"batch": BATCH, "seq": SEQ, "token_ids": ids.flatten().tolist(),
              "token_type_ids": types.flatten().tolist(), "attention_mask": mask.flatten().tolist()}
    # The same model as a Hugging Face directory: config.json (BertConfig's keys) over a wrong
    # catalog config, two F16 shards.
    hf = {"model_type": "bert", "architectures": ["BertModel"], "num_hidden_layers": 2, "hidden_size": 64,
          "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 120, "max_position_embeddings": 32,
          "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute"}
    wrong = dict(cfg, norm_eps=1e-5, activation="gelu_new", layers=1)
    for case, dtype, hf_config, catalog in (("bert-l2-h64-padded", "F32", None, cfg),
                                            ("bert-hf-dir-f16-2-shards", "F16", hf, wrong)):
        w = as_stored(weights, dtype)
        ours = check.run_ours(case, catalog, weights, inputs, BATCH * SEQ, cfg["hidden"], hf_config=hf_config,
                              shards=2, dtype=dtype)
        check.compare(case, ours, bert(w, cfg, ids, types, mask), {
            "tanh GELU instead of erf": bert(w, cfg, ids, types, mask, gelu=gelu_tanh),
            "LayerNorm eps 1e-5 instead of 1e-12": bert(w, cfg, ids, types, mask, eps=1e-5),
            "padding keys not masked": bert(w, cfg, ids, types, mask, mask_padding=False),
            "no attention residual": bert(w, cfg, ids, types, mask, attention_residual=False),
        })
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
