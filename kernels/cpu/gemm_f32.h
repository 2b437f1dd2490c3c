// Our own fp32 GEMV (M = 1) and small-M GEMM in the Linear layout:
//   Y[M, N] = X[M, K] · W[N, K]^T (+ bias[N]),  W row-major [out_features, in_features].
//
// Contract:
//   - x: [M, K]; w: [N, K]; y: [M, N], must not alias x or w; bias: N floats or null. Rows may be
//     strided (TensorView's stride is its column count here: every view is dense). Every element
//     of y is written; K = 0 gives y = bias (or 0).
//   - gemm_f32() runs on ctx.path (avx512, avx2; scalar for scalar and neon) over ctx.pool, the
//     same pool the quantized kernels use, and never calls OpenBLAS. The work is split by tiles
//     of W rows (and runs of X rows); each output is one register-blocked dot product over K
//     (split into cache-sized K blocks for larger M), so the result depends on M, K and the path
//     but never on the thread count. Paths agree with the scalar reference up to the order of
//     f32 summation (FMA, several partial sums per dot).
//   - gemm_f32_reference() is the scalar reference (single thread, plain loops): the fallback
//     of paths without SIMD kernels and the oracle of the tests.
//   - Both are safe to call concurrently with distinct outputs.
// kernels/cpu/matmul.h's matmul_f32 decides, by M, whether this or OpenBLAS runs a product.
#pragma once

#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

void gemm_f32(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y,
              const ExecContext& ctx);
void gemm_f32_reference(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y);

}  // namespace am::kernels
