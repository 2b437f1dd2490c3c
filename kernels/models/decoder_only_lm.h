// Token embeddings, the language-model head and the teacher-forced generation loop shared by
// every text-generating family (decoder-only, encoder-decoder decoders, Whisper, RAG, MoE).
//
// Contract:
//   - TextEmbedding::embed() writes x [batch*q_len, hidden] = tokens[ids] (+ positions[offset +
//     position_offset + i] when the table has positions), then the embedding LayerNorm when
//     present — all through the Backend. ids are batch*q_len, sample-major.
//   - generate_teacher_forced(): prefill of the prompt [batch, prompt_len] at positions
//     [0, prompt_len) into `cache`, logits of each sample's last prompt position, then one decode
//     step per forced token (positions prompt_len, prompt_len+1, ...), each producing logits.
//     `logits` must be [batch*(steps+1), vocab]; row b*(steps+1)+t holds sample b's t-th
//     prediction (t = 0 from the prefill). Timings: prefill_ms counts from `started` (so an
//     encoder run before it is part of the prefill) to the first logits; first_token_ms adds the
//     first decode step, as model.h defines time to first token.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/models/transformer_stack.h"
#include "kernels/models/model.h"
#include "kernels/tensor.h"

namespace am::kernels {

struct TextEmbedding {
  Tensor tokens;              // [vocab, hidden]
  Tensor positions;           // [positions, hidden] or empty (RoPE / relative-bias models)
  int64_t position_offset = 0;  // BART's learned positions start at 2
  Tensor norm_g, norm_b;      // embedding LayerNorm (BART) or empty
  float eps = 1e-5f;

  int64_t vocab() const { return tokens.rows(); }
  int64_t max_positions() const { return positions.empty() ? 0 : positions.rows() - position_offset; }
  std::size_t bytes() const { return tokens.bytes() + positions.bytes() + norm_g.bytes() + norm_b.bytes(); }
  void add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const;
  Status embed(Backend& be, const int32_t* ids, int64_t batch, int64_t q_len, int64_t offset, TensorView x) const;
};

// Sinusoidal position table [length, dim] (Whisper's encoder: sin in the first half, cos in the
// second, timescales 1 .. 10000).
Tensor sinusoid_table(int64_t length, int64_t dim);

// The output projection: a Linear [vocab, hidden] without bias, from a copy of `table` scaled by
// `scale` (tied embeddings; T5 folds its d_model^-0.5 here).
Linear tied_head(const Tensor& table, float scale, WeightFormat format, const ExecContext& ctx);

// Appends a pair unless present.
void add_op(std::vector<std::pair<Op, WeightFormat>>& ops, Op op, WeightFormat format);

Status generate_teacher_forced(Backend& be, const TransformerStack& stack, const TextEmbedding& emb,
                               const Linear& head, int64_t batch, const std::vector<int32_t>& prompt,
                               int64_t prompt_len, const std::vector<int32_t>& forced, int64_t steps,
                               StackCache& cache, std::chrono::steady_clock::time_point started,
                               Tensor& logits, PhaseTimes& phases);

// Decode steps of a generative graph: model_config "decode_steps" (default kDefaultDecodeSteps).
inline constexpr int64_t kDefaultDecodeSteps = 8;
Result<int64_t> decode_steps_from(const ConfigReader& cfg);

}  // namespace am::kernels
