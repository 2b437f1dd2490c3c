// q8_0 kernels for AVX-512 (F, BW, VL) with VNNI. vpdpbusd multiplies unsigned by signed bytes
// and adds groups of four into int32 lanes in one instruction; AVX-512 has no byte sign
// instruction, so sign(w, x) is a masked negation driven by the sign bits of x.
// GCC 12's AVX-512 headers seed some intrinsics with a deliberately undefined register
// (_mm512_undefined_*), which -Wmaybe-uninitialized misreports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/q8_0_kernels.h"

#define AM_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace am::kernels::detail {
namespace {

AM_TARGET_AVX512 inline __m512i load_two(const BlockQ8_0& lo, const BlockQ8_0& hi) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo.qs));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi.qs));
  return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

AM_TARGET_AVX512 inline __m512i load_one(const BlockQ8_0& b) {
  return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)));
}

// x * w summed per int32 lane, as |x| * (w negated where x < 0).
AM_TARGET_AVX512 inline __m512i dot_bytes(__m512i abs_x, __mmask64 x_negative, __m512i w) {
  const __m512i signed_w = _mm512_mask_sub_epi8(w, x_negative, _mm512_setzero_si512(), w);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), abs_x, signed_w);
}

// Lanes 0-7 carry block b's scale, lanes 8-15 block b+1's.
AM_TARGET_AVX512 inline __m512 two_scales(float lo, float hi) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(lo), _mm512_set1_ps(hi));
}

AM_TARGET_AVX512 inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

constexpr int64_t kRowsPerPass = 4;

// acc += one weight row's contribution over the two blocks at w (x's blocks preloaded as
// |x|, its sign mask and its two scales).
AM_TARGET_AVX512 inline __m512 accumulate_pair(__m512 acc, __m512i abs_x, __mmask64 x_negative,
                                               float dx0, float dx1, const BlockQ8_0* w) {
  const __m512 scales = two_scales(dx0 * h2f(w[0].d), dx1 * h2f(w[1].d));
  const __m512i sums = dot_bytes(abs_x, x_negative, load_two(w[0], w[1]));
  return _mm512_fmadd_ps(scales, _mm512_cvtepi32_ps(sums), acc);
}

// The same for a single trailing block (upper lanes are zero).
AM_TARGET_AVX512 inline __m512 accumulate_one(__m512 acc, __m512i abs_x, __mmask64 x_negative,
                                              float dx0, const BlockQ8_0* w) {
  const __m512i sums = dot_bytes(abs_x, x_negative, load_one(w[0]));
  return _mm512_fmadd_ps(_mm512_set1_ps(dx0 * h2f(w[0].d)), _mm512_cvtepi32_ps(sums), acc);
}

}  // namespace

AM_TARGET_AVX512 void q8_0_dot_rows_avx512(const BlockQ8_0* x, const BlockQ8_0* w,
                                           int64_t w_row_stride, int64_t nrows, int64_t nblocks,
                                           float* out) {
  int64_t r = 0;
  for (; r + kRowsPerPass <= nrows; r += kRowsPerPass) {
    const BlockQ8_0* w0 = w + (r + 0) * w_row_stride;
    const BlockQ8_0* w1 = w + (r + 1) * w_row_stride;
    const BlockQ8_0* w2 = w + (r + 2) * w_row_stride;
    const BlockQ8_0* w3 = w + (r + 3) * w_row_stride;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nblocks; b += 2) {
      const __m512i xq = load_two(x[b], x[b + 1]);
      const __m512i ax = _mm512_abs_epi8(xq);
      const __mmask64 neg = _mm512_movepi8_mask(xq);
      const float dx0 = h2f(x[b].d);
      const float dx1 = h2f(x[b + 1].d);
      acc0 = accumulate_pair(acc0, ax, neg, dx0, dx1, w0 + b);
      acc1 = accumulate_pair(acc1, ax, neg, dx0, dx1, w1 + b);
      acc2 = accumulate_pair(acc2, ax, neg, dx0, dx1, w2 + b);
      acc3 = accumulate_pair(acc3, ax, neg, dx0, dx1, w3 + b);
    }
    if (b < nblocks) {
      const __m512i xq = load_one(x[b]);
      const __m512i ax = _mm512_abs_epi8(xq);
      const __mmask64 neg = _mm512_movepi8_mask(xq);
      const float dx0 = h2f(x[b].d);
      acc0 = accumulate_one(acc0, ax, neg, dx0, w0 + b);
      acc1 = accumulate_one(acc1, ax, neg, dx0, w1 + b);
      acc2 = accumulate_one(acc2, ax, neg, dx0, w2 + b);
      acc3 = accumulate_one(acc3, ax, neg, dx0, w3 + b);
    }
    out[r + 0] = _mm512_reduce_add_ps(acc0);
    out[r + 1] = _mm512_reduce_add_ps(acc1);
    out[r + 2] = _mm512_reduce_add_ps(acc2);
    out[r + 3] = _mm512_reduce_add_ps(acc3);
  }
  for (; r < nrows; ++r) {
    const BlockQ8_0* wr = w + r * w_row_stride;
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nblocks; b += 2) {
      const __m512i xq = load_two(x[b], x[b + 1]);
      const __m512i ax = _mm512_abs_epi8(xq);
      const __mmask64 neg = _mm512_movepi8_mask(xq);
      const float dx0 = h2f(x[b].d);
      const float dx1 = h2f(x[b + 1].d);
      acc = accumulate_pair(acc, ax, neg, dx0, dx1, wr + b);
    }
    if (b < nblocks) {
      const __m512i xq = load_one(x[b]);
      const __m512i ax = _mm512_abs_epi8(xq);
      const __mmask64 neg = _mm512_movepi8_mask(xq);
      const float dx0 = h2f(x[b].d);
      acc = accumulate_one(acc, ax, neg, dx0, wr + b);
    }
    out[r] = _mm512_reduce_add_ps(acc);
  }
}

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
