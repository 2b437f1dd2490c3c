// CpuBackend::group_norm: one task per (sample, group); two passes (mean, then centred variance)
// so large-mean activations keep their precision.
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/group_norm.h"

namespace am::kernels {

Status CpuBackend::group_norm(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma,
                              const float* beta, float eps, TensorView y) {
  AM_RETURN_IF_ERROR(validate_group_norm_args(x, batch, groups, y));
  if (gamma == nullptr) return invalid_argument("group_norm: gamma is null");
  const int64_t positions = x.rows() / batch;
  const int64_t width = x.cols() / groups;
  parallel_for(ctx_, batch * groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / groups;
      const int64_t g = task % groups;
      double sum = 0.0;
      for (int64_t p = 0; p < positions; ++p) {
        const float* row = x.row(b * positions + p) + g * width;
        for (int64_t c = 0; c < width; ++c) sum += row[c];
      }
      const double n = static_cast<double>(positions * width);
      const double mean = sum / n;
      double sq = 0.0;
      for (int64_t p = 0; p < positions; ++p) {
        const float* row = x.row(b * positions + p) + g * width;
        for (int64_t c = 0; c < width; ++c) {
          const double d = row[c] - mean;
          sq += d * d;
        }
      }
      const float inv = static_cast<float>(1.0 / std::sqrt(sq / n + eps));
      const float m = static_cast<float>(mean);
      for (int64_t p = 0; p < positions; ++p) {
        const float* in = x.row(b * positions + p) + g * width;
        float* out = y.row(b * positions + p) + g * width;
        for (int64_t c = 0; c < width; ++c) {
          const int64_t ch = g * width + c;
          out[c] = (in[c] - m) * inv * gamma[ch] + (beta != nullptr ? beta[ch] : 0.0f);
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace am::kernels
