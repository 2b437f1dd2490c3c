#include "kernels/cpu/time_mix.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace am::kernels {

Status validate_time_mix_args(const TimeMixArgs& a) {
  if (a.batch < 1 || a.len < 1 || a.channels < 1) {
    return invalid_argument("time_mix: batch, len and channels must be positive");
  }
  if (a.time_decay == nullptr || a.time_first == nullptr) {
    return invalid_argument("time_mix: time_decay and time_first are required");
  }
  const int64_t rows = a.batch * a.len;
  for (ConstTensorView t : {a.k, a.v, ConstTensorView(a.out)}) {
    if (t.rows() != rows || t.cols() != a.channels) {
      return invalid_argument("time_mix: k, v and out must be [" + std::to_string(rows) + ", " +
                              std::to_string(a.channels) + "], got " + t.shape.to_string());
    }
  }
  return Status::Ok();
}

void time_mix_reference(const TimeMixArgs& a) {
  const int64_t ch = a.channels;
  for (int64_t b = 0; b < a.batch; ++b) {
    float* st = a.state != nullptr ? a.state + b * 3 * ch : nullptr;
    for (int64_t c = 0; c < ch; ++c) {
      double aa = st ? st[c] : 0.0, bb = st ? st[ch + c] : 0.0;
      double pp = st ? st[2 * ch + c] : kTimeMixInitialMax;
      const double w = -std::exp(static_cast<double>(a.time_decay[c]));
      const double u = a.time_first[c];
      for (int64_t t = 0; t < a.len; ++t) {
        const int64_t row = b * a.len + t;
        const double k = a.k.row(row)[c], v = a.v.row(row)[c];
        double q = std::max(pp, u + k);
        double e1 = std::exp(pp - q), e2 = std::exp(u + k - q);
        a.out.row(row)[c] = static_cast<float>((e1 * aa + e2 * v) / (e1 * bb + e2));
        q = std::max(pp + w, k);
        e1 = std::exp(pp + w - q);
        e2 = std::exp(k - q);
        aa = e1 * aa + e2 * v;
        bb = e1 * bb + e2;
        pp = q;
      }
      if (st) {
        st[c] = static_cast<float>(aa);
        st[ch + c] = static_cast<float>(bb);
        st[2 * ch + c] = static_cast<float>(pp);
      }
    }
  }
}

}  // namespace am::kernels
