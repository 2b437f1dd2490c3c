// Activations with exp/erf on AVX2 + FMA (function-level target attributes only); the accuracy
// contract is in activation_kernels.h.
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/activation_kernels.h"
#include "kernels/cpu/activation_math.h"

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace am::kernels::detail {
namespace {

constexpr int64_t kLanes = 8;

// e^a as in activation_avx512.cpp (+inf above the clamp, 0 below it); 2^n made in the exponent field (n is within [-126, 127] after
// the clamp, so the float stays normal).
AM_TARGET_AVX2 inline __m256 exp8(__m256 in) {
  using namespace act_math;
  const __m256 over = _mm256_cmp_ps(in, _mm256_set1_ps(kExpMaxArg), _CMP_GT_OQ);
  const __m256 under = _mm256_cmp_ps(in, _mm256_set1_ps(kExpMinArg), _CMP_LT_OQ);
  // The variable operand second: MAXPS and MINPS return their second operand when either is NaN.
  const __m256 a = _mm256_min_ps(_mm256_set1_ps(kExpMaxArg), _mm256_max_ps(_mm256_set1_ps(kExpMinArg), in));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(a, _mm256_set1_ps(kLog2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), a);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpPoly[7]);
  for (int i = 6; i >= 0; --i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[i]));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_blendv_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(bits)), _mm256_set1_ps(__builtin_inff()), over);
  return _mm256_andnot_ps(under, e);
}

AM_TARGET_AVX2 inline __m256 gelu8(__m256 x) {
  using namespace act_math;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 az = _mm256_andnot_ps(sign, _mm256_mul_ps(x, _mm256_set1_ps(kInvSqrt2)));
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(az, _mm256_set1_ps(kErfP), _mm256_set1_ps(1.0f)));
  __m256 poly = _mm256_set1_ps(kErfA[4]);
  for (int i = 3; i >= 0; --i) poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(kErfA[i]));
  poly = _mm256_mul_ps(poly, t);
  const __m256 e = _mm256_mul_ps(poly, exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(az, az))));
  const __m256 nonneg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
  const __m256 one_plus_erf = _mm256_blendv_ps(e, _mm256_sub_ps(_mm256_set1_ps(2.0f), e), nonneg);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), one_plus_erf);
}

AM_TARGET_AVX2 inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

template <class F>
AM_TARGET_AVX2 inline void map8(float* p, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm256_storeu_ps(p + i, f(_mm256_loadu_ps(p + i)));
  if (i < n) {
    float tail[kLanes] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = p[j];
    _mm256_storeu_ps(tail, f(_mm256_loadu_ps(tail)));
    for (int64_t j = i; j < n; ++j) p[j] = tail[j - i];
  }
}

}  // namespace

AM_TARGET_AVX2 void gelu_erf_avx2(float* p, int64_t n) {
  map8(p, n, [](__m256 x) AM_TARGET_AVX2 { return gelu8(x); });
}

AM_TARGET_AVX2 void silu_avx2(float* p, int64_t n) {
  map8(p, n, [](__m256 x) AM_TARGET_AVX2 {
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
  });
}

AM_TARGET_AVX2 void sigmoid_avx2(float* p, int64_t n) {
  map8(p, n, [](__m256 x) AM_TARGET_AVX2 { return sigmoid8(x); });
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
