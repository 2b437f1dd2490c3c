// Input embeddings of encoder models (BERT): word + position + token type.
//
// Contract: for token t = b * seq + s,
//   out[t] = word[token_ids[t]] + position[s] + token_type[type_ids ? type_ids[t] : 0].
// token_ids / type_ids hold batch*seq entries; every id must index a row of its table and seq
// must not exceed position.rows() (checked: abort — callers validate inputs with Status first).
// All tables and out share the hidden size (cols). Tokens are split over ctx.pool.
#pragma once

#include <cstdint>

#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

void embed_tokens(const int32_t* token_ids, const int32_t* type_ids, int64_t batch, int64_t seq,
                  ConstTensorView word, ConstTensorView position, ConstTensorView token_type,
                  TensorView out, const ExecContext& ctx);

}  // namespace am::kernels
