// CLAP (audio-text retrieval, laion/clap-htsat-unfused) with a reduced, documented HTSAT:
// the log-mel spectrogram (audio_frames x audio_mel_bins values, folded into a square
// audio_image_size^2 single-channel image as HTSAT does) is patch-embedded by a conv2d, then
// Swin stages of pre-LN transformer blocks attend within non-overlapping windows (window
// partition by index_rows; the shifted-window alternation and Swin's relative position bias are
// not modelled), with patch merging (2x2 neighbours concatenated, LayerNorm, linear 4C -> 2C)
// between stages, a final LayerNorm and a mean over positions. The text tower is RoBERTa (the
// encoder-only family's post-LN BERT stack), pooled at the first token. Both go through
// 2-layer ReLU projections to projection_dim, are L2-normalised, and compared with
// exp(logit_scale).
//
// Keys: audio_image_size, audio_patch, audio_hidden, audio_depths (array), audio_heads (array),
// audio_window, audio_mel_bins, audio_frames; text_layers, text_hidden, text_heads,
// text_intermediate, vocab, max_positions; projection_dim, logit_scale, norm_eps.
// Output: logits_per_audio [batch, batch], logits=true.
#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/models/encoder_only.h"
#include "kernels/models/multimodal.h"
#include "kernels/models/vision_tower.h"
#include "kernels/rng.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x434c4157ull;  // "CLAW"
constexpr uint64_t kAudioStream = 0x434c4141ull;
constexpr float kInitStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kL2Eps = 1e-12f;
constexpr int64_t kSwinMlpRatio = 4;

struct HtsatConfig {
  int64_t image = 0, patch = 0, hidden = 0, window = 0;
  std::vector<int64_t> depths, heads;
  float eps = 1e-5f;
};

Result<std::vector<int64_t>> int_array(const nlohmann::json& doc, const char* key) {
  if (!doc.contains(key) || !doc.at(key).is_array() || doc.at(key).empty()) {
    return invalid_argument(std::string("multimodal config: '") + key + "' must be a non-empty array of integers");
  }
  std::vector<int64_t> v;
  for (const auto& e : doc.at(key)) {
    if (!e.is_number_integer() || e.get<int64_t>() < 1) {
      return invalid_argument(std::string("multimodal config: '") + key + "' must hold positive integers");
    }
    v.push_back(e.get<int64_t>());
  }
  return v;
}

struct SwinStage {
  int64_t res = 0, channels = 0, window = 0;
  TransformerStack blocks;
  Tensor merge_g, merge_b;  // LayerNorm over 4C before the reduction (absent after the last stage)
  Linear merge;
};

class ClapGraph final : public ModelGraph {
 public:
  ClapGraph(HtsatConfig hc, Tensor patch_w, Tensor patch_b, std::vector<SwinStage> stages, Tensor final_g,
            Tensor final_b, Linear a1, Linear a2, EncoderModel text, EncoderInput text_in, Linear t1, Linear t2,
            Tensor audio, int64_t batch, float scale)
      : hc_(std::move(hc)), patch_w_(std::move(patch_w)), patch_b_(std::move(patch_b)), stages_(std::move(stages)),
        final_g_(std::move(final_g)), final_b_(std::move(final_b)), a1_(std::move(a1)), a2_(std::move(a2)),
        text_(std::move(text)), text_in_(std::move(text_in)), t1_(std::move(t1)), t2_(std::move(t2)),
        audio_(std::move(audio)), batch_(batch), scale_(scale), l2_(l2_norm_gamma(a2_.out_features())) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops = text_.required_ops();
    for (const SwinStage& s : stages_) s.blocks.add_required_ops(ops);
    for (Op op : {Op::kConv2d, Op::kIndexRows, Op::kLayerNorm, Op::kGlobalAvgPool, Op::kActivation, Op::kRmsNorm,
                  Op::kMatmulNt})
      require(ops, op);
    require(ops, Op::kLinear, a1_.format());
    if (stages_.size() > 1) require(ops, Op::kLinear, stages_.front().merge.format());
    return ops;
  }
  std::size_t weights_bytes() const override {
    std::size_t t = patch_w_.bytes() + patch_b_.bytes() + final_g_.bytes() + final_b_.bytes() + a1_.weight_bytes() +
                    a2_.weight_bytes() + text_.weights_bytes() + t1_.weight_bytes() + t2_.weight_bytes();
    for (const SwinStage& s : stages_) {
      t += s.blocks.weights_bytes() + s.merge_g.bytes() + s.merge_b.bytes() + (s.merge_g.empty() ? 0 : s.merge.weight_bytes());
    }
    return t;
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return text_in_.batch * text_in_.seq; }

  Result<GraphOutput> run(Backend& be) const override {
    AM_ASSIGN_OR_RETURN(Tensor audio, encode_audio(be));
    AM_ASSIGN_OR_RETURN(Tensor text, encode_text(be));
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_, text_in_.batch});
    AM_RETURN_IF_ERROR(be.matmul_nt(audio.view(), text.view(), std::exp(scale_), out.output.view()));
    return out;
  }

 private:
  // Window-major order of a res x res grid per sample: row i of the partitioned tensor holds
  // spatial row ids[i].
  static std::vector<int32_t> window_order(int64_t batch, int64_t res, int64_t win) {
    std::vector<int32_t> ids;
    ids.reserve(static_cast<std::size_t>(batch * res * res));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t wy = 0; wy < res / win; ++wy)
        for (int64_t wx = 0; wx < res / win; ++wx)
          for (int64_t iy = 0; iy < win; ++iy)
            for (int64_t ix = 0; ix < win; ++ix)
              ids.push_back(static_cast<int32_t>((b * res + wy * win + iy) * res + wx * win + ix));
    return ids;
  }
  Status project(Backend& be, ConstTensorView pooled, const Linear& l1, const Linear& l2, Tensor& out) const {
    Tensor mid(Shape{pooled.rows(), l1.out_features()});
    AM_RETURN_IF_ERROR(be.linear(l1, pooled, mid.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, mid.view()));
    out = Tensor(Shape{pooled.rows(), l2.out_features()});
    AM_RETURN_IF_ERROR(be.linear(l2, mid.view(), out.view()));
    return be.rms_norm(out.view(), l2_.data(), kL2Eps, out.view());
  }
  Result<Tensor> encode_audio(Backend& be) const {
    int64_t res = hc_.image / hc_.patch;
    Tensor x(Shape{batch_ * res * res, hc_.hidden});
    Conv2dArgs conv;
    conv.x = audio_.view();
    conv.y = x.view();
    conv.weight = patch_w_.data();
    conv.bias = patch_b_.data();
    conv.batch = batch_;
    conv.height = conv.width = hc_.image;
    conv.in_channels = 1;
    conv.out_channels = hc_.hidden;
    conv.kernel_h = conv.kernel_w = conv.stride = hc_.patch;
    AM_RETURN_IF_ERROR(be.conv2d(conv));
    for (const SwinStage& s : stages_) {
      const int64_t rows = batch_ * s.res * s.res;
      std::vector<int32_t> order = window_order(batch_, s.res, s.window);
      Tensor win(Shape{rows, s.channels});
      AM_RETURN_IF_ERROR(be.index_rows(x.view(), order.data(), rows, win.view()));
      AM_RETURN_IF_ERROR(s.blocks.forward(be, win.view(), rows / (s.window * s.window), s.window * s.window, 0, nullptr, nullptr));
      std::vector<int32_t> back(order.size());
      for (std::size_t i = 0; i < order.size(); ++i) back[static_cast<std::size_t>(order[i])] = static_cast<int32_t>(i);
      AM_RETURN_IF_ERROR(be.index_rows(win.view(), back.data(), rows, x.view()));
      if (s.merge_g.empty()) continue;
      // Patch merging: (2y,2x), (2y+1,2x), (2y,2x+1), (2y+1,2x+1) side by side, as Swin orders them.
      const int64_t half = s.res / 2, c = s.channels;
      Tensor cat(Shape{batch_ * half * half, 4 * c});
      for (int64_t b = 0; b < batch_; ++b)
        for (int64_t y = 0; y < half; ++y)
          for (int64_t xx = 0; xx < half; ++xx) {
            float* dst = cat.row((b * half + y) * half + xx);
            const int64_t dy[4] = {0, 1, 0, 1}, dx[4] = {0, 0, 1, 1};
            for (int q = 0; q < 4; ++q) {
              std::memcpy(dst + q * c, x.row((b * s.res + 2 * y + dy[q]) * s.res + 2 * xx + dx[q]), c * sizeof(float));
            }
          }
      AM_RETURN_IF_ERROR(be.layer_norm(cat.view(), s.merge_g.data(), s.merge_b.data(), hc_.eps, cat.view()));
      x = Tensor(Shape{batch_ * half * half, 2 * c});
      AM_RETURN_IF_ERROR(be.linear(s.merge, cat.view(), x.view()));
    }
    AM_RETURN_IF_ERROR(be.layer_norm(x.view(), final_g_.data(), final_b_.data(), hc_.eps, x.view()));
    Tensor pooled(Shape{batch_, x.cols()});
    AM_RETURN_IF_ERROR(be.global_avg_pool(x.view(), batch_, pooled.view()));
    Tensor out;
    AM_RETURN_IF_ERROR(project(be, pooled.view(), a1_, a2_, out));
    return out;
  }
  Result<Tensor> encode_text(Backend& be) const {
    AM_ASSIGN_OR_RETURN(Tensor hidden, text_.forward(text_in_, be));
    const int64_t h = text_.config().hidden;
    hidden.reshape(Shape{text_in_.batch * text_in_.seq, h});
    Tensor cls(Shape{text_in_.batch, h});
    AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), text_in_.seq, 0, cls.view()));
    Tensor out;
    AM_RETURN_IF_ERROR(project(be, cls.view(), t1_, t2_, out));
    return out;
  }

  HtsatConfig hc_;
  Tensor patch_w_, patch_b_;
  std::vector<SwinStage> stages_;
  Tensor final_g_, final_b_;
  Linear a1_, a2_;
  EncoderModel text_;
  EncoderInput text_in_;
  Linear t1_, t2_;
  Tensor audio_;
  int64_t batch_;
  float scale_;
  Tensor l2_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_clap_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx) {
  const std::string family = "multimodal";
  ConfigReader cfg(spec.model_config, family);
  HtsatConfig hc;
  AM_ASSIGN_OR_RETURN(hc.image, cfg.dim("audio_image_size"));
  AM_ASSIGN_OR_RETURN(hc.patch, cfg.dim("audio_patch"));
  AM_ASSIGN_OR_RETURN(hc.hidden, cfg.dim("audio_hidden"));
  AM_ASSIGN_OR_RETURN(hc.window, cfg.dim("audio_window"));
  AM_ASSIGN_OR_RETURN(int64_t mel, cfg.dim("audio_mel_bins"));
  AM_ASSIGN_OR_RETURN(int64_t frames, cfg.dim("audio_frames"));
  AM_ASSIGN_OR_RETURN(hc.depths, int_array(spec.model_config, "audio_depths"));
  AM_ASSIGN_OR_RETURN(hc.heads, int_array(spec.model_config, "audio_heads"));
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-30, 1.0));
  hc.eps = static_cast<float>(eps);
  if (mel * frames != hc.image * hc.image) {
    return cfg.error("audio_mel_bins x audio_frames must equal audio_image_size^2 (HTSAT folds the spectrogram)");
  }
  if (hc.depths.size() != hc.heads.size()) return cfg.error("audio_depths and audio_heads differ in length");
  if (hc.image % hc.patch != 0) return cfg.error("audio_image_size is not a multiple of audio_patch");
  EncoderConfig tc;
  AM_ASSIGN_OR_RETURN(tc.layers, cfg.dim("text_layers"));
  AM_ASSIGN_OR_RETURN(tc.hidden, cfg.dim("text_hidden"));
  AM_ASSIGN_OR_RETURN(tc.heads, cfg.dim("text_heads"));
  AM_ASSIGN_OR_RETURN(tc.intermediate, cfg.dim("text_intermediate"));
  AM_ASSIGN_OR_RETURN(tc.vocab, cfg.dim("vocab"));
  AM_ASSIGN_OR_RETURN(tc.max_positions, cfg.dim("max_positions"));
  tc.type_vocab = 1;
  tc.norm_eps = hc.eps;
  if (tc.hidden % tc.heads != 0) return cfg.error("text_hidden is not a multiple of text_heads");
  if (spec.seq_len > tc.max_positions) return cfg.error("seq_len exceeds max_positions");
  AM_ASSIGN_OR_RETURN(int64_t proj, cfg.dim("projection_dim"));
  AM_ASSIGN_OR_RETURN(double scale, cfg.number("logit_scale", 2.6593, -20.0, 20.0));
  const FormatPlan f = format_plan_for(precision);

  SeededWeights src(spec.seed, kWeightStream, ctx);
  const int64_t fan_in = hc.patch * hc.patch;
  Tensor patch_w = src.normal(Shape{hc.hidden, 1, hc.patch, hc.patch}, 0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in)));
  Tensor patch_b = src.normal(Shape{hc.hidden}, 0.0f, kInitStd);
  std::vector<SwinStage> stages;
  int64_t res = hc.image / hc.patch, ch = hc.hidden;
  std::size_t est = 0;
  for (std::size_t i = 0; i < hc.depths.size(); ++i) {
    SwinStage s;
    s.res = res;
    s.channels = ch;
    s.window = std::min(hc.window, res);
    if (res % s.window != 0 || ch % hc.heads[i] != 0) {
      return cfg.error("stage " + std::to_string(i) + ": resolution " + std::to_string(res) + " / window or channels " +
                       std::to_string(ch) + " / heads do not divide");
    }
    StackConfig sc = vit_stack_config(family, hc.depths[i], ch, hc.heads[i], kSwinMlpRatio * ch, Activation::kGeluErf,
                                      hc.eps, false);
    est += TransformerStack::estimate_bytes(sc, f);
    AM_RETURN_IF_ERROR(check_weight_budget(family, est));
    AM_ASSIGN_OR_RETURN(s.blocks, TransformerStack::create(sc, f, src));
    if (i + 1 < hc.depths.size()) {
      if (res % 2 != 0) return cfg.error("stage " + std::to_string(i) + " resolution is odd; cannot merge patches");
      s.merge_g = src.normal(Shape{4 * ch}, 1.0f, kNormNoiseStd);
      s.merge_b = src.normal(Shape{4 * ch}, 0.0f, kNormNoiseStd);
      s.merge = src.linear(4 * ch, 2 * ch, kInitStd, false, 0.0f, f.other);
      res /= 2;
      ch *= 2;
    }
    stages.push_back(std::move(s));
  }
  Tensor final_g = src.normal(Shape{ch}, 1.0f, kNormNoiseStd), final_b = src.normal(Shape{ch}, 0.0f, kNormNoiseStd);
  Linear a1 = src.linear(ch, proj, kInitStd, true, 0.0f, f.output);
  Linear a2 = src.linear(proj, proj, kInitStd, true, 0.0f, f.output);
  // The text tower keeps one format for all its linear layers (the encoder-only family's model):
  // the attention role's format.
  AM_ASSIGN_OR_RETURN(EncoderModel text, EncoderModel::create_synthetic(tc, f.attention, spec.seed, ctx));
  Linear t1 = src.linear(tc.hidden, proj, kInitStd, true, 0.0f, f.output);
  Linear t2 = src.linear(proj, proj, kInitStd, true, 0.0f, f.output);
  EncoderInput text_in = make_synthetic_encoder_input(tc, spec.batch, spec.seq_len, spec.seed);
  Tensor audio(Shape{spec.batch * hc.image * hc.image, 1});
  fill_normal(audio.data(), audio.numel(), 0.0f, 1.0f, derive_seed(spec.seed, kAudioStream), ctx);
  return std::unique_ptr<ModelGraph>(std::make_unique<ClapGraph>(
      std::move(hc), std::move(patch_w), std::move(patch_b), std::move(stages), std::move(final_g), std::move(final_b),
      std::move(a1), std::move(a2), std::move(text), std::move(text_in), std::move(t1), std::move(t2), std::move(audio),
      spec.batch, static_cast<float>(scale)));
}

}  // namespace am::kernels
