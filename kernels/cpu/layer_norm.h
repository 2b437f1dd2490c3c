// Layer normalization over the last dimension, as in BERT and torch.nn.LayerNorm:
//   y = (x - mean) / sqrt(var + eps) * gamma + beta,  var = mean((x - mean)^2) (biased).
//
// Contract: x and y have the same shape [rows, cols] and may be the same storage (in place);
// gamma and beta hold cols floats (beta may be null for none). Rows are split over ctx.pool.
// Mean and variance accumulate in double so long rows of large values stay accurate.
#pragma once

#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

void layer_norm_row(const float* x, const float* gamma, const float* beta, float eps, int64_t n,
                    float* y);
void layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps, TensorView y,
                const ExecContext& ctx);

// RMSNorm (LLaMA, T5): y = x / sqrt(mean(x^2) + eps) * gamma.
void rms_norm_row(const float* x, const float* gamma, float eps, int64_t n, float* y);
void rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y, const ExecContext& ctx);

}  // namespace am::kernels
