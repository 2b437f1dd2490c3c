// The vision family: ViT / DeiT image classification (variant "vit", the default) and DETR
// object detection (variant "detr", vision_detr.cpp).
//
// ViT/DeiT config keys: image_size, patch, channels (default 3), layers, hidden, heads,
// intermediate, activation (default "gelu"), norm_eps (default 1e-12), num_classes,
// distillation (default false: DeiT's distilled models add a distillation token whose head is
// averaged with the class head at inference). Input: seeded N(0,1) images of the config's size,
// `batch` of them (seq_len does not apply). Output: class logits [batch, num_classes], logits=true.
#pragma once

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_vit_classifier_graph(const jobs::JobSpec& spec, Precision precision,
                                                               const ExecContext& ctx);
// vision_detr.cpp
Result<std::unique_ptr<ModelGraph>> build_detr_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx);

}  // namespace am::kernels
