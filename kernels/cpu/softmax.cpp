#include "kernels/cpu/softmax.h"

#include <cmath>
#include <limits>

namespace am::kernels {

void softmax_row(float* x, int64_t n) {
  if (n == 0) return;
  float max = -std::numeric_limits<float>::infinity();
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    has_nan = has_nan || std::isnan(x[i]);
    max = x[i] > max ? x[i] : max;
  }
  if (has_nan) {
    for (int64_t i = 0; i < n; ++i) x[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);  // exp(-inf) = 0 for masked entries
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);  // sum >= 1: the max entry contributes exp(0)
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax_rows(TensorView x, const ExecContext& ctx) {
  const int64_t cols = x.cols();
  parallel_for(ctx, x.rows(), 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) softmax_row(x.row(r), cols);
  });
}

}  // namespace am::kernels
