// The vision family: ViT / DeiT image classification (variant "vit", the default) and DETR
// object detection (variant "detr", vision_detr.cpp).
//
// ViT/DeiT config keys: image_size, patch, channels (default 3), layers, hidden, heads,
// intermediate, activation (default "gelu"), norm_eps (default 1e-12), num_classes,
// distillation (default false: DeiT's distilled models add a distillation token whose head is
// averaged with the class head at inference). Input: seeded N(0,1) images of the config's size,
// `batch` of them (seq_len does not apply). Output: class logits [batch, num_classes], logits=true.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/models/model.h"
#include "kernels/models/vision_tower.h"

namespace am::kernels {

// A ViT/DeiT classifier's config: the tower's keys plus num_classes and distillation.
struct VitClassifierConfig {
  VitTowerConfig tower;
  int64_t classes = 0;
};
Result<VitClassifierConfig> vit_classifier_config_from_json(const nlohmann::json& doc);

// The classifier: logits = head(class token) (+ head_dist(distillation token) for DeiT).
struct VitClassifier {
  VitTower tower;
  Linear head, head_dist;  // head_dist only when distilled

  bool distilled() const { return tower.config().extra_tokens == 2; }
  std::vector<std::pair<Op, WeightFormat>> required_ops() const;
  std::size_t weights_bytes() const;
  // pixels [batch*image*image, channels] (channels-last) -> logits [batch, classes].
  Result<Tensor> logits(Backend& be, ConstTensorView pixels, int64_t batch) const;
};

// vision_checkpoint.cpp: a ViT classifier from a Hugging Face ViTForImageClassification
// checkpoint (vit.embeddings.{cls_token, position_embeddings, patch_embeddings.projection},
// vit.encoder.layer.N.{layernorm_before, attention.attention.{query,key,value},
// attention.output.dense, layernorm_after, intermediate.dense, output.dense}, vit.layernorm,
// classifier), or, with distillation, a DeiTForImageClassificationWithTeacher one (the same under
// "deit.", plus deit.embeddings.distillation_token, cls_classifier and distillation_classifier,
// whose averaged logits are the output: the 1/2 is folded into both heads), quantized on load;
// the same contract as the other *_checkpoint.h loaders (NotFound / InvalidArgument naming the
// tensor).
Result<VitClassifier> load_vit_checkpoint(const std::string& path, const VitClassifierConfig& config,
                                          const FormatPlan& formats, const ExecContext& ctx);

Result<std::unique_ptr<ModelGraph>> build_vit_classifier_graph(const jobs::JobSpec& spec, Precision precision,
                                                               const ExecContext& ctx);
// vision_detr.cpp
Result<std::unique_ptr<ModelGraph>> build_detr_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx);
// The DETR graph over given pixels [batch*image_size^2*channels] channels-last (reference
// checks); null = seeded, as build_detr_graph().
Result<std::unique_ptr<ModelGraph>> build_detr_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                        const ExecContext& ctx, const std::vector<float>* pixels);

}  // namespace am::kernels
