// Attention with an additive score bias (T5's relative position bias, ALiBi-style biases).
//
// Contract: exactly AttentionArgs (see attention.h) with, before the mask and softmax,
//   score[b, h, i, j] += bias[(i * kv_len + j) * heads + h]
// i.e. bias is [q_len * kv_len, heads] (the layout a gather of a [buckets, heads] table by
// bucket id produces), shared by every sample of the batch. Masked and causally hidden keys stay
// hidden whatever their bias. validate_attention_bias() checks the args and the bias shape;
// attention_with_bias() is the cpu implementation, (batch, head, query) rows split over ctx.pool.
#pragma once

#include "common/status.h"
#include "kernels/cpu/attention.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

Status validate_attention_bias(const AttentionArgs& args, ConstTensorView bias);
void attention_with_bias(const AttentionArgs& args, ConstTensorView bias, const ExecContext& ctx);

}  // namespace am::kernels
