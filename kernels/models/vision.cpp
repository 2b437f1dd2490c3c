// The vision family as a ModelGraph: ViT/DeiT classification, or DETR when variant = "detr".
#include "kernels/models/vision.h"

#include <memory>
#include <optional>
#include <string>

#include "kernels/models/families.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/models/vision_tower.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x56495457ull;  // "VITW"
constexpr uint64_t kPixelStream = 0x56495450ull;   // "VITP"
constexpr float kHeadStd = 0.02f;

class VitClassifierGraph final : public ModelGraph {
 public:
  VitClassifierGraph(VitClassifier model, Tensor pixels, int64_t batch)
      : model_(std::move(model)), pixels_(std::move(pixels)), batch_(batch) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override { return model_.required_ops(); }
  std::size_t weights_bytes() const override { return model_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return 0; }

  Result<GraphOutput> forward(Backend& be) const override {
    GraphOutput out;
    AM_ASSIGN_OR_RETURN(out.output, model_.logits(be, pixels_.view(), batch_));
    out.logits = true;
    return out;
  }

 private:
  VitClassifier model_;
  Tensor pixels_;
  int64_t batch_;
};

}  // namespace

Result<VitClassifierConfig> vit_classifier_config_from_json(const nlohmann::json& doc) {
  ConfigReader cfg(doc, "vision");
  VitClassifierConfig c;
  AM_ASSIGN_OR_RETURN(c.tower, vit_tower_config_from(cfg, "", "vision", 1e-12f));
  AM_ASSIGN_OR_RETURN(c.classes, cfg.dim("num_classes"));
  AM_ASSIGN_OR_RETURN(bool distill, cfg.flag("distillation", false));
  c.tower.extra_tokens = distill ? 2 : 1;
  return c;
}

std::vector<std::pair<Op, WeightFormat>> VitClassifier::required_ops() const {
  std::vector<std::pair<Op, WeightFormat>> ops;
  tower.add_required_ops(ops);
  require(ops, Op::kIndexRows);
  require(ops, Op::kLinear, head.format());
  if (distilled()) require(ops, Op::kAdd);
  return ops;
}

std::size_t VitClassifier::weights_bytes() const {
  return tower.weights_bytes() + head.weight_bytes() + (distilled() ? head_dist.weight_bytes() : 0);
}

Result<Tensor> VitClassifier::logits(Backend& be, ConstTensorView pixels, int64_t batch) const {
  AM_ASSIGN_OR_RETURN(Tensor hidden, tower.forward(be, pixels, batch));
  const int64_t tokens = tower.config().tokens();
  Tensor cls = be.tensor(Shape{batch, tower.config().hidden});
  AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), tokens, 0, cls.view()));
  Tensor out = be.tensor(Shape{batch, head.out_features()});
  AM_RETURN_IF_ERROR(be.linear(head, cls.view(), out.view()));
  if (distilled()) {
    AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), tokens, 1, cls.view()));
    Tensor dist = be.tensor(Shape{batch, head.out_features()});
    AM_RETURN_IF_ERROR(be.linear(head_dist, cls.view(), dist.view()));
    AM_RETURN_IF_ERROR(be.add(out.view(), dist.view()));
  }
  return out;
}

Result<std::unique_ptr<ModelGraph>> build_vit_classifier_graph(const jobs::JobSpec& spec, Precision precision,
                                                               const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(VitClassifierConfig vc, vit_classifier_config_from_json(spec.model_config));
  const VitTowerConfig& tc = vc.tower;
  const FormatPlan formats = format_plan_for(precision);
  // model_config "weights_path" names a ViT safetensors checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "vision"));
  VitClassifier model;
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(model, load_vit_checkpoint(*checkpoint, vc, formats, ctx));
  } else {
    SeededWeights src(spec.seed, kWeightStream, ctx);
    AM_ASSIGN_OR_RETURN(model.tower, VitTower::create(tc, formats, src));
    // DeiT averages its two heads at inference; the 1/2 is folded into both heads' draws.
    const bool distill = model.distilled();
    const float head_std = distill ? kHeadStd / 2 : kHeadStd;
    model.head = src.linear(tc.hidden, vc.classes, head_std, true, 0.0f, formats.output);
    if (distill) model.head_dist = src.linear(tc.hidden, vc.classes, head_std, true, 0.0f, formats.output);
  }
  Tensor pixels = seeded_pixels(spec.batch, tc.image_size, tc.channels, spec.seed, kPixelStream, ctx);
  return std::unique_ptr<ModelGraph>(
      std::make_unique<VitClassifierGraph>(std::move(model), std::move(pixels), spec.batch));
}

Result<std::unique_ptr<ModelGraph>> build_vision_graph(const jobs::JobSpec& spec, Precision precision,
                                                       const ExecContext& ctx) {
  ConfigReader cfg(spec.model_config, "vision");
  AM_ASSIGN_OR_RETURN(std::string variant, cfg.text("variant", "vit"));
  if (variant == "vit") return build_vit_classifier_graph(spec, precision, ctx);
  if (variant == "detr") return build_detr_graph(spec, precision, ctx);
  return cfg.error("'variant' must be \"vit\" or \"detr\", got \"" + variant + "\"");
}

}  // namespace am::kernels
