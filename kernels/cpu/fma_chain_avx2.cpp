// fma_chain for AVX2 + FMA (function-level target attributes only): eight elements per vector,
// their sixteen chains run as two passes of eight independent vector chains (eight in flight
// cover a 4-cycle FMA on two ports; sixteen would not fit the register file with the constants).
#include "kernels/cpu/fma_chain.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace am::kernels::detail {

AM_TARGET_AVX2 void fma_chain_avx2(int64_t begin, int64_t end, int32_t iterations, float* out) {
  constexpr int64_t kLanes = 8;
  const __m256 mul = _mm256_set1_ps(kFmaChainMul);
  const __m256 add = _mm256_set1_ps(kFmaChainAdd);
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 s = _mm256_mul_ps(_mm256_cvtepi32_ps(idx), _mm256_set1_ps(1e-7f));
    __m256 sum[4];
    // Pass p runs chains c = 2p and 2p + 1, all four lanes l of each.
    for (int p = 0; p < 2; ++p) {
      __m256 a[8];
      for (int k = 0; k < 8; ++k) {
        // chain c = 2p + k / 4, lane l = k % 4: start s + 0.25 * (4c + l) = s + 0.25 * (8p + k)
        a[k] = _mm256_add_ps(s, _mm256_set1_ps(0.25f * static_cast<float>(8 * p + k)));
      }
      for (int32_t it = 0; it < iterations; ++it) {
        // Unrolled so the eight chains stay in registers (a loop over the array spills them).
#pragma GCC unroll 8
        for (__m256& v : a) v = _mm256_fmadd_ps(v, mul, add);
      }
      for (int l = 0; l < 4; ++l) {
        // sum[l] = ((a0 + a1) + a2) + a3 over chains c: pass 0 gives a0 + a1, pass 1 adds a2, a3.
        sum[l] = p == 0 ? _mm256_add_ps(a[l], a[4 + l]) : _mm256_add_ps(_mm256_add_ps(sum[l], a[l]), a[4 + l]);
      }
    }
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(sum[0], sum[1]), sum[2]), sum[3]));
  }
  if (i < end) fma_chain_scalar(i, end, iterations, out);
}

}  // namespace am::kernels::detail

#endif  // __x86_64__
