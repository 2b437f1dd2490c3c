#include "kernels/cpu/pool2d.h"

#include <algorithm>
#include <limits>
#include <string>

#include "kernels/cpu/conv2d.h"

namespace am::kernels {

Status validate_pool2d_args(const Pool2dArgs& a) {
  if (a.batch < 1 || a.height < 1 || a.width < 1 || a.kernel < 1 || a.stride < 1 || a.padding < 0 ||
      a.padding >= a.kernel) {
    return invalid_argument("pool2d: sizes must be positive and padding below the kernel size");
  }
  const int64_t oh = conv_out_size(a.height, a.kernel, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel, a.stride, a.padding);
  if (oh < 1 || ow < 1) return invalid_argument("pool2d: kernel larger than the padded input");
  if (a.x.rows() != a.batch * a.height * a.width) {
    return invalid_argument("pool2d: x must have batch*H*W = " + std::to_string(a.batch * a.height * a.width) +
                            " rows, got " + std::to_string(a.x.rows()));
  }
  if (a.y.rows() != a.batch * oh * ow || a.y.cols() != a.x.cols()) {
    return invalid_argument("pool2d: y must be [" + std::to_string(a.batch * oh * ow) + ", " +
                            std::to_string(a.x.cols()) + "], got " + a.y.shape.to_string());
  }
  return Status::Ok();
}

void pool2d_reference(const Pool2dArgs& a) {
  const int64_t oh = conv_out_size(a.height, a.kernel, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel, a.stride, a.padding);
  const int64_t channels = a.x.cols();
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        for (int64_t c = 0; c < channels; ++c) {
          double acc = a.kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          for (int64_t ky = 0; ky < a.kernel; ++ky) {
            for (int64_t kx = 0; kx < a.kernel; ++kx) {
              const int64_t iy = oy * a.stride - a.padding + ky;
              const int64_t ix = ox * a.stride - a.padding + kx;
              if (iy < 0 || iy >= a.height || ix < 0 || ix >= a.width) continue;
              const double v = a.x.row((b * a.height + iy) * a.width + ix)[c];
              acc = a.kind == PoolKind::kMax ? std::max(acc, v) : acc + v;
              ++count;
            }
          }
          if (a.kind == PoolKind::kAvg) acc /= static_cast<double>(count);
          a.y.row((b * oh + oy) * ow + ox)[c] = static_cast<float>(acc);
        }
      }
    }
  }
}

Status validate_global_avg_pool_args(ConstTensorView x, int64_t batch, TensorView y) {
  if (batch < 1 || x.rows() == 0 || x.rows() % batch != 0) {
    return invalid_argument("global_avg_pool: rows must be a positive multiple of batch");
  }
  if (y.rows() != batch || y.cols() != x.cols()) {
    return invalid_argument("global_avg_pool: y must be [batch, channels]");
  }
  return Status::Ok();
}

void global_avg_pool_reference(ConstTensorView x, int64_t batch, TensorView y) {
  const int64_t positions = x.rows() / batch;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < x.cols(); ++c) {
      double sum = 0.0;
      for (int64_t p = 0; p < positions; ++p) sum += x.row(b * positions + p)[c];
      y.row(b)[c] = static_cast<float>(sum / static_cast<double>(positions));
    }
  }
}

}  // namespace am::kernels
