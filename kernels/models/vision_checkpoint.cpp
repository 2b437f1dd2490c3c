// ViT / DeiT checkpoints (HF ViTForImageClassification, DeiTForImageClassificationWithTeacher
// names) to VitClassifier.
#include <string>
#include <utility>

#include "kernels/models/vision.h"
#include "kernels/weights/linear_tensors.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {

Result<VitClassifier> load_vit_checkpoint(const std::string& path, const VitClassifierConfig& config,
                                          const FormatPlan& formats, const ExecContext& ctx) {
  const VitTowerConfig& c = config.tower;
  const bool distilled = c.extra_tokens == 2;
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  // DeiT's distilled models nest the encoder under "deit." (ViT's and DeiT's plain ones under "vit.").
  const std::string p = distilled ? "deit." : "vit.";
  const int64_t h = c.hidden;
  VitTowerTensors t;
  AM_ASSIGN_OR_RETURN(t.patch_w, file.read_f32(p + "embeddings.patch_embeddings.projection.weight",
                                               Shape{h, c.channels, c.patch, c.patch}));
  AM_ASSIGN_OR_RETURN(t.patch_b, file.read_f32(p + "embeddings.patch_embeddings.projection.bias", Shape{h}));
  AM_ASSIGN_OR_RETURN(Tensor cls, file.read_f32(p + "embeddings.cls_token", Shape{1, 1, h}));
  t.extra = Tensor(Shape{c.extra_tokens, h});
  host_copy_rows(ConstTensorView{cls.data(), Shape{1, h}}, t.extra.view(), 0);
  if (distilled) {
    AM_ASSIGN_OR_RETURN(Tensor dist, file.read_f32(p + "embeddings.distillation_token", Shape{1, 1, h}));
    host_copy_rows(ConstTensorView{dist.data(), Shape{1, h}}, t.extra.view(), 1);
  }
  AM_ASSIGN_OR_RETURN(t.positions, file.read_f32(p + "embeddings.position_embeddings", Shape{1, c.tokens(), h}));
  t.positions.reshape(Shape{c.tokens(), h});
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string b = p + "encoder.layer." + std::to_string(i) + ".";
    StackLayerTensors l;
    auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(b + name, shape));
      return Status::Ok();
    };
    auto linear = [&](const std::string& name, int64_t in, int64_t out, Tensor& w, Tensor& bias) -> Status {
      AM_RETURN_IF_ERROR(read(name + ".weight", Shape{out, in}, w));
      return read(name + ".bias", Shape{out}, bias);
    };
    AM_RETURN_IF_ERROR(read("layernorm_before.weight", Shape{h}, l.norm_self_g));
    AM_RETURN_IF_ERROR(read("layernorm_before.bias", Shape{h}, l.norm_self_b));
    AM_RETURN_IF_ERROR(linear("attention.attention.query", h, h, l.q_w, l.q_b));
    AM_RETURN_IF_ERROR(linear("attention.attention.key", h, h, l.k_w, l.k_b));
    AM_RETURN_IF_ERROR(linear("attention.attention.value", h, h, l.v_w, l.v_b));
    AM_RETURN_IF_ERROR(linear("attention.output.dense", h, h, l.o_w, l.o_b));
    AM_RETURN_IF_ERROR(read("layernorm_after.weight", Shape{h}, l.norm_ffn_g));
    AM_RETURN_IF_ERROR(read("layernorm_after.bias", Shape{h}, l.norm_ffn_b));
    AM_RETURN_IF_ERROR(linear("intermediate.dense", h, c.intermediate, l.up_w, l.up_b));
    AM_RETURN_IF_ERROR(linear("output.dense", c.intermediate, h, l.down_w, l.down_b));
    t.stack.layers.push_back(std::move(l));
  }
  if (c.final_norm) {
    AM_ASSIGN_OR_RETURN(t.stack.final_g, file.read_f32(p + "layernorm.weight", Shape{h}));
    AM_ASSIGN_OR_RETURN(t.stack.final_b, file.read_f32(p + "layernorm.bias", Shape{h}));
  }
  VitClassifier m;
  AM_ASSIGN_OR_RETURN(m.tower, VitTower::from_tensors(c, formats, std::move(t), ctx));
  // One head, or DeiT's pair whose logits are averaged: the 1/2 is folded into both (exact).
  auto head = [&](const std::string& name, float scale, Linear& out) -> Status {
    AM_ASSIGN_OR_RETURN(Tensor w, file.read_f32(name + ".weight", Shape{config.classes, h}));
    AM_ASSIGN_OR_RETURN(Tensor b, file.read_f32(name + ".bias", Shape{config.classes}));
    for (Tensor* x : {&w, &b})
      for (int64_t i = 0; i < x->numel(); ++i) x->data()[i] *= scale;
    AM_ASSIGN_OR_RETURN(out, linear_from_tensors(c.family + " weights", name, std::move(w), std::move(b), h,
                                                 config.classes, true, formats.output, ctx));
    return Status::Ok();
  };
  if (distilled) {
    AM_RETURN_IF_ERROR(head("cls_classifier", 0.5f, m.head));
    AM_RETURN_IF_ERROR(head("distillation_classifier", 0.5f, m.head_dist));
  } else {
    AM_RETURN_IF_ERROR(head("classifier", 1.0f, m.head));
  }
  return m;
}

}  // namespace am::kernels
