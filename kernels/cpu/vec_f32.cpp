#include "kernels/cpu/vec_f32.h"

#include "kernels/cpu/vec_f32_kernels.h"

namespace am::kernels {
namespace {

void dot_rows_scalar(const float* x, const float* rows, int64_t stride, int64_t nrows, int64_t n,
                     float* out) {
  for (int64_t r = 0; r < nrows; ++r) {
    const float* row = rows + r * stride;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * row[i];
    out[r] = sum;
  }
}

void weighted_sum_rows_scalar(const float* p, const float* rows, int64_t stride, int64_t nrows,
                              int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = 0.0f;
  for (int64_t r = 0; r < nrows; ++r) {
    const float* row = rows + r * stride;
    for (int64_t i = 0; i < n; ++i) out[i] += p[r] * row[i];
  }
}

}  // namespace

void dot_rows_f32(const float* x, const float* rows, int64_t stride, int64_t nrows, int64_t n,
                  float* out, KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      dot_rows_scalar(x, rows, stride, nrows, n, out);
      return;
    case KernelPath::kAvx2:
      detail::dot_rows_f32_avx2(x, rows, stride, nrows, n, out);
      return;
    case KernelPath::kAvx512:
      detail::dot_rows_f32_avx512(x, rows, stride, nrows, n, out);
      return;
  }
}

void weighted_sum_rows_f32(const float* p, const float* rows, int64_t stride, int64_t nrows,
                           int64_t n, float* out, KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      weighted_sum_rows_scalar(p, rows, stride, nrows, n, out);
      return;
    case KernelPath::kAvx2:
      detail::weighted_sum_rows_f32_avx2(p, rows, stride, nrows, n, out);
      return;
    case KernelPath::kAvx512:
      detail::weighted_sum_rows_f32_avx512(p, rows, stride, nrows, n, out);
      return;
  }
}

}  // namespace am::kernels
