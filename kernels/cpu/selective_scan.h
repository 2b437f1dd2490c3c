// Mamba's selective scan (S6), the recurrence at the heart of a state-space block.
//
// Contract: per sample b, channel d and state index n, over positions t in order:
//   dt      = delta[t, d] (+ delta_bias[d]), then softplus(dt) when delta_softplus
//   h[d, n] = exp(dt * A[d, n]) * h[d, n] + dt * B[t, n] * u[t, d]
//   y[t, d] = sum_n h[d, n] * C[t, n] + D[d] * u[t, d]
// Shapes: u, delta, y [batch * len, channels]; B, C [batch * len, state_size];
// A [channels, state_size] (a weight; Mamba stores -exp(A_log)); D and delta_bias are
// `channels` floats or null. `state` is [batch, channels, state_size] floats, read as the
// initial h and overwritten with the final h (null = zero initial state, final state dropped), so
// a prompt can be scanned at once and later tokens one at a time with identical results.
// validate_selective_scan_args() is InvalidArgument naming the problem;
// selective_scan_reference() is the scalar definition (double state).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/tensor.h"

namespace am::kernels {

struct SelectiveScanArgs {
  ConstTensorView u, delta, B, C;
  TensorView y;
  const float* A = nullptr;
  const float* D = nullptr;
  const float* delta_bias = nullptr;
  bool delta_softplus = true;
  int64_t batch = 1;
  int64_t len = 0;
  int64_t channels = 0;
  int64_t state_size = 0;
  float* state = nullptr;
};

// log(1 + exp(x)), linear beyond x = 20 like PyTorch's softplus threshold.
float softplus(float x);

Status validate_selective_scan_args(const SelectiveScanArgs& a);
void selective_scan_reference(const SelectiveScanArgs& a);

}  // namespace am::kernels
