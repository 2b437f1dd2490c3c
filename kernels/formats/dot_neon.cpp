// NEON (aarch64 Advanced SIMD) row-dot kernels. Kept deliberately plain: per block the int8
// products are widened with vmull_s8 and pairwise-accumulated into int32 (vpadalq_s16), which is
// exact and needs nothing beyond the aarch64 base architecture (no dot-product extension).
// The k-quant super-blocks are first decoded to int8 quants and per-sub-block scales with the
// same helpers the reference uses. Compiled only for aarch64.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/dot_kernels.h"

namespace am::kernels::detail {
namespace {

// Exact int32 sum of 16 int8 products.
inline int32_t dot16(int8x16_t a, int8x16_t b) {
  int32x4_t acc = vdupq_n_s32(0);
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  acc = vpadalq_s16(acc, vmull_s8(vget_high_s8(a), vget_high_s8(b)));
  return vaddvq_s32(acc);
}

// The 32 quants of a q4 block in element order, minus `offset`.
inline void q4_quants(const uint8_t* qs, int offset, int8x16_t* lo, int8x16_t* hi) {
  const uint8x16_t v = vld1q_u8(qs);
  const int8x16_t off = vdupq_n_s8(static_cast<int8_t>(offset));
  *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), off);
  *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), off);
}

void dot_q8_0(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(w + r * rb);
    float sum = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int8_t* x = a.q + b * 32;
      const int32_t isum = dot16(vld1q_s8(blk[b].qs), vld1q_s8(x)) +
                           dot16(vld1q_s8(blk[b].qs + 16), vld1q_s8(x + 16));
      sum += static_cast<float>(isum) * (fp16_to_fp32(blk[b].d) * a.d[b]);
    }
    out[r] = sum;
  }
}

template <bool kMin>
void dot_q4(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  constexpr std::size_t kBlockBytes = kMin ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
  constexpr std::size_t kQsOffset = kMin ? offsetof(BlockQ4_1, qs) : offsetof(BlockQ4_0, qs);
  for (int64_t r = 0; r < nrows; ++r) {
    const uint8_t* row = w + r * rb;
    float sum = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const uint8_t* p = row + b * kBlockBytes;
      int8x16_t lo, hi;
      q4_quants(p + kQsOffset, kMin ? 0 : 8, &lo, &hi);
      const int8_t* x = a.q + b * 32;
      const int32_t isum = dot16(lo, vld1q_s8(x)) + dot16(hi, vld1q_s8(x + 16));
      uint16_t d, m;
      std::memcpy(&d, p, 2);
      sum += static_cast<float>(isum) * (fp16_to_fp32(d) * a.d[b]);
      if constexpr (kMin) {
        std::memcpy(&m, p + 2, 2);
        sum += fp16_to_fp32(m) * (a.d[b] * static_cast<float>(a.sum[b]));
      }
    }
    out[r] = sum;
  }
}

void dot_q2_k(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  int8_t q[kSuperBlockSize];
  for (int64_t r = 0; r < nrows; ++r) {
    const BlockQ2_K* blk = reinterpret_cast<const BlockQ2_K*>(w + r * rb);
    float sum = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const BlockQ2_K& k = blk[b];
      for (int e = 0; e < kSuperBlockSize; ++e) q[e] = static_cast<int8_t>(q2_k_quant(k, e));
      const int8_t* x = a.q + b * kSuperBlockSize;
      int32_t isum = 0, msum = 0;
      for (int s = 0; s < kSubBlocks; ++s) {
        isum += (k.scales[s] & 0xF) * dot16(vld1q_s8(q + 16 * s), vld1q_s8(x + 16 * s));
        msum += (k.scales[s] >> 4) * a.bsum[b * kSubBlocks + s];
      }
      sum += static_cast<float>(isum) * (fp16_to_fp32(k.d) * a.d[b]) -
             static_cast<float>(msum) * (fp16_to_fp32(k.dmin) * a.d[b]);
    }
    out[r] = sum;
  }
}

void dot_q3_k(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  int8_t q[kSuperBlockSize];
  for (int64_t r = 0; r < nrows; ++r) {
    const BlockQ3_K* blk = reinterpret_cast<const BlockQ3_K*>(w + r * rb);
    float sum = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const BlockQ3_K& k = blk[b];
      for (int e = 0; e < kSuperBlockSize; ++e) q[e] = static_cast<int8_t>(q3_k_quant(k, e) - 4);
      const int8_t* x = a.q + b * kSuperBlockSize;
      int32_t isum = 0;
      for (int s = 0; s < kSubBlocks; ++s) {
        isum += (q3_k_scale(k, s) - 32) * dot16(vld1q_s8(q + 16 * s), vld1q_s8(x + 16 * s));
      }
      sum += static_cast<float>(isum) * (fp16_to_fp32(k.d) * a.d[b]);
    }
    out[r] = sum;
  }
}

void dot_f16(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const uint16_t* row = reinterpret_cast<const uint16_t*>(w + r * rb);
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= a.k; i += 4) {
      const float32x4_t wv = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(row + i)));
      acc = vfmaq_f32(acc, wv, vld1q_f32(a.f32 + i));
    }
    float sum = vaddvq_f32(acc);
    for (; i < a.k; ++i) sum += fp16_to_fp32(row[i]) * a.f32[i];
    out[r] = sum;
  }
}

inline float32x4_t bf16x4(const uint16_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

void dot_bf16(const ActRow& a, const uint8_t* w, std::size_t rb, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const uint16_t* row = reinterpret_cast<const uint16_t*>(w + r * rb);
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= a.k; i += 4) acc = vfmaq_f32(acc, bf16x4(row + i), bf16x4(a.bf16 + i));
    float sum = vaddvq_f32(acc);
    for (; i < a.k; ++i) sum += bf16_to_fp32(row[i]) * bf16_to_fp32(a.bf16[i]);
    out[r] = sum;
  }
}

}  // namespace

DotRowsFn dot_rows_neon(WeightFormat format) {
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

#endif  // defined(__aarch64__)
