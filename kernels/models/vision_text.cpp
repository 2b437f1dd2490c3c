#include "kernels/models/vision_text.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "kernels/models/clip_model.h"
#include "kernels/models/decoder_only.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x56455444ull;  // "VETD"
constexpr uint64_t kPixelStream = 0x56455450ull;
constexpr uint64_t kTextStream = 0x56455454ull;
constexpr uint64_t kPromptStream = 0x56455450ull + 1;
constexpr uint64_t kForcedStream = 0x56455446ull;

class ClipGraph final : public ModelGraph {
 public:
  ClipGraph(ClipModel model, Tensor pixels, ClipTexts texts, int64_t batch)
      : model_(std::move(model)), pixels_(std::move(pixels)), texts_(std::move(texts)), batch_(batch) {}
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    model_.add_required_ops(ops);
    return ops;
  }
  std::size_t weights_bytes() const override { return model_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return texts_.batch * texts_.len; }
  Result<GraphOutput> forward(Backend& be) const override {
    AM_ASSIGN_OR_RETURN(Tensor img, model_.encode_images(be, pixels_.view(), batch_));
    AM_ASSIGN_OR_RETURN(Tensor txt, model_.encode_texts(be, texts_));
    GraphOutput out;
    out.logits = true;
    out.output = be.tensor(Shape{batch_, texts_.batch});
    AM_RETURN_IF_ERROR(model_.similarity(be, img.view(), txt.view(), out.output.view()));
    return out;
  }

 private:
  ClipModel model_;
  Tensor pixels_;
  ClipTexts texts_;
  int64_t batch_;
};

class CaptionerGraph final : public ModelGraph {
 public:
  CaptionerGraph(VitTower encoder, DecoderLm decoder, Tensor pixels, int64_t batch, int64_t prompt_len,
                 std::vector<int32_t> prompt, std::vector<int32_t> forced)
      : encoder_(std::move(encoder)), decoder_(std::move(decoder)), pixels_(std::move(pixels)), batch_(batch),
        prompt_len_(prompt_len), prompt_(std::move(prompt)), forced_(std::move(forced)) {}
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops = decoder_.required_ops();
    encoder_.add_required_ops(ops);
    return ops;
  }
  std::size_t weights_bytes() const override { return encoder_.weights_bytes() + decoder_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return batch_ * (prompt_len_ + decoder_.config.decode_steps); }
  Result<GraphOutput> forward(Backend& be) const override {
    const int64_t steps = decoder_.config.decode_steps;
    const auto started = std::chrono::steady_clock::now();
    AM_ASSIGN_OR_RETURN(Tensor memory, encoder_.forward(be, pixels_.view(), batch_));
    StackCache cache = decoder_.stack.make_cache(be, batch_, prompt_len_ + steps);
    AM_RETURN_IF_ERROR(decoder_.stack.precompute_cross(be, memory.view(), batch_, encoder_.config().tokens(), nullptr, cache));
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_ * (steps + 1), decoder_.head.out_features()});
    AM_RETURN_IF_ERROR(generate_teacher_forced(be, decoder_.stack, decoder_.embedding, decoder_.head, batch_, prompt_,
                                               prompt_len_, forced_, steps, cache, started, out.output, out.phases));
    return out;
  }

 private:
  VitTower encoder_;
  DecoderLm decoder_;
  Tensor pixels_;
  int64_t batch_, prompt_len_;
  std::vector<int32_t> prompt_, forced_;
};

}  // namespace

Result<ClipModel> load_or_seed_clip(const jobs::JobSpec& spec, const ClipConfig& c, const FormatPlan& f,
                                    const ExecContext& ctx) {
  // model_config "weights_path" names a CLIPModel checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, c.vision.family));
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(*checkpoint));
    AM_ASSIGN_OR_RETURN(ClipTensors t, read_clip_tensors(file, c));
    return ClipModel::from_tensors(c, f, std::move(t), ctx);
  }
  SeededWeights src(spec.seed, kWeightStream, ctx);
  return ClipModel::create(c, f, src);
}

namespace {

Result<std::unique_ptr<ModelGraph>> build_clip(const jobs::JobSpec& spec, Precision precision,
                                               const ExecContext& ctx) {
  ConfigReader cfg(spec.model_config, "vision-encoder-text-decoder");
  AM_ASSIGN_OR_RETURN(ClipConfig c, clip_config_from(cfg, "vision-encoder-text-decoder"));
  const FormatPlan f = format_plan_for(precision);
  AM_ASSIGN_OR_RETURN(ClipModel model, load_or_seed_clip(spec, c, f, ctx));
  if (spec.seq_len > c.max_positions) {
    return invalid_argument("vision-encoder-text-decoder: seq_len " + std::to_string(spec.seq_len) +
                            " exceeds max_positions " + std::to_string(c.max_positions));
  }
  Tensor pixels = seeded_pixels(spec.batch, c.vision.image_size, c.vision.channels, spec.seed, kPixelStream, ctx);
  AM_ASSIGN_OR_RETURN(ClipTexts texts, clip_texts(seeded_clip_texts(spec.batch, spec.seq_len, c.vocab, spec.seed,
                                                                    kTextStream, c.eos_token).ids,
                                                  spec.batch, spec.seq_len, c));
  return std::unique_ptr<ModelGraph>(
      std::make_unique<ClipGraph>(std::move(model), std::move(pixels), std::move(texts), spec.batch));
}

Result<std::unique_ptr<ModelGraph>> build_captioner(const jobs::JobSpec& spec, Precision precision,
                                                    const ExecContext& ctx) {
  const std::string family = "vision-encoder-text-decoder";
  ConfigReader cfg(spec.model_config, family);
  if (spec.model_config.contains(kWeightsPathKey)) {
    return unsupported(family + ": ViT-GPT2 checkpoints are not read yet ('weights_path')");
  }
  AM_ASSIGN_OR_RETURN(VitTowerConfig vc, vit_tower_config_from(cfg, "vision_", family, 1e-12f));
  nlohmann::json dec = spec.model_config;
  dec["style"] = "gpt2";
  AM_ASSIGN_OR_RETURN(DecoderLmConfig dc, decoder_lm_config_from_json(dec, family));
  dc.stack.cross = true;
  if (vc.hidden != dc.stack.hidden) return cfg.error("vision_hidden must equal hidden (the decoder cross-attends to it)");
  if (spec.seq_len + dc.decode_steps > dc.max_positions) {
    return cfg.error("seq_len + decode_steps exceeds max_positions " + std::to_string(dc.max_positions));
  }
  const FormatPlan f = format_plan_for(precision);
  SeededWeights src(spec.seed, kWeightStream, ctx);
  AM_ASSIGN_OR_RETURN(VitTower encoder, VitTower::create(vc, f, src));
  AM_ASSIGN_OR_RETURN(DecoderLm decoder, DecoderLm::create_synthetic(dc, f, spec.seed, ctx));
  Tensor pixels = seeded_pixels(spec.batch, vc.image_size, vc.channels, spec.seed, kPixelStream, ctx);
  const int64_t batch = spec.batch, prompt_len = spec.seq_len;
  std::vector<int32_t> prompt = seeded_token_ids(batch * prompt_len, dc.vocab, spec.seed, kPromptStream);
  std::vector<int32_t> forced = seeded_token_ids(batch * dc.decode_steps, dc.vocab, spec.seed, kForcedStream);
  return std::unique_ptr<ModelGraph>(std::make_unique<CaptionerGraph>(std::move(encoder), std::move(decoder),
                                                                      std::move(pixels), batch, prompt_len,
                                                                      std::move(prompt), std::move(forced)));
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_vision_encoder_text_decoder_graph(const jobs::JobSpec& spec,
                                                                            Precision precision,
                                                                            const ExecContext& ctx) {
  ConfigReader cfg(spec.model_config, "vision-encoder-text-decoder");
  AM_ASSIGN_OR_RETURN(std::string variant, cfg.text("variant", "clip"));
  if (variant == "clip") return build_clip(spec, precision, ctx);
  if (variant == "vit-gpt2") return build_captioner(spec, precision, ctx);
  return cfg.error("'variant' must be \"clip\" or \"vit-gpt2\", got \"" + variant + "\"");
}

}  // namespace am::kernels
