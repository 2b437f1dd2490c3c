// q8_0 weight quantization for AVX2 + FMA + F16C (the matmul kernels live beside it in kernels/formats/). Every function carries its own target attribute so the
// rest of the library stays baseline x86-64 and runs on any CPU.
#if defined(__x86_64__)  // x86-only translation unit; empty elsewhere
#include <immintrin.h>

#include <cstring>

#include "kernels/formats/q8_0_kernels.h"

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace am::kernels::detail {

AM_TARGET_AVX2 void quantize_block_q8_0_avx2(const float* x, BlockQ8_0* y) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  __m256 v[4];
  __m256 vmax = _mm256_setzero_ps();
  __m256 nonfinite = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    const __m256 a = _mm256_andnot_ps(sign_bit, v[i]);
    // Not-less-than-inf, unordered: true for +-inf and NaN.
    nonfinite = _mm256_or_ps(nonfinite, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));
    vmax = _mm256_max_ps(vmax, a);
  }
  if (_mm256_movemask_ps(nonfinite) != 0) {
    y->d = kFp16QuietNaN;
    std::memset(y->qs, 0, sizeof(y->qs));
    return;
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float amax = _mm_cvtss_f32(m);
  const float d = amax / kQ8_0MaxQ;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

  const __m256 vid = _mm256_set1_ps(id);
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 qmax = _mm256_set1_ps(kQ8_0MaxQ);
  const __m256 qmin = _mm256_set1_ps(-kQ8_0MaxQ);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    __m256 s = _mm256_mul_ps(v[i], vid);
    s = _mm256_and_ps(s, _mm256_cmp_ps(s, s, _CMP_ORD_Q));  // NaN (0 * inf) -> 0
    // Round half away from zero like roundf: truncate, then step away from zero when the
    // dropped fraction (exact: v - trunc(v) never rounds) is at least one half.
    const __m256 t = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(s, t));
    const __m256 step = _mm256_or_ps(_mm256_and_ps(s, sign_bit), one);
    __m256 r = _mm256_add_ps(t, _mm256_and_ps(step, _mm256_cmp_ps(frac, half, _CMP_GE_OQ)));
    r = _mm256_min_ps(_mm256_max_ps(r, qmin), qmax);
    q[i] = _mm256_cvtps_epi32(r);
  }
  // Narrow 4x8 int32 -> 32 int8; the packs work within 128-bit lanes, the permute restores order.
  const __m256i p01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i p23 = _mm256_packs_epi32(q[2], q[3]);
  __m256i p = _mm256_packs_epi16(p01, p23);
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y->qs), p);
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
