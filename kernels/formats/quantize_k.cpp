// Quantizers and decoders of the 2- and 3-bit super-block formats (GGUF Q2_K / Q3_K layouts).
//
// The layouts are GGUF's; the search that picks scales is this project's own: every sub-block of
// 16 is fitted by least squares over a small grid of candidate step sizes, the 16 sub-block
// scales are then quantized against one super-block scale, and finally every weight is
// re-quantized against the scale it will actually be decoded with.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/row_blocks.h"

namespace am::kernels {
namespace {

constexpr int kQ2QuantMax = 3;       // 2-bit quants 0..3
constexpr int kQ2ScaleMax = 15;      // 4-bit sub-block scales and mins
constexpr int kQ3QuantLow = -4;      // 3-bit quants, centred: -4..3
constexpr int kQ3QuantHigh = 3;
constexpr int kQ3ScaleLow = -32;     // 6-bit signed sub-block scales: -32..31
constexpr int kQ3ScaleHigh = 31;
constexpr int kQ3ScaleBias = 32;
// Candidate grids: the number of quant steps the sub-block's range is divided into, around the
// nominal 3 (q2) or 4 (q3); a slightly larger or smaller step often lowers the squared error.
constexpr float kGridLow = -0.5f;
constexpr float kGridStep = 0.1f;
constexpr int kGridPoints = 16;
constexpr uint16_t kHalfQuietNaN = 0x7E00;

using Sub = std::array<float, kSubBlockSize>;

int round_to_int(float v) { return static_cast<int>(std::lround(v)); }

bool finite_block(const float* x) {
  for (int64_t i = 0; i < kSuperBlockSize; ++i) {
    if (!std::isfinite(x[i])) return false;
  }
  return true;
}

struct AsymFit {
  float scale = 0.0f;  // >= 0
  float min = 0.0f;    // >= 0; w = scale * q - min
};

// x ~ scale * q - min with q in 0..3, min >= 0 (the GGUF Q2_K convention: the range always
// includes 0 from below).
AsymFit fit_q2_sub(const float* x) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < kSubBlockSize; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  AsymFit best{(hi - lo) / kQ2QuantMax, -lo};
  if (hi <= lo) return AsymFit{0.0f, -lo};
  auto error_of = [&](float a, float c, const int* q) {
    float e = 0.0f;
    for (int i = 0; i < kSubBlockSize; ++i) {
      const float r = a * static_cast<float>(q[i]) + c - x[i];
      e += r * r;
    }
    return e;
  };
  int q[kSubBlockSize];
  auto quantize_with = [&](float a, float c) {
    for (int i = 0; i < kSubBlockSize; ++i) {
      q[i] = a > 0.0f ? std::clamp(round_to_int((x[i] - c) / a), 0, kQ2QuantMax) : 0;
    }
  };
  quantize_with(best.scale, -best.min);
  float best_err = error_of(best.scale, -best.min, q);
  for (int g = 0; g < kGridPoints; ++g) {
    const float steps = kQ2QuantMax + kGridLow + kGridStep * static_cast<float>(g);
    quantize_with((hi - lo) / steps, lo);
    // Least-squares (a, c) for these quants, with c <= 0 and a >= 0 enforced.
    float sq = 0, sqq = 0, sx = 0, sqx = 0;
    for (int i = 0; i < kSubBlockSize; ++i) {
      const float qi = static_cast<float>(q[i]);
      sq += qi;
      sqq += qi * qi;
      sx += x[i];
      sqx += qi * x[i];
    }
    const float n = static_cast<float>(kSubBlockSize);
    const float det = n * sqq - sq * sq;
    if (det <= 0.0f) continue;
    float a = (n * sqx - sq * sx) / det;
    float c = (sqq * sx - sq * sqx) / det;
    if (c > 0.0f) {
      c = 0.0f;
      a = sqx / sqq;
    }
    if (a <= 0.0f) continue;
    const float err = error_of(a, c, q);
    if (err < best_err) {
      best_err = err;
      best = AsymFit{a, -c};
    }
  }
  return best;
}

// x ~ scale * v with v in -4..3; the scale may be negative so that the side of the range with
// four steps goes where the sub-block's largest magnitude is.
float fit_q3_sub(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < kSubBlockSize; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best_scale = max / kQ3QuantLow;
  float best_err = INFINITY;
  for (int sign : {1, -1}) {
    for (int g = 0; g < kGridPoints; ++g) {
      const float steps = (sign > 0 ? -kQ3QuantLow : kQ3QuantHigh) + kGridLow +
                          kGridStep * static_cast<float>(g);
      const float a0 = max / (steps * static_cast<float>(-sign));
      float svx = 0.0f, svv = 0.0f;
      int v[kSubBlockSize];
      for (int i = 0; i < kSubBlockSize; ++i) {
        v[i] = std::clamp(round_to_int(x[i] / a0), kQ3QuantLow, kQ3QuantHigh);
        svx += static_cast<float>(v[i]) * x[i];
        svv += static_cast<float>(v[i] * v[i]);
      }
      if (svv == 0.0f) continue;
      const float a = svx / svv;
      float err = 0.0f;
      for (int i = 0; i < kSubBlockSize; ++i) {
        const float r = a * static_cast<float>(v[i]) - x[i];
        err += r * r;
      }
      if (err < best_err) {
        best_err = err;
        best_scale = a;
      }
    }
  }
  return best_scale;
}

// Packs 2-bit values L[0..255] (0..3) in the GGUF k-quant order (see BlockQ2_K).
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  std::memset(qs, 0, kSuperBlockSize / 4);
  for (int e = 0; e < kSuperBlockSize; ++e) {
    qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((L[e] & 3) << (2 * ((e % 128) / 32)));
  }
}

void quantize_block_q2_k(const float* x, BlockQ2_K* y) {
  std::memset(y, 0, sizeof(*y));
  if (!finite_block(x)) {
    y->d = kHalfQuietNaN;
    y->dmin = kHalfQuietNaN;
    return;
  }
  std::array<AsymFit, kSubBlocks> fits;
  float max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < kSubBlocks; ++s) {
    fits[s] = fit_q2_sub(x + s * kSubBlockSize);
    max_scale = std::max(max_scale, fits[s].scale);
    max_min = std::max(max_min, fits[s].min);
  }
  y->d = fp32_to_fp16(max_scale / kQ2ScaleMax);
  y->dmin = fp32_to_fp16(max_min / kQ2ScaleMax);
  const float d = fp16_to_fp32(y->d);
  const float dmin = fp16_to_fp32(y->dmin);
  uint8_t L[kSuperBlockSize];
  for (int s = 0; s < kSubBlocks; ++s) {
    const int sc = d > 0.0f ? std::clamp(round_to_int(fits[s].scale / d), 0, kQ2ScaleMax) : 0;
    const int m = dmin > 0.0f ? std::clamp(round_to_int(fits[s].min / dmin), 0, kQ2ScaleMax) : 0;
    y->scales[s] = static_cast<uint8_t>(sc | (m << 4));
    // Re-quantize against the scale and min the decoder will use.
    const float step = d * static_cast<float>(sc);
    const float offset = dmin * static_cast<float>(m);
    for (int i = 0; i < kSubBlockSize; ++i) {
      const float v = x[s * kSubBlockSize + i];
      L[s * kSubBlockSize + i] = static_cast<uint8_t>(
          step > 0.0f ? std::clamp(round_to_int((v + offset) / step), 0, kQ2QuantMax) : 0);
    }
  }
  pack_2bit(L, y->qs);
}

void quantize_block_q3_k(const float* x, BlockQ3_K* y) {
  std::memset(y, 0, sizeof(*y));
  if (!finite_block(x)) {
    y->d = kHalfQuietNaN;
    return;
  }
  std::array<float, kSubBlocks> scales;
  float amax = 0.0f, max_scale = 0.0f;
  for (int s = 0; s < kSubBlocks; ++s) {
    scales[s] = fit_q3_sub(x + s * kSubBlockSize);
    if (std::fabs(scales[s]) > amax) {
      amax = std::fabs(scales[s]);
      max_scale = scales[s];
    }
  }
  // The largest-magnitude scale maps to -32, the end of the 6-bit range with 32 steps.
  y->d = fp32_to_fp16(max_scale / kQ3ScaleLow);
  const float d = fp16_to_fp32(y->d);
  uint8_t L[kSuperBlockSize];
  for (int s = 0; s < kSubBlocks; ++s) {
    const int sc = d != 0.0f ? std::clamp(round_to_int(scales[s] / d), kQ3ScaleLow, kQ3ScaleHigh)
                             : 0;
    const int stored = sc + kQ3ScaleBias;  // 0..63
    if (s < 8) {
      y->scales[s] |= static_cast<uint8_t>(stored & 0xF);
    } else {
      y->scales[s - 8] |= static_cast<uint8_t>((stored & 0xF) << 4);
    }
    y->scales[8 + s % 4] |= static_cast<uint8_t>((stored >> 4) << (2 * (s / 4)));
    const float step = d * static_cast<float>(sc);
    for (int i = 0; i < kSubBlockSize; ++i) {
      const float v = x[s * kSubBlockSize + i];
      const int q = step != 0.0f ? std::clamp(round_to_int(v / step), kQ3QuantLow, kQ3QuantHigh) : 0;
      L[s * kSubBlockSize + i] = static_cast<uint8_t>(q - kQ3QuantLow);  // 0..7
    }
  }
  for (int e = 0; e < kSuperBlockSize; ++e) {
    if (L[e] & 4) y->hmask[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
  }
  pack_2bit(L, y->qs);
}

}  // namespace

void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t k) {
  for_each_padded_block(x, y, k, kSuperBlockSize, quantize_block_q2_k);
}

void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t k) {
  for_each_padded_block(x, y, k, kSuperBlockSize, quantize_block_q3_k);
}

void dequantize_row_q2_k(const BlockQ2_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    const BlockQ2_K& b = x[i / kSuperBlockSize];
    const int e = static_cast<int>(i % kSuperBlockSize);
    const int s = e / kSubBlockSize;
    const float scale = fp16_to_fp32(b.d) * static_cast<float>(b.scales[s] & 0xF);
    const float min = fp16_to_fp32(b.dmin) * static_cast<float>(b.scales[s] >> 4);
    y[i] = scale * static_cast<float>(q2_k_quant(b, e)) - min;
  }
}

void dequantize_row_q3_k(const BlockQ3_K* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    const BlockQ3_K& b = x[i / kSuperBlockSize];
    const int e = static_cast<int>(i % kSuperBlockSize);
    const int s = e / kSubBlockSize;
    const float scale = fp16_to_fp32(b.d) * static_cast<float>(q3_k_scale(b, s) - kQ3ScaleBias);
    y[i] = scale * static_cast<float>(q3_k_quant(b, e) + kQ3QuantLow);
  }
}

}  // namespace am::kernels
