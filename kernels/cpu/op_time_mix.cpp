// CpuBackend::time_mix: (sample, channel) recurrences are independent; split over the pool in
// f32 (the running-maximum form keeps every exponent <= 0, so f32 does not overflow).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/time_mix.h"

namespace am::kernels {

Status CpuBackend::time_mix(const TimeMixArgs& a) {
  AM_RETURN_IF_ERROR(validate_time_mix_args(a));
  const int64_t ch = a.channels;
  parallel_for(ctx_, a.batch * ch, 16, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / ch;
      const int64_t c = task % ch;
      float* st = a.state != nullptr ? a.state + b * 3 * ch : nullptr;
      float aa = st ? st[c] : 0.0f, bb = st ? st[ch + c] : 0.0f;
      float pp = st ? st[2 * ch + c] : kTimeMixInitialMax;
      const float w = -std::exp(a.time_decay[c]);
      const float u = a.time_first[c];
      for (int64_t t = 0; t < a.len; ++t) {
        const int64_t row = b * a.len + t;
        const float k = a.k.row(row)[c], v = a.v.row(row)[c];
        float q = std::max(pp, u + k);
        float e1 = std::exp(pp - q), e2 = std::exp(u + k - q);
        a.out.row(row)[c] = (e1 * aa + e2 * v) / (e1 * bb + e2);
        q = std::max(pp + w, k);
        e1 = std::exp(pp + w - q);
        e2 = std::exp(k - q);
        aa = e1 * aa + e2 * v;
        bb = e1 * bb + e2;
        pp = q;
      }
      if (st) {
        st[c] = aa;
        st[ch + c] = bb;
        st[2 * ch + c] = pp;
      }
    }
  });
  return Status::Ok();
}

}  // namespace am::kernels
