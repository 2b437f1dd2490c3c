// Per-path block kernels of the fp32 GEMV / small-M GEMM, behind the driver in gemm_f32.cpp.
// Internal to kernels/: each x86 kernel is compiled with function-level target attributes (never
// global flags) and may only be called when kernel_path_available() says so.
#pragma once

#include <cstdint>

namespace am::kernels::detail {

// One block of the product, all strides in floats:
//   y[i * ldy + j] (=|+=) sum_{p < k} x[i * ldx + p] * w[j * ldw + p]   for i < m, j < n,
// plus bias[j] when bias is non-null. accumulate = false overwrites y (bias or 0 seeded),
// accumulate = true adds onto what y holds (a later K block). m, n, k >= 1. Kernels take any
// m and n: register blocks cover the bulk, narrower instantiations the edges; K tails use
// masked loads (never a read past x[i * ldx + k - 1] or w[j * ldw + k - 1]).
using GemmF32BlockFn = void (*)(const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw,
                                int64_t n, int64_t k, const float* bias, bool accumulate, float* y,
                                int64_t ldy);

void gemm_f32_block_scalar(const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw,
                           int64_t n, int64_t k, const float* bias, bool accumulate, float* y,
                           int64_t ldy);
void gemm_f32_block_avx2(const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw,
                         int64_t n, int64_t k, const float* bias, bool accumulate, float* y,
                         int64_t ldy);
void gemm_f32_block_avx512(const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw,
                           int64_t n, int64_t k, const float* bias, bool accumulate, float* y,
                           int64_t ldy);

}  // namespace am::kernels::detail
