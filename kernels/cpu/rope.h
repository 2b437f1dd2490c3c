// Rotary position embeddings (RoPE) applied in place to per-head query/key vectors.
//
// Contract:
//   - x is [rows, heads * head_dim]; row r holds token r's heads, head h in columns
//     [h*head_dim, (h+1)*head_dim). positions[r] is the absolute position of row r (>= 0).
//   - Only the first rotary_dim dimensions of each head rotate (partial rotary, e.g. GPT-NeoX /
//     Phi); the rest pass through. rotary_dim is even, 2 <= rotary_dim <= head_dim.
//   - Pair i (0 <= i < rotary_dim/2) rotates by angle pos * theta^(-2i / rotary_dim):
//       neox layout (LLaMA, Qwen2, Mistral in Hugging Face form): pairs (i, i + rotary_dim/2);
//       gptj layout (GPT-J, original Meta LLaMA):                 pairs (2i, 2i + 1).
//     (a, b) -> (a cos - b sin, a sin + b cos).
//   - validate_rope() is InvalidArgument naming the problem; rope_rows() applies it on ctx.pool
//     (angles in double so long positions stay accurate). Pure and thread-safe per call.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

enum class RopeLayout { kNeox, kGptj };

struct RopeParams {
  int64_t heads = 1;
  int64_t head_dim = 0;
  int64_t rotary_dim = 0;    // 0 = head_dim
  float theta = 10000.0f;    // base of the frequencies
  RopeLayout layout = RopeLayout::kNeox;
};

// "neox" / "gptj"; anything else is InvalidArgument naming it.
Result<RopeLayout> rope_layout_from_name(std::string_view name);
std::string_view rope_layout_name(RopeLayout layout);

Status validate_rope(ConstTensorView x, const RopeParams& p, const int32_t* positions);

void rope_rows(TensorView x, const int32_t* positions, const RopeParams& p, const ExecContext& ctx);

}  // namespace am::kernels
