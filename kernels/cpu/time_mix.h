// RWKV-4's WKV recurrence (the core of its time-mix block), in the numerically stable form that
// carries a running maximum exponent instead of raw exponentials.
//
// Contract: per sample b and channel c, over positions t in order, with w = -exp(time_decay[c])
// and u = time_first[c], and state (aa, bb, pp) initially (0, 0, -1e38):
//   q = max(pp, u + k);  wkv[t] = (e^(pp-q) aa + e^(u+k-q) v) / (e^(pp-q) bb + e^(u+k-q))
//   q' = max(pp + w, k); aa = e^(pp+w-q') aa + e^(k-q') v; bb = e^(pp+w-q') bb + e^(k-q'); pp = q'
// Shapes: k, v, out [batch * len, channels]; time_decay and time_first are weights of `channels`
// floats; `state` is [batch, 3, channels] floats (aa, bb, pp), read and overwritten (null = a
// fresh state, final state dropped), so prefill and token-by-token decode agree.
// validate_time_mix_args() is InvalidArgument naming the problem; time_mix_reference() is the
// scalar definition (double arithmetic); kTimeMixInitialMax is pp of a fresh state.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/tensor.h"

namespace am::kernels {

inline constexpr float kTimeMixInitialMax = -1e38f;

struct TimeMixArgs {
  ConstTensorView k, v;
  TensorView out;
  const float* time_decay = nullptr;
  const float* time_first = nullptr;
  int64_t batch = 1;
  int64_t len = 0;
  int64_t channels = 0;
  float* state = nullptr;
};

Status validate_time_mix_args(const TimeMixArgs& a);
void time_mix_reference(const TimeMixArgs& a);

}  // namespace am::kernels
