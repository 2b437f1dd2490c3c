// Numerically stable softmax over the last dimension: exp(x - max) / sum(exp(x - max)).
//
// Contract: in place. Entries equal to -inf get probability 0 (that is how attention masks
// arrive); a row whose entries are all -inf becomes all zeros rather than NaN. A NaN anywhere in
// a row makes the whole row NaN (so it is detected downstream, never hidden). Rows are split
// over ctx.pool.
#pragma once

#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

void softmax_row(float* x, int64_t n);
void softmax_rows(TensorView x, const ExecContext& ctx);

}  // namespace am::kernels
