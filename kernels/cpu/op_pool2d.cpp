// CpuBackend::pool2d and global_avg_pool: output pixels (or samples) split over the pool, each
// window accumulated channel-vectorised.
#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/pool2d.h"

namespace am::kernels {

Status CpuBackend::pool2d(const Pool2dArgs& a) {
  AM_RETURN_IF_ERROR(validate_pool2d_args(a));
  const int64_t oh = conv_out_size(a.height, a.kernel, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel, a.stride, a.padding);
  const int64_t channels = a.x.cols();
  parallel_for(ctx_, a.batch * oh * ow, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t b = p / (oh * ow);
      const int64_t oy = (p / ow) % oh;
      const int64_t ox = p % ow;
      float* out = a.y.row(p);
      std::fill(out, out + channels,
                a.kind == PoolKind::kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
      int64_t count = 0;
      for (int64_t ky = 0; ky < a.kernel; ++ky) {
        const int64_t iy = oy * a.stride - a.padding + ky;
        if (iy < 0 || iy >= a.height) continue;
        for (int64_t kx = 0; kx < a.kernel; ++kx) {
          const int64_t ix = ox * a.stride - a.padding + kx;
          if (ix < 0 || ix >= a.width) continue;
          const float* src = a.x.row((b * a.height + iy) * a.width + ix);
          ++count;
          if (a.kind == PoolKind::kMax) {
            for (int64_t c = 0; c < channels; ++c) out[c] = src[c] > out[c] ? src[c] : out[c];
          } else {
            for (int64_t c = 0; c < channels; ++c) out[c] += src[c];
          }
        }
      }
      if (a.kind == PoolKind::kAvg) {
        const float inv = 1.0f / static_cast<float>(count);
        for (int64_t c = 0; c < channels; ++c) out[c] *= inv;
      }
    }
  });
  return Status::Ok();
}

Status CpuBackend::global_avg_pool(ConstTensorView x, int64_t batch, TensorView y) {
  AM_RETURN_IF_ERROR(validate_global_avg_pool_args(x, batch, y));
  const int64_t positions = x.rows() / batch;
  const int64_t channels = x.cols();
  parallel_for(ctx_, batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> sum(static_cast<std::size_t>(channels));
    for (int64_t b = begin; b < end; ++b) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t p = 0; p < positions; ++p) {
        const float* row = x.row(b * positions + p);
        for (int64_t c = 0; c < channels; ++c) sum[static_cast<std::size_t>(c)] += row[c];
      }
      for (int64_t c = 0; c < channels; ++c) {
        y.row(b)[c] = static_cast<float>(sum[static_cast<std::size_t>(c)] / static_cast<double>(positions));
      }
    }
  });
  return Status::Ok();
}

}  // namespace am::kernels
