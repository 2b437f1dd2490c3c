#include "kernels/formats/quantized_activations.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/formats/bf16.h"
#include "common/check.h"
#include "kernels/formats/dot_kernels.h"

namespace am::kernels {
namespace {

constexpr int64_t kRowsPerTask = 4;

void quantize_block_ref(const float* x, int64_t block, int8_t* q, float* d, int32_t* sum,
                        int16_t* bsum) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t j = 0; j < block; ++j) {
    finite = finite && std::isfinite(x[j]);
    amax = std::max(amax, std::fabs(x[j]));
  }
  if (!finite) {
    *d = NAN;
    *sum = 0;
    std::memset(q, 0, static_cast<std::size_t>(block));
    if (bsum != nullptr) std::fill(bsum, bsum + block / kActSumGroup, int16_t{0});
    return;
  }
  // Divide once and multiply by the reciprocal, as GGUF's q8 quantizers do.
  const float scale = amax / kActMaxQ;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  *d = scale;
  int32_t total = 0;
  for (int64_t j = 0; j < block; ++j) {
    const float v = x[j] * inv;
    // NaN only from 0 * inf when amax is so small that 1/scale overflows: that value is 0.
    const float r = std::isnan(v) ? 0.0f : std::clamp(std::round(v), -kActMaxQ, kActMaxQ);
    q[j] = static_cast<int8_t>(r);
    total += q[j];
  }
  *sum = total;
  if (bsum != nullptr) {
    for (int64_t g = 0; g < block / kActSumGroup; ++g) {
      int32_t s = 0;
      for (int64_t j = 0; j < kActSumGroup; ++j) s += q[g * kActSumGroup + j];
      bsum[g] = static_cast<int16_t>(s);
    }
  }
}

}  // namespace

ActivationKind activation_kind(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
      return ActivationKind::kF32;
    case WeightFormat::kBF16:
      return ActivationKind::kBf16;
    case WeightFormat::kQ8_0:
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ4_1:
      return ActivationKind::kQ8Block32;
    case WeightFormat::kQ2_K:
    case WeightFormat::kQ3_K:
      return ActivationKind::kQ8Block256;
  }
  return ActivationKind::kF32;
}

void quantize_activation_row_ref(const float* x, int64_t k, int64_t block, int8_t* q, float* d,
                                 int32_t* sum, int16_t* bsum) {
  AM_CHECK(block == kActBlock32 || block == kActBlock256, "activation block is 32 or 256");
  const int64_t full = k / block;
  const int64_t groups = block / kActSumGroup;
  for (int64_t b = 0; b < full; ++b) {
    quantize_block_ref(x + b * block, block, q + b * block, d + b, sum + b,
                       bsum != nullptr ? bsum + b * groups : nullptr);
  }
  if (k > full * block) {
    std::vector<float> padded(static_cast<std::size_t>(block), 0.0f);
    std::copy(x + full * block, x + k, padded.begin());
    quantize_block_ref(padded.data(), block, q + full * block, d + full, sum + full,
                       bsum != nullptr ? bsum + full * groups : nullptr);
  }
}

void quantize_activation_row(const float* x, int64_t k, int64_t block, int8_t* q, float* d,
                             int32_t* sum, int16_t* bsum, KernelPath path) {
  switch (path) {
#if defined(__x86_64__)
    case KernelPath::kAvx2:
      detail::quantize_activation_row_avx2(x, k, block, q, d, sum, bsum);
      return;
    case KernelPath::kAvx512:
      detail::quantize_activation_row_avx512(x, k, block, q, d, sum, bsum);
      return;
#endif
    default:
      // The NEON build quantizes activations with the reference: it is a small share of a
      // matmul, and the reference is what the other paths must match byte for byte.
      quantize_activation_row_ref(x, k, block, q, d, sum, bsum);
      return;
  }
}

void PreparedActivations::prepare(ConstTensorView x, WeightFormat format, const ExecContext& ctx) {
  kind_ = activation_kind(format);
  rows_ = x.rows();
  k_ = x.cols();
  x_ = x.data;
  switch (kind_) {
    case ActivationKind::kF32:
      block_ = 1;
      blocks_ = k_;
      return;
    case ActivationKind::kBf16:
      block_ = 1;
      blocks_ = k_;
      bf16_.resize(static_cast<std::size_t>(rows_ * k_));
      parallel_for(ctx, rows_, kRowsPerTask, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) fp32_to_bf16_row(x.row(m), bf16_.data() + m * k_, k_);
      });
      return;
    case ActivationKind::kQ8Block32:
    case ActivationKind::kQ8Block256:
      break;
  }
  block_ = kind_ == ActivationKind::kQ8Block32 ? kActBlock32 : kActBlock256;
  blocks_ = (k_ + block_ - 1) / block_;
  const int64_t kp = blocks_ * block_;
  q_.resize(static_cast<std::size_t>(rows_ * kp));
  d_.resize(static_cast<std::size_t>(rows_ * blocks_));
  sum_.resize(static_cast<std::size_t>(rows_ * blocks_));
  const bool sums16 = kind_ == ActivationKind::kQ8Block256;
  bsum_.resize(sums16 ? static_cast<std::size_t>(rows_ * kp / kActSumGroup) : 0);
  parallel_for(ctx, rows_, kRowsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      quantize_activation_row(x.row(m), k_, block_, q_.data() + m * kp, d_.data() + m * blocks_,
                              sum_.data() + m * blocks_,
                              sums16 ? bsum_.data() + m * kp / kActSumGroup : nullptr, ctx.path);
    }
  });
}

ActRow PreparedActivations::row(int64_t m) const {
  ActRow r;
  r.k = k_;
  switch (kind_) {
    case ActivationKind::kF32:
      r.f32 = x_ + m * k_;
      return r;
    case ActivationKind::kBf16:
      r.bf16 = bf16_.data() + m * k_;
      return r;
    case ActivationKind::kQ8Block32:
    case ActivationKind::kQ8Block256:
      break;
  }
  const int64_t kp = blocks_ * block_;
  r.q = q_.data() + m * kp;
  r.d = d_.data() + m * blocks_;
  r.sum = sum_.data() + m * blocks_;
  r.bsum = kind_ == ActivationKind::kQ8Block256 ? bsum_.data() + m * kp / kActSumGroup : nullptr;
  r.blocks = blocks_;
  return r;
}

}  // namespace am::kernels
