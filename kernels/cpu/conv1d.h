// 1-D convolution over channels-last activations (the row-major layout of every other op).
//
// Contract:
//   - x is [batch * in_len, in_channels]: row b*in_len + t holds sample b's time step t.
//     y is [batch * out_len, out_channels] with
//       out_len = (in_len + pad_left + pad_right - dilation*(kernel-1) - 1) / stride + 1  (>= 1).
//   - weight is [out_channels, in_channels/groups, kernel] (PyTorch's Conv1d layout), bias is
//     [out_channels] or null; both are weights (immutable, cacheable by address).
//   - y[b, t, o] = bias[o] + sum_{c in group(o), k} w[o, c - g0, k] * x[b, t*stride + k*dilation - pad_left, c]
//     with zero padding outside [0, in_len). groups divides both channel counts; a depthwise
//     causal conv (Mamba) is groups = channels, pad_left = kernel - 1, pad_right = 0.
//   - validate_conv1d() is InvalidArgument naming the problem. conv1d_rows() splits output rows
//     over ctx.pool and writes every element of y; y must not alias x.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

struct Conv1dArgs {
  ConstTensorView x;
  TensorView y;
  const float* weight = nullptr;
  const float* bias = nullptr;
  int64_t batch = 1;
  int64_t in_len = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_left = 0;
  int64_t pad_right = 0;
  int64_t groups = 1;
};

// Output length for the args' geometry; <= 0 when the input is too short.
int64_t conv1d_out_len(const Conv1dArgs& a);
Status validate_conv1d(const Conv1dArgs& a);
void conv1d_rows(const Conv1dArgs& a, const ExecContext& ctx);

}  // namespace am::kernels
