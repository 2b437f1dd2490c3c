// AVX-512 (F/BW/VL/DQ + VNNI, optionally BF16) row-dot kernels: the GEMV of decode (M = 1) and
// the small-M matmul. They read the stored GGUF blocks directly and must stream them at memory
// bandwidth, so every block format is handled two blocks (or one super-block) per step with
// the scales of a block pair fetched by one 64-byte load and a word permutation, instead of
// per-block scalar conversions. Several weight rows share each activation load, and every
// weight stream is prefetched one pass of rows ahead (see prefetch_ahead()).
//
// Weight buffers carry >= kWeightReadSlackBytes readable bytes after their last row (WeightMatrix
// guarantees it): a block pair is fetched with one 64-byte load that may run past a short row.
#include "kernels/formats/simd_avx512.h"

#if defined(__x86_64__)

#include <cmath>
#include <cstring>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/dot_kernels.h"

namespace am::kernels::detail {
namespace {

// Weight rows per pass sharing each activation load: more rows amortize the activation-side
// work of the light formats; the k-quants keep fewer to stay within the 32 vector registers.
constexpr int kRowsPerPass = 8;
constexpr int kRowsPerPassK = 4;

AM_TARGET_AVX512 inline float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

// Weight streams are prefetched one pass ahead: a kernel taking R rows per pass fetches the
// same position R rows on (R * row bytes ahead), which the next pass reads. Rows are stored back
// to back, so an in-row distance lands, for short rows (decode's K = 2048: 18 lines per q4_0
// row), on rows this pass already streams and leaves every next pass cold. Measured on Zen 5
// (2 threads): one pass ahead took decode-shaped q4_0 GEMVs from 28 to 37 GB/s; for K = 14336
// in-row distances of 1-16 KiB were no better (all within the run-to-run noise). Prefetches
// never fault, so running past the end of the matrix is harmless.
template <int kLines = 1>
inline void prefetch_ahead(const uint8_t* p, std::size_t ahead) {
  for (int i = 0; i < kLines; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(p + ahead + 64 * i), _MM_HINT_T0);
  }
}

// ---------------------------------------------------------------------------------------------
// Activation quantization.

// One block of `block` floats (a multiple of 16): same arithmetic as the reference.
AM_TARGET_AVX512 void quantize_act_block(const float* x, int64_t block, int8_t* q, float* d,
                                         int32_t* sum, int16_t* bsum) {
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  __m512 vmax = _mm512_setzero_ps();
  __mmask16 bad = 0;
  for (int64_t i = 0; i < block; i += 16) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
    bad |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);  // +-inf and NaN
    vmax = _mm512_max_ps(vmax, a);
  }
  if (bad != 0) {
    *d = NAN;
    *sum = 0;
    std::memset(q, 0, static_cast<std::size_t>(block));
    if (bsum != nullptr) std::memset(bsum, 0, static_cast<std::size_t>(block / 16) * sizeof(int16_t));
    return;
  }
  const float amax = _mm512_reduce_max_ps(vmax);
  const float scale = amax / kActMaxQ;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  *d = scale;
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512 qmax = _mm512_set1_ps(kActMaxQ);
  const __m512 qmin = _mm512_set1_ps(-kActMaxQ);
  int32_t total = 0;
  __m512i lanes = _mm512_setzero_si512();   // without bsum: one horizontal add per block, not per 16
  for (int64_t i = 0; i < block; i += 16) {
    __m512 s = _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv);
    s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, s, _CMP_ORD_Q), s);  // NaN (0 * inf) -> 0
    const __m512 r = _mm512_min_ps(_mm512_max_ps(round_half_away(s), qmin), qmax);
    const __m512i qi = _mm512_cvtps_epi32(r);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(qi));
    if (bsum != nullptr) {
      const int32_t group = _mm512_reduce_add_epi32(qi);
      total += group;
      bsum[i / 16] = static_cast<int16_t>(group);
    } else {
      lanes = _mm512_add_epi32(lanes, qi);
    }
  }
  *sum = bsum != nullptr ? total : _mm512_reduce_add_epi32(lanes);
}

// ---------------------------------------------------------------------------------------------
// q8_0: blocks of 34 bytes; a pair is 68 bytes. Signed x signed products through vpdpbusd as
// |x| * (w with the sign of x).

struct Q8_0Consts {
  __m512i scale_idx;  // lanes 0-7: word 0 (d of block b), 8-15: word 17 (d of block b+1)
};

template <int R>
AM_TARGET_AVX512 void q8_0_rows(const ActRow& a, const uint8_t* w, std::size_t rb, float* out,
                                const Q8_0Consts& c) {
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t nb = a.blocks;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i x = _mm512_loadu_si512(a.q + b * 32);
    const __m512i ax = _mm512_abs_epi8(x);
    const __mmask64 neg = _mm512_movepi8_mask(x);
    const __m512 xs = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(a.d[b]), _mm512_set1_ps(a.d[b + 1]));
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + b * sizeof(BlockQ8_0);
      prefetch_ahead<2>(p, R * rb);
      const __m512 dw = halves_to_float(_mm512_loadu_si512(p), c.scale_idx);
      const __m512i wq = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36)), 1);
      const __m512i sw = _mm512_mask_sub_epi8(wq, neg, _mm512_setzero_si512(), wq);
      const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ax, sw);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, xs), acc[r]);
    }
  }
  if (b < nb) {
    const __m512i x = _mm512_zextsi256_si512(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q + b * 32)));
    const __m512i ax = _mm512_abs_epi8(x);
    const __mmask64 neg = _mm512_movepi8_mask(x);
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + b * sizeof(BlockQ8_0);
      const __m512i wq = _mm512_zextsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)));
      const __m512i sw = _mm512_mask_sub_epi8(wq, neg, _mm512_setzero_si512(), wq);
      const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ax, sw);
      uint16_t h;
      std::memcpy(&h, p, sizeof(h));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(half_to_float(h) * a.d[b]),
                               acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// ---------------------------------------------------------------------------------------------
// q4_0 / q4_1: blocks of 18 / 20 bytes; a pair fits one 64-byte load. The nibbles of the pair
// are gathered into [qs0 | qs1] by a word permutation and expanded to
// [lo(qs0), lo(qs1), hi(qs0), hi(qs1)]: elements 0-15 of both blocks, then 16-31 of both. The
// activation pair is permuted to the same order once per step for all rows. dpbusd then gives
// int32 lanes 0-3 and 8-11 for block b, 4-7 and 12-15 for block b+1.

constexpr __mmask16 kSecondBlockLanes = 0xF0F0;

struct Q4Consts {
  __m512i qs_idx;     // words of qs0 then qs1
  __m512i d_idx;      // per lane: the d word of the lane's block
  __m512i m_idx;      // per lane: the m word of the lane's block (q4_1)
  __m512i x_perm;     // qwords of the activation pair into the nibble order
  __m512i nibble_shift;  // words: 0 in the low 256 bits, 4 in the high
};

AM_TARGET_AVX512 Q4Consts q4_consts(int block_bytes, int qs_offset) {
  const int bw = block_bytes / 2;  // block size in words
  const int qw = qs_offset / 2;
  Q4Consts c;
  // Both 256-bit halves get [qs0 | qs1]; the high half is then shifted to the high nibbles.
  c.qs_idx = word_index([&](int i) { return (i % 16) < 8 ? qw + i % 16 : bw + qw + (i % 16 - 8); });
  c.d_idx = word_index([&](int i) { return ((i / 4) % 2) * bw; });
  c.m_idx = word_index([&](int i) { return ((i / 4) % 2) * bw + 1; });
  c.x_perm = _mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7);
  c.nibble_shift = word_index([](int i) { return i < 16 ? 0 : 4; });
  return c;
}

AM_TARGET_AVX512 inline __m512i expand_nibbles(__m512i v, const Q4Consts& c) {
  const __m512i both = _mm512_permutexvar_epi16(c.qs_idx, v);
  return _mm512_and_si512(_mm512_srlv_epi16(both, c.nibble_shift), _mm512_set1_epi8(0x0F));
}

// kMin = false: q4_0, w = d (q - 8); kMin = true: q4_1, w = d q + m.
template <int R, bool kMin>
AM_TARGET_AVX512 void q4_rows(const ActRow& a, const uint8_t* w, std::size_t rb, float* out,
                              const Q4Consts& c) {
  constexpr std::size_t kBlockBytes = kMin ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t nb = a.blocks;
  for (int64_t b = 0; b < nb; b += 2) {
    const bool pair = b + 1 < nb;
    const __mmask16 lanes = pair ? 0xFFFF : static_cast<__mmask16>(~kSecondBlockLanes);
    const __m512i xn = pair ? _mm512_loadu_si512(a.q + b * 32)
                            : _mm512_zextsi256_si512(_mm256_loadu_si256(
                                  reinterpret_cast<const __m256i*>(a.q + b * 32)));
    const __m512i x = _mm512_permutexvar_epi64(c.x_perm, xn);
    const float dx1 = pair ? a.d[b + 1] : 0.0f;
    const __m512 xs = _mm512_mask_blend_ps(kSecondBlockLanes, _mm512_set1_ps(a.d[b]), _mm512_set1_ps(dx1));
    __m512i init = _mm512_setzero_si512();
    __m512 xsx = _mm512_setzero_ps();
    if constexpr (kMin) {
      // m * dx * sum(x) per block, spread evenly over the block's 8 lanes (exact: / 8).
      const float s1 = pair ? a.d[b + 1] * static_cast<float>(a.sum[b + 1]) : 0.0f;
      xsx = _mm512_mask_blend_ps(kSecondBlockLanes,
                                 _mm512_set1_ps(a.d[b] * static_cast<float>(a.sum[b]) * 0.125f),
                                 _mm512_set1_ps(s1 * 0.125f));
    } else {
      // sum (q - 8) x = sum q x - 8 sum x: the correction seeds one lane of each block.
      const int32_t s1 = pair ? a.sum[b + 1] : 0;
      init = _mm512_maskz_mov_epi32(0x0011, _mm512_mask_blend_epi32(0x00F0, _mm512_set1_epi32(-8 * a.sum[b]),
                                                                    _mm512_set1_epi32(-8 * s1)));
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + b * kBlockBytes;
      prefetch_ahead(p, R * rb);
      const __m512i v = _mm512_loadu_si512(p);
      const __m512i isum = _mm512_dpbusd_epi32(init, expand_nibbles(v, c), x);
      const __m512 dw = halves_to_float(v, c.d_idx);
      acc[r] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, xs), acc[r], lanes);
      if constexpr (kMin) {
        acc[r] = _mm512_mask3_fmadd_ps(halves_to_float(v, c.m_idx), xsx, acc[r], lanes);
      }
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// ---------------------------------------------------------------------------------------------
// k-quants: one 256-weight super-block per step. The 64 bytes of 2-bit quants give, per shift
// j = 0..3, the elements 32j..32j+31 (low 256 bits) and 128+32j.. (high 256 bits); the
// activations are regrouped the same way once per step. dpbusd lanes 4t..4t+3 then belong to
// sub-block sub_of(j, t) = 2j + (t & 1) + 8 (t >> 1).

struct KConsts {
  __m512i sub_idx[4];    // per j: dword lane -> its sub-block
  __m512i sub_idx16[4];  // per j: word lane (a pair of elements) -> its sub-block
};

AM_TARGET_AVX512 KConsts k_consts() {
  KConsts c;
  #pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    c.sub_idx[j] = dword_index([&](int i) { return 2 * j + ((i / 4) & 1) + 8 * (i / 8); });
    c.sub_idx16[j] = word_index([&](int i) { return 2 * j + ((i / 8) & 1) + 8 * (i / 16); });
  }
  return c;
}

AM_TARGET_AVX512 inline void regroup_activations(const int8_t* q, __m512i xj[4]) {
  const __m512i x0 = _mm512_loadu_si512(q);
  const __m512i x1 = _mm512_loadu_si512(q + 64);
  const __m512i x2 = _mm512_loadu_si512(q + 128);
  const __m512i x3 = _mm512_loadu_si512(q + 192);
  xj[0] = _mm512_shuffle_i64x2(x0, x2, _MM_SHUFFLE(1, 0, 1, 0));
  xj[1] = _mm512_shuffle_i64x2(x0, x2, _MM_SHUFFLE(3, 2, 3, 2));
  xj[2] = _mm512_shuffle_i64x2(x1, x3, _MM_SHUFFLE(1, 0, 1, 0));
  xj[3] = _mm512_shuffle_i64x2(x1, x3, _MM_SHUFFLE(3, 2, 3, 2));
}

AM_TARGET_AVX512 inline __m512i two_bit(__m512i qs, int j) {
  return _mm512_and_si512(_mm512_srli_epi16(qs, 2 * j), _mm512_set1_epi8(3));
}

template <int R>
AM_TARGET_AVX512 void q2_k_rows(const ActRow& a, const uint8_t* w, std::size_t rb, float* out,
                                const KConsts& c) {
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m512i xj[4];
    regroup_activations(a.q + b * kSuperBlockSize, xj);
    const __m256i bsum = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsum + b * kSubBlocks));
    const float dx = a.d[b];
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + b * sizeof(BlockQ2_K);
      prefetch_ahead<2>(p, R * rb);
      const __m512i qs = _mm512_loadu_si512(p + offsetof(BlockQ2_K, qs));
      const __m128i sc_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Sub-block scales as words; pairs of products (vpmaddubsw: q <= 3, no saturation) are
      // multiplied by their scale and summed into dwords by vpdpwssd in one step.
      const __m512i sc16 = _mm512_castsi256_si512(
          _mm256_cvtepu8_epi16(_mm_and_si128(sc_bytes, _mm_set1_epi8(0xF))));
      __m512i isum = _mm512_setzero_si512();
      #pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i pairs = _mm512_maddubs_epi16(two_bit(qs, j), xj[j]);
        isum = _mm512_dpwssd_epi32(isum, pairs, _mm512_permutexvar_epi16(c.sub_idx16[j], sc16));
      }
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc_bytes, 4), _mm_set1_epi8(0xF)));
      const __m256i msum = _mm256_madd_epi16(mins, bsum);
      uint16_t dh[2];
      std::memcpy(dh, p + offsetof(BlockQ2_K, d), sizeof(dh));
      const float d = half_to_float(dh[0]) * dx;
      const float dmin = half_to_float(dh[1]) * dx;
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d), acc[r]);
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(msum)), _mm512_set1_ps(dmin), acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// The 16 six-bit q3_k scales minus 32, one per dword lane. Reads 16 bytes from scales12 (the
// scale bytes, then d and 2 bytes past the block: inside the row or the matrix's read slack);
// only the first 12 are used.
AM_TARGET_AVX512 inline __m512i q3_k_scales(const uint8_t* scales12) {
  const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales12)));
  const __m512i low_src = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7), bytes);
  const __m512i low = _mm512_and_si512(
      _mm512_srlv_epi32(low_src, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4)),
      _mm512_set1_epi32(0xF));
  const __m512i high_src = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11), bytes);
  const __m512i high = _mm512_and_si512(
      _mm512_srlv_epi32(high_src, _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6)),
      _mm512_set1_epi32(3));
  return _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
}

template <int R>
AM_TARGET_AVX512 void q3_k_rows(const ActRow& a, const uint8_t* w, std::size_t rb, float* out,
                                const KConsts& c) {
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  // The bit of hmask holding the high bit: j for the low 256 bits, 4 + j for the high; hmask is
  // shifted right by j for step j, so one mask serves all four.
  const __m512i hbit = _mm512_inserti64x4(_mm512_set1_epi8(1), _mm256_set1_epi8(16), 1);
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m512i xj[4];
    regroup_activations(a.q + b * kSuperBlockSize, xj);
    // sum (L - 4) x = sum L x - 4 bsum: seed the first lane of each sub-block's four.
    const __m512i bsum4 = _mm512_slli_epi32(
        _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsum + b * kSubBlocks))), 2);
    __m512i corr[4];
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      corr[j] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                 _mm512_maskz_permutexvar_epi32(0x1111, c.sub_idx[j], bsum4));
    }
    const float dx = a.d[b];
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + b * sizeof(BlockQ3_K);
      prefetch_ahead<2>(p, R * rb);
      const __m512i qs = _mm512_loadu_si512(p + offsetof(BlockQ3_K, qs));
      const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      const __m512i sc = q3_k_scales(p + offsetof(BlockQ3_K, scales));
      __m512i isum = _mm512_setzero_si512();
      #pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i low = two_bit(qs, j);
        const __mmask64 high = _mm512_test_epi8_mask(_mm512_srli_epi16(hm, j), hbit);
        const __m512i quant = _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(4));
        const __m512i part = _mm512_dpbusd_epi32(corr[j], quant, xj[j]);
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(part, _mm512_permutexvar_epi32(c.sub_idx[j], sc)));
      }
      uint16_t dh;
      std::memcpy(&dh, p + offsetof(BlockQ3_K, d), sizeof(dh));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(half_to_float(dh) * dx), acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// ---------------------------------------------------------------------------------------------
// f16 (f32 activations) and bf16 (bf16 activations).

template <int R>
AM_TARGET_AVX512 void f16_rows(const ActRow& a, const uint8_t* w, std::size_t rb, float* out) {
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t k = a.k;
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m512 x = _mm512_loadu_ps(a.f32 + i);
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + 2 * i;
      if (i % 32 == 0) prefetch_ahead(p, R * rb);
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtph_ps(h), x, acc[r]);
    }
  }
  if (i < k) {
    const __mmask16 m = static_cast<__mmask16>((1u << (k - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, a.f32 + i);
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i h = _mm256_maskz_loadu_epi16(m, w + r * rb + 2 * i);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtph_ps(h), x, acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

template <int R>
AM_TARGET_AVX512_BF16 void bf16_rows_dp(const ActRow& a, const uint8_t* w, std::size_t rb, float* out) {
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t k = a.k;
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512bh x = (__m512bh)(_mm512_loadu_si512(a.bf16 + i));
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * rb + 2 * i;
      prefetch_ahead(p, R * rb);
      const __m512bh wv = (__m512bh)(_mm512_loadu_si512(p));
      acc[r] = _mm512_dpbf16_ps(acc[r], wv, x);
    }
  }
  if (i < k) {
    const __mmask32 m = static_cast<__mmask32>((1ull << (k - i)) - 1);
    const __m512bh x = (__m512bh)(_mm512_maskz_loadu_epi16(m, a.bf16 + i));
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh wv = (__m512bh)(_mm512_maskz_loadu_epi16(m, w + r * rb + 2 * i));
      acc[r] = _mm512_dpbf16_ps(acc[r], wv, x);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// Without AVX512_BF16: widen both to f32 (exact) and FMA.
AM_TARGET_AVX512 inline __m512 bf16_to_ps(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <int R>
AM_TARGET_AVX512 void bf16_rows_fma(const ActRow& a, const uint8_t* w, std::size_t rb, float* out) {
  __m512 acc[R];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t k = a.k;
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 m = k - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (k - i)) - 1);
    const __m512 x = bf16_to_ps(_mm256_maskz_loadu_epi16(m, a.bf16 + i));
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm512_fmadd_ps(bf16_to_ps(_mm256_maskz_loadu_epi16(m, w + r * rb + 2 * i)), x, acc[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// ---------------------------------------------------------------------------------------------
// Row loops: kRows rows share each activation load; the rest one by one.
template <template <int> class K, int kRows = kRowsPerPass, typename... C>
AM_TARGET_AVX512 void run_rows(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows,
                               float* out, const C&... consts) {
  int64_t r = 0;
  for (; r + kRows <= nrows; r += kRows) K<kRows>::run(a, w + r * rb, rb, out + r, consts...);
  for (; r < nrows; ++r) K<1>::run(a, w + r * rb, rb, out + r, consts...);
}

template <int R>
struct Q8_0K {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o,
                                   const Q8_0Consts& c) {
    q8_0_rows<R>(a, w, rb, o, c);
  }
};
template <int R>
struct Q4_0K {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o,
                                   const Q4Consts& c) {
    q4_rows<R, false>(a, w, rb, o, c);
  }
};
template <int R>
struct Q4_1K {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o,
                                   const Q4Consts& c) {
    q4_rows<R, true>(a, w, rb, o, c);
  }
};
template <int R>
struct Q2_KK {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o,
                                   const KConsts& c) {
    q2_k_rows<R>(a, w, rb, o, c);
  }
};
template <int R>
struct Q3_KK {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o,
                                   const KConsts& c) {
    q3_k_rows<R>(a, w, rb, o, c);
  }
};
template <int R>
struct F16K {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o) {
    f16_rows<R>(a, w, rb, o);
  }
};
template <int R>
struct Bf16DpK {
  AM_TARGET_AVX512_BF16 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o) {
    bf16_rows_dp<R>(a, w, rb, o);
  }
};
template <int R>
struct Bf16FmaK {
  AM_TARGET_AVX512 static void run(const ActRow& a, const uint8_t* w, std::size_t rb, float* o) {
    bf16_rows_fma<R>(a, w, rb, o);
  }
};

AM_TARGET_AVX512 void dot_q8_0(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  Q8_0Consts c;
  c.scale_idx = word_index([](int i) { return i < 8 ? 0 : 17; });
  run_rows<Q8_0K>(a, w, rb, n, o, c);
}
AM_TARGET_AVX512 void dot_q4_0(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<Q4_0K>(a, w, rb, n, o, q4_consts(sizeof(BlockQ4_0), offsetof(BlockQ4_0, qs)));
}
AM_TARGET_AVX512 void dot_q4_1(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<Q4_1K>(a, w, rb, n, o, q4_consts(sizeof(BlockQ4_1), offsetof(BlockQ4_1, qs)));
}
AM_TARGET_AVX512 void dot_q2_k(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<Q2_KK, kRowsPerPassK>(a, w, rb, n, o, k_consts());
}
AM_TARGET_AVX512 void dot_q3_k(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<Q3_KK, kRowsPerPassK>(a, w, rb, n, o, k_consts());
}
AM_TARGET_AVX512 void dot_f16(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<F16K>(a, w, rb, n, o);
}
AM_TARGET_AVX512_BF16 void dot_bf16_dp(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<Bf16DpK>(a, w, rb, n, o);
}
AM_TARGET_AVX512 void dot_bf16_fma(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t n, float* o) {
  run_rows<Bf16FmaK>(a, w, rb, n, o);
}

}  // namespace

AM_TARGET_AVX512 void quantize_activation_row_avx512(const float* x, int64_t k, int64_t block,
                                                     int8_t* q, float* d, int32_t* sum,
                                                     int16_t* bsum) {
  const int64_t full = k / block;
  const int64_t groups = block / kActSumGroup;
  for (int64_t b = 0; b < full; ++b) {
    quantize_act_block(x + b * block, block, q + b * block, d + b, sum + b,
                       bsum != nullptr ? bsum + b * groups : nullptr);
  }
  if (k > full * block) {
    alignas(64) float padded[kActBlock256] = {};
    std::memcpy(padded, x + full * block, static_cast<std::size_t>(k - full * block) * sizeof(float));
    quantize_act_block(padded, block, q + full * block, d + full, sum + full,
                       bsum != nullptr ? bsum + full * groups : nullptr);
  }
}

DotRowsFn dot_rows_avx512(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
      return nullptr;
    case WeightFormat::kQ8_0:
      return dot_q8_0;
    case WeightFormat::kQ4_0:
      return dot_q4_0;
    case WeightFormat::kQ4_1:
      return dot_q4_1;
    case WeightFormat::kQ2_K:
      return dot_q2_k;
    case WeightFormat::kQ3_K:
      return dot_q3_k;
    case WeightFormat::kF16:
      return dot_f16;
    case WeightFormat::kBF16:
      return cpu_features().avx512bf16 ? dot_bf16_dp : dot_bf16_fma;
  }
  return nullptr;
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
