#include "kernels/cpu/selective_scan.h"

#include <cmath>
#include <string>
#include <vector>

namespace am::kernels {
namespace {
constexpr float kSoftplusThreshold = 20.0f;
}

float softplus(float x) { return x > kSoftplusThreshold ? x : std::log1p(std::exp(x)); }

Status validate_selective_scan_args(const SelectiveScanArgs& a) {
  if (a.batch < 1 || a.len < 1 || a.channels < 1 || a.state_size < 1) {
    return invalid_argument("selective_scan: batch, len, channels and state_size must be positive");
  }
  if (a.A == nullptr) return invalid_argument("selective_scan: A is null");
  const int64_t rows = a.batch * a.len;
  auto check = [&](ConstTensorView t, int64_t cols, const char* name) -> Status {
    if (t.rows() != rows || t.cols() != cols) {
      return invalid_argument(std::string("selective_scan: ") + name + " must be [" + std::to_string(rows) +
                              ", " + std::to_string(cols) + "], got " + t.shape.to_string());
    }
    return Status::Ok();
  };
  AM_RETURN_IF_ERROR(check(a.u, a.channels, "u"));
  AM_RETURN_IF_ERROR(check(a.delta, a.channels, "delta"));
  AM_RETURN_IF_ERROR(check(a.B, a.state_size, "B"));
  AM_RETURN_IF_ERROR(check(a.C, a.state_size, "C"));
  AM_RETURN_IF_ERROR(check(a.y, a.channels, "y"));
  return Status::Ok();
}

void selective_scan_reference(const SelectiveScanArgs& a) {
  const int64_t n_state = a.state_size;
  std::vector<double> h(static_cast<std::size_t>(n_state));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t d = 0; d < a.channels; ++d) {
      float* saved = a.state != nullptr ? a.state + (b * a.channels + d) * n_state : nullptr;
      for (int64_t n = 0; n < n_state; ++n) h[static_cast<std::size_t>(n)] = saved ? saved[n] : 0.0;
      for (int64_t t = 0; t < a.len; ++t) {
        const int64_t row = b * a.len + t;
        float dt = a.delta.row(row)[d] + (a.delta_bias ? a.delta_bias[d] : 0.0f);
        if (a.delta_softplus) dt = softplus(dt);
        const double u = a.u.row(row)[d];
        double acc = 0.0;
        for (int64_t n = 0; n < n_state; ++n) {
          double& hn = h[static_cast<std::size_t>(n)];
          hn = std::exp(static_cast<double>(dt) * a.A[d * n_state + n]) * hn + dt * a.B.row(row)[n] * u;
          acc += hn * a.C.row(row)[n];
        }
        a.y.row(row)[d] = static_cast<float>(acc + (a.D ? a.D[d] * u : 0.0));
      }
      if (saved) {
        for (int64_t n = 0; n < n_state; ++n) saved[n] = static_cast<float>(h[static_cast<std::size_t>(n)]);
      }
    }
  }
}

}  // namespace am::kernels
