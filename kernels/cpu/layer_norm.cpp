#include "kernels/cpu/layer_norm.h"

#include <cmath>

#include "common/check.h"

namespace am::kernels {

namespace {

// Partial sums per lane: the row's adds run as kLanes independent chains (one chain of double
// adds was 9% of bert-tiny's forward pass at b1 s32: 4 cycles an element), and the compiler may
// keep the lanes in vector registers. Summed in double, so the order changes nothing a float
// result can show.
constexpr int64_t kLanes = 8;

template <class F>
double lane_sum(int64_t n, F term) {
  double part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) part[l] += term(i + l);
  }
  for (; i < n; ++i) part[i % kLanes] += term(i);
  double sum = 0.0;
  for (double v : part) sum += v;
  return sum;
}

}  // namespace

void layer_norm_row(const float* x, const float* gamma, const float* beta, float eps, int64_t n,
                    float* y) {
  if (n == 0) return;
  const double mean = lane_sum(n, [&](int64_t i) { return static_cast<double>(x[i]); }) / static_cast<double>(n);
  // Two passes (mean first) instead of E[x^2] - E[x]^2, which cancels catastrophically when the
  // mean is large relative to the spread.
  const double sq = lane_sum(n, [&](int64_t i) {
    const double d = x[i] - mean;
    return d * d;
  });
  const float inv_std = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
  const float mean_f = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) {
    const float norm = (x[i] - mean_f) * inv_std;
    y[i] = norm * gamma[i] + (beta != nullptr ? beta[i] : 0.0f);
  }
}

void layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps, TensorView y,
                const ExecContext& ctx) {
  AM_CHECK(x.rows() == y.rows() && x.cols() == y.cols(), "layer_norm: x and y differ");
  const int64_t cols = x.cols();
  parallel_for(ctx, x.rows(), 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      layer_norm_row(x.row(r), gamma, beta, eps, cols, y.row(r));
  });
}

void rms_norm_row(const float* x, const float* gamma, float eps, int64_t n, float* y) {
  // Accumulate in double: the mean of squares of a long row loses digits in f32.
  const double sum_sq = lane_sum(n, [&](int64_t i) { return static_cast<double>(x[i]) * x[i]; });
  const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * gamma[i];
}

void rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y, const ExecContext& ctx) {
  AM_CHECK(x.rows() == y.rows() && x.cols() == y.cols(), "rms_norm: x and y differ");
  const int64_t cols = x.cols();
  parallel_for(ctx, x.rows(), 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) rms_norm_row(x.row(r), gamma, eps, cols, y.row(r));
  });
}

}  // namespace am::kernels
