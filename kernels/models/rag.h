// The rag family (RAG-sequence; rag.cpp has the structure and the checkpoint names).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/models/model.h"

namespace am::kernels {

// Inputs given instead of the seeded ones (reference checks, tests/reference/): the questions'
// token ids [batch*seq_len] (no padding, one token type), the passage index [passages *
// question_hidden] (row p is passage p's embedding), the passages' generator token ids
// [passages * passage_len], and the forced decoder tokens [batch * n_docs * decode_steps].
struct RagInputs {
  std::vector<int32_t> question;
  std::vector<float> index;
  std::vector<int32_t> passage_tokens, forced;
};
Result<std::unique_ptr<ModelGraph>> build_rag_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                       const ExecContext& ctx, const RagInputs* given);

}  // namespace am::kernels
