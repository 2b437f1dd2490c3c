// Encoder-decoder (T5 family) weights from Hugging Face safetensors checkpoints, quantized on load.
//
// Name mapping (HF T5ForConditionalGeneration; T5 v1.0 with a ReLU MLP, or T5 v1.1 / flan-T5 with
// the gated feed-forward when the config has gated_ffn):
//   shared.weight (or encoder.embed_tokens.weight), lm_head.weight (read when the config does not
//   tie embeddings; a tied head is the shared table times d_model^-0.5, as T5 rescales)
//   {encoder,decoder}.block.0.layer.0.SelfAttention.relative_attention_bias.weight [buckets, heads]
//   encoder.block.N.layer.0.{SelfAttention.{q,k,v,o}.weight, layer_norm.weight}
//   encoder.block.N.layer.1.{DenseReluDense.{wi,wo}.weight | DenseReluDense.{wi_0,wi_1,wo}.weight,
//                            layer_norm.weight}
//   decoder.block.N.layer.0 as the encoder's, layer.1.{EncDecAttention.{q,k,v,o}.weight,
//   layer_norm.weight}, layer.2 the feed-forward; {encoder,decoder}.final_layer_norm.weight
//
// Contract: as decoder_only_checkpoint.h — the config (catalog / plan) gives the architecture,
// the file the values; a missing tensor is NotFound naming it, a wrong shape InvalidArgument, a
// non-float dtype Unsupported; unused tensors are ignored. BART-style configs and Switch
// (experts) are Unsupported here.
#pragma once

#include <string>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/models/encoder_decoder.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {

Result<EncDecModel> load_t5_checkpoint(const Checkpoint& file, const EncDecConfig& config,
                                       const FormatPlan& formats, const ExecContext& ctx);
Result<EncDecModel> load_t5_checkpoint(const std::string& path, const EncDecConfig& config,
                                       const FormatPlan& formats, const ExecContext& ctx);

// BART (BartForConditionalGeneration names after `prefix`, e.g. RAG's "rag.generator."):
// model.shared.weight (or model.encoder.embed_tokens.weight), model.{encoder,decoder}.
// {embed_positions.weight [max_positions + 2, d_model] (BART's learned positions start at 2),
// layernorm_embedding, layers.N.*} (encoder_decoder_checkpoint.cpp, read_bart_stack),
// final_logits_bias [1, vocab] (the head's bias), lm_head.weight only when the config does not tie
// it. Unsupported for a T5-style config.
// BART's learned positions start at row 2 of embed_positions (fairseq's padding offset).
inline constexpr int64_t kBartPositionOffset = 2;
Result<EncDecModel> load_bart_checkpoint(const Checkpoint& file, const EncDecConfig& config, const FormatPlan& formats,
                                         const ExecContext& ctx, const std::string& prefix = "");

}  // namespace am::kernels
