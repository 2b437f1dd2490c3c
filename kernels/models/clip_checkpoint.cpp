// CLIP checkpoints (transformers' CLIPModel names) to ClipModel's tensors; the vision tower and
// encoder-layer readers are shared with LLaVA and X-CLIP.
#include <string>
#include <utility>

#include "kernels/models/clip_model.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {

Result<StackTensors> read_clip_layers(const Checkpoint& file, const std::string& prefix, const StackConfig& s,
                                      int64_t first) {
  const int64_t h = s.hidden;
  StackTensors t;
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = prefix + std::to_string(first + i) + ".";
    StackLayerTensors l;
    auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(b + name, shape));
      return Status::Ok();
    };
    auto linear = [&](const std::string& name, int64_t in, int64_t out, Tensor& w, Tensor& bias) -> Status {
      AM_RETURN_IF_ERROR(read(name + ".weight", Shape{out, in}, w));
      return read(name + ".bias", Shape{out}, bias);
    };
    AM_RETURN_IF_ERROR(read("layer_norm1.weight", Shape{h}, l.norm_self_g));
    AM_RETURN_IF_ERROR(read("layer_norm1.bias", Shape{h}, l.norm_self_b));
    AM_RETURN_IF_ERROR(linear("self_attn.q_proj", h, h, l.q_w, l.q_b));
    AM_RETURN_IF_ERROR(linear("self_attn.k_proj", h, h, l.k_w, l.k_b));
    AM_RETURN_IF_ERROR(linear("self_attn.v_proj", h, h, l.v_w, l.v_b));
    AM_RETURN_IF_ERROR(linear("self_attn.out_proj", h, h, l.o_w, l.o_b));
    AM_RETURN_IF_ERROR(read("layer_norm2.weight", Shape{h}, l.norm_ffn_g));
    AM_RETURN_IF_ERROR(read("layer_norm2.bias", Shape{h}, l.norm_ffn_b));
    AM_RETURN_IF_ERROR(linear("mlp.fc1", h, s.intermediate, l.up_w, l.up_b));
    AM_RETURN_IF_ERROR(linear("mlp.fc2", s.intermediate, h, l.down_w, l.down_b));
    t.layers.push_back(std::move(l));
  }
  return t;
}

Result<VitTowerTensors> read_clip_vision_tensors(const Checkpoint& file, const std::string& prefix,
                                                 const VitTowerConfig& c) {
  const int64_t h = c.hidden;
  VitTowerTensors t;
  AM_ASSIGN_OR_RETURN(t.patch_w, file.read_f32(prefix + "embeddings.patch_embedding.weight",
                                               Shape{h, c.channels, c.patch, c.patch}));
  t.patch_b = Tensor(Shape{h});  // CLIP's patch convolution has no bias
  AM_ASSIGN_OR_RETURN(t.extra, file.read_f32(prefix + "embeddings.class_embedding", Shape{h}));
  t.extra.reshape(Shape{1, h});
  AM_ASSIGN_OR_RETURN(t.positions, file.read_f32(prefix + "embeddings.position_embedding.weight", Shape{c.tokens(), h}));
  if (c.pre_norm) {
    // transformers keeps CLIP's original spelling of this one ("layrnorm").
    AM_ASSIGN_OR_RETURN(t.pre_g, file.read_f32(prefix + "pre_layrnorm.weight", Shape{h}));
    AM_ASSIGN_OR_RETURN(t.pre_b, file.read_f32(prefix + "pre_layrnorm.bias", Shape{h}));
  }
  const StackConfig s = vit_stack_config(c.family, c.layers, c.hidden, c.heads, c.intermediate, c.activation, c.eps,
                                         c.final_norm);
  AM_ASSIGN_OR_RETURN(t.stack, read_clip_layers(file, prefix + "encoder.layers.", s));
  if (c.final_norm) {
    AM_ASSIGN_OR_RETURN(t.stack.final_g, file.read_f32(prefix + "post_layernorm.weight", Shape{h}));
    AM_ASSIGN_OR_RETURN(t.stack.final_b, file.read_f32(prefix + "post_layernorm.bias", Shape{h}));
  }
  return t;
}

Result<ClipTensors> read_clip_tensors(const Checkpoint& file, const ClipConfig& c) {
  const int64_t vh = c.vision.hidden, th = c.text.hidden;
  ClipTensors t;
  AM_ASSIGN_OR_RETURN(t.vision, read_clip_vision_tensors(file, "vision_model.", c.vision));
  AM_ASSIGN_OR_RETURN(t.post_g, file.read_f32("vision_model.post_layernorm.weight", Shape{vh}));
  AM_ASSIGN_OR_RETURN(t.post_b, file.read_f32("vision_model.post_layernorm.bias", Shape{vh}));
  AM_ASSIGN_OR_RETURN(t.visual_projection, file.read_f32("visual_projection.weight", Shape{c.projection, vh}));
  AM_ASSIGN_OR_RETURN(t.text_tokens, file.read_f32("text_model.embeddings.token_embedding.weight", Shape{c.vocab, th}));
  AM_ASSIGN_OR_RETURN(t.text_positions,
                      file.read_f32("text_model.embeddings.position_embedding.weight", Shape{c.max_positions, th}));
  AM_ASSIGN_OR_RETURN(t.text, read_clip_layers(file, "text_model.encoder.layers.", c.text));
  AM_ASSIGN_OR_RETURN(t.text.final_g, file.read_f32("text_model.final_layer_norm.weight", Shape{th}));
  AM_ASSIGN_OR_RETURN(t.text.final_b, file.read_f32("text_model.final_layer_norm.bias", Shape{th}));
  AM_ASSIGN_OR_RETURN(t.text_projection, file.read_f32("text_projection.weight", Shape{c.projection, th}));
  AM_ASSIGN_OR_RETURN(Tensor scale, file.read_f32("logit_scale", Shape{}));
  t.logit_scale = scale.data()[0];
  return t;
}

}  // namespace am::kernels
