// The decoder-only family (LLaMA / Qwen2 / Mistral style and GPT-2 style) — also the body of
// Mixtral in the mixture-of-experts family.
//
// Config keys ([config] of the catalog; every problem is InvalidArgument naming the key):
//   layers, hidden, heads, intermediate, vocab, max_positions   required positive integers
//   style          "llama" (RoPE, RMSNorm, SwiGLU, no biases) | "gpt2" (learned positions,
//                  LayerNorm, GELU MLP, biases, tied head); default "llama"
//   kv_heads       grouped-query attention (default heads); head_dim (default hidden/heads)
//   norm_eps       default 1e-6 (llama) / 1e-5 (gpt2)
//   activation     default "silu" (llama) / "gelu_new" (gpt2)
//   rope_theta     default 10000; rope_layout "neox" (default) | "gptj"; rotary_dim (default head_dim)
//   attention_bias q/k/v biases (Qwen2), default false for llama
//   tie_embeddings default false (llama) / true (gpt2)
//   experts, experts_per_token   mixture-of-experts feed-forward in every layer (Mixtral)
//   sliding_window Mistral's attention window: not modelled, so a run whose prompt + decode steps
//                  exceed it is Unsupported (within the window the attention is the same)
//   decode_steps   teacher-forced decode steps per run (default 8)
//
// Run: prompt = seq_len seeded tokens per sample, prefilled at once into a KV cache, then
// decode_steps decode steps teacher-forced on seeded tokens. Output = logits [batch *
// (decode_steps + 1), vocab]: per sample the prediction after the prompt, then after each decode
// step (the logits a generating model samples from). Prompt positions' logits are not computed,
// as in serving engines, so prefill time is what a user waits for.
//
// Initialisation follows the reference implementations: N(0, 0.02) for embeddings and linear
// weights; GPT-2 scales its residual projections (attention output, MLP down) by 1/sqrt(2 *
// layers); biases zero; norm gammas N(1, 0.02).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jobs/job_spec.h"
#include "kernels/models/decoder_only_lm.h"
#include "kernels/models/transformer_stack.h"
#include "kernels/models/model.h"

namespace am::kernels {

struct DecoderLmConfig {
  StackConfig stack;
  int64_t vocab = 0;
  int64_t max_positions = 0;
  bool learned_positions = false;
  bool tie_embeddings = false;
  int64_t decode_steps = kDefaultDecodeSteps;
  float embed_std = 0.02f;
  int64_t sliding_window = 0;  // 0 = none
};

Result<DecoderLmConfig> decoder_lm_config_from_json(const nlohmann::json& doc, const std::string& family);

// Every weight of a decoder LM as f32 (see StackTensors): token table [vocab, hidden], learned
// positions [max_positions, hidden] or empty, head [vocab, hidden] or empty for a tied head.
struct DecoderLmTensors {
  Tensor tokens, positions;
  StackTensors stack;
  Tensor head;
};

struct DecoderLm {
  DecoderLmConfig config;
  TextEmbedding embedding;
  TransformerStack stack;
  Linear head;

  static std::size_t estimate_bytes(const DecoderLmConfig& c, const FormatPlan& f);
  static Result<DecoderLm> create_synthetic(const DecoderLmConfig& c, const FormatPlan& f, uint64_t seed,
                                            const ExecContext& ctx);
  // A model over given f32 tensors (kernels/models/decoder_only_tensors.cpp); shapes checked
  // against `c`; an empty head ties it to the token table.
  static Result<DecoderLm> from_tensors(const DecoderLmConfig& c, const FormatPlan& f, DecoderLmTensors tensors,
                                        const ExecContext& ctx);
  // Copies of every weight as f32; the head is left empty when the config ties it.
  Result<DecoderLmTensors> tensors() const;
  std::size_t weights_bytes() const { return embedding.bytes() + stack.weights_bytes() + head.weight_bytes(); }
  std::vector<std::pair<Op, WeightFormat>> required_ops() const;
};

// The ModelGraph of a decoder LM over the spec's seeded prompt and forced tokens.
Result<std::unique_ptr<ModelGraph>> make_decoder_lm_graph(DecoderLm model, const jobs::JobSpec& spec);

}  // namespace am::kernels
