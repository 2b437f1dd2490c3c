// fma_chain for AVX-512F (function-level target attributes only): sixteen elements per vector,
// their sixteen chains run as two passes of eight independent vector chains, as on AVX2.
#include "kernels/cpu/fma_chain.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AM_TARGET_AVX512 __attribute__((target("avx512f")))

namespace am::kernels::detail {

AM_TARGET_AVX512 void fma_chain_avx512(int64_t begin, int64_t end, int32_t iterations, float* out) {
  constexpr int64_t kLanes = 16;
  const __m512 mul = _mm512_set1_ps(kFmaChainMul);
  const __m512 add = _mm512_set1_ps(kFmaChainAdd);
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    // Rounded as float(i): the masked form avoids GCC's warning about _mm512_undefined_ps.
    const __m512 s = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, idx), _mm512_set1_ps(1e-7f));
    __m512 sum[4];
    // Pass p runs chains c = 2p and 2p + 1, all four lanes l of each.
    for (int p = 0; p < 2; ++p) {
      __m512 a[8];
      for (int k = 0; k < 8; ++k) {
        // chain c = 2p + k / 4, lane l = k % 4: start s + 0.25 * (4c + l) = s + 0.25 * (8p + k)
        a[k] = _mm512_add_ps(s, _mm512_set1_ps(0.25f * static_cast<float>(8 * p + k)));
      }
      for (int32_t it = 0; it < iterations; ++it) {
        // Unrolled so the eight chains stay in registers (a loop over the array spills them).
#pragma GCC unroll 8
        for (__m512& v : a) v = _mm512_fmadd_ps(v, mul, add);
      }
      for (int l = 0; l < 4; ++l) {
        // sum[l] = ((a0 + a1) + a2) + a3 over chains c: pass 0 gives a0 + a1, pass 1 adds a2, a3.
        sum[l] = p == 0 ? _mm512_add_ps(a[l], a[4 + l]) : _mm512_add_ps(_mm512_add_ps(sum[l], a[l]), a[4 + l]);
      }
    }
    _mm512_storeu_ps(out + i, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(sum[0], sum[1]), sum[2]), sum[3]));
  }
  if (i < end) fma_chain_scalar(i, end, iterations, out);
}

}  // namespace am::kernels::detail

#endif  // __x86_64__
