// Helpers shared by the AVX-512 kernels (x86 only; include from x86 translation units).
// GCC 12's AVX-512 headers seed some intrinsics with a deliberately undefined register
// (_mm512_undefined_*), which -W(maybe-)uninitialized misreports at every inlined use.
#pragma once

#if defined(__x86_64__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#define AM_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c")))
#define AM_TARGET_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512bf16,avx2,fma,f16c")))

namespace am::kernels::detail {

// Word indices for _mm512_permutexvar_epi16, lane i of the result taking word idx[i].
template <typename F>
AM_TARGET_AVX512 inline __m512i word_index(F f) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = static_cast<int16_t>(f(i));
  return _mm512_load_si512(idx);
}

template <typename F>
AM_TARGET_AVX512 inline __m512i dword_index(F f) {
  alignas(64) int32_t idx[16];
  for (int i = 0; i < 16; ++i) idx[i] = f(i);
  return _mm512_load_si512(idx);
}

// 16 halves picked from the 32 words of v by idx (low half of the permutation), as floats.
AM_TARGET_AVX512 inline __m512 halves_to_float(__m512i v, __m512i idx) {
  return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, v)));
}

AM_TARGET_AVX512 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// Round half away from zero, exactly like std::round on each lane (s must not be NaN).
AM_TARGET_AVX512 inline __m512 round_half_away(__m512 s) {
  const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i one = _mm512_castps_si512(_mm512_set1_ps(1.0f));
  const __m512 t = _mm512_roundscale_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(s, t));
  const __m512 step = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(s), sign_bit), one));
  return _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t,
                            step);
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
