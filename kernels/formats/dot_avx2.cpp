// AVX2 + FMA + F16C row-dot kernels (CPUs without AVX-512 VNNI). Integer products go through
// vpmaddubsw, which multiplies unsigned by signed bytes into saturating int16 pairs: every
// operand pair used here stays below saturation (|x| <= 127 with |w| <= 127 for q8_0 through the
// sign trick, nibbles <= 15, k-quant quants <= 7).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels/formats/bf16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/dot_kernels.h"

#define AM_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace am::kernels::detail {
namespace {

AM_TARGET_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

AM_TARGET_AVX2 inline float h2f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

AM_TARGET_AVX2 inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Sum of u8 * s8 over each group of four bytes, as 8 int32 lanes.
AM_TARGET_AVX2 inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// f16/bf16 rows stream once per row of X: prefetch each line this far ahead (the distance of
// bench_util's prefetching read loop; rows are contiguous, so it runs on into the next row).
constexpr std::size_t kStreamPrefetchBytes = 2048;

AM_TARGET_AVX2 inline void prefetch_stream(const uint16_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + kStreamPrefetchBytes, _MM_HINT_T0);
}

// The 32 nibbles of a q4 block in element order: low nibbles (elements 0-15), then high.
AM_TARGET_AVX2 inline __m256i q4_nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// ---------------------------------------------------------------------------------------------
// Activation quantization, 8 floats at a time; identical arithmetic to the reference.

AM_TARGET_AVX2 inline __m256 round_half_away(__m256 s) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(s, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(s, sign_bit), _mm256_set1_ps(1.0f));
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(up, step));
}

AM_TARGET_AVX2 void quantize_act_block(const float* x, int64_t block, int8_t* q, float* d,
                                       int32_t* sum, int16_t* bsum) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  __m256 vmax = _mm256_setzero_ps();
  __m256 bad = _mm256_setzero_ps();
  for (int64_t i = 0; i < block; i += 8) {
    const __m256 a = _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(x + i));
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));
    vmax = _mm256_max_ps(vmax, a);
  }
  if (_mm256_movemask_ps(bad) != 0) {
    *d = NAN;
    *sum = 0;
    std::memset(q, 0, static_cast<std::size_t>(block));
    if (bsum != nullptr) std::memset(bsum, 0, static_cast<std::size_t>(block / 16) * sizeof(int16_t));
    return;
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float amax = _mm_cvtss_f32(m4);
  const float scale = amax / kActMaxQ;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  *d = scale;
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256 qmax = _mm256_set1_ps(kActMaxQ);
  const __m256 qmin = _mm256_set1_ps(-kActMaxQ);
  int32_t total = 0;
  for (int64_t i = 0; i < block; i += 16) {
    int32_t group = 0;
    for (int64_t h = 0; h < 16; h += 8) {
      __m256 s = _mm256_mul_ps(_mm256_loadu_ps(x + i + h), vinv);
      s = _mm256_and_ps(s, _mm256_cmp_ps(s, s, _CMP_ORD_Q));  // NaN (0 * inf) -> 0
      const __m256 r = _mm256_min_ps(_mm256_max_ps(round_half_away(s), qmin), qmax);
      alignas(32) int32_t v[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(v), _mm256_cvtps_epi32(r));
      #pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) {
        q[i + h + l] = static_cast<int8_t>(v[l]);
        group += v[l];
      }
    }
    total += group;
    if (bsum != nullptr) bsum[i / 16] = static_cast<int16_t>(group);
  }
  *sum = total;
}

// ---------------------------------------------------------------------------------------------

AM_TARGET_AVX2 void dot_q8_0(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(w + r * rb);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < a.blocks; ++b) {
      const __m256i x = load32(a.q + b * 32);
      const __m256i wq = load32(blk[b].qs);
      const __m256i isum = dot_u8_s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(wq, x));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                            _mm256_set1_ps(_cvtsh_ss(blk[b].d) * a.d[b]), acc);
    }
    out[r] = hsum(acc);
  }
}

template <bool kMin>
AM_TARGET_AVX2 void dot_q4(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  constexpr std::size_t kBlockBytes = kMin ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
  constexpr std::size_t kQsOffset = kMin ? offsetof(BlockQ4_1, qs) : offsetof(BlockQ4_0, qs);
  for (int64_t r = 0; r < nrows; ++r) {
    const uint8_t* row = w + r * rb;
    __m256 acc = _mm256_setzero_ps();
    float extra = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const uint8_t* p = row + b * kBlockBytes;
      const __m256i isum = dot_u8_s8(q4_nibbles(p + kQsOffset), load32(a.q + b * 32));
      const float dxw = h2f(p) * a.d[b];
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dxw), acc);
      if constexpr (kMin) {
        extra += h2f(p + 2) * (a.d[b] * static_cast<float>(a.sum[b]));
      } else {
        extra -= 8.0f * static_cast<float>(a.sum[b]) * dxw;
      }
    }
    out[r] = hsum(acc) + extra;
  }
}

// The 16 sub-block scales as int16, in the order the element loop below visits sub-blocks.
AM_TARGET_AVX2 inline __m256i scale_pair(int16_t lo, int16_t hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(lo)), _mm_set1_epi16(hi), 1);
}

AM_TARGET_AVX2 void dot_q2_k(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const BlockQ2_K* blk = reinterpret_cast<const BlockQ2_K*>(w + r * rb);
    float total = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const BlockQ2_K& k = blk[b];
      const int8_t* x = a.q + b * kSuperBlockSize;
      __m256i isum = _mm256_setzero_si256();
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i qs = load32(k.qs + 32 * h);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          // Elements 128h + 32j + 0..31: sub-blocks 8h + 2j and 8h + 2j + 1.
          const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), _mm256_set1_epi8(3));
          const __m256i pairs = _mm256_maddubs_epi16(q, load32(x + 128 * h + 32 * j));
          const int s = 8 * h + 2 * j;
          const __m256i sc = scale_pair(k.scales[s] & 0xF, k.scales[s + 1] & 0xF);
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, sc));
        }
      }
      int32_t msum = 0;
      for (int s = 0; s < kSubBlocks; ++s) msum += (k.scales[s] >> 4) * a.bsum[b * kSubBlocks + s];
      const float dx = a.d[b];
      alignas(32) int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), isum);
      int32_t is = 0;
      #pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) is += lanes[l];
      total += static_cast<float>(is) * (_cvtsh_ss(k.d) * dx) -
               static_cast<float>(msum) * (_cvtsh_ss(k.dmin) * dx);
    }
    out[r] = total;
  }
}

AM_TARGET_AVX2 void dot_q3_k(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const BlockQ3_K* blk = reinterpret_cast<const BlockQ3_K*>(w + r * rb);
    float total = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const BlockQ3_K& k = blk[b];
      const int8_t* x = a.q + b * kSuperBlockSize;
      int16_t sc[kSubBlocks];
      int32_t corr = 0;  // sum_s sc_s * 4 * bsum_s: the -4 of every quant
      for (int s = 0; s < kSubBlocks; ++s) {
        sc[s] = static_cast<int16_t>(q3_k_scale(k, s) - 32);
        corr += sc[s] * 4 * a.bsum[b * kSubBlocks + s];
      }
      const __m256i hm = load32(k.hmask);
      __m256i isum = _mm256_setzero_si256();
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i qs = load32(k.qs + 32 * h);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), _mm256_set1_epi8(3));
          const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + j)));
          const __m256i high = _mm256_and_si256(
              _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), _mm256_set1_epi8(4));
          const __m256i quant = _mm256_or_si256(low, high);  // L in 0..7
          const __m256i pairs = _mm256_maddubs_epi16(quant, load32(x + 128 * h + 32 * j));
          const int s = 8 * h + 2 * j;
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, scale_pair(sc[s], sc[s + 1])));
        }
      }
      alignas(32) int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), isum);
      int32_t is = -corr;
      #pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) is += lanes[l];
      total += static_cast<float>(is) * (_cvtsh_ss(k.d) * a.d[b]);
    }
    out[r] = total;
  }
}

AM_TARGET_AVX2 void dot_f16(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  const int64_t k = a.k;
  for (int64_t r = 0; r < nrows; ++r) {
    const uint16_t* row = reinterpret_cast<const uint16_t*>(w + r * rb);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      if ((i & 31) == 0) prefetch_stream(row + i);
      const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i)));
      const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i + 8)));
      acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a.f32 + i), acc0);
      acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a.f32 + i + 8), acc1);
    }
    float tail = 0.0f;
    for (; i < k; ++i) tail += _cvtsh_ss(row[i]) * a.f32[i];
    out[r] = hsum(_mm256_add_ps(acc0, acc1)) + tail;
  }
}

AM_TARGET_AVX2 inline __m256 bf16x8(const uint16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AM_TARGET_AVX2 void dot_bf16(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  const int64_t k = a.k;
  for (int64_t r = 0; r < nrows; ++r) {
    const uint16_t* row = reinterpret_cast<const uint16_t*>(w + r * rb);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      if ((i & 31) == 0) prefetch_stream(row + i);
      acc0 = _mm256_fmadd_ps(bf16x8(row + i), bf16x8(a.bf16 + i), acc0);
      acc1 = _mm256_fmadd_ps(bf16x8(row + i + 8), bf16x8(a.bf16 + i + 8), acc1);
    }
    float tail = 0.0f;
    for (; i < k; ++i) tail += bf16_to_fp32(row[i]) * bf16_to_fp32(a.bf16[i]);
    out[r] = hsum(_mm256_add_ps(acc0, acc1)) + tail;
  }
}

}  // namespace

AM_TARGET_AVX2 void quantize_activation_row_avx2(const float* x, int64_t k, int64_t block, int8_t* q,
                                                 float* d, int32_t* sum, int16_t* bsum) {
  const int64_t full = k / block;
  const int64_t groups = block / kActSumGroup;
  for (int64_t b = 0; b < full; ++b) {
    quantize_act_block(x + b * block, block, q + b * block, d + b, sum + b,
                       bsum != nullptr ? bsum + b * groups : nullptr);
  }
  if (k > full * block) {
    alignas(32) float padded[kActBlock256] = {};
    std::memcpy(padded, x + full * block, static_cast<std::size_t>(k - full * block) * sizeof(float));
    quantize_act_block(padded, block, q + full * block, d + full, sum + full,
                       bsum != nullptr ? bsum + full * groups : nullptr);
  }
}

DotRowsFn dot_rows_avx2(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
      return nullptr;
    case WeightFormat::kQ8_0:
      return dot_q8_0;
    case WeightFormat::kQ4_0:
      return dot_q4<false>;
    case WeightFormat::kQ4_1:
      return dot_q4<true>;
    case WeightFormat::kQ2_K:
      return dot_q2_k;
    case WeightFormat::kQ3_K:
      return dot_q3_k;
    case WeightFormat::kF16:
      return dot_f16;
    case WeightFormat::kBF16:
      return dot_bf16;
  }
  return nullptr;
}

}  // namespace am::kernels::detail

#endif  // defined(__x86_64__)
