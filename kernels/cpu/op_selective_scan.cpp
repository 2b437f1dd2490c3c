// CpuBackend::selective_scan: (sample, channel) pairs are independent recurrences, split over
// the pool; the state row of a pair stays in registers/L1 for the whole sequence.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/selective_scan.h"

namespace am::kernels {

Status CpuBackend::selective_scan(const SelectiveScanArgs& a) {
  AM_RETURN_IF_ERROR(validate_selective_scan_args(a));
  const int64_t n_state = a.state_size;
  parallel_for(ctx_, a.batch * a.channels, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> h(static_cast<std::size_t>(n_state));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / a.channels;
      const int64_t d = task % a.channels;
      float* saved = a.state != nullptr ? a.state + task * n_state : nullptr;
      for (int64_t n = 0; n < n_state; ++n) h[static_cast<std::size_t>(n)] = saved ? saved[n] : 0.0f;
      const float* arow = a.A + d * n_state;
      for (int64_t t = 0; t < a.len; ++t) {
        const int64_t row = b * a.len + t;
        float dt = a.delta.row(row)[d] + (a.delta_bias ? a.delta_bias[d] : 0.0f);
        if (a.delta_softplus) dt = softplus(dt);
        const float u = a.u.row(row)[d];
        const float* brow = a.B.row(row);
        const float* crow = a.C.row(row);
        const float dtu = dt * u;
        float acc = 0.0f;
        for (int64_t n = 0; n < n_state; ++n) {
          float& hn = h[static_cast<std::size_t>(n)];
          hn = std::exp(dt * arow[n]) * hn + dtu * brow[n];
          acc += hn * crow[n];
        }
        a.y.row(row)[d] = acc + (a.D ? a.D[d] * u : 0.0f);
      }
      if (saved) {
        for (int64_t n = 0; n < n_state; ++n) saved[n] = h[static_cast<std::size_t>(n)];
      }
    }
  });
  return Status::Ok();
}

}  // namespace am::kernels
