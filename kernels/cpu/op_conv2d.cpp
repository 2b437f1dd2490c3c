// CpuBackend::conv2d: grouped-1 convolutions as im2col + one sgemm per chunk of output pixels
// (the weight's [out, in, kh, kw] rows already match the (ci, ky, kx) order of an im2col row);
// 1x1 stride-1 convolutions skip im2col; grouped (depthwise) convolutions run directly.
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/matmul.h"

namespace am::kernels {
namespace {

// Output pixels per im2col chunk: bounds the scratch to chunk * in*kh*kw floats.
constexpr int64_t kIm2colChunkPixels = 1024;

void conv2d_im2col(const Conv2dArgs& a, const ExecContext& ctx) {
  const int64_t oh = conv_out_size(a.height, a.kernel_h, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel_w, a.stride, a.padding);
  const int64_t patch = a.in_channels * a.kernel_h * a.kernel_w;
  const ConstTensorView w{a.weight, Shape{a.out_channels, patch}};
  const int64_t pixels = a.batch * oh * ow;
  Tensor cols(Shape{std::min(pixels, kIm2colChunkPixels), patch});
  for (int64_t start = 0; start < pixels; start += kIm2colChunkPixels) {
    const int64_t count = std::min(kIm2colChunkPixels, pixels - start);
    parallel_for(ctx, count, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t p = start + i;
        const int64_t b = p / (oh * ow);
        const int64_t oy = (p / ow) % oh;
        const int64_t ox = p % ow;
        float* dst = cols.row(i);
        for (int64_t ky = 0; ky < a.kernel_h; ++ky) {
          const int64_t iy = oy * a.stride - a.padding + ky;
          for (int64_t kx = 0; kx < a.kernel_w; ++kx) {
            const int64_t ix = ox * a.stride - a.padding + kx;
            const bool inside = iy >= 0 && iy < a.height && ix >= 0 && ix < a.width;
            const float* src = inside ? a.x.row((b * a.height + iy) * a.width + ix) : nullptr;
            for (int64_t ci = 0; ci < a.in_channels; ++ci) {
              dst[(ci * a.kernel_h + ky) * a.kernel_w + kx] = inside ? src[ci] : 0.0f;
            }
          }
        }
      }
    });
    TensorView chunk{cols.data(), Shape{count, patch}};
    matmul_f32(chunk, w, a.bias, a.y.row_range(start, count), ctx);
  }
}

void conv2d_grouped(const Conv2dArgs& a, const ExecContext& ctx) {
  const int64_t oh = conv_out_size(a.height, a.kernel_h, a.stride, a.padding);
  const int64_t ow = conv_out_size(a.width, a.kernel_w, a.stride, a.padding);
  const int64_t cin_g = a.in_channels / a.groups;
  const int64_t cout_g = a.out_channels / a.groups;
  parallel_for(ctx, a.batch * oh * ow, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t b = p / (oh * ow);
      const int64_t oy = (p / ow) % oh;
      const int64_t ox = p % ow;
      float* out = a.y.row(p);
      for (int64_t o = 0; o < a.out_channels; ++o) {
        const int64_t g = o / cout_g;
        float acc = a.bias != nullptr ? a.bias[o] : 0.0f;
        for (int64_t ky = 0; ky < a.kernel_h; ++ky) {
          const int64_t iy = oy * a.stride - a.padding + ky;
          if (iy < 0 || iy >= a.height) continue;
          for (int64_t kx = 0; kx < a.kernel_w; ++kx) {
            const int64_t ix = ox * a.stride - a.padding + kx;
            if (ix < 0 || ix >= a.width) continue;
            const float* src = a.x.row((b * a.height + iy) * a.width + ix) + g * cin_g;
            const float* wp = a.weight + (o * cin_g * a.kernel_h + ky) * a.kernel_w + kx;
            for (int64_t ci = 0; ci < cin_g; ++ci) acc += wp[ci * a.kernel_h * a.kernel_w] * src[ci];
          }
        }
        out[o] = acc;
      }
    }
  });
}

}  // namespace

Status CpuBackend::conv2d(const Conv2dArgs& a) {
  AM_RETURN_IF_ERROR(validate_conv2d_args(a));
  if (a.groups != 1) {
    conv2d_grouped(a, ctx_);
  } else if (a.kernel_h == 1 && a.kernel_w == 1 && a.stride == 1 && a.padding == 0) {
    matmul_f32(a.x, ConstTensorView{a.weight, Shape{a.out_channels, a.in_channels}}, a.bias, a.y, ctx_);
  } else {
    conv2d_im2col(a, ctx_);
  }
  return Status::Ok();
}

}  // namespace am::kernels
