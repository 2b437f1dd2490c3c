// Multi-head bidirectional self-attention (BERT style).
//
// Contract:
//   - Activations are [batch*seq, hidden] with hidden = heads * head_dim; head h owns columns
//     [h*head_dim, (h+1)*head_dim).
//   - mask: batch*seq entries, nonzero = real token, 0 = padding; null = no padding. A padded
//     key gets attention probability exactly 0; a query whose keys are all padding gets a zero
//     context vector. Queries at padded positions are still computed (like BERT), so every
//     output is written.
//   - attention_core(): out = softmax(Q K^T / sqrt(head_dim) + mask) V per sample and head, in
//     f32 whatever the weight format, with the score and value sums on ctx.path's SIMD kernels.
//     (batch, head, query) rows are split over ctx.pool.
//   - self_attention(): Q, K, V projections and the output projection go through Linear (the
//     job's weight format and kernel path); out is [batch*seq, hidden] and must not alias x.
#pragma once

#include <cstdint>

#include "common/status.h"

#include "kernels/exec_context.h"
#include "kernels/cpu/linear.h"
#include "kernels/tensor.h"

namespace am::kernels {

// Scaled dot-product attention over already-projected q, k, v.
//   q:   [batch * q_len,  heads    * head_dim]
//   k,v: [batch * kv_len, kv_heads * head_dim]   (kv_heads divides heads: grouped-query)
//   out: [batch * q_len,  heads    * head_dim]
// scores = q·k^T · scale, then masked, softmax over keys, then · v.
// - key_mask (optional, batch * kv_len): 0 masks a key out (padding).
// - causal: query i of a sample may see keys j <= q_offset + i (q_offset = number of cached
//   positions before the first query; 0 for a prompt without cache).
struct AttentionArgs {
  ConstTensorView q, k, v;
  TensorView out;
  int64_t batch = 1;
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t head_dim = 0;
  float scale = 0.0f;              // 0 = 1/sqrt(head_dim)
  const int32_t* key_mask = nullptr;
  bool causal = false;
  int64_t q_offset = 0;
};

// OK when the sizes are positive and consistent (kv_heads divides heads, tensor shapes as
// above); else InvalidArgument naming what is wrong. Every backend checks this first.
Status validate_attention_args(const AttentionArgs& args);

// The cpu implementation of AttentionArgs (checked with AM_CHECK). A query that sees no
// key at all (every key masked) gets a zero output row.
void attention(const AttentionArgs& args, const ExecContext& ctx);

struct AttentionWeights {
  Linear query;
  Linear key;
  Linear value;
  Linear output;
};

void attention_core(ConstTensorView q, ConstTensorView k, ConstTensorView v, const int32_t* mask,
                    int64_t batch, int64_t seq, int64_t heads, TensorView out,
                    const ExecContext& ctx);

void self_attention(ConstTensorView x, const int32_t* mask, int64_t batch, int64_t seq,
                    int64_t heads, const AttentionWeights& w, TensorView out,
                    const ExecContext& ctx);

}  // namespace am::kernels
