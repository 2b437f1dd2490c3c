// Reference quantizers and decoders of q4_0 and q4_1, byte-compatible with GGUF.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/row_blocks.h"

namespace am::kernels {
namespace {

constexpr int kNibbleMax = 15;
constexpr float kQ4_0Levels = -8.0f;  // the signed extreme maps to quant 0, i.e. -8 * d
constexpr float kQ4_0Offset = 8.5f;   // +8 re-centres, +0.5 rounds the truncating cast
constexpr float kQ4_1Steps = 15.0f;
constexpr float kQ4_1Round = 0.5f;
constexpr uint16_t kHalfQuietNaN = 0x7E00;

bool all_finite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return false;
  }
  return true;
}

// GGUF truncates `v + offset` to an integer and clamps at 15; v is NaN only for 0 * inf when d
// is so small that 1/d overflows, and that element's value is 0.
int nibble(float v, float offset, int if_nan) {
  if (std::isnan(v)) return if_nan;
  return std::clamp(static_cast<int>(v + offset), 0, kNibbleMax);
}

void quantize_block_q4_0(const float* x, BlockQ4_0* y) {
  if (!all_finite(x, kQ4BlockSize)) {
    y->d = kHalfQuietNaN;
    std::memset(y->qs, 0, sizeof(y->qs));
    return;
  }
  // The signed value of largest magnitude (the first one on ties) maps to -8 exactly, so the
  // full 16-level range is used on the side that needs it.
  float amax = 0.0f, max = 0.0f;
  for (int64_t j = 0; j < kQ4BlockSize; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / kQ4_0Levels;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = fp32_to_fp16(d);
  for (int64_t j = 0; j < kQ4BlockSize / 2; ++j) {
    const int lo = nibble(x[j] * id, kQ4_0Offset, 8);
    const int hi = nibble(x[j + kQ4BlockSize / 2] * id, kQ4_0Offset, 8);
    y->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void quantize_block_q4_1(const float* x, BlockQ4_1* y) {
  if (!all_finite(x, kQ4BlockSize)) {
    y->d = kHalfQuietNaN;
    y->m = kHalfQuietNaN;
    std::memset(y->qs, 0, sizeof(y->qs));
    return;
  }
  float min = FLT_MAX, max = -FLT_MAX;
  for (int64_t j = 0; j < kQ4BlockSize; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / kQ4_1Steps;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = fp32_to_fp16(d);
  y->m = fp32_to_fp16(min);
  for (int64_t j = 0; j < kQ4BlockSize / 2; ++j) {
    const int lo = nibble((x[j] - min) * id, kQ4_1Round, 0);
    const int hi = nibble((x[j + kQ4BlockSize / 2] - min) * id, kQ4_1Round, 0);
    y->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

}  // namespace

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k) {
  for_each_padded_block(x, y, k, kQ4BlockSize, quantize_block_q4_0);
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t k) {
  for_each_padded_block(x, y, k, kQ4BlockSize, quantize_block_q4_1);
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    const BlockQ4_0& b = x[i / kQ4BlockSize];
    const int j = static_cast<int>(i % kQ4BlockSize);
    const int q = (b.qs[j % 16] >> (4 * (j / 16))) & 0xF;
    y[i] = fp16_to_fp32(b.d) * static_cast<float>(q - 8);
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    const BlockQ4_1& b = x[i / kQ4BlockSize];
    const int j = static_cast<int>(i % kQ4BlockSize);
    const int q = (b.qs[j % 16] >> (4 * (j / 16))) & 0xF;
    y[i] = fp16_to_fp32(b.d) * static_cast<float>(q) + fp16_to_fp32(b.m);
  }
}

}  // namespace am::kernels
