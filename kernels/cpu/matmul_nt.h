// Products of two activation matrices: y = scale * a · b^T (contrastive similarity logits,
// retrieval scores), where neither operand is a weight.
//
// Contract: a [m, k], b [n, k], y [m, n]; y must not alias a or b. validate_matmul_nt_args() is
// InvalidArgument naming the problem; matmul_nt_reference() is the scalar definition (double
// accumulation).
#pragma once

#include "common/status.h"
#include "kernels/tensor.h"

namespace am::kernels {

Status validate_matmul_nt_args(ConstTensorView a, ConstTensorView b, TensorView y);
void matmul_nt_reference(ConstTensorView a, ConstTensorView b, float scale, TensorView y);

}  // namespace am::kernels
