// The vision family as a ModelGraph: ViT/DeiT classification, or DETR when variant = "detr".
#include "kernels/models/vision.h"

#include <memory>

#include "kernels/models/families.h"
#include "kernels/models/vision_tower.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x56495457ull;  // "VITW"
constexpr uint64_t kPixelStream = 0x56495450ull;   // "VITP"
constexpr float kHeadStd = 0.02f;

class VitClassifierGraph final : public ModelGraph {
 public:
  VitClassifierGraph(VitTower tower, Linear head, Linear head_dist, Tensor pixels, int64_t batch)
      : tower_(std::move(tower)), head_(std::move(head)), head_dist_(std::move(head_dist)),
        pixels_(std::move(pixels)), batch_(batch) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    tower_.add_required_ops(ops);
    require(ops, Op::kIndexRows);
    require(ops, Op::kLinear, head_.format());
    if (distilled()) require(ops, Op::kAdd);
    return ops;
  }
  std::size_t weights_bytes() const override {
    return tower_.weights_bytes() + head_.weight_bytes() + (distilled() ? head_dist_.weight_bytes() : 0);
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return 0; }

  Result<GraphOutput> run(Backend& be) const override {
    AM_ASSIGN_OR_RETURN(Tensor hidden, tower_.forward(be, pixels_.view(), batch_));
    const int64_t tokens = tower_.config().tokens();
    Tensor cls(Shape{batch_, tower_.config().hidden});
    AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), tokens, 0, cls.view()));
    GraphOutput out;
    out.output = Tensor(Shape{batch_, head_.out_features()});
    out.logits = true;
    AM_RETURN_IF_ERROR(be.linear(head_, cls.view(), out.output.view()));
    if (distilled()) {
      AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), tokens, 1, cls.view()));
      Tensor dist(Shape{batch_, head_.out_features()});
      AM_RETURN_IF_ERROR(be.linear(head_dist_, cls.view(), dist.view()));
      AM_RETURN_IF_ERROR(be.add(out.output.view(), dist.view()));
    }
    return out;
  }

 private:
  bool distilled() const { return tower_.config().extra_tokens == 2; }
  VitTower tower_;
  Linear head_, head_dist_;
  Tensor pixels_;
  int64_t batch_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_vit_classifier_graph(const jobs::JobSpec& spec, Precision precision,
                                                               const ExecContext& ctx) {
  ConfigReader cfg(spec.model_config, "vision");
  AM_ASSIGN_OR_RETURN(VitTowerConfig tc, vit_tower_config_from(cfg, "", "vision", 1e-12f));
  AM_ASSIGN_OR_RETURN(int64_t classes, cfg.dim("num_classes"));
  AM_ASSIGN_OR_RETURN(bool distill, cfg.flag("distillation", false));
  tc.extra_tokens = distill ? 2 : 1;
  const FormatPlan formats = format_plan_for(precision);
  SeededWeights src(spec.seed, kWeightStream, ctx);
  AM_ASSIGN_OR_RETURN(VitTower tower, VitTower::create(tc, formats, src));
  // DeiT averages its two heads at inference; the 1/2 is folded into both heads' draws.
  const float head_std = distill ? kHeadStd / 2 : kHeadStd;
  Linear head = src.linear(tc.hidden, classes, head_std, true, 0.0f, formats.output);
  Linear head_dist;
  if (distill) head_dist = src.linear(tc.hidden, classes, head_std, true, 0.0f, formats.output);
  Tensor pixels = seeded_pixels(spec.batch, tc.image_size, tc.channels, spec.seed, kPixelStream, ctx);
  return std::unique_ptr<ModelGraph>(std::make_unique<VitClassifierGraph>(
      std::move(tower), std::move(head), std::move(head_dist), std::move(pixels), spec.batch));
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
