#include "kernels/models/decoder_only_lm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/clock.h"

namespace am::kernels {
namespace {

// Copies head outputs [batch, vocab] into rows b*(steps+1)+t of the logits.
void place_logits(const Tensor& step, int64_t batch, int64_t steps, int64_t t, Tensor& logits) {
  const std::size_t bytes = static_cast<std::size_t>(step.cols()) * sizeof(float);
  for (int64_t b = 0; b < batch; ++b) std::memcpy(logits.row(b * (steps + 1) + t), step.row(b), bytes);
}

}  // namespace

void add_op(std::vector<std::pair<Op, WeightFormat>>& ops, Op op, WeightFormat format) {
  const std::pair<Op, WeightFormat> p{op, format};
  if (std::find(ops.begin(), ops.end(), p) == ops.end()) ops.push_back(p);
}

void TextEmbedding::add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const {
  add_op(ops, Op::kGatherRows, WeightFormat::kF32);
  if (!norm_g.empty()) add_op(ops, Op::kLayerNorm, WeightFormat::kF32);
}

Status TextEmbedding::embed(Backend& be, const int32_t* ids, int64_t batch, int64_t q_len, int64_t offset,
                            TensorView x) const {
  const int64_t rows = batch * q_len;
  AM_RETURN_IF_ERROR(be.gather_rows(tokens.view(), ids, rows, x, false));
  if (!positions.empty()) {
    if (offset + q_len > max_positions()) {
      return invalid_argument("position " + std::to_string(offset + q_len - 1) + " exceeds max_positions " +
                              std::to_string(max_positions()));
    }
    std::vector<int32_t> pos(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      pos[static_cast<std::size_t>(r)] = static_cast<int32_t>(position_offset + offset + r % q_len);
    }
    AM_RETURN_IF_ERROR(be.gather_rows(positions.view(), pos.data(), rows, x, true));
  }
  if (!norm_g.empty()) {
    AM_RETURN_IF_ERROR(be.layer_norm(x, norm_g.data(), norm_b.empty() ? nullptr : norm_b.data(), eps, x));
  }
  return Status::Ok();
}

Tensor sinusoid_table(int64_t length, int64_t dim) {
  Tensor t(Shape{length, dim});
  const int64_t half = dim / 2;
  const double increment = half > 1 ? std::log(10000.0) / static_cast<double>(half - 1) : 0.0;
  for (int64_t p = 0; p < length; ++p) {
    float* row = t.row(p);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::exp(-increment * static_cast<double>(i));
      row[i] = static_cast<float>(std::sin(angle));
      row[half + i] = static_cast<float>(std::cos(angle));
    }
  }
  return t;
}

Linear tied_head(const Tensor& table, float scale, WeightFormat format, const ExecContext& ctx) {
  Tensor w = table.clone();
  if (scale != 1.0f) {
    for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] *= scale;
  }
  return Linear::create(std::move(w), Tensor(), format, ctx);
}

Result<int64_t> decode_steps_from(const ConfigReader& cfg) { return cfg.dim("decode_steps", kDefaultDecodeSteps); }

Status generate_teacher_forced(Backend& be, const TransformerStack& stack, const TextEmbedding& emb,
                               const Linear& head, int64_t batch, const std::vector<int32_t>& prompt,
                               int64_t prompt_len, const std::vector<int32_t>& forced, int64_t steps,
                               StackCache& cache, std::chrono::steady_clock::time_point started,
                               Tensor& logits, PhaseTimes& phases) {
  const int64_t hidden = stack.config().hidden;
  const int64_t vocab = head.out_features();
  if (static_cast<int64_t>(prompt.size()) != batch * prompt_len || static_cast<int64_t>(forced.size()) != batch * steps ||
      logits.rows() != batch * (steps + 1) || logits.cols() != vocab) {
    return invalid_argument("generate: prompt, forced tokens or logits have the wrong size");
  }
  // Prefill: the whole prompt at once, logits only where the next token is predicted.
  Tensor x = be.tensor(Shape{batch * prompt_len, hidden});
  AM_RETURN_IF_ERROR(emb.embed(be, prompt.data(), batch, prompt_len, 0, x.view()));
  AM_RETURN_IF_ERROR(stack.forward(be, x.view(), batch, prompt_len, 0, &cache, nullptr));
  std::vector<int32_t> last(static_cast<std::size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) last[static_cast<std::size_t>(b)] = static_cast<int32_t>(b * prompt_len + prompt_len - 1);
  Tensor h = be.tensor(Shape{batch, hidden}), step_logits = be.tensor(Shape{batch, vocab});
  AM_RETURN_IF_ERROR(be.index_rows(x.view(), last.data(), batch, h.view()));
  AM_RETURN_IF_ERROR(be.linear(head, h.view(), step_logits.view()));
  // Each step's logits come to the host, as a sampler needs them before the next step (the
  // wait is part of the step's time).
  AM_RETURN_IF_ERROR(be.to_host(step_logits.view()));
  place_logits(step_logits, batch, steps, 0, logits);
  phases.prefill_ms = ms_since(started);
  phases.prefill_tokens = batch * prompt_len;

  // Decode: one position per step, teacher-forced on the seeded tokens.
  const auto decode_start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids(static_cast<std::size_t>(batch));
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) ids[static_cast<std::size_t>(b)] = forced[static_cast<std::size_t>(b * steps + t)];
    AM_RETURN_IF_ERROR(emb.embed(be, ids.data(), batch, 1, prompt_len + t, h.view()));
    AM_RETURN_IF_ERROR(stack.forward(be, h.view(), batch, 1, prompt_len + t, &cache, nullptr));
    AM_RETURN_IF_ERROR(be.linear(head, h.view(), step_logits.view()));
    AM_RETURN_IF_ERROR(be.to_host(step_logits.view()));
    place_logits(step_logits, batch, steps, t + 1, logits);
    if (t == 0) phases.first_token_ms = phases.prefill_ms + ms_since(decode_start);
  }
  phases.decode_ms = ms_since(decode_start);
  phases.decode_tokens = batch * steps;
  if (steps == 0) phases.first_token_ms = phases.prefill_ms;
  return Status::Ok();
}

}  // namespace am::kernels
