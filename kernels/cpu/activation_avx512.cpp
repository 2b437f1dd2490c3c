// Activations with exp/erf on AVX-512 F (function-level target attributes only); the accuracy
// contract is in activation_kernels.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/activation_kernels.h"
#include "kernels/cpu/activation_math.h"

#define AM_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

namespace am::kernels::detail {
namespace {

constexpr int64_t kLanes = 16;

// e^a: a = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor polynomial, then scaled by 2^n.
// Past the clamp: +inf above it, 0 below it (a float's own limits, denormals left out), so
// x / (1 + e^-x) still gives -0 for x = -1e30 as the scalar form does.
AM_TARGET_AVX512 inline __m512 exp16(__m512 in) {
  using namespace act_math;
  const __mmask16 over = _mm512_cmp_ps_mask(in, _mm512_set1_ps(kExpMaxArg), _CMP_GT_OQ);
  const __mmask16 under = _mm512_cmp_ps_mask(in, _mm512_set1_ps(kExpMinArg), _CMP_LT_OQ);
  // The variable operand second: MAXPS and MINPS return their second operand when either is NaN.
  const __m512 a = _mm512_min_ps(_mm512_set1_ps(kExpMaxArg), _mm512_max_ps(_mm512_set1_ps(kExpMinArg), in));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(kLog2E)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), a);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpPoly[7]);
  for (int i = 6; i >= 0; --i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpPoly[i]));
  const __m512 e = _mm512_mask_blend_ps(over, _mm512_scalef_ps(p, n), _mm512_set1_ps(__builtin_inff()));
  return _mm512_mask_blend_ps(under, e, _mm512_setzero_ps());
}

AM_TARGET_AVX512 inline __m512 gelu16(__m512 x) {
  using namespace act_math;
  const __m512 az = _mm512_abs_ps(_mm512_mul_ps(x, _mm512_set1_ps(kInvSqrt2)));
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(az, _mm512_set1_ps(kErfP), _mm512_set1_ps(1.0f)));
  __m512 poly = _mm512_set1_ps(kErfA[4]);
  for (int i = 3; i >= 0; --i) poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(kErfA[i]));
  poly = _mm512_mul_ps(poly, t);
  // erfc(|z|), then 1 + erf(z): 2 - erfc(|z|) for z >= 0, erfc(|z|) below (no cancellation there).
  const __m512 e = _mm512_mul_ps(poly, exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(az, az))));
  const __mmask16 nonneg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  const __m512 one_plus_erf = _mm512_mask_sub_ps(e, nonneg, _mm512_set1_ps(2.0f), e);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), one_plus_erf);
}

AM_TARGET_AVX512 inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

template <class F>
AM_TARGET_AVX512 inline void map16(float* p, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm512_storeu_ps(p + i, f(_mm512_loadu_ps(p + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(p + i, m, f(_mm512_maskz_loadu_ps(m, p + i)));
  }
}

}  // namespace

AM_TARGET_AVX512 void gelu_erf_avx512(float* p, int64_t n) {
  map16(p, n, [](__m512 x) AM_TARGET_AVX512 { return gelu16(x); });
}

AM_TARGET_AVX512 void silu_avx512(float* p, int64_t n) {
  map16(p, n, [](__m512 x) AM_TARGET_AVX512 {
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
  });
}

AM_TARGET_AVX512 void sigmoid_avx512(float* p, int64_t n) {
  map16(p, n, [](__m512 x) AM_TARGET_AVX512 { return sigmoid16(x); });
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
