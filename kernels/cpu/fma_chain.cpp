#include "kernels/cpu/fma_chain.h"

#include <cmath>

namespace am::kernels {

void fma_chain_scalar(int64_t begin, int64_t end, int32_t iterations, float* out) {
  for (int64_t i = begin; i < end; ++i) {
    const float s = static_cast<float>(i) * 1e-7f;
    float a[4][4];
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 4; ++l) a[c][l] = s + 0.25f * static_cast<float>(4 * c + l);
    }
    for (int32_t it = 0; it < iterations; ++it) {
      for (auto& chain : a) {
        for (float& v : chain) v = std::fma(v, kFmaChainMul, kFmaChainAdd);
      }
    }
    float sum[4];
    for (int l = 0; l < 4; ++l) sum[l] = ((a[0][l] + a[1][l]) + a[2][l]) + a[3][l];
    out[i] = ((sum[0] + sum[1]) + sum[2]) + sum[3];
  }
}

void fma_chain(int64_t n, int32_t iterations, float* out, const ExecContext& ctx) {
  // A chunk of 64 elements is ~1k FMAs per step: big enough to amortise the split.
  constexpr int64_t kGrain = 64;
  parallel_for(ctx, n, kGrain, [&](int64_t begin, int64_t end) {
    switch (ctx.path) {
#if defined(__x86_64__)
      case KernelPath::kAvx2: detail::fma_chain_avx2(begin, end, iterations, out); return;
      case KernelPath::kAvx512: detail::fma_chain_avx512(begin, end, iterations, out); return;
#endif
      default: fma_chain_scalar(begin, end, iterations, out); return;  // paths without their own
    }
  });
}

}  // namespace am::kernels
