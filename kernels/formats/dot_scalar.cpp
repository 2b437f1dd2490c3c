// The scalar reference of every weight format's dot product: plain C++ that spells out the
// arithmetic docs/FORMATS.md defines. Every SIMD path is tested against these.
#include <cstring>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/dot_kernels.h"

namespace am::kernels::detail {
namespace {

constexpr int kQ4Offset = 8;
constexpr int kQ3ScaleBias = 32;
constexpr int kQ3QuantBias = 4;

template <typename Block>
const Block* row_blocks(const uint8_t* w, std::size_t row_bytes, int64_t r) {
  return reinterpret_cast<const Block*>(w + row_bytes * static_cast<std::size_t>(r));
}

int q4_nibble(const uint8_t* qs, int j) { return (qs[j % 16] >> (4 * (j / 16))) & 0xF; }

float dot_q8_0(const ActRow& a, const BlockQ8_0* w) {
  float sum = 0.0f;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const int8_t* x = a.q + b * kQ8_0BlockSize;
    int32_t isum = 0;
    for (int j = 0; j < kQ8_0BlockSize; ++j) isum += static_cast<int32_t>(x[j]) * w[b].qs[j];
    sum += static_cast<float>(isum) * (fp16_to_fp32(w[b].d) * a.d[b]);
  }
  return sum;
}

float dot_q4_0(const ActRow& a, const BlockQ4_0* w) {
  float sum = 0.0f;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const int8_t* x = a.q + b * kQ4BlockSize;
    int32_t isum = 0;
    for (int j = 0; j < kQ4BlockSize; ++j) isum += x[j] * (q4_nibble(w[b].qs, j) - kQ4Offset);
    sum += static_cast<float>(isum) * (fp16_to_fp32(w[b].d) * a.d[b]);
  }
  return sum;
}

float dot_q4_1(const ActRow& a, const BlockQ4_1* w) {
  float sum = 0.0f;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const int8_t* x = a.q + b * kQ4BlockSize;
    int32_t isum = 0;
    for (int j = 0; j < kQ4BlockSize; ++j) isum += x[j] * q4_nibble(w[b].qs, j);
    // sum_j (d q_j + m) dx x_j = d dx sum q x + m dx sum x
    sum += static_cast<float>(isum) * (fp16_to_fp32(w[b].d) * a.d[b]) +
           fp16_to_fp32(w[b].m) * (a.d[b] * static_cast<float>(a.sum[b]));
  }
  return sum;
}

float dot_q2_k(const ActRow& a, const BlockQ2_K* w) {
  float sum = 0.0f;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const BlockQ2_K& blk = w[b];
    const int8_t* x = a.q + b * kSuperBlockSize;
    const int16_t* bsum = a.bsum + b * kSubBlocks;
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < kSubBlocks; ++s) {
      int32_t sub = 0;
      for (int i = 0; i < kSubBlockSize; ++i) {
        const int e = s * kSubBlockSize + i;
        sub += x[e] * q2_k_quant(blk, e);
      }
      isum += (blk.scales[s] & 0xF) * sub;
      msum += (blk.scales[s] >> 4) * bsum[s];
    }
    sum += static_cast<float>(isum) * (fp16_to_fp32(blk.d) * a.d[b]) -
           static_cast<float>(msum) * (fp16_to_fp32(blk.dmin) * a.d[b]);
  }
  return sum;
}

float dot_q3_k(const ActRow& a, const BlockQ3_K* w) {
  float sum = 0.0f;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const BlockQ3_K& blk = w[b];
    const int8_t* x = a.q + b * kSuperBlockSize;
    int32_t isum = 0;
    for (int s = 0; s < kSubBlocks; ++s) {
      int32_t sub = 0;
      for (int i = 0; i < kSubBlockSize; ++i) {
        const int e = s * kSubBlockSize + i;
        sub += x[e] * (q3_k_quant(blk, e) - kQ3QuantBias);
      }
      isum += (q3_k_scale(blk, s) - kQ3ScaleBias) * sub;
    }
    sum += static_cast<float>(isum) * (fp16_to_fp32(blk.d) * a.d[b]);
  }
  return sum;
}

float dot_f16(const ActRow& a, const uint16_t* w) {
  float sum = 0.0f;
  for (int64_t i = 0; i < a.k; ++i) sum += fp16_to_fp32(w[i]) * a.f32[i];
  return sum;
}

float dot_bf16(const ActRow& a, const uint16_t* w) {
  float sum = 0.0f;
  for (int64_t i = 0; i < a.k; ++i) sum += bf16_to_fp32(w[i]) * bf16_to_fp32(a.bf16[i]);
  return sum;
}

template <typename Block, float (*Dot)(const ActRow&, const Block*)>
void rows_of(const ActRow& a, const uint8_t* w, std::size_t row_bytes, int64_t nrows, float* out) {
  for (int64_t r = 0; r < nrows; ++r) out[r] = Dot(a, row_blocks<Block>(w, row_bytes, r));
}

}  // namespace

DotRowsFn dot_rows_scalar(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
      return nullptr;
    case WeightFormat::kQ8_0:
      return rows_of<BlockQ8_0, dot_q8_0>;
    case WeightFormat::kQ4_0:
      return rows_of<BlockQ4_0, dot_q4_0>;
    case WeightFormat::kQ4_1:
      return rows_of<BlockQ4_1, dot_q4_1>;
    case WeightFormat::kQ2_K:
      return rows_of<BlockQ2_K, dot_q2_k>;
    case WeightFormat::kQ3_K:
      return rows_of<BlockQ3_K, dot_q3_k>;
    case WeightFormat::kF16:
      return rows_of<uint16_t, dot_f16>;
    case WeightFormat::kBF16:
      return rows_of<uint16_t, dot_bf16>;
  }
  return nullptr;
}

DotRowsFn dot_rows_kernel(WeightFormat format, KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      return dot_rows_scalar(format);
#if defined(__x86_64__)
    case KernelPath::kAvx2:
      return dot_rows_avx2(format);
    case KernelPath::kAvx512:
      return dot_rows_avx512(format);
#endif
#if defined(__aarch64__)
    case KernelPath::kNeon:
      return dot_rows_neon(format);
#endif
    default:
      return nullptr;
  }
}

}  // namespace am::kernels::detail
