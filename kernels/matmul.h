// Matrix multiplication in the weight layout of GGUF and PyTorch Linear:
//   Y[M, N] = X[M, K] · W[N, K]^T (+ bias[N])
// W is stored row-major [out_features, in_features].
//
// Contract:
//   - x: [M, K]; w: [N, K] (f32) or a Q8_0Matrix with cols() == K; y: [M, N], must not alias x
//     or w; bias: N floats or null. Shapes are checked (abort on mismatch: programmer error).
//   - matmul_f32 calls OpenBLAS sgemm; it runs on OpenBLAS's own threads, whose count
//     set_blas_threads() sets for the whole process.
//   - matmul_q8_0 quantizes each row of x into q8_0 blocks (same rule as the weights), then
//     takes int8 dot products on ctx.path, split over ctx.pool by tiles of output features (and
//     of rows of x when M is large). Every element of y is written.
//   - Both are safe to call concurrently with distinct outputs.
#pragma once

#include "kernels/exec_context.h"
#include "kernels/q8_0.h"
#include "kernels/tensor.h"

namespace am::kernels {

void set_blas_threads(int threads);

void matmul_f32(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y);
void matmul_q8_0(ConstTensorView x, const Q8_0Matrix& w, const float* bias, TensorView y,
                 const ExecContext& ctx);

}  // namespace am::kernels
