#include "kernels/formats/q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/formats/fp16.h"
#include "kernels/formats/q8_0_kernels.h"

namespace am::kernels {
namespace {

using detail::kFp16QuietNaN;
using detail::kQ8_0MaxQ;

void quantize_block_ref(const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t j = 0; j < kQ8_0BlockSize; ++j) {
    const float a = std::fabs(x[j]);
    finite = finite && std::isfinite(a);
    amax = std::max(amax, a);
  }
  if (!finite) {
    y->d = kFp16QuietNaN;
    std::memset(y->qs, 0, sizeof(y->qs));
    return;
  }
  // Same arithmetic as GGUF's reference: divide once, then multiply by the reciprocal. Using
  // x / d instead would differ in the last bit for some inputs and break byte compatibility.
  const float d = amax / kQ8_0MaxQ;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = fp32_to_fp16(d);
  for (int64_t j = 0; j < kQ8_0BlockSize; ++j) {
    const float v = x[j] * id;
    // NaN only from 0 * inf when d is so small that 1/d overflows; that value is 0.
    const float r = std::isnan(v) ? 0.0f : std::clamp(std::round(v), -kQ8_0MaxQ, kQ8_0MaxQ);
    y->qs[j] = static_cast<int8_t>(r);
  }
}

// Runs `block_fn` over whole blocks and over a zero-padded copy of a partial last block, so the
// SIMD block kernels never read past the row.
template <typename BlockFn>
void quantize_row_with(const float* x, BlockQ8_0* y, int64_t k, BlockFn block_fn) {
  const int64_t full = k / kQ8_0BlockSize;
  for (int64_t b = 0; b < full; ++b) block_fn(x + b * kQ8_0BlockSize, y + b);
  const int64_t rest = k - full * kQ8_0BlockSize;
  if (rest > 0) {
    alignas(64) float padded[kQ8_0BlockSize] = {};
    std::memcpy(padded, x + full * kQ8_0BlockSize, static_cast<std::size_t>(rest) * sizeof(float));
    block_fn(padded, y + full);
  }
}

}  // namespace

void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t k) {
  quantize_row_with(x, y, k, quantize_block_ref);
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k, KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      quantize_row_with(x, y, k, quantize_block_ref);
      return;
#if defined(__x86_64__)
    case KernelPath::kAvx2:
      quantize_row_with(x, y, k, detail::quantize_block_q8_0_avx2);
      return;
    case KernelPath::kAvx512:
      quantize_row_with(x, y, k, detail::quantize_block_q8_0_avx512);
      return;
#endif
    default:
      // Paths without their own q8_0 quantizer (neon) give the same bytes through the reference.
      quantize_row_with(x, y, k, quantize_block_ref);
      return;
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    const BlockQ8_0& b = x[i / kQ8_0BlockSize];
    y[i] = fp16_to_fp32(b.d) * static_cast<float>(b.qs[i % kQ8_0BlockSize]);
  }
}

}  // namespace am::kernels
