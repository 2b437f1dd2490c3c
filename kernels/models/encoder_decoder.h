// The encoder-decoder family (T5 / flan-T5 / T5-efficient and BART) — also the body of Switch
// Transformers (mixture-of-experts) and of RAG's generator.
//
// Config keys (InvalidArgument naming the key on any problem):
//   layers, hidden, heads, intermediate, vocab     required positive integers
//   style            "t5" (default: RMS "T5 LayerNorm", relative position bias buckets, no
//                    biases, attention without 1/sqrt(d) scaling) | "bart" (learned positions
//                    offset by 2, embedding LayerNorm, post-LN, biases)
//   decoder_layers   default layers;  head_dim  default hidden/heads (T5's d_kv)
//   max_positions    required for bart (learned positions), default 512 for t5
//   activation       default "relu" (t5) / "gelu" (bart);  gated_ffn  default false (true for
//                    flan-T5 / T5 v1.1 "gated-gelu")
//   rel_buckets (32), rel_max_distance (128), norm_eps (1e-6 t5 / 1e-5 bart)
//   tie_embeddings   default true (T5 v1.0, BART); false for flan-T5 / T5 v1.1
//   experts, experts_per_token (default 1), moe_every (default 2): Switch's sparse layers
//   decode_steps     teacher-forced decode steps (default 8)
//
// Run: encoder over seq_len seeded source tokens, cross-attention keys/values projected once,
// decoder prefill of the start token, then decode_steps teacher-forced steps with the self- and
// cross-attention caches. Output = logits [batch * (decode_steps + 1), vocab]. Prefill time
// includes the encoder (the user waits for both before the first token).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jobs/job_spec.h"
#include "kernels/models/decoder_only_lm.h"
#include "kernels/models/transformer_stack.h"
#include "kernels/models/model.h"

namespace am::kernels {

struct EncDecConfig {
  StackConfig encoder, decoder;
  int64_t vocab = 0;
  int64_t max_positions = 0;
  bool bart = false;
  bool tie_embeddings = true;
  int64_t decode_steps = kDefaultDecodeSteps;
  int32_t decoder_start = 0;   // T5 starts from pad (0), BART from </s> (2)
};

Result<EncDecConfig> enc_dec_config_from_json(const nlohmann::json& doc, const std::string& family);

struct EncDecModel {
  EncDecConfig config;
  TextEmbedding encoder_embedding, decoder_embedding;  // share the token table's values
  TransformerStack encoder, decoder;
  Linear head;

  static std::size_t estimate_bytes(const EncDecConfig& c, const FormatPlan& f);
  static Result<EncDecModel> create_synthetic(const EncDecConfig& c, const FormatPlan& f, uint64_t seed,
                                              const ExecContext& ctx);
  std::size_t weights_bytes() const;
  std::vector<std::pair<Op, WeightFormat>> required_ops() const;

  // Encoder over src [batch, src_len] (src_mask optional), then teacher-forced generation from
  // the start token; logits [batch*(steps+1), vocab]. Prefill time counts from `started`.
  Status generate(Backend& be, int64_t batch, const std::vector<int32_t>& src, int64_t src_len,
                  const int32_t* src_mask, const std::vector<int32_t>& forced,
                  std::chrono::steady_clock::time_point started, Tensor& logits, PhaseTimes& phases) const;
};

Result<std::unique_ptr<ModelGraph>> make_enc_dec_graph(EncDecModel model, const jobs::JobSpec& spec);

}  // namespace am::kernels
