// Small f32 vector kernels with per-path SIMD implementations (used by attention).
//
// Contract:
//   - dot_rows_f32(x, rows, stride, nrows, n, out, path): out[r] = sum_i x[i] * rows[r*stride + i]
//     for r in [0, nrows), i in [0, n).
//   - weighted_sum_rows_f32(p, rows, stride, nrows, n, out, path):
//     out[i] = sum_r p[r] * rows[r*stride + i], overwriting out (n floats).
//   - `stride` is in floats. Inputs and out must not overlap. `path` must be available on this
//     CPU (see cpu_features.h). Each path is deterministic; paths differ from the scalar
//     reference only by float summation order. Pure and thread-safe.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_features.h"

namespace am::kernels {

void dot_rows_f32(const float* x, const float* rows, int64_t stride, int64_t nrows, int64_t n,
                  float* out, KernelPath path);
void weighted_sum_rows_f32(const float* p, const float* rows, int64_t stride, int64_t nrows,
                           int64_t n, float* out, KernelPath path);

}  // namespace am::kernels
