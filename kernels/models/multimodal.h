// The multimodal family (Hugging Face's "multimodal models" taxonomy): LLaVA (variant "llava",
// the default), X-CLIP video-text retrieval (variant "xclip") and CLAP audio-text retrieval
// (variant "clap"). Implementations: multimodal_llava.cpp, multimodal_xclip.cpp,
// multimodal_clap.cpp.
//
// LLaVA: a CLIP ViT vision tower (vision_* keys, quick_gelu) run to its penultimate layer
//   (LLaVA's vision_feature_layer = -2: the tower is built with vision_layers - 1 layers and no
//   final norm), class token dropped, `image_crops` crops per image (1 for LLaVA-1.5; LLaVA-1.6's
//   AnyRes base image + tiles, image_newline tokens not modelled), a 2-layer GELU MLP projector
//   to the LM width, then a LLaMA/Mistral decoder LM (decoder_only.h keys: layers, hidden,
//   heads, kv_heads, intermediate, vocab, max_positions, rope_theta, norm_eps, decode_steps)
//   over [image tokens; seq_len prompt tokens] as the prefill, then decode_steps teacher-forced
//   tokens. Output: logits [batch*(decode_steps+1), vocab], logits=true; PhaseTimes filled
//   (the vision tower and projector count as prefill).
// X-CLIP and CLAP: see their files. Both output similarity logits [batch, batch], logits=true.
#pragma once

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_multimodal_graph(const jobs::JobSpec& spec, std::string_view precision,
                                                           const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_llava_graph(const jobs::JobSpec& spec, std::string_view precision,
                                                      const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_xclip_graph(const jobs::JobSpec& spec, std::string_view precision,
                                                      const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_clap_graph(const jobs::JobSpec& spec, std::string_view precision,
                                                     const ExecContext& ctx);

}  // namespace am::kernels
