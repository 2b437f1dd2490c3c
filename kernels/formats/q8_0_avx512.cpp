// q8_0 weight quantization for AVX-512 (F, BW, VL); the matmul kernels live beside it in kernels/formats/.
// GCC 12's AVX-512 headers seed some intrinsics with a deliberately undefined register
// (_mm512_undefined_*), which -Wmaybe-uninitialized misreports at every inlined use.
#if defined(__x86_64__)  // x86-only translation unit; empty elsewhere
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/formats/q8_0_kernels.h"

#define AM_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace am::kernels::detail {

AM_TARGET_AVX512 void quantize_block_q8_0_avx512(const float* x, BlockQ8_0* y) {
  const __m512 v0 = _mm512_loadu_ps(x);
  const __m512 v1 = _mm512_loadu_ps(x + 16);
  const __m512 a0 = _mm512_abs_ps(v0);
  const __m512 a1 = _mm512_abs_ps(v1);
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  // Not-less-than-inf, unordered: true for +-inf and NaN.
  const __mmask16 bad =
      _mm512_cmp_ps_mask(a0, inf, _CMP_NLT_UQ) | _mm512_cmp_ps_mask(a1, inf, _CMP_NLT_UQ);
  if (bad != 0) {
    y->d = kFp16QuietNaN;
    std::memset(y->qs, 0, sizeof(y->qs));
    return;
  }
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
  const float d = amax / kQ8_0MaxQ;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

  const __m512 vid = _mm512_set1_ps(id);
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 qmax = _mm512_set1_ps(kQ8_0MaxQ);
  const __m512 qmin = _mm512_set1_ps(-kQ8_0MaxQ);
  const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i one = _mm512_castps_si512(_mm512_set1_ps(1.0f));
  __m128i q[2];
  const __m512 v[2] = {v0, v1};
  for (int i = 0; i < 2; ++i) {
    __m512 s = _mm512_mul_ps(v[i], vid);
    s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, s, _CMP_ORD_Q), s);  // NaN (0 * inf) -> 0
    // Round half away from zero like roundf (see the AVX2 kernel for why this is exact).
    const __m512 t = _mm512_roundscale_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(s, t));
    const __m512 step = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(s), sign_bit), one));
    __m512 r = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ), t, step);
    r = _mm512_min_ps(_mm512_max_ps(r, qmin), qmax);
    q[i] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y->qs), q[0]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y->qs + 16), q[1]);
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
