#include <cmath>
#include <cstring>
#include <memory>

#include "common/clock.h"
#include "kernels/models/decoder_only.h"
#include "kernels/models/multimodal.h"
#include "kernels/models/vision_tower.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x4c4c5657ull;  // "LLVW"
constexpr uint64_t kPixelStream = 0x4c4c5650ull;
constexpr uint64_t kPromptStream = 0x4c4c5654ull;
constexpr uint64_t kForcedStream = 0x4c4c5646ull;
constexpr float kProjectorStd = 0.02f;

}  // namespace

std::vector<int32_t> llava_image_token_layout(int64_t crops, int64_t side, int64_t grid_rows, int64_t grid_cols) {
  const int64_t patches = side * side;
  std::vector<int32_t> ids;
  if (grid_rows == 0) {
    for (int64_t i = 0; i < crops * patches; ++i) ids.push_back(static_cast<int32_t>(i));
    return ids;
  }
  const int32_t newline = static_cast<int32_t>(crops * patches);
  for (int64_t i = 0; i < patches; ++i) ids.push_back(static_cast<int32_t>(i));
  for (int64_t gy = 0; gy < grid_rows * side; ++gy) {
    for (int64_t gx = 0; gx < grid_cols * side; ++gx) {
      const int64_t tile = 1 + (gy / side) * grid_cols + gx / side;
      ids.push_back(static_cast<int32_t>(tile * patches + (gy % side) * side + gx % side));
    }
    ids.push_back(newline);
  }
  return ids;
}

namespace {

using Clock = SteadyClock;

class LlavaGraph final : public ModelGraph {
 public:
  LlavaGraph(VitTower tower, Linear proj1, Linear proj2, DecoderLm lm, Tensor newline, std::vector<int32_t> layout,
             Tensor pixels, int64_t batch, int64_t crops, int64_t prompt_len, std::vector<int32_t> prompt,
             std::vector<int32_t> forced)
      : tower_(std::move(tower)), proj1_(std::move(proj1)), proj2_(std::move(proj2)), lm_(std::move(lm)),
        newline_(std::move(newline)), layout_(std::move(layout)), pixels_(std::move(pixels)), batch_(batch),
        crops_(crops), prompt_len_(prompt_len), prompt_(std::move(prompt)), forced_(std::move(forced)) {}

  int64_t image_tokens() const { return static_cast<int64_t>(layout_.size()); }
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops = lm_.required_ops();
    tower_.add_required_ops(ops);
    require(ops, Op::kLinear, proj1_.format());
    require(ops, Op::kActivation);
    return ops;
  }
  std::size_t weights_bytes() const override {
    return tower_.weights_bytes() + proj1_.weight_bytes() + proj2_.weight_bytes() + lm_.weights_bytes() +
           newline_.bytes();
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return batch_ * (image_tokens() + prompt_len_ + lm_.config.decode_steps); }

  Result<GraphOutput> run(Backend& be) const override {
    const int64_t steps = lm_.config.decode_steps, hidden = lm_.stack.config().hidden;
    const int64_t patches = tower_.config().patches(), tokens = tower_.config().tokens();
    const int64_t img = image_tokens(), prefill = img + prompt_len_, feats_per_image = crops_ * patches;
    const auto start = Clock::now();
    // Vision tower over every crop, class token dropped, projected to the LM width.
    AM_ASSIGN_OR_RETURN(Tensor vis, tower_.forward(be, pixels_.view(), batch_ * crops_));
    const int64_t feat_rows = batch_ * feats_per_image;
    Tensor feats(Shape{feat_rows, tower_.config().hidden});
    std::vector<int32_t> ids(static_cast<std::size_t>(feat_rows));
    for (int64_t i = 0; i < feat_rows; ++i) {
      ids[static_cast<std::size_t>(i)] = static_cast<int32_t>((i / patches) * tokens + 1 + i % patches);
    }
    AM_RETURN_IF_ERROR(be.index_rows(vis.view(), ids.data(), feat_rows, feats.view()));
    // Projected features of every crop, then the image_newline row, as one gather source.
    Tensor mid(Shape{feat_rows, proj1_.out_features()});
    Tensor projected(Shape{feat_rows + (newline_.empty() ? 0 : 1), hidden});
    AM_RETURN_IF_ERROR(be.linear(proj1_, feats.view(), mid.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kGeluErf, mid.view()));
    AM_RETURN_IF_ERROR(be.linear(proj2_, mid.view(), projected.view().row_range(0, feat_rows)));
    if (!newline_.empty()) copy_rows(newline_.view(), projected.view(), feat_rows);
    std::vector<int32_t> layout(static_cast<std::size_t>(batch_ * img));
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t i = 0; i < img; ++i) {
        const int32_t r = layout_[static_cast<std::size_t>(i)];
        layout[static_cast<std::size_t>(b * img + i)] =
            r == feats_per_image ? static_cast<int32_t>(feat_rows) : static_cast<int32_t>(b * feats_per_image + r);
      }
    Tensor image_embeds(Shape{batch_ * img, hidden});
    AM_RETURN_IF_ERROR(be.index_rows(projected.view(), layout.data(), batch_ * img, image_embeds.view()));
    // Prefill over [image tokens; prompt tokens].
    Tensor text(Shape{batch_ * prompt_len_, hidden});
    AM_RETURN_IF_ERROR(lm_.embedding.embed(be, prompt_.data(), batch_, prompt_len_, img, text.view()));
    Tensor x(Shape{batch_ * prefill, hidden});
    for (int64_t b = 0; b < batch_; ++b) {
      copy_rows(image_embeds.view().row_range(b * img, img), x.view(), b * prefill);
      copy_rows(text.view().row_range(b * prompt_len_, prompt_len_), x.view(), b * prefill + img);
    }
    StackCache cache = lm_.stack.make_cache(batch_, prefill + steps);
    AM_RETURN_IF_ERROR(lm_.stack.forward(be, x.view(), batch_, prefill, 0, &cache, nullptr));
    const int64_t vocab = lm_.head.out_features();
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_ * (steps + 1), vocab});
    Tensor last(Shape{batch_, hidden}), logits(Shape{batch_, vocab});
    AM_RETURN_IF_ERROR(take_rows(be, x.view(), prefill, prefill - 1, last.view()));
    AM_RETURN_IF_ERROR(be.linear(lm_.head, last.view(), logits.view()));
    store(logits, 0, out.output);
    out.phases.prefill_ms = ms_since(start);
    out.phases.prefill_tokens = batch_ * prefill;
    out.phases.first_token_ms = out.phases.prefill_ms;
    const auto decode_start = Clock::now();
    std::vector<int32_t> step_ids(static_cast<std::size_t>(batch_));
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t b = 0; b < batch_; ++b) step_ids[static_cast<std::size_t>(b)] = forced_[static_cast<std::size_t>(b * steps + t)];
      AM_RETURN_IF_ERROR(lm_.embedding.embed(be, step_ids.data(), batch_, 1, prefill + t, last.view()));
      AM_RETURN_IF_ERROR(lm_.stack.forward(be, last.view(), batch_, 1, prefill + t, &cache, nullptr));
      AM_RETURN_IF_ERROR(be.linear(lm_.head, last.view(), logits.view()));
      store(logits, t + 1, out.output);
      if (t == 0) out.phases.first_token_ms = ms_since(start);
    }
    out.phases.decode_ms = ms_since(decode_start);
    out.phases.decode_tokens = batch_ * steps;
    return out;
  }

 private:
  void store(const Tensor& logits, int64_t t, Tensor& all) const {
    const int64_t steps = lm_.config.decode_steps;
    for (int64_t b = 0; b < batch_; ++b) std::memcpy(all.row(b * (steps + 1) + t), logits.row(b), logits.cols() * sizeof(float));
  }
  VitTower tower_;
  Linear proj1_, proj2_;
  DecoderLm lm_;
  Tensor newline_;               // [1, hidden] with an AnyRes grid, else empty
  std::vector<int32_t> layout_;  // llava_image_token_layout()
  Tensor pixels_;
  int64_t batch_, crops_, prompt_len_;
  std::vector<int32_t> prompt_, forced_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_llava_graph(const jobs::JobSpec& spec, Precision precision,
                                                      const ExecContext& ctx) {
  const std::string family = "multimodal";
  ConfigReader cfg(spec.model_config, family);
  AM_ASSIGN_OR_RETURN(VitTowerConfig vc, vit_tower_config_from(cfg, "vision_", family, 1e-5f));
  if (vc.layers < 2) return cfg.error("vision_layers must be at least 2 (features come from the penultimate layer)");
  vc.layers -= 1;
  vc.pre_norm = true;
  vc.final_norm = false;
  AM_ASSIGN_OR_RETURN(int64_t crops, cfg.dim("image_crops", int64_t{1}));
  int64_t grid_rows = 0, grid_cols = 0;
  if (spec.model_config.contains("image_grid")) {
    const nlohmann::json& g = spec.model_config.at("image_grid");
    if (!g.is_array() || g.size() != 2 || !g[0].is_number_integer() || !g[1].is_number_integer() ||
        g[0].get<int64_t>() < 1 || g[1].get<int64_t>() < 1) {
      return cfg.error("'image_grid' must be [rows, cols] of positive integers (AnyRes tiles)");
    }
    grid_rows = g[0].get<int64_t>();
    grid_cols = g[1].get<int64_t>();
    if (spec.model_config.contains("image_crops") && crops != 1 + grid_rows * grid_cols) {
      return cfg.error("image_crops must be 1 + rows * cols of image_grid (the base view plus the tiles)");
    }
    crops = 1 + grid_rows * grid_cols;
  }
  nlohmann::json lm_doc = spec.model_config;
  lm_doc["style"] = "llama";
  AM_ASSIGN_OR_RETURN(DecoderLmConfig dc, decoder_lm_config_from_json(lm_doc, family));
  const int64_t side = vc.image_size / vc.patch;
  std::vector<int32_t> layout = llava_image_token_layout(crops, side, grid_rows, grid_cols);
  const int64_t img = static_cast<int64_t>(layout.size());
  if (img + spec.seq_len + dc.decode_steps > dc.max_positions) {
    return cfg.error("image tokens " + std::to_string(img) + " + seq_len + decode_steps exceed max_positions " +
                     std::to_string(dc.max_positions));
  }
  const FormatPlan f = format_plan_for(precision);
  AM_RETURN_IF_ERROR(check_weight_budget(family, VitTower::estimate_bytes(vc, f) + DecoderLm::estimate_bytes(dc, f)));
  SeededWeights src(spec.seed, kWeightStream, ctx);
  AM_ASSIGN_OR_RETURN(VitTower tower, VitTower::create(vc, f, src));
  const int64_t h = dc.stack.hidden;
  Linear p1 = src.linear(vc.hidden, h, kProjectorStd, true, 0.0f, f.feed_forward);
  Linear p2 = src.linear(h, h, kProjectorStd, true, 0.0f, f.feed_forward);
  AM_ASSIGN_OR_RETURN(DecoderLm lm, DecoderLm::create_synthetic(dc, f, spec.seed, ctx));
  // image_newline (AnyRes only): LLaVA-NeXT initialises it N(0, 1/sqrt(hidden)). Drawn last, so
  // it shifts no other weight's seed.
  Tensor newline = grid_rows > 0 ? src.normal(Shape{1, h}, 0.0f, 1.0f / std::sqrt(static_cast<float>(h))) : Tensor();
  const int64_t batch = spec.batch;
  Tensor pixels = seeded_pixels(batch * crops, vc.image_size, vc.channels, spec.seed, kPixelStream, ctx);
  auto prompt = seeded_token_ids(batch * spec.seq_len, dc.vocab, spec.seed, kPromptStream);
  auto forced = seeded_token_ids(batch * dc.decode_steps, dc.vocab, spec.seed, kForcedStream);
  return std::unique_ptr<ModelGraph>(std::make_unique<LlavaGraph>(
      std::move(tower), std::move(p1), std::move(p2), std::move(lm), std::move(newline), std::move(layout),
      std::move(pixels), batch, crops, spec.seq_len, std::move(prompt), std::move(forced)));
}

Result<std::unique_ptr<ModelGraph>> build_multimodal_graph(const jobs::JobSpec& spec, Precision precision,
                                                           const ExecContext& ctx) {
  ConfigReader cfg(spec.model_config, "multimodal");
  AM_ASSIGN_OR_RETURN(std::string variant, cfg.text("variant", "llava"));
  if (variant == "llava") return build_llava_graph(spec, precision, ctx);
  if (variant == "xclip") return build_xclip_graph(spec, precision, ctx);
  if (variant == "clap") return build_clap_graph(spec, precision, ctx);
  return cfg.error("'variant' must be \"llava\", \"xclip\" or \"clap\", got \"" + variant + "\"");
}

}  // namespace am::kernels
