// Mixture-of-experts routing: choose experts per token and move token rows to and from them.
//
// Contract:
//   - route_top_k(): logits [tokens, experts] (router outputs). Per row, p = softmax(logits);
//     the k largest p (ties: lower expert index first) are written to ids[row*k .. row*k+k) in
//     descending order with their weights: p itself, or p / sum(chosen p) when `renormalize`
//     (Mixtral renormalises its top-2, Switch keeps the top-1 probability). 1 <= k <= experts.
//   - index_rows(): y[i] = x[ids[i]] for activations (unlike Backend::gather_rows, x is not a
//     weight). scatter_add_rows(): y[ids[i]] += scales[i] * x[i], applied in i order so the
//     result is deterministic. Out-of-range ids are InvalidArgument (checked by validate_*).
//   - Pure and thread-safe per call.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

Status validate_route_top_k(ConstTensorView logits, int64_t k);
void route_top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights,
                 const ExecContext& ctx);

Status validate_row_ids(const char* op, int64_t table_rows, const int32_t* ids, int64_t n);
void index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y, const ExecContext& ctx);
void scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n, TensorView y);

}  // namespace am::kernels
