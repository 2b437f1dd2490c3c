#include "kernels/cpu/group_norm.h"

#include <cmath>
#include <string>

namespace am::kernels {

Status validate_group_norm_args(ConstTensorView x, int64_t batch, int64_t groups, TensorView y) {
  if (batch < 1 || groups < 1) return invalid_argument("group_norm: batch and groups must be positive");
  if (x.rows() % batch != 0 || x.rows() == 0) {
    return invalid_argument("group_norm: rows " + std::to_string(x.rows()) +
                            " are not a positive multiple of batch " + std::to_string(batch));
  }
  if (x.cols() % groups != 0) {
    return invalid_argument("group_norm: groups " + std::to_string(groups) + " do not divide channels " +
                            std::to_string(x.cols()));
  }
  if (y.rows() != x.rows() || y.cols() != x.cols()) return invalid_argument("group_norm: y must have x's shape");
  return Status::Ok();
}

void group_norm_reference(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma,
                          const float* beta, float eps, TensorView y) {
  const int64_t positions = x.rows() / batch;
  const int64_t width = x.cols() / groups;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      double sum = 0.0, sq = 0.0;
      for (int64_t p = 0; p < positions; ++p) {
        const float* row = x.row(b * positions + p) + g * width;
        for (int64_t c = 0; c < width; ++c) {
          sum += row[c];
          sq += static_cast<double>(row[c]) * row[c];
        }
      }
      const double n = static_cast<double>(positions * width);
      const double mean = sum / n;
      const double var = std::max(0.0, sq / n - mean * mean);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t p = 0; p < positions; ++p) {
        const float* in = x.row(b * positions + p) + g * width;
        float* out = y.row(b * positions + p) + g * width;
        for (int64_t c = 0; c < width; ++c) {
          const int64_t ch = g * width + c;
          out[c] = static_cast<float>((in[c] - mean) * inv * gamma[ch] + (beta ? beta[ch] : 0.0f));
        }
      }
    }
  }
}

}  // namespace am::kernels
