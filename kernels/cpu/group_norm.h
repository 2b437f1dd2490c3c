// Group normalisation over channels-last activations (GroupNorm of diffusion UNets).
//
// Contract: x and y are [batch * positions, channels] (positions = rows / batch, rows of one
// sample contiguous); channels are split into `groups` equal groups; each (sample, group) is
// normalised over all its positions x channels with its own mean and (biased) variance, then
// y = norm * gamma[c] + beta[c]. gamma and beta are weights of `channels` floats (beta may be
// null). y may alias x exactly. validate_group_norm_args() is InvalidArgument naming the problem.
// group_norm_reference() is the scalar definition (double accumulation).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/tensor.h"

namespace am::kernels {

Status validate_group_norm_args(ConstTensorView x, int64_t batch, int64_t groups, TensorView y);
void group_norm_reference(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma,
                          const float* beta, float eps, TensorView y);

}  // namespace am::kernels
