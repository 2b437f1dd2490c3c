// Encoder-only (BERT) weights from Hugging Face safetensors checkpoints, quantized on load, and
// the reverse (a model's f32 weights written as such a checkpoint).
//
// Name mapping:
//   BERT (HF BertModel; every name also accepted without the "bert." prefix, LayerNorm
//   parameters also as gamma/beta):
//     bert.embeddings.{word,position,token_type}_embeddings.weight, bert.embeddings.LayerNorm.*
//     bert.encoder.layer.N.attention.self.{query,key,value}.{weight,bias}
//     bert.encoder.layer.N.attention.output.dense.*, .attention.output.LayerNorm.*
//     bert.encoder.layer.N.intermediate.dense.*, .output.dense.*, .output.LayerNorm.*
//
// Contract:
//   - The config (from the catalog / plan) gives the architecture; the file gives the values.
//     Every tensor the model needs must be present with the shape the config implies: a missing
//     tensor is NotFound naming it (and the file), a wrong shape InvalidArgument giving both, a
//     non-float dtype Unsupported. Tensors the model does not use (poolers, heads, rotary
//     caches) are ignored.
//   - Linear weights are quantized to the requested format(s) exactly as the synthetic models
//     quantize theirs, so a checkpoint written by save_*() from an f32 synthetic model loads
//     into a model whose outputs equal the synthetic model's bit for bit, at every format.
//   - save_*() need an f32 model (FailedPrecondition otherwise) and write F32, F16 or BF16.
//   - Thread-compatible; the loaded model owns its weights (the file may be closed after).
#pragma once

#include <string>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/models/encoder_only.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {

// `body`: the prefix the BertModel sits under (e.g. DPR's "question_encoder.bert_model."); empty
// tries "bert." and no prefix.
Result<EncoderModel> load_bert_checkpoint(const Checkpoint& file, const EncoderConfig& config,
                                          const FormatPlan& format, const ExecContext& ctx,
                                          const std::string& body = "");
Result<EncoderModel> load_bert_checkpoint(const std::string& path, const EncoderConfig& config, const FormatPlan& format,
                                          const ExecContext& ctx);
Status save_bert_checkpoint(const EncoderModel& model, const std::string& path,
                            SafetensorsDtype dtype = SafetensorsDtype::kF32);

}  // namespace am::kernels
