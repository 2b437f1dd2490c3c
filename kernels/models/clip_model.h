// CLIP's dual encoder, shared by the vision-encoder-text-decoder family (CLIP) and the
// multimodal family's X-CLIP.
//
// Contract:
//   - Keys: vision_* (see vit_tower_config_from; CLIP adds a pre-encoder LayerNorm and no final
//     one — the class token gets post_layernorm), text_layers, text_hidden, text_heads,
//     text_intermediate, text_activation (default "quick_gelu"), vocab, max_positions,
//     projection_dim, logit_scale (default ln(1/0.07) = 2.6593), norm_eps (default 1e-5; the
//     text tower's, and the vision tower's unless vision_norm_eps), eos_token_id (optional: pool
//     each text at its first eos_token_id, as transformers does for non-legacy configs; without
//     it, at the position of its largest id — the legacy rule, which finds CLIP's EOS 49407).
//   - encode_images(): pixels -> class-token features after post-LN, projected (no bias) and
//     L2-normalised, [batch, projection_dim]; encode_image_tokens() gives the tower's hidden
//     states [batch*tokens, vision_hidden] for models that use all tokens.
//   - encode_texts(): a causal pre-LN text transformer over ids [batch, len] with learned
//     positions, final LayerNorm, pooled at each sample's EOS position, projected, L2-normalised.
//   - similarity(): exp(logit_scale) * images · texts^T, [images, texts] (CLIP's
//     logits_per_image).
//   - Seeded synthetic texts: sample 0 fills `len`, later ones a random length in [len/2, len];
//     the last real token is EOS (vocab - 1, or eos_token_id), padding (id 0) follows it — unseen
//     by EOS under the causal mask.
//   - Checkpoints (clip_checkpoint.cpp): read_clip_tensors() reads CLIPModel's names —
//     text_model.{embeddings.{token,position}_embedding, encoder.layers.N.{self_attn.{q,k,v,out}_proj,
//     layer_norm1, mlp.fc1, mlp.fc2, layer_norm2}, final_layer_norm}, vision_model.{embeddings.
//     {class_embedding, patch_embedding (no bias), position_embedding}, pre_layrnorm,
//     encoder.layers.N.*, post_layernorm}, visual_projection, text_projection (no biases) and
//     the learned logit_scale; read_clip_vision_tensors() reads a vision tower under any prefix
//     (LLaVA's vision_tower.vision_model.).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/models/decoder_only_lm.h"
#include "kernels/models/vision_tower.h"

namespace am::kernels {

struct ClipConfig {
  VitTowerConfig vision;
  StackConfig text;
  int64_t vocab = 0, max_positions = 0, projection = 0;
  float logit_scale = 2.6593f;
  int64_t eos_token = -1;  // -1: pool at each text's largest id (legacy)
};

Result<ClipConfig> clip_config_from(const ConfigReader& cfg, const std::string& family);

struct ClipTexts {
  int64_t batch = 0, len = 0;
  std::vector<int32_t> ids;       // batch*len
  std::vector<int32_t> eos_rows;  // batch: row b*len + position of EOS
};
ClipTexts seeded_clip_texts(int64_t batch, int64_t len, int64_t vocab, uint64_t seed, uint64_t stream,
                            int64_t eos_token = -1);
// Texts over given ids [batch*len] pooled by the config's rule (eos_token, or the largest id);
// InvalidArgument when an id is outside [0, vocab) or the sizes disagree.
Result<ClipTexts> clip_texts(std::vector<int32_t> ids, int64_t batch, int64_t len, const ClipConfig& c);

// Every CLIP weight as f32 in the reference layout (linear weights [out, in]).
struct ClipTensors {
  VitTowerTensors vision;
  Tensor post_g, post_b;          // vision post_layernorm
  Tensor visual_projection;       // [projection, vision hidden]
  Tensor text_tokens, text_positions;
  StackTensors text;              // final_g/b = the text tower's final_layer_norm
  Tensor text_projection;         // [projection, text hidden]
  float logit_scale = 0.0f;
};
class Checkpoint;
// A CLIP vision tower's tensors under `prefix` (CLIP's "vision_model.", LLaVA's
// "vision_tower.vision_model."): the first c.layers encoder layers, pre_layrnorm, and the final
// norm only when c.final_norm. The patch embedding has no bias in CLIP (a zero bias is used).
Result<VitTowerTensors> read_clip_vision_tensors(const Checkpoint& file, const std::string& prefix,
                                                 const VitTowerConfig& c);
// A CLIP-style encoder layer stack (self_attn.{q,k,v,out}_proj, layer_norm1, mlp.fc1/fc2,
// layer_norm2) under `prefix` ("text_model.encoder.layers."): layers first .. first + s.layers - 1.
Result<StackTensors> read_clip_layers(const Checkpoint& file, const std::string& prefix, const StackConfig& s,
                                      int64_t first = 0);

Result<ClipTensors> read_clip_tensors(const Checkpoint& file, const ClipConfig& c);

class ClipModel {
 public:
  static std::size_t estimate_bytes(const ClipConfig& c, const FormatPlan& f);
  static Result<ClipModel> create(const ClipConfig& c, const FormatPlan& f, SeededWeights& src);
  // Over given tensors (shapes checked against `c`, InvalidArgument naming the tensor).
  static Result<ClipModel> from_tensors(const ClipConfig& c, const FormatPlan& f, ClipTensors t, const ExecContext& ctx);

  const ClipConfig& config() const { return config_; }
  std::size_t weights_bytes() const;
  void add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const;

  Result<Tensor> encode_image_tokens(Backend& be, ConstTensorView pixels, int64_t batch) const;
  // Post-LN, projection and (when normalize) L2 norm of pooled vision rows [n, vision_hidden]
  // -> [n, projection].
  Result<Tensor> project_images(Backend& be, ConstTensorView pooled, bool normalize = true) const;
  // L2-normalises rows of [n, projection] in place.
  Status normalize(Backend& be, TensorView x) const;
  Result<Tensor> encode_images(Backend& be, ConstTensorView pixels, int64_t batch) const;
  // Text embeddings [batch, projection]: the projected EOS states, L2-normalised when normalize.
  Result<Tensor> encode_texts(Backend& be, const ClipTexts& texts, bool normalize = true) const;
  Status similarity(Backend& be, ConstTensorView images, ConstTensorView texts, TensorView logits) const;

 private:
  ClipConfig config_;
  VitTower vision_;
  Tensor post_g_, post_b_;
  Linear visual_projection_;
  TextEmbedding text_embedding_;
  TransformerStack text_;
  Linear text_projection_;
  Tensor l2_vision_, l2_text_;
};

}  // namespace am::kernels
