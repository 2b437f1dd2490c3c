#include "kernels/cpu/conv2d.h"

#include <string>

namespace am::kernels {

Status validate_conv2d_args(const Conv2dArgs& a) {
  if (a.batch < 1 || a.height < 1 || a.width < 1 || a.in_channels < 1 || a.out_channels < 1 ||
      a.kernel_h < 1 || a.kernel_w < 1 || a.stride < 1 || a.padding < 0 || a.groups < 1) {
    return invalid_argument("conv2d: sizes must be positive (padding >= 0)");
  }
  if (a.weight == nullptr) return invalid_argument("conv2d: weight is null");
  if (a.in_channels % a.groups != 0 || a.out_channels % a.groups != 0) {
    return invalid_argument("conv2d: groups " + std::to_string(a.groups) +
                            " must divide in and out channels");
  }
  const int64_t oh = conv_out_size(a.height, a.kernel_h, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel_w, a.stride, a.padding);
  if (oh < 1 || ow < 1) return invalid_argument("conv2d: kernel larger than the padded input");
  if (a.x.rows() != a.batch * a.height * a.width || a.x.cols() != a.in_channels) {
    return invalid_argument("conv2d: x must be [batch*H*W, in_channels] = [" +
                            std::to_string(a.batch * a.height * a.width) + ", " +
                            std::to_string(a.in_channels) + "], got " + a.x.shape.to_string());
  }
  if (a.y.rows() != a.batch * oh * ow || a.y.cols() != a.out_channels) {
    return invalid_argument("conv2d: y must be [" + std::to_string(a.batch * oh * ow) + ", " +
                            std::to_string(a.out_channels) + "], got " + a.y.shape.to_string());
  }
  return Status::Ok();
}

void conv2d_reference(const Conv2dArgs& a) {
  const int64_t oh = conv_out_size(a.height, a.kernel_h, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel_w, a.stride, a.padding);
  const int64_t cin_g = a.in_channels / a.groups;
  const int64_t cout_g = a.out_channels / a.groups;
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        float* out = a.y.row((b * oh + oy) * ow + ox);
        for (int64_t o = 0; o < a.out_channels; ++o) {
          const int64_t g = o / cout_g;
          double acc = a.bias != nullptr ? a.bias[o] : 0.0;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            for (int64_t ky = 0; ky < a.kernel_h; ++ky) {
              const int64_t iy = oy * a.stride - a.padding + ky;
              if (iy < 0 || iy >= a.height) continue;
              for (int64_t kx = 0; kx < a.kernel_w; ++kx) {
                const int64_t ix = ox * a.stride - a.padding + kx;
                if (ix < 0 || ix >= a.width) continue;
                const float w = a.weight[((o * cin_g + ci) * a.kernel_h + ky) * a.kernel_w + kx];
                acc += static_cast<double>(w) *
                       a.x.row((b * a.height + iy) * a.width + ix)[g * cin_g + ci];
              }
            }
          }
          out[o] = static_cast<float>(acc);
        }
      }
    }
  }
}

}  // namespace am::kernels
