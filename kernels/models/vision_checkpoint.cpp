// ViT checkpoints (HF ViTForImageClassification names) to VitClassifier.
#include <string>
#include <utility>

#include "kernels/models/vision.h"
#include "kernels/weights/linear_tensors.h"
#include "kernels/weights/safetensors.h"

namespace am::kernels {

Result<VitClassifier> load_vit_checkpoint(const std::string& path, const VitClassifierConfig& config,
                                          const FormatPlan& formats, const ExecContext& ctx) {
  const VitTowerConfig& c = config.tower;
  if (c.extra_tokens != 1) {
    return unsupported(c.family + ": checkpoints of distilled DeiT (two heads) are not read yet ('distillation')");
  }
  AM_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  const int64_t h = c.hidden;
  VitTowerTensors t;
  AM_ASSIGN_OR_RETURN(t.patch_w, file.read_f32("vit.embeddings.patch_embeddings.projection.weight",
                                               Shape{h, c.channels, c.patch, c.patch}));
  AM_ASSIGN_OR_RETURN(t.patch_b, file.read_f32("vit.embeddings.patch_embeddings.projection.bias", Shape{h}));
  AM_ASSIGN_OR_RETURN(t.extra, file.read_f32("vit.embeddings.cls_token", Shape{1, 1, h}));
  t.extra.reshape(Shape{1, h});
  AM_ASSIGN_OR_RETURN(t.positions, file.read_f32("vit.embeddings.position_embeddings", Shape{1, c.tokens(), h}));
  t.positions.reshape(Shape{c.tokens(), h});
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string b = "vit.encoder.layer." + std::to_string(i) + ".";
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
    AM_ASSIGN_OR_RETURN(t.stack.final_g, file.read_f32("vit.layernorm.weight", Shape{h}));
    AM_ASSIGN_OR_RETURN(t.stack.final_b, file.read_f32("vit.layernorm.bias", Shape{h}));
  }
  VitClassifier m;
  AM_ASSIGN_OR_RETURN(m.tower, VitTower::from_tensors(c, formats, std::move(t), ctx));
  AM_ASSIGN_OR_RETURN(Tensor head_w, file.read_f32("classifier.weight", Shape{config.classes, h}));
  AM_ASSIGN_OR_RETURN(Tensor head_b, file.read_f32("classifier.bias", Shape{config.classes}));
  AM_ASSIGN_OR_RETURN(m.head, linear_from_tensors(c.family + " weights", "classifier", std::move(head_w),
                                                  std::move(head_b), h, config.classes, true, formats.output, ctx));
  return m;
}

}  // namespace am::kernels
