// The fp32 FMA-rate op (Backend::fma_chain): a calibration op, not a model op. It keeps the
// arithmetic units busy with long chains of dependent FMAs, so a bench can time the rate at
// which a backend runs fp32 FMAs on its own device and put the matmuls' GFLOPS next to it.
//
// Contract (every backend computes exactly this, up to whether its FMA is fused):
//   for element i of `out` (row-major, n = rows * cols), s = float(i) * 1e-7f, sixteen chains
//     a[c][l], c in 0..3, l in 0..3, start at s + 0.25f * float(4c + l) (all positive: the
//     final sum cancels nothing, so unfused and fused FMAs agree to a few ulps) and run
//     `iterations` steps a = fma(a, kFmaChainMul, kFmaChainAdd);
//   then sum[l] = ((a[0][l] + a[1][l]) + a[2][l]) + a[3][l] and
//   out[i] = ((sum[0] + sum[1]) + sum[2]) + sum[3].
// The sixteen chains are independent (enough to hide FMA latency); the final sum keeps the
// compiler from dropping any. FLOPs of one call: n * iterations * kFmaChainFlopsPerStep.
// n < 2^31 (the element index is converted as an int32 by the SIMD paths and the shaders).
// Pure and thread-safe; `path` must be available on this CPU.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_features.h"
#include "kernels/exec_context.h"

namespace am::kernels {

inline constexpr float kFmaChainMul = 0.999999f;
inline constexpr float kFmaChainAdd = 1e-6f;
inline constexpr int kFmaChains = 16;
inline constexpr double kFmaChainFlopsPerStep = 2.0 * kFmaChains;  // per element

// The scalar reference for elements [begin, end).
void fma_chain_scalar(int64_t begin, int64_t end, int32_t iterations, float* out);
// Elements [0, n) on `ctx`'s path, split over its pool.
void fma_chain(int64_t n, int32_t iterations, float* out, const ExecContext& ctx);

namespace detail {
void fma_chain_avx2(int64_t begin, int64_t end, int32_t iterations, float* out);
void fma_chain_avx512(int64_t begin, int64_t end, int32_t iterations, float* out);
}  // namespace detail

}  // namespace am::kernels
