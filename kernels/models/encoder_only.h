// Graph builder for the encoder-only family (BERT and relatives).
//
// Contract:
//   - encoder_config_from_json() reads the catalog's [config] table: layers, hidden, heads,
//     intermediate, vocab, max_positions (all required positive integers), type_vocab (default
//     2), norm_eps (default 1e-12), activation (default "gelu"; see activation.h), position_offset
//     (default 0; RoBERTa's 2 = pad_token_id + 1: real tokens take positions offset + i, counting
//     real tokens, and padding takes offset - 1, as fairseq numbers them). Every problem
//     is an InvalidArgument naming the key; an activation the core lacks is Unsupported.
//   - EncoderModel::create_synthetic() draws seeded weights with BERT's initialisation scales:
//     linear and embedding weights N(0, 0.02), biases N(0, 0.02), LayerNorm gamma N(1, 0.02) and
//     beta N(0, 0.02). The f32 values depend only on (config, seed); a q8_0 model holds exactly
//     the quantization of the f32 model with the same seed. Linear weights are stored in the
//     requested format; embeddings, LayerNorms and biases stay f32.
//   - forward() runs on any Backend (ops only through it) the post-LN BERT stack: embeddings + LayerNorm, then per layer
//     self-attention -> add & LayerNorm -> FFN (up, activation, down) -> add & LayerNorm, and
//     returns the final hidden states [batch, seq, hidden]. Inputs are validated (ids in range,
//     seq <= max_positions) with InvalidArgument. Deterministic: the same model, input and
//     thread count give bit-identical outputs.
//   - A model is immutable after creation; concurrent forward() calls are safe.
//   - Allocation failure throws std::bad_alloc (the job process reports "oom").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/backend.h"
#include "kernels/exec_context.h"
#include "kernels/cpu/linear.h"
#include "kernels/models/format_plan.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

struct EncoderConfig {
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t intermediate = 0;
  int64_t vocab = 0;
  int64_t max_positions = 0;
  int64_t type_vocab = 2;
  float norm_eps = 1e-12f;
  std::string activation = "gelu";
  int64_t position_offset = 0;  // RoBERTa: pad_token_id + 1
};

Result<EncoderConfig> encoder_config_from_json(const nlohmann::json& doc);

struct EncoderInput {
  int64_t batch = 0;
  int64_t seq = 0;
  std::vector<int32_t> token_ids;       // batch*seq
  std::vector<int32_t> token_type_ids;  // batch*seq
  std::vector<int32_t> attention_mask;  // batch*seq; 1 = token, 0 = padding
};

// Seeded inputs: uniform token ids; sample 0 fills the whole sequence, later samples have a
// random real length in [seq/2, seq] followed by padding (id 0, mask 0); the second half of each
// real span has token type 1 when the config has two or more types (a sentence pair).
EncoderInput make_synthetic_encoder_input(const EncoderConfig& config, int64_t batch, int64_t seq,
                                          uint64_t seed);
Status validate_encoder_input(const EncoderConfig& config, const EncoderInput& input);

// Every weight of an encoder as f32 tensors in the reference (PyTorch) layout: linear weights
// [out, in], biases [out], embeddings [rows, hidden], norms [hidden]. The exchange format with
// checkpoints (kernels/weights/).
struct EncoderTensors {
  struct Layer {
    Tensor query_w, query_b, key_w, key_b, value_w, value_b, output_w, output_b;
    Tensor attention_norm_gamma, attention_norm_beta;
    Tensor ffn_up_w, ffn_up_b, ffn_down_w, ffn_down_b;
    Tensor ffn_norm_gamma, ffn_norm_beta;
  };
  Tensor word_embeddings, position_embeddings, token_type_embeddings;
  Tensor embedding_norm_gamma, embedding_norm_beta;
  std::vector<Layer> layers;
};

class EncoderModel {
 public:
  // A model over given f32 tensors (kernels/models/encoder_only_tensors.cpp): shapes checked
  // against `config` (InvalidArgument naming the tensor), linear weights stored at `format`
  // exactly as create_synthetic() stores seeded ones.
  static Result<EncoderModel> from_tensors(const EncoderConfig& config, const FormatPlan& formats, EncoderTensors tensors,
                                           const ExecContext& ctx);
  // Copies of every weight as f32; FailedPrecondition unless the model is f32.
  Result<EncoderTensors> tensors() const;
  static Result<EncoderModel> create_synthetic(const EncoderConfig& config, const FormatPlan& formats,
                                               uint64_t seed, const ExecContext& ctx);
  // Requires an f32 model; embeddings and norms are copied, linear weights converted.
  EncoderModel converted(const FormatPlan& formats, const ExecContext& ctx) const;

  const EncoderConfig& config() const { return config_; }
  // Linear layers: attention projections in formats().attention, feed-forward in
  // formats().feed_forward (a "mixed" precision differs between them).
  const FormatPlan& formats() const { return formats_; }
  // Bytes of every weight at its stored format (linear weights at the model's format).
  std::size_t weights_bytes() const;
  // Every (op, weight format) forward() needs; ask the backend about each before running.
  std::vector<std::pair<Op, WeightFormat>> required_ops() const;
  // Runs on `backend`; its ops' errors (Unsupported included) are returned as they are.
  Result<Tensor> forward(const EncoderInput& input, Backend& backend) const;
  // The same, the hidden states left where `backend` keeps activations (Backend::tensor(): on a
  // device backend, on the device) for a graph that goes on with them.
  Result<Tensor> forward_resident(const EncoderInput& input, Backend& backend) const;
  // The same on a CpuBackend over `ctx`.
  Result<Tensor> forward(const EncoderInput& input, const ExecContext& ctx) const;

 private:
  struct Layer {
    AttentionWeights attention;
    Tensor attention_norm_gamma, attention_norm_beta;
    Linear ffn_up, ffn_down;
    Tensor ffn_norm_gamma, ffn_norm_beta;
  };

  EncoderConfig config_;
  FormatPlan formats_;
  Activation activation_ = Activation::kGeluErf;
  Tensor word_embeddings_, position_embeddings_, token_type_embeddings_;
  Tensor embedding_norm_gamma_, embedding_norm_beta_;
  std::vector<Layer> layers_;
};

}  // namespace am::kernels
