// Spatial pooling over channels-last activations.
//
// Contract:
//   - pool2d: x is [batch * height * width, channels], y is [batch * out_h * out_w, channels]
//     with out_h = (height + 2*padding - kernel) / stride + 1 (likewise out_w). Max pooling
//     ignores padded positions (as if -inf); average pooling divides by the number of in-bounds
//     positions of each window (PyTorch's count_include_pad=False).
//   - global_avg_pool: x is [batch * positions, channels], y is [batch, channels], the mean of
//     each sample's rows.
//   - validate_*() are InvalidArgument naming the problem; *_reference() are the scalar
//     definitions the backends are tested against.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/tensor.h"

namespace am::kernels {

enum class PoolKind { kMax, kAvg };

struct Pool2dArgs {
  ConstTensorView x;
  TensorView y;
  PoolKind kind = PoolKind::kMax;
  int64_t batch = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
};

Status validate_pool2d_args(const Pool2dArgs& a);
void pool2d_reference(const Pool2dArgs& a);

Status validate_global_avg_pool_args(ConstTensorView x, int64_t batch, TensorView y);
void global_avg_pool_reference(ConstTensorView x, int64_t batch, TensorView y);

}  // namespace am::kernels
