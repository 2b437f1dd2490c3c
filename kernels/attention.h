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

#include "kernels/exec_context.h"
#include "kernels/linear.h"
#include "kernels/tensor.h"

namespace am::kernels {

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
