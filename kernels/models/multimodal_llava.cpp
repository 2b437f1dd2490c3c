#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "kernels/models/decoder_only.h"
#include "kernels/models/multimodal.h"
#include "kernels/models/clip_model.h"
#include "kernels/models/decoder_only_checkpoint.h"
#include "kernels/models/vision_tower.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x4c4c5657ull;  // "LLVW"
constexpr uint64_t kPixelStream = 0x4c4c5650ull;
constexpr uint64_t kPromptStream = 0x4c4c5654ull;
constexpr uint64_t kForcedStream = 0x4c4c5646ull;
constexpr float kProjectorStd = 0.02f;
// Where a seeded prompt holds its image token: after the first token.
constexpr int64_t kImagePromptPosition = 1;
constexpr int64_t kLlavaImageToken = 32000;

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

// The trained parts of a LLaVA model.
struct Llava {
  VitTower tower;
  Linear proj1, proj2;
  Activation projector_act = Activation::kGeluErf;
  DecoderLm lm;
  Tensor newline;  // [1, hidden] with an AnyRes grid, else empty
  bool keep_class = false;  // vision_feature_select_strategy "full"
  int32_t image_token = 0;

  std::size_t weights_bytes() const {
    return tower.weights_bytes() + proj1.weight_bytes() + proj2.weight_bytes() + lm.weights_bytes() + newline.bytes();
  }
};

class LlavaGraph final : public ModelGraph {
 public:
  LlavaGraph(Llava m, std::vector<int32_t> layout, Tensor pixels, int64_t batch, int64_t crops, int64_t prompt_len,
             std::vector<int32_t> prompt, std::vector<int32_t> image_at, std::vector<int32_t> forced)
      : m_(std::move(m)), layout_(std::move(layout)), pixels_(std::move(pixels)), batch_(batch), crops_(crops),
        prompt_len_(prompt_len), prompt_(std::move(prompt)), image_at_(std::move(image_at)), forced_(std::move(forced)) {}

  int64_t image_tokens() const { return static_cast<int64_t>(layout_.size()); }
  // The prefill: the prompt with its image token replaced by the image's tokens.
  int64_t prefill_len() const { return prompt_len_ - 1 + image_tokens(); }
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops = m_.lm.required_ops();
    m_.tower.add_required_ops(ops);
    require(ops, Op::kLinear, m_.proj1.format());
    require(ops, Op::kActivation);
    return ops;
  }
  std::size_t weights_bytes() const override { return m_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return batch_ * (prefill_len() + m_.lm.config.decode_steps); }

  Result<GraphOutput> forward(Backend& be) const override {
    const int64_t steps = m_.lm.config.decode_steps, hidden = m_.lm.stack.config().hidden;
    const int64_t tokens = m_.tower.config().tokens(), skip = m_.keep_class ? 0 : 1, per_crop = tokens - skip;
    const int64_t img = image_tokens(), prefill = prefill_len(), feats_per_image = crops_ * per_crop;
    const auto start = Clock::now();
    // Vision tower over every crop (class token dropped unless "full"), projected to the LM width.
    AM_ASSIGN_OR_RETURN(Tensor vis, m_.tower.forward(be, pixels_.view(), batch_ * crops_));
    const int64_t feat_rows = batch_ * feats_per_image;
    Tensor feats = be.tensor(Shape{feat_rows, m_.tower.config().hidden});
    std::vector<int32_t> ids(static_cast<std::size_t>(feat_rows));
    for (int64_t i = 0; i < feat_rows; ++i) {
      ids[static_cast<std::size_t>(i)] = static_cast<int32_t>((i / per_crop) * tokens + skip + i % per_crop);
    }
    AM_RETURN_IF_ERROR(be.index_rows(vis.view(), ids.data(), feat_rows, feats.view()));
    // Projected features of every crop, then the image_newline row, as one gather source.
    Tensor mid = be.tensor(Shape{feat_rows, m_.proj1.out_features()});
    Tensor projected = be.tensor(Shape{feat_rows + (m_.newline.empty() ? 0 : 1), hidden});
    AM_RETURN_IF_ERROR(be.linear(m_.proj1, feats.view(), mid.view()));
    AM_RETURN_IF_ERROR(be.activation(m_.projector_act, mid.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.proj2, mid.view(), projected.view().row_range(0, feat_rows)));
    if (!m_.newline.empty()) AM_RETURN_IF_ERROR(copy_weight_rows(be, m_.newline.view(), projected.view(), feat_rows));
    std::vector<int32_t> layout(static_cast<std::size_t>(batch_ * img));
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t i = 0; i < img; ++i) {
        const int32_t r = layout_[static_cast<std::size_t>(i)];
        layout[static_cast<std::size_t>(b * img + i)] =
            r == feats_per_image ? static_cast<int32_t>(feat_rows) : static_cast<int32_t>(b * feats_per_image + r);
      }
    Tensor image_embeds = be.tensor(Shape{batch_ * img, hidden});
    AM_RETURN_IF_ERROR(be.index_rows(projected.view(), layout.data(), batch_ * img, image_embeds.view()));
    // The splice: each prompt's image token is replaced by its image's tokens (LLaVA's
    // merge of image features into the input embeddings); positions run on through them.
    Tensor text = be.tensor(Shape{batch_ * prompt_len_, hidden});
    AM_RETURN_IF_ERROR(m_.lm.embedding.embed(be, prompt_.data(), batch_, prompt_len_, 0, text.view()));
    Tensor x = be.tensor(Shape{batch_ * prefill, hidden});
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t at = image_at_[static_cast<std::size_t>(b)], after = prompt_len_ - at - 1;
      if (at > 0) AM_RETURN_IF_ERROR(copy_rows(be, text.view().row_range(b * prompt_len_, at), x.view(), b * prefill));
      AM_RETURN_IF_ERROR(copy_rows(be, image_embeds.view().row_range(b * img, img), x.view(), b * prefill + at));
      if (after > 0) AM_RETURN_IF_ERROR(copy_rows(be, text.view().row_range(b * prompt_len_ + at + 1, after), x.view(), b * prefill + at + img));
    }
    StackCache cache = m_.lm.stack.make_cache(be, batch_, prefill + steps);
    AM_RETURN_IF_ERROR(m_.lm.stack.forward(be, x.view(), batch_, prefill, 0, &cache, nullptr));
    const int64_t vocab = m_.lm.head.out_features();
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_ * (steps + 1), vocab});
    Tensor last = be.tensor(Shape{batch_, hidden}), logits = be.tensor(Shape{batch_, vocab});
    AM_RETURN_IF_ERROR(take_rows(be, x.view(), prefill, prefill - 1, last.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.lm.head, last.view(), logits.view()));
    AM_RETURN_IF_ERROR(be.to_host(logits.view()));  // each step's logits, as a sampler needs them
    store(logits, 0, out.output);
    out.phases.prefill_ms = ms_since(start);
    out.phases.prefill_tokens = batch_ * prefill;
    out.phases.first_token_ms = out.phases.prefill_ms;
    const auto decode_start = Clock::now();
    std::vector<int32_t> step_ids(static_cast<std::size_t>(batch_));
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t b = 0; b < batch_; ++b) step_ids[static_cast<std::size_t>(b)] = forced_[static_cast<std::size_t>(b * steps + t)];
      AM_RETURN_IF_ERROR(m_.lm.embedding.embed(be, step_ids.data(), batch_, 1, prefill + t, last.view()));
      AM_RETURN_IF_ERROR(m_.lm.stack.forward(be, last.view(), batch_, 1, prefill + t, &cache, nullptr));
      AM_RETURN_IF_ERROR(be.linear(m_.lm.head, last.view(), logits.view()));
      AM_RETURN_IF_ERROR(be.to_host(logits.view()));
      store(logits, t + 1, out.output);
      if (t == 0) out.phases.first_token_ms = ms_since(start);
    }
    out.phases.decode_ms = ms_since(decode_start);
    out.phases.decode_tokens = batch_ * steps;
    return out;
  }

 private:
  void store(const Tensor& logits, int64_t t, Tensor& all) const {
    const int64_t steps = m_.lm.config.decode_steps;
    for (int64_t b = 0; b < batch_; ++b) std::memcpy(all.row(b * (steps + 1) + t), logits.row(b), logits.cols() * sizeof(float));
  }
  Llava m_;
  std::vector<int32_t> layout_;  // llava_image_token_layout()
  Tensor pixels_;
  int64_t batch_, crops_, prompt_len_;
  std::vector<int32_t> prompt_, image_at_, forced_;
};

// LLaVA's checkpoint layouts: transformers < 4.52 ("vision_tower.", "multi_modal_projector.",
// "language_model.model.", "language_model.lm_head.weight", "image_newline") and the later one
// that nests the parts under "model." ("model.language_model." holds the decoder's layers
// directly; "lm_head.weight" at the top).
struct LlavaNames {
  std::string vision, projector, newline;
  LlamaNames lm;
};

Result<LlavaNames> llava_names(const Checkpoint& file) {
  if (file.contains("language_model.model.embed_tokens.weight")) {
    return LlavaNames{"vision_tower.vision_model.", "multi_modal_projector.", "image_newline",
                      {"language_model.model.", "language_model.lm_head.weight"}};
  }
  if (file.contains("model.language_model.embed_tokens.weight")) {
    return LlavaNames{"model.vision_tower.vision_model.", "model.multi_modal_projector.", "model.image_newline",
                      {"model.language_model.", "lm_head.weight"}};
  }
  return not_found("checkpoint " + file.path() +
                   ": tensor 'language_model.model.embed_tokens.weight' is missing (also looked for "
                   "'model.language_model.embed_tokens.weight'); not a LlavaForConditionalGeneration checkpoint");
}

Result<Llava> load_llava(const std::string& path, const VitTowerConfig& vc, const DecoderLmConfig& dc, bool anyres,
                         const FormatPlan& f, const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  AM_ASSIGN_OR_RETURN(LlavaNames names, llava_names(file));
  Llava m;
  AM_ASSIGN_OR_RETURN(VitTowerTensors vt, read_clip_vision_tensors(file, names.vision, vc));
  AM_ASSIGN_OR_RETURN(m.tower, VitTower::from_tensors(vc, f, std::move(vt), ctx));
  const int64_t h = dc.stack.hidden;
  auto proj = [&](const std::string& name, int64_t in, Linear& out) -> Status {
    AM_ASSIGN_OR_RETURN(Tensor w, file.read_f32(names.projector + name + ".weight", Shape{h, in}));
    AM_ASSIGN_OR_RETURN(Tensor b, file.read_f32(names.projector + name + ".bias", Shape{h}));
    AM_ASSIGN_OR_RETURN(out, linear_from_tensors("multimodal weights", name, std::move(w), std::move(b), in, h, true,
                                                 f.feed_forward, ctx));
    return Status::Ok();
  };
  AM_RETURN_IF_ERROR(proj("linear_1", vc.hidden, m.proj1));
  AM_RETURN_IF_ERROR(proj("linear_2", h, m.proj2));
  AM_ASSIGN_OR_RETURN(m.lm, load_llama_checkpoint(file, dc, f, ctx, names.lm));
  if (anyres) {
    AM_ASSIGN_OR_RETURN(m.newline, file.read_f32(names.newline, Shape{h}));
    m.newline.reshape(Shape{1, h});
  }
  return m;
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_llava_graph(const jobs::JobSpec& spec, Precision precision,
                                                      const ExecContext& ctx) {
  return build_llava_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_llava_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                         const ExecContext& ctx, const LlavaInputs* given) {
  const std::string family = "multimodal";
  ConfigReader cfg(spec.model_config, family);
  AM_ASSIGN_OR_RETURN(VitTowerConfig vc, vit_tower_config_from(cfg, "vision_", family, 1e-5f));
  // vision_feature_layer: hidden_states[k] of CLIPVisionModel, i.e. the output of k layers (k >= 0)
  // or of vision_layers + 1 + k layers (k < 0; LLaVA's -2 is the penultimate layer).
  AM_ASSIGN_OR_RETURN(double feature_layer, cfg.number("vision_feature_layer", -2.0, -4096.0, 4096.0));
  const int64_t k = static_cast<int64_t>(feature_layer);
  const int64_t used = k < 0 ? vc.layers + 1 + k : k;
  if (static_cast<double>(k) != feature_layer || used < 1 || used > vc.layers) {
    const std::string n = std::to_string(vc.layers);
    return cfg.error("'vision_feature_layer' " + std::to_string(k) + " selects no layer's output of the " + n +
                     "-layer vision tower: it must be 1.." + n + " or -" + n + "..-1 (fewer vision_layers need a "
                     "vision_feature_layer that fits)");
  }
  vc.layers = used;
  vc.pre_norm = true;
  vc.final_norm = false;
  AM_ASSIGN_OR_RETURN(std::string select, cfg.text("vision_feature_select", "default"));
  if (select != "default" && select != "full") {
    return cfg.error("'vision_feature_select' must be \"default\" or \"full\"");
  }
  AM_ASSIGN_OR_RETURN(std::string projector_act, cfg.text("projector_activation", "gelu"));
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
  // LLaVA's image token is 32000 (its vocabulary's first added token); a scaled-down vocabulary
  // without it uses its last id.
  const double default_image_token = static_cast<double>(std::min<int64_t>(kLlavaImageToken, dc.vocab - 1));
  AM_ASSIGN_OR_RETURN(double image_token,
                      cfg.number("image_token_index", default_image_token, 0.0, static_cast<double>(dc.vocab - 1)));
  const int64_t side = vc.image_size / vc.patch;
  if (select == "full" && grid_rows > 0) {
    return cfg.error("'vision_feature_select' \"full\" does not apply to AnyRes grids");
  }
  std::vector<int32_t> layout;
  if (select == "full") {
    // Every token of every crop, the class tokens included.
    for (int64_t i = 0; i < crops * vc.tokens(); ++i) layout.push_back(static_cast<int32_t>(i));
  } else {
    layout = llava_image_token_layout(crops, side, grid_rows, grid_cols);
  }
  const int64_t img = static_cast<int64_t>(layout.size());
  if (spec.seq_len < 1) return invalid_argument(family + ": seq_len must be at least 1 (the image token)");
  if (img + spec.seq_len - 1 + dc.decode_steps > dc.max_positions) {
    return cfg.error("image tokens " + std::to_string(img) + " + seq_len - 1 + decode_steps exceed max_positions " +
                     std::to_string(dc.max_positions));
  }
  if (dc.sliding_window > 0 && img + spec.seq_len - 1 + dc.decode_steps > dc.sliding_window) {
    return unsupported(family + ": image tokens + seq_len - 1 + decode_steps exceed 'sliding_window' " +
                       std::to_string(dc.sliding_window) + " (sliding-window attention is not modelled)");
  }
  const FormatPlan f = format_plan_for(precision);
  AM_RETURN_IF_ERROR(check_weight_budget(family, VitTower::estimate_bytes(vc, f) + DecoderLm::estimate_bytes(dc, f)));
  Llava m;
  // model_config "weights_path" names a LlavaForConditionalGeneration checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, family));
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(m, load_llava(*checkpoint, vc, dc, grid_rows > 0, f, ctx));
  } else {
    SeededWeights src(spec.seed, kWeightStream, ctx);
    AM_ASSIGN_OR_RETURN(m.tower, VitTower::create(vc, f, src));
    const int64_t h = dc.stack.hidden;
    m.proj1 = src.linear(vc.hidden, h, kProjectorStd, true, 0.0f, f.feed_forward);
    m.proj2 = src.linear(h, h, kProjectorStd, true, 0.0f, f.feed_forward);
    AM_ASSIGN_OR_RETURN(m.lm, DecoderLm::create_synthetic(dc, f, spec.seed, ctx));
    // image_newline (AnyRes only): LLaVA-NeXT initialises it N(0, 1/sqrt(hidden)). Drawn last, so
    // it shifts no other weight's seed.
    if (grid_rows > 0) m.newline = src.normal(Shape{1, h}, 0.0f, 1.0f / std::sqrt(static_cast<float>(h)));
  }
  AM_ASSIGN_OR_RETURN(m.projector_act, activation_from_name(projector_act));
  m.keep_class = select == "full";
  m.image_token = static_cast<int32_t>(image_token);
  const int64_t batch = spec.batch, len = spec.seq_len;
  Tensor pixels;
  std::vector<int32_t> prompt, forced;
  if (given) {
    if (static_cast<int64_t>(given->pixels.size()) != batch * crops * vc.image_size * vc.image_size * vc.channels ||
        static_cast<int64_t>(given->prompt.size()) != batch * len ||
        static_cast<int64_t>(given->forced.size()) != batch * dc.decode_steps) {
      return invalid_argument(family + ": given pixels must be batch*crops*image^2*channels, prompt batch*seq_len, "
                                       "forced batch*decode_steps");
    }
    pixels = Tensor(Shape{batch * crops * vc.image_size * vc.image_size, vc.channels});
    std::copy(given->pixels.begin(), given->pixels.end(), pixels.data());
    prompt = given->prompt;
    forced = given->forced;
  } else {
    pixels = seeded_pixels(batch * crops, vc.image_size, vc.channels, spec.seed, kPixelStream, ctx);
    // A chat prompt's image placeholder follows its first token (LLaVA's "USER: <image>\n...").
    prompt = seeded_token_ids(batch * len, dc.vocab, spec.seed, kPromptStream);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < len; ++s) {
        int32_t& id = prompt[static_cast<std::size_t>(b * len + s)];
        if (id == m.image_token) id = 0;
      }
      prompt[static_cast<std::size_t>(b * len + std::min<int64_t>(kImagePromptPosition, len - 1))] = m.image_token;
    }
    forced = seeded_token_ids(batch * dc.decode_steps, dc.vocab, spec.seed, kForcedStream);
  }
  // Exactly one image token per prompt: where the image's tokens go.
  std::vector<int32_t> image_at(static_cast<std::size_t>(batch), -1);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < len; ++s) {
      const int32_t id = prompt[static_cast<std::size_t>(b * len + s)];
      if (id < 0 || id >= dc.vocab) {
        return invalid_argument(family + ": prompt token id " + std::to_string(id) + " is outside the vocabulary");
      }
      if (id != m.image_token) continue;
      if (image_at[static_cast<std::size_t>(b)] >= 0) {
        return invalid_argument(family + ": prompt " + std::to_string(b) + " holds more than one image token (" +
                                std::to_string(m.image_token) + ")");
      }
      image_at[static_cast<std::size_t>(b)] = static_cast<int32_t>(s);
    }
    if (image_at[static_cast<std::size_t>(b)] < 0) {
      return invalid_argument(family + ": prompt " + std::to_string(b) + " holds no image token (image_token_index " +
                              std::to_string(m.image_token) + ")");
    }
  }
  return std::unique_ptr<ModelGraph>(std::make_unique<LlavaGraph>(std::move(m), std::move(layout), std::move(pixels),
                                                                  batch, crops, len, std::move(prompt),
                                                                  std::move(image_at), std::move(forced)));
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
