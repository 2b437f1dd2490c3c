// 2-D convolution over channels-last (NHWC) activations.
//
// Contract:
//   - x is [batch * height * width, in_channels] (row = one pixel of one sample, row-major over
//     (sample, y, x)); y is [batch * out_h * out_w, out_channels] with
//     out_h = (height + 2*padding - kernel_h) / stride + 1 (likewise out_w).
//   - weight is [out_channels, in_channels / groups, kernel_h, kernel_w] (PyTorch's layout), f32,
//     a weight in the Backend sense (immutable, stays alive); bias is out_channels floats or null.
//   - Zero padding. Output channel o of group g = o / (out_channels / groups) reads input channels
//     [g * in/groups, (g+1) * in/groups).
//   - validate_conv2d_args() is InvalidArgument naming the problem; every backend checks it first.
//   - conv2d_reference() is the plain scalar definition (double accumulation), used by tests to
//     check the backends' kernels.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/tensor.h"

namespace am::kernels {

struct Conv2dArgs {
  ConstTensorView x;
  TensorView y;
  const float* weight = nullptr;
  const float* bias = nullptr;
  int64_t batch = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t groups = 1;
};

// Output extent of one spatial dimension (0 or less when the kernel does not fit).
inline int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

Status validate_conv2d_args(const Conv2dArgs& a);
void conv2d_reference(const Conv2dArgs& a);

}  // namespace am::kernels
