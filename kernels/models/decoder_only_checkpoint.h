// Decoder-only (LLaMA family) weights from Hugging Face safetensors checkpoints, quantized on
// load, and the reverse (a model's f32 weights written as such a checkpoint).
//
// Name mapping:
//   LLaMA family (LLaMA, Mistral, Qwen2, TinyLlama; q/k/v biases read when the config has
//   attention_bias, as Qwen2 does):
//     model.embed_tokens.weight, model.norm.weight, lm_head.weight (read only when the config does
//     not tie the head; a tied config ignores a stored lm_head.weight, as transformers ties it)
//     model.layers.N.self_attn.{q,k,v,o}_proj.weight, model.layers.N.mlp.{gate,up,down}_proj.weight
//     model.layers.N.input_layernorm.weight, model.layers.N.post_attention_layernorm.weight
//   Mixtral (config with experts, in every layer): instead of mlp.*,
//     model.layers.N.block_sparse_moe.gate.weight [experts, hidden] (the router),
//     model.layers.N.block_sparse_moe.experts.E.{w1,w3,w2}.weight (gate, up, down)
//   HF stores q/k projections for the rotate-half ("neox") RoPE layout, the decoder's default.
//
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
#include "kernels/models/decoder_only.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {

// Needs a llama-style config (RMSNorm, gated feed-forward, no learned positions; experts only in
// every layer, as Mixtral); Unsupported otherwise.
// Where a model nests the decoder: LlamaForCausalLM's "model." and "lm_head.weight"; LLaVA's
// "language_model.model." and "language_model.lm_head.weight".
struct LlamaNames {
  std::string body = "model.";
  std::string head = "lm_head.weight";
};
Result<DecoderLm> load_llama_checkpoint(const Checkpoint& file, const DecoderLmConfig& config,
                                        const FormatPlan& formats, const ExecContext& ctx,
                                        const LlamaNames& names = {});
Result<DecoderLm> load_llama_checkpoint(const std::string& path, const DecoderLmConfig& config,
                                        const FormatPlan& formats, const ExecContext& ctx);
Status save_llama_checkpoint(const DecoderLm& model, const std::string& path,
                             SafetensorsDtype dtype = SafetensorsDtype::kF32);

}  // namespace am::kernels
