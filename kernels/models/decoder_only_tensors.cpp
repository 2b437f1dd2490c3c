// DecoderLm to and from f32 tensors (checkpoint import / export).
#include <string>
#include <utility>

#include "kernels/models/decoder_only.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {

Result<DecoderLm> DecoderLm::from_tensors(const DecoderLmConfig& c, const FormatPlan& f, DecoderLmTensors t,
                                          const ExecContext& ctx) {
  const std::string owner = c.stack.family + " weights";
  const int64_t h = c.stack.hidden;
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "token embeddings", t.tokens, Shape{c.vocab, h}));
  if (c.learned_positions) {
    AM_RETURN_IF_ERROR(check_tensor_shape(owner, "position embeddings", t.positions, Shape{c.max_positions, h}));
  } else if (!t.positions.empty()) {
    return invalid_argument(owner + ": position embeddings given, but the config has none");
  }
  DecoderLm m;
  m.config = c;
  AM_ASSIGN_OR_RETURN(m.stack, TransformerStack::from_tensors(c.stack, f, std::move(t.stack), ctx));
  if (t.head.empty()) {
    m.head = tied_head(t.tokens, 1.0f, f.output, ctx);
  } else {
    AM_ASSIGN_OR_RETURN(m.head, linear_from_tensors(owner, "output head", std::move(t.head), Tensor(), h, c.vocab,
                                                    false, f.output, ctx));
  }
  m.embedding.tokens = std::move(t.tokens);
  m.embedding.positions = std::move(t.positions);
  return m;
}

Result<DecoderLmTensors> DecoderLm::tensors() const {
  DecoderLmTensors t;
  AM_ASSIGN_OR_RETURN(t.stack, stack.tensors());
  t.tokens = embedding.tokens.clone();
  t.positions = embedding.positions.clone();
  if (!config.tie_embeddings) {
    AM_ASSIGN_OR_RETURN(auto wb, linear_to_tensors(config.stack.family + " weights", "output head", head));
    t.head = std::move(wb.first);
  }
  return t;
}

}  // namespace am::kernels
