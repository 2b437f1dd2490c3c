// The vision-encoder-text-decoder family: CLIP (variant "clip", the default) and the ViT-GPT2
// captioner (variant "vit-gpt2").
//
// CLIP: clip_model.h's keys. Input: `batch` seeded images and `batch` seeded texts of seq_len
//   tokens. Output: logits_per_image [batch, batch], logits=true. weights_path: a CLIPModel
//   checkpoint (clip_model.h).
// ViT-GPT2: vision_* keys (a ViT encoder with final LayerNorm, vision_norm_eps default 1e-12)
//   and the GPT-2 decoder keys of decoder_only.h read from text_-less names: layers, hidden,
//   heads, intermediate, vocab, max_positions, activation (default "gelu_new"), norm_eps,
//   decode_steps; every decoder layer cross-attends to the encoder's hidden states (so
//   vision_hidden must equal hidden). Teacher-forced: prefill of seq_len seeded caption tokens
//   after the image is encoded (the encoder counts as prefill time), then decode_steps forced
//   tokens. Output: logits [batch*(decode_steps+1), vocab], logits=true; PhaseTimes filled.
#pragma once

#include "kernels/models/clip_model.h"
#include "kernels/models/model.h"

namespace am::kernels {

// The CLIP model of a clip-variant spec: read from model_config's weights_path (a CLIPModel
// checkpoint, clip_model.h) when present, else seeded from spec.seed.
Result<ClipModel> load_or_seed_clip(const jobs::JobSpec& spec, const ClipConfig& c, const FormatPlan& f,
                                    const ExecContext& ctx);

Result<std::unique_ptr<ModelGraph>> build_vision_encoder_text_decoder_graph(const jobs::JobSpec& spec,
                                                                            Precision precision,
                                                                            const ExecContext& ctx);

}  // namespace am::kernels
