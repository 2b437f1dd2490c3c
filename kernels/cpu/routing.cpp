#include "kernels/cpu/routing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace am::kernels {

Status validate_route_top_k(ConstTensorView logits, int64_t k) {
  if (logits.cols() < 1) return invalid_argument("route_top_k: there must be at least one expert");
  if (k < 1 || k > logits.cols()) {
    return invalid_argument("route_top_k: k " + std::to_string(k) + " must be in [1, experts " +
                            std::to_string(logits.cols()) + "]");
  }
  return Status::Ok();
}

void route_top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights,
                 const ExecContext& ctx) {
  const int64_t experts = logits.cols();
  parallel_for(ctx, logits.rows(), 64, [&](int64_t begin, int64_t end) {
    std::vector<double> p(static_cast<std::size_t>(experts));
    std::vector<int32_t> order(static_cast<std::size_t>(experts));
    for (int64_t r = begin; r < end; ++r) {
      const float* l = logits.row(r);
      double mx = l[0];
      for (int64_t e = 1; e < experts; ++e) mx = std::max(mx, static_cast<double>(l[e]));
      double sum = 0.0;
      for (int64_t e = 0; e < experts; ++e) sum += (p[static_cast<std::size_t>(e)] = std::exp(l[e] - mx));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        const double pa = p[static_cast<std::size_t>(a)], pb = p[static_cast<std::size_t>(b)];
        return pa != pb ? pa > pb : a < b;
      });
      double chosen = 0.0;
      for (int64_t j = 0; j < k; ++j) chosen += p[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
      const double denom = renormalize ? chosen : sum;
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = order[static_cast<std::size_t>(j)];
        ids[r * k + j] = e;
        weights[r * k + j] = static_cast<float>(p[static_cast<std::size_t>(e)] / denom);
      }
    }
  });
}

Status validate_row_ids(const char* op, int64_t table_rows, const int32_t* ids, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= table_rows) {
      return invalid_argument(std::string(op) + ": id " + std::to_string(ids[i]) + " at " + std::to_string(i) +
                              " is outside [0, " + std::to_string(table_rows) + ")");
    }
  }
  return Status::Ok();
}

void index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y, const ExecContext& ctx) {
  const std::size_t row_bytes = static_cast<std::size_t>(x.cols()) * sizeof(float);
  parallel_for(ctx, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) std::memcpy(y.row(i), x.row(ids[i]), row_bytes);
  });
}

void scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n, TensorView y) {
  const int64_t cols = x.cols();
  for (int64_t i = 0; i < n; ++i) {
    const float s = scales[i];
    const float* src = x.row(i);
    float* dst = y.row(ids[i]);
    for (int64_t c = 0; c < cols; ++c) dst[c] += s * src[c];
  }
}

}  // namespace am::kernels
