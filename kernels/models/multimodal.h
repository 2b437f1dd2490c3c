// The multimodal family (Hugging Face's "multimodal models" taxonomy): LLaVA (variant "llava",
// the default), X-CLIP video-text retrieval (variant "xclip") and CLAP audio-text retrieval
// (variant "clap"). Implementations: multimodal_llava.cpp, multimodal_xclip.cpp,
// multimodal_clap.cpp.
//
// LLaVA: a CLIP ViT vision tower (vision_* keys, quick_gelu) run to the layer
//   vision_feature_layer selects (default -2, LLaVA's penultimate layer: the tower is built with
//   vision_layers - 1 layers and no final norm), class token dropped (vision_feature_select
//   "default"; "full" keeps it), `image_crops` crops per image (LLaVA-1.5: 1), a 2-layer MLP
//   projector (projector_activation, default "gelu") to the LM width. LLaVA-1.6's AnyRes:
//   `image_grid = [rows, cols]` makes the crops the base view plus rows x cols tiles; the image
//   tokens are the base view's patches, then the tiles' patches re-laid as one grid, each grid
//   row followed by the learned image_newline token (the seeded image is taken to fill its
//   pinpoint exactly, so LLaVA-NeXT's unpadding removes nothing). Then a LLaMA/Mistral decoder
//   LM (decoder_only.h keys: layers, hidden, heads, kv_heads, intermediate, vocab,
//   max_positions, rope_theta, norm_eps, decode_steps) over the prompt of seq_len tokens whose
//   one image token (image_token_index, default 32000, or vocab - 1 for a smaller vocabulary;
//   seeded prompts hold it after their first token) is replaced by the image's tokens — LLaVA's
//   merge of image features into the input
//   embeddings — as the prefill, then decode_steps teacher-forced tokens. Output: logits
//   [batch*(decode_steps+1), vocab], logits=true; PhaseTimes filled (the vision tower and
//   projector count as prefill). weights_path: a LlavaForConditionalGeneration /
//   LlavaNextForConditionalGeneration checkpoint (vision_tower.vision_model.* as CLIP's,
//   multi_modal_projector.linear_{1,2}, language_model.model.* and language_model.lm_head as
//   LLaMA's, image_newline; or the later layout under model.*).
// X-CLIP and CLAP: see their files. Both output similarity logits [batch, batch], logits=true.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_multimodal_graph(const jobs::JobSpec& spec, Precision precision,
                                                           const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_llava_graph(const jobs::JobSpec& spec, Precision precision,
                                                      const ExecContext& ctx);
// LLaVA inputs given instead of the job's seeded ones (reference checks, tests/reference/):
// pixels [batch*crops*image*image, channels] channels-last, prompts [batch*seq_len] holding one
// image token each, forced tokens [batch*decode_steps].
struct LlavaInputs {
  std::vector<float> pixels;
  std::vector<int32_t> prompt, forced;
};
Result<std::unique_ptr<ModelGraph>> build_llava_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                         const ExecContext& ctx, const LlavaInputs* given);
Result<std::unique_ptr<ModelGraph>> build_xclip_graph(const jobs::JobSpec& spec, Precision precision,
                                                      const ExecContext& ctx);
Result<std::unique_ptr<ModelGraph>> build_clap_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx);

// Images (video frames, for X-CLIP) and texts given instead of the seeded ones (reference
// checks): pixels [images*image*image, channels] channels-last, ids [texts*text_len].
struct ClipInputs {
  std::vector<float> pixels;
  std::vector<int32_t> ids;
  int64_t texts = 0, text_len = 0;
};
Result<std::unique_ptr<ModelGraph>> build_xclip_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                         const ExecContext& ctx, const ClipInputs* given);

// CLAP inputs given instead of the seeded ones (reference checks): log-mel frames
// [batch*audio_frames, audio_mel_bins] (time-major), text ids and attention mask [batch*seq_len].
struct ClapInputs {
  std::vector<float> mel;
  std::vector<int32_t> ids, mask;
};
Result<std::unique_ptr<ModelGraph>> build_clap_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                        const ExecContext& ctx, const ClapInputs* given);

// LLaVA's image-token layout for one image: for each image token, the row it takes from
// [crop-major projected patch features (crops * side^2 rows); the image_newline row]. Without a
// grid (grid_rows = 0): the crops' patches in order. With AnyRes (crop 0 the base view, crops
// 1..rows*cols the tiles in row-major order): the base view's patches, then the tiles' patches
// re-laid as one (rows*side) x (cols*side) grid read row by row, each grid row followed by the
// newline row.
std::vector<int32_t> llava_image_token_layout(int64_t crops, int64_t side, int64_t grid_rows, int64_t grid_cols);

}  // namespace am::kernels
