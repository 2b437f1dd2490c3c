// CLAP (audio-text retrieval, laion/clap-htsat-unfused; Hugging Face's ClapModel):
//   - audio: log-mel frames [audio_frames, audio_mel_bins] -> BatchNorm over the mel bins
//     (running statistics, eps 1e-5) -> folded into a square audio_image_size^2 single-channel
//     image as HTSAT does (reshape_mel2img: the time axis cut into freq_ratio chunks stacked along
//     the frequency axis) -> patch embedding (conv, LayerNorm when audio_patch_norm) -> Swin
//     stages: pre-LN blocks attending within windows with the learned relative position bias,
//     every odd block over windows shifted by half a window (cyclic shift, cross-region pairs
//     masked with -100, as Swin builds the mask; no shift where a stage is one window), GELU
//     MLP 4x; patch merging (2x2 neighbours concatenated, LayerNorm, linear 4C -> 2C) between
//     stages; a final LayerNorm and the mean over positions;
//   - text: RoBERTa (the encoder-only family's post-LN stack, positions from pad_token_id + 1),
//     the pooler tanh(dense(first token));
//   - both through 2-layer ReLU projections (linear1, ReLU, linear2), L2-normalised;
//     logits_per_audio = exp(logit_scale) * audio · text^T.
// The pooler's tanh is computed as 2 sigmoid(2x) - 1 with the factors folded into the pooler's
// and text projection's weights (tanh is not a backend activation; the fold is exact algebra).
//
// Keys: audio_image_size, audio_patch, audio_hidden, audio_depths (array), audio_heads (array),
// audio_window, audio_mel_bins, audio_frames (= audio_image_size * audio_image_size /
// audio_mel_bins), audio_activation (default "gelu"), audio_patch_norm (default true); text_layers,
// text_hidden, text_heads, text_intermediate, text_norm_eps (default 1e-12, ClapTextConfig's),
// text_activation (default "gelu"), text_type_vocab (default 1), text_position_offset (default
// 2), vocab, max_positions; projection_dim, logit_scale, norm_eps (the Swin blocks' LayerNorm
// eps, default 1e-5; the patch, merging and final LayerNorms use PyTorch's 1e-5 as HTSAT builds
// them). Output: logits_per_audio [batch, batch],
// logits=true. weights_path: a ClapModel checkpoint (read_clap below lists the names).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "kernels/models/encoder_only.h"
#include "kernels/models/encoder_only_checkpoint.h"
#include "kernels/models/multimodal.h"
#include "kernels/models/vision_tower.h"
#include "kernels/rng.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x434c4157ull;  // "CLAW"
constexpr uint64_t kAudioStream = 0x434c4141ull;
constexpr float kInitStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kL2Eps = 1e-12f;
constexpr float kTorchNormEps = 1e-5f;      // nn.LayerNorm / nn.BatchNorm2d default
constexpr float kSwinMaskValue = -100.0f;   // Swin's shifted-window mask
constexpr int64_t kSwinMlpRatio = 4;
constexpr const char* kFamily = "multimodal";

struct HtsatConfig {
  int64_t image = 0, patch = 0, hidden = 0, window = 0, mels = 0, frames = 0;
  std::vector<int64_t> depths, heads;
  float eps = 1e-5f;
  Activation act = Activation::kGeluErf;
  bool patch_norm = true;
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

// One Swin block (ClapAudioLayer) with its window geometry: `shift` 0 or window/2. The windows
// of a shifted block fall in up to four mask classes (interior, last column, last row, corner);
// the partition orders windows class by class so each class's windows are one attention call.
struct SwinBlock {
  int64_t res = 0, window = 0, shift = 0, channels = 0, heads = 1;
  Tensor ln1_g, ln1_b, ln2_g, ln2_b;
  Linear q, k, v, o, fc1, fc2;
  Tensor rel_table;                   // [(2w-1)^2, heads]
  std::vector<Tensor> class_bias;     // per mask class: [w^2 * w^2, heads] = relative bias + mask
  std::vector<int64_t> class_windows; // windows per class (per sample)
  std::vector<int32_t> order;         // one sample's partition: row i <- spatial position order[i]

  std::size_t weights_bytes() const {
    std::size_t t = 4 * ln1_g.bytes() + rel_table.bytes();
    for (const Linear* l : {&q, &k, &v, &o, &fc1, &fc2}) t += l->weight_bytes();
    return t;
  }

  // The window partition and the per-class biases (after the weights are set).
  void prepare() {
    const int64_t nw = res / window, w2 = window * window;
    auto mask_class = [&](int64_t wy, int64_t wx) -> int64_t {
      return shift == 0 ? 0 : (wy == nw - 1 ? 2 : 0) + (wx == nw - 1 ? 1 : 0);
    };
    // Swin's region of a position in the shifted image: 0 below res - window, 1 up to
    // res - shift, 2 after, per axis.
    auto region = [&](int64_t c) -> int64_t { return c < res - window ? 0 : c < res - shift ? 1 : 2; };
    order.clear();
    class_bias.clear();
    class_windows.clear();
    for (int64_t cls = 0; cls < (shift == 0 ? 1 : 4); ++cls) {
      int64_t count = 0;
      int64_t wy0 = -1, wx0 = -1;
      for (int64_t wy = 0; wy < nw; ++wy)
        for (int64_t wx = 0; wx < nw; ++wx) {
          if (mask_class(wy, wx) != cls) continue;
          if (count++ == 0) wy0 = wy, wx0 = wx;
          for (int64_t iy = 0; iy < window; ++iy)
            for (int64_t ix = 0; ix < window; ++ix) {
              // Position (Y, X) of the shifted image holds the original ((Y + s) % res, (X + s) % res).
              const int64_t y = (wy * window + iy + shift) % res, x = (wx * window + ix + shift) % res;
              order.push_back(static_cast<int32_t>(y * res + x));
            }
        }
      if (count == 0) continue;
      Tensor bias(Shape{w2 * w2, heads});
      for (int64_t i = 0; i < w2; ++i)
        for (int64_t j = 0; j < w2; ++j) {
          const int64_t iy = i / window, ix = i % window, jy = j / window, jx = j % window;
          const int64_t rel = (iy - jy + window - 1) * (2 * window - 1) + (ix - jx + window - 1);
          const bool same = shift == 0 || (region(wy0 * window + iy) == region(wy0 * window + jy) &&
                                           region(wx0 * window + ix) == region(wx0 * window + jx));
          for (int64_t h = 0; h < heads; ++h) {
            bias.data()[(i * w2 + j) * heads + h] = rel_table.data()[rel * heads + h] + (same ? 0.0f : kSwinMaskValue);
          }
        }
      class_bias.push_back(std::move(bias));
      class_windows.push_back(count);
    }
  }

  // x [batch*res*res, C] in place.
  Status forward(Backend& be, Tensor& x, int64_t batch, float eps, Activation act) const {
    const int64_t rows = x.rows(), per = res * res, w2 = window * window;
    Tensor h = be.tensor(Shape{rows, channels});
    AM_RETURN_IF_ERROR(be.layer_norm(x.view(), ln1_g.data(), ln1_b.data(), eps, h.view()));
    std::vector<int32_t> ids(static_cast<std::size_t>(rows));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < per; ++i)
        ids[static_cast<std::size_t>(b * per + i)] = static_cast<int32_t>(b * per + order[static_cast<std::size_t>(i)]);
    const Shape rc{rows, channels};
    Tensor win = be.tensor(rc), tq = be.tensor(rc), tk = be.tensor(rc), tv = be.tensor(rc), ctx = be.tensor(rc),
           out = be.tensor(rc);
    AM_RETURN_IF_ERROR(be.index_rows(h.view(), ids.data(), rows, win.view()));
    AM_RETURN_IF_ERROR(be.linear(q, win.view(), tq.view()));
    AM_RETURN_IF_ERROR(be.linear(k, win.view(), tk.view()));
    AM_RETURN_IF_ERROR(be.linear(v, win.view(), tv.view()));
    // Each sample's windows are class by class; a class's windows over the batch are not
    // contiguous, so attend per (sample, class).
    for (int64_t b = 0; b < batch; ++b) {
      int64_t first = b * per;
      for (std::size_t c = 0; c < class_bias.size(); ++c) {
        const int64_t n = class_windows[c] * w2;
        AttentionArgs a;
        a.q = tq.view().row_range(first, n);
        a.k = tk.view().row_range(first, n);
        a.v = tv.view().row_range(first, n);
        a.out = ctx.view().row_range(first, n);
        a.batch = class_windows[c];
        a.q_len = a.kv_len = w2;
        a.heads = a.kv_heads = heads;
        a.head_dim = channels / heads;
        AM_RETURN_IF_ERROR(be.attention_bias(a, class_bias[c].view()));
        first += n;
      }
    }
    AM_RETURN_IF_ERROR(be.linear(o, ctx.view(), out.view()));
    // Back to spatial order, then the residual.
    std::vector<int32_t> back(static_cast<std::size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
      back[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)])] = static_cast<int32_t>(i);
    }
    AM_RETURN_IF_ERROR(be.index_rows(out.view(), back.data(), rows, h.view()));
    AM_RETURN_IF_ERROR(be.add(x.view(), h.view()));
    Tensor mid = be.tensor(Shape{rows, fc1.out_features()});
    AM_RETURN_IF_ERROR(be.layer_norm(x.view(), ln2_g.data(), ln2_b.data(), eps, h.view()));
    AM_RETURN_IF_ERROR(be.linear(fc1, h.view(), mid.view()));
    AM_RETURN_IF_ERROR(be.activation(act, mid.view()));
    AM_RETURN_IF_ERROR(be.linear(fc2, mid.view(), out.view()));
    return be.add(x.view(), out.view());
  }
};

struct SwinStage {
  int64_t res = 0, channels = 0;
  std::vector<SwinBlock> blocks;
  Tensor merge_g, merge_b;  // LayerNorm over 4C before the reduction (absent after the last stage)
  Linear merge;
};

struct Projection {
  Linear l1, l2;
};

struct Clap {
  HtsatConfig hc;
  Tensor bn_scale, bn_shift;  // [1, mels]: the BatchNorm's affine form
  Tensor patch_w, patch_b, patch_g, patch_beta;
  std::vector<SwinStage> stages;
  Tensor final_g, final_b;
  Projection audio_proj;
  EncoderModel text;
  Linear pooler;              // the pooler's dense with its tanh's factor 2 folded in
  Projection text_proj;       // linear1 with the tanh's 2s - 1 folded in
  float logit_scale = 2.6593f;
  std::vector<int32_t> fold;  // image pixel -> mel element (reshape_mel2img), per sample
};

// tanh(z) = 2 sigmoid(2z) - 1: the pooler becomes sigmoid(2 W x + 2 b) and the next linear
// l1(tanh) = (2 W1) s + (b1 - W1 · 1). Exact algebra on the f32 tensors (sums in double).
void fold_tanh(Tensor& dense_w, Tensor& dense_b, Tensor& l1_w, Tensor& l1_b) {
  for (int64_t i = 0; i < dense_w.numel(); ++i) dense_w.data()[i] *= 2.0f;
  for (int64_t i = 0; i < dense_b.numel(); ++i) dense_b.data()[i] *= 2.0f;
  const int64_t out = l1_w.rows(), in = l1_w.cols();
  for (int64_t o = 0; o < out; ++o) {
    double sum = 0.0;
    for (int64_t i = 0; i < in; ++i) sum += l1_w.data()[o * in + i];
    l1_b.data()[o] = static_cast<float>(l1_b.data()[o] - sum);
    for (int64_t i = 0; i < in; ++i) l1_w.data()[o * in + i] *= 2.0f;
  }
}

// reshape_mel2img for one sample: image pixel (row, col) of the res x res image, row = q * mels +
// f, col = t', holds mel[q * (frames / ratio) + t'][f] (ratio = image / mels).
std::vector<int32_t> mel_fold(const HtsatConfig& c) {
  const int64_t ratio = c.image / c.mels, chunk = c.frames / ratio;
  std::vector<int32_t> ids(static_cast<std::size_t>(c.image * c.image));
  for (int64_t row = 0; row < c.image; ++row)
    for (int64_t col = 0; col < c.image; ++col) {
      const int64_t q = row / c.mels, f = row % c.mels, t = q * chunk + col;
      ids[static_cast<std::size_t>(row * c.image + col)] = static_cast<int32_t>(t * c.mels + f);
    }
  return ids;
}

class ClapGraph final : public ModelGraph {
 public:
  ClapGraph(Clap m, FormatPlan f, Tensor audio, EncoderInput text_in, int64_t batch)
      : m_(std::move(m)), f_(f), audio_(std::move(audio)), text_in_(std::move(text_in)), batch_(batch),
        l2_(l2_norm_gamma(m_.audio_proj.l2.out_features())) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops = m_.text.required_ops();
    for (Op op : {Op::kConv2d, Op::kIndexRows, Op::kGatherRows, Op::kMul, Op::kAdd, Op::kLayerNorm, Op::kAttentionBias,
                  Op::kGlobalAvgPool, Op::kActivation, Op::kRmsNorm, Op::kMatmulNt})
      require(ops, op);
    for (WeightFormat w : {f_.attention, f_.feed_forward, f_.output, f_.other}) require(ops, Op::kLinear, w);
    return ops;
  }
  std::size_t weights_bytes() const override {
    std::size_t t = m_.bn_scale.bytes() * 2 + m_.patch_w.bytes() + m_.patch_b.bytes() + m_.patch_g.bytes() * 2 +
                    m_.final_g.bytes() * 2 + m_.audio_proj.l1.weight_bytes() + m_.audio_proj.l2.weight_bytes() +
                    m_.text.weights_bytes() + m_.pooler.weight_bytes() + m_.text_proj.l1.weight_bytes() +
                    m_.text_proj.l2.weight_bytes();
    for (const SwinStage& s : m_.stages) {
      for (const SwinBlock& b : s.blocks) t += b.weights_bytes();
      t += s.merge_g.bytes() * 2 + (s.merge_g.empty() ? 0 : s.merge.weight_bytes());
    }
    return t;
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return text_in_.batch * text_in_.seq; }

  Result<GraphOutput> forward(Backend& be) const override {
    AM_ASSIGN_OR_RETURN(Tensor audio, encode_audio(be));
    AM_ASSIGN_OR_RETURN(Tensor text, encode_text(be));
    GraphOutput out;
    out.logits = true;
    out.output = be.tensor(Shape{batch_, text_in_.batch});
    AM_RETURN_IF_ERROR(be.matmul_nt(audio.view(), text.view(), std::exp(m_.logit_scale), out.output.view()));
    return out;
  }

 private:
  Status project(Backend& be, ConstTensorView pooled, const Projection& p, Tensor& out) const {
    Tensor mid = be.tensor(Shape{pooled.rows(), p.l1.out_features()});
    AM_RETURN_IF_ERROR(be.linear(p.l1, pooled, mid.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, mid.view()));
    out = be.tensor(Shape{pooled.rows(), p.l2.out_features()});
    AM_RETURN_IF_ERROR(be.linear(p.l2, mid.view(), out.view()));
    return be.rms_norm(out.view(), l2_.data(), kL2Eps, out.view());
  }

  Result<Tensor> encode_audio(Backend& be) const {
    const HtsatConfig& c = m_.hc;
    // BatchNorm over the mel bins: x * scale + shift, each a [1, mels] row broadcast by gathers.
    const int64_t mel_rows = batch_ * c.frames;
    Tensor mel = be.tensor(audio_.shape()), scale = be.tensor(Shape{mel_rows, c.mels});
    std::memcpy(mel.data(), audio_.data(), audio_.bytes());  // the input, uploaded once
    AM_RETURN_IF_ERROR(be.from_host(mel.view()));
    std::vector<int32_t> zero(static_cast<std::size_t>(mel_rows), 0);
    AM_RETURN_IF_ERROR(be.gather_rows(m_.bn_scale.view(), zero.data(), mel_rows, scale.view(), false));
    AM_RETURN_IF_ERROR(be.mul(mel.view(), scale.view()));
    AM_RETURN_IF_ERROR(be.gather_rows(m_.bn_shift.view(), zero.data(), mel_rows, mel.view(), true));
    // Fold into the square image (one channel): a permutation of the elements.
    const int64_t pixels = c.image * c.image;
    std::vector<int32_t> ids(static_cast<std::size_t>(batch_ * pixels));
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t i = 0; i < pixels; ++i)
        ids[static_cast<std::size_t>(b * pixels + i)] =
            static_cast<int32_t>(b * pixels + m_.fold[static_cast<std::size_t>(i)]);
    Tensor image = be.tensor(Shape{batch_ * pixels, 1});
    AM_RETURN_IF_ERROR(be.index_rows(ConstTensorView{mel.data(), Shape{batch_ * pixels, 1}}, ids.data(), batch_ * pixels,
                                     image.view()));
    int64_t res = c.image / c.patch;
    Tensor x = be.tensor(Shape{batch_ * res * res, c.hidden});
    Conv2dArgs conv;
    conv.x = image.view();
    conv.y = x.view();
    conv.weight = m_.patch_w.data();
    conv.bias = m_.patch_b.data();
    conv.batch = batch_;
    conv.height = conv.width = c.image;
    conv.in_channels = 1;
    conv.out_channels = c.hidden;
    conv.kernel_h = conv.kernel_w = conv.stride = c.patch;
    AM_RETURN_IF_ERROR(be.conv2d(conv));
    if (c.patch_norm) {
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), m_.patch_g.data(), m_.patch_beta.data(), kTorchNormEps, x.view()));
    }
    for (const SwinStage& s : m_.stages) {
      for (const SwinBlock& b : s.blocks) AM_RETURN_IF_ERROR(b.forward(be, x, batch_, c.eps, c.act));
      if (s.merge_g.empty()) continue;
      // Patch merging: (2y,2x), (2y+1,2x), (2y,2x+1), (2y+1,2x+1) side by side, as Swin orders them.
      // Viewed as rows of ch values, merged row r is the four source rows side by side: a
      // row gather through the backend.
      const int64_t half = s.res / 2, ch = s.channels, merged = batch_ * half * half;
      Tensor cat = be.tensor(Shape{merged, 4 * ch});
      std::vector<int32_t> quads(static_cast<std::size_t>(4 * merged));
      const int64_t dy[4] = {0, 1, 0, 1}, dx[4] = {0, 0, 1, 1};
      for (int64_t b = 0; b < batch_; ++b)
        for (int64_t y = 0; y < half; ++y)
          for (int64_t xx = 0; xx < half; ++xx)
            for (int q = 0; q < 4; ++q) {
              quads[static_cast<std::size_t>(((b * half + y) * half + xx) * 4 + q)] =
                  static_cast<int32_t>((b * s.res + 2 * y + dy[q]) * s.res + 2 * xx + dx[q]);
            }
      AM_RETURN_IF_ERROR(be.index_rows(x.view(), quads.data(), 4 * merged, TensorView{cat.data(), Shape{4 * merged, ch}}));
      AM_RETURN_IF_ERROR(be.layer_norm(cat.view(), s.merge_g.data(), s.merge_b.data(), kTorchNormEps, cat.view()));
      x = be.tensor(Shape{merged, 2 * ch});
      AM_RETURN_IF_ERROR(be.linear(s.merge, cat.view(), x.view()));
    }
    AM_RETURN_IF_ERROR(be.layer_norm(x.view(), m_.final_g.data(), m_.final_b.data(), kTorchNormEps, x.view()));
    Tensor pooled = be.tensor(Shape{batch_, x.cols()});
    AM_RETURN_IF_ERROR(be.global_avg_pool(x.view(), batch_, pooled.view()));
    Tensor out;
    AM_RETURN_IF_ERROR(project(be, pooled.view(), m_.audio_proj, out));
    return out;
  }

  Result<Tensor> encode_text(Backend& be) const {
    AM_ASSIGN_OR_RETURN(Tensor hidden, m_.text.forward_resident(text_in_, be));
    const int64_t h = m_.text.config().hidden;
    hidden.reshape(Shape{text_in_.batch * text_in_.seq, h});
    Tensor first = be.tensor(Shape{text_in_.batch, h}), pooled = be.tensor(Shape{text_in_.batch, h});
    AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), text_in_.seq, 0, first.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.pooler, first.view(), pooled.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kSigmoid, pooled.view()));  // tanh via its fold
    Tensor out;
    AM_RETURN_IF_ERROR(project(be, pooled.view(), m_.text_proj, out));
    return out;
  }

  Clap m_;
  FormatPlan f_;
  Tensor audio_;           // [batch*frames, mels]
  EncoderInput text_in_;
  int64_t batch_;
  Tensor l2_;
};

// ---- weights ---------------------------------------------------------------------------------------

// The stage/block geometry of an HTSAT config: resolution, channels, window, shift per block.
Status plan_stages(const ConfigReader& cfg, const HtsatConfig& c, std::vector<SwinStage>& stages) {
  int64_t res = c.image / c.patch, ch = c.hidden;
  for (std::size_t i = 0; i < c.depths.size(); ++i) {
    SwinStage s;
    s.res = res;
    s.channels = ch;
    // ClapAudioLayer.set_shift_and_window_size: one window, no shift, where the stage is that small.
    const int64_t window = std::min(c.window, res);
    if (res % window != 0 || ch % c.heads[i] != 0) {
      return cfg.error("stage " + std::to_string(i) + ": resolution " + std::to_string(res) + " / window or channels " +
                       std::to_string(ch) + " / heads do not divide");
    }
    for (int64_t b = 0; b < c.depths[i]; ++b) {
      SwinBlock k;
      k.res = res;
      k.window = window;
      k.shift = (b % 2 == 1 && res > c.window) ? c.window / 2 : 0;
      k.channels = ch;
      k.heads = c.heads[i];
      s.blocks.push_back(std::move(k));
    }
    if (i + 1 < c.depths.size()) {
      if (res % 2 != 0) return cfg.error("stage " + std::to_string(i) + " resolution is odd; cannot merge patches");
      res /= 2;
      ch *= 2;
    }
    stages.push_back(std::move(s));
  }
  return Status::Ok();
}

Status seed_clap(Clap& m, const EncoderConfig& tc, int64_t proj, const FormatPlan& f, uint64_t seed,
                 const ExecContext& ctx) {
  SeededWeights src(seed, kWeightStream, ctx);
  const HtsatConfig& c = m.hc;
  m.bn_scale = src.normal(Shape{1, c.mels}, 1.0f, kNormNoiseStd);
  m.bn_shift = src.normal(Shape{1, c.mels}, 0.0f, kNormNoiseStd);
  m.patch_w = src.normal(Shape{c.hidden, 1, c.patch, c.patch}, 0.0f, 1.0f / static_cast<float>(c.patch));
  m.patch_b = src.normal(Shape{c.hidden}, 0.0f, kInitStd);
  m.patch_g = src.normal(Shape{c.hidden}, 1.0f, kNormNoiseStd);
  m.patch_beta = src.normal(Shape{c.hidden}, 0.0f, kNormNoiseStd);
  for (std::size_t i = 0; i < m.stages.size(); ++i) {
    SwinStage& s = m.stages[i];
    const int64_t ch = s.channels;
    const float std = 1.0f / std::sqrt(static_cast<float>(ch));
    for (SwinBlock& b : s.blocks) {
      b.ln1_g = src.normal(Shape{ch}, 1.0f, kNormNoiseStd);
      b.ln1_b = src.normal(Shape{ch}, 0.0f, kNormNoiseStd);
      b.q = src.linear(ch, ch, std, true, kInitStd, f.attention);
      b.k = src.linear(ch, ch, std, true, kInitStd, f.attention);
      b.v = src.linear(ch, ch, std, true, kInitStd, f.attention);
      b.o = src.linear(ch, ch, std, true, kInitStd, f.attention);
      b.rel_table = src.normal(Shape{(2 * b.window - 1) * (2 * b.window - 1), b.heads}, 0.0f, kInitStd);
      b.ln2_g = src.normal(Shape{ch}, 1.0f, kNormNoiseStd);
      b.ln2_b = src.normal(Shape{ch}, 0.0f, kNormNoiseStd);
      b.fc1 = src.linear(ch, kSwinMlpRatio * ch, std, true, kInitStd, f.feed_forward);
      b.fc2 = src.linear(kSwinMlpRatio * ch, ch, 1.0f / std::sqrt(static_cast<float>(kSwinMlpRatio * ch)), true, kInitStd,
                         f.feed_forward);
      b.prepare();
    }
    if (i + 1 < m.stages.size()) {
      s.merge_g = src.normal(Shape{4 * ch}, 1.0f, kNormNoiseStd);
      s.merge_b = src.normal(Shape{4 * ch}, 0.0f, kNormNoiseStd);
      s.merge = src.linear(4 * ch, 2 * ch, kInitStd, false, 0.0f, f.other);
    }
  }
  const int64_t last = m.stages.back().channels;
  m.final_g = src.normal(Shape{last}, 1.0f, kNormNoiseStd);
  m.final_b = src.normal(Shape{last}, 0.0f, kNormNoiseStd);
  m.audio_proj.l1 = src.linear(last, proj, kInitStd, true, 0.0f, f.output);
  m.audio_proj.l2 = src.linear(proj, proj, kInitStd, true, 0.0f, f.output);
  // The text tower keeps one format for all its linear layers (the encoder-only family's model):
  // the attention role's format.
  AM_ASSIGN_OR_RETURN(m.text, EncoderModel::create_synthetic(tc, f.attention, seed, ctx));
  Tensor pw = src.normal(Shape{tc.hidden, tc.hidden}, 0.0f, kInitStd), pb = src.normal(Shape{tc.hidden}, 0.0f, kInitStd);
  Tensor l1w = src.normal(Shape{proj, tc.hidden}, 0.0f, kInitStd), l1b = src.normal(Shape{proj}, 0.0f, kInitStd);
  fold_tanh(pw, pb, l1w, l1b);
  m.pooler = Linear::create(std::move(pw), std::move(pb), f.output, ctx);
  m.text_proj.l1 = Linear::create(std::move(l1w), std::move(l1b), f.output, ctx);
  m.text_proj.l2 = src.linear(proj, proj, kInitStd, true, 0.0f, f.output);
  return Status::Ok();
}

// ClapModel names: audio_model.audio_encoder.{batch_norm.{weight,bias,running_mean,running_var},
// patch_embed.proj, patch_embed.norm, layers.S.blocks.B.{layernorm_before,
// attention.self.{query,key,value,relative_position_bias_table}, attention.output.dense,
// layernorm_after, intermediate.dense, output.dense}, layers.S.downsample.{norm, reduction},
// norm}, audio_projection.{linear1, linear2}, text_model.* (RoBERTa: BertModel's names) with
// text_model.pooler.dense, text_projection.{linear1, linear2}, logit_scale_a (the audio side's).
Status read_clap(const Checkpoint& file, const EncoderConfig& tc, int64_t proj, const FormatPlan& f,
                 const ExecContext& ctx, Clap& m) {
  const std::string a = "audio_model.audio_encoder.";
  const HtsatConfig& c = m.hc;
  auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
    AM_ASSIGN_OR_RETURN(dst, file.read_f32(name, shape));
    return Status::Ok();
  };
  auto linear = [&](const std::string& name, int64_t in, int64_t out, bool bias, WeightFormat fmt, Linear& l) -> Status {
    Tensor w, b;
    AM_RETURN_IF_ERROR(read(name + ".weight", Shape{out, in}, w));
    if (bias) AM_RETURN_IF_ERROR(read(name + ".bias", Shape{out}, b));
    AM_ASSIGN_OR_RETURN(l, linear_from_tensors(std::string(kFamily) + " weights", name, std::move(w), std::move(b), in,
                                               out, bias, fmt, ctx));
    return Status::Ok();
  };
  // BatchNorm2d(mels) in eval: scale = gamma / sqrt(var + eps), shift = beta - mean * scale.
  Tensor gamma, beta, mean, var;
  AM_RETURN_IF_ERROR(read(a + "batch_norm.weight", Shape{c.mels}, gamma));
  AM_RETURN_IF_ERROR(read(a + "batch_norm.bias", Shape{c.mels}, beta));
  AM_RETURN_IF_ERROR(read(a + "batch_norm.running_mean", Shape{c.mels}, mean));
  AM_RETURN_IF_ERROR(read(a + "batch_norm.running_var", Shape{c.mels}, var));
  m.bn_scale = Tensor(Shape{1, c.mels});
  m.bn_shift = Tensor(Shape{1, c.mels});
  for (int64_t i = 0; i < c.mels; ++i) {
    const double s = gamma.data()[i] / std::sqrt(static_cast<double>(var.data()[i]) + kTorchNormEps);
    m.bn_scale.data()[i] = static_cast<float>(s);
    m.bn_shift.data()[i] = static_cast<float>(beta.data()[i] - mean.data()[i] * s);
  }
  AM_RETURN_IF_ERROR(read(a + "patch_embed.proj.weight", Shape{c.hidden, 1, c.patch, c.patch}, m.patch_w));
  AM_RETURN_IF_ERROR(read(a + "patch_embed.proj.bias", Shape{c.hidden}, m.patch_b));
  if (c.patch_norm) {
    AM_RETURN_IF_ERROR(read(a + "patch_embed.norm.weight", Shape{c.hidden}, m.patch_g));
    AM_RETURN_IF_ERROR(read(a + "patch_embed.norm.bias", Shape{c.hidden}, m.patch_beta));
  }
  for (std::size_t i = 0; i < m.stages.size(); ++i) {
    SwinStage& s = m.stages[i];
    const int64_t ch = s.channels;
    for (std::size_t j = 0; j < s.blocks.size(); ++j) {
      SwinBlock& b = s.blocks[j];
      const std::string p = a + "layers." + std::to_string(i) + ".blocks." + std::to_string(j) + ".";
      AM_RETURN_IF_ERROR(read(p + "layernorm_before.weight", Shape{ch}, b.ln1_g));
      AM_RETURN_IF_ERROR(read(p + "layernorm_before.bias", Shape{ch}, b.ln1_b));
      AM_RETURN_IF_ERROR(linear(p + "attention.self.query", ch, ch, true, f.attention, b.q));
      AM_RETURN_IF_ERROR(linear(p + "attention.self.key", ch, ch, true, f.attention, b.k));
      AM_RETURN_IF_ERROR(linear(p + "attention.self.value", ch, ch, true, f.attention, b.v));
      AM_RETURN_IF_ERROR(linear(p + "attention.output.dense", ch, ch, true, f.attention, b.o));
      // The table is as large as the configured window, even where a stage is one smaller window.
      const int64_t tw = 2 * c.window - 1;
      Tensor table;
      AM_RETURN_IF_ERROR(read(p + "attention.self.relative_position_bias_table", Shape{tw * tw, b.heads}, table));
      if (b.window == c.window) {
        b.rel_table = std::move(table);
      } else {
        return unsupported(std::string(kFamily) + ": stage " + std::to_string(i) + " is smaller than audio_window " +
                           std::to_string(c.window) + "; its relative-position table indexing is not modelled");
      }
      AM_RETURN_IF_ERROR(read(p + "layernorm_after.weight", Shape{ch}, b.ln2_g));
      AM_RETURN_IF_ERROR(read(p + "layernorm_after.bias", Shape{ch}, b.ln2_b));
      AM_RETURN_IF_ERROR(linear(p + "intermediate.dense", ch, kSwinMlpRatio * ch, true, f.feed_forward, b.fc1));
      AM_RETURN_IF_ERROR(linear(p + "output.dense", kSwinMlpRatio * ch, ch, true, f.feed_forward, b.fc2));
      b.prepare();
    }
    if (i + 1 < m.stages.size()) {
      const std::string p = a + "layers." + std::to_string(i) + ".downsample.";
      AM_RETURN_IF_ERROR(read(p + "norm.weight", Shape{4 * ch}, s.merge_g));
      AM_RETURN_IF_ERROR(read(p + "norm.bias", Shape{4 * ch}, s.merge_b));
      AM_RETURN_IF_ERROR(linear(p + "reduction", 4 * ch, 2 * ch, false, f.other, s.merge));
    }
  }
  const int64_t last = m.stages.back().channels;
  AM_RETURN_IF_ERROR(read(a + "norm.weight", Shape{last}, m.final_g));
  AM_RETURN_IF_ERROR(read(a + "norm.bias", Shape{last}, m.final_b));
  AM_RETURN_IF_ERROR(linear("audio_projection.linear1", last, proj, true, f.output, m.audio_proj.l1));
  AM_RETURN_IF_ERROR(linear("audio_projection.linear2", proj, proj, true, f.output, m.audio_proj.l2));
  AM_ASSIGN_OR_RETURN(m.text, load_bert_checkpoint(file, tc, f.attention, ctx, "text_model."));
  Tensor pw, pb, l1w, l1b;
  AM_RETURN_IF_ERROR(read("text_model.pooler.dense.weight", Shape{tc.hidden, tc.hidden}, pw));
  AM_RETURN_IF_ERROR(read("text_model.pooler.dense.bias", Shape{tc.hidden}, pb));
  AM_RETURN_IF_ERROR(read("text_projection.linear1.weight", Shape{proj, tc.hidden}, l1w));
  AM_RETURN_IF_ERROR(read("text_projection.linear1.bias", Shape{proj}, l1b));
  fold_tanh(pw, pb, l1w, l1b);
  m.pooler = Linear::create(std::move(pw), std::move(pb), f.output, ctx);
  m.text_proj.l1 = Linear::create(std::move(l1w), std::move(l1b), f.output, ctx);
  AM_RETURN_IF_ERROR(linear("text_projection.linear2", proj, proj, true, f.output, m.text_proj.l2));
  Tensor scale;
  AM_RETURN_IF_ERROR(read("logit_scale_a", Shape{}, scale));
  m.logit_scale = scale.data()[0];
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_clap_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx) {
  return build_clap_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_clap_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                        const ExecContext& ctx, const ClapInputs* given) {
  ConfigReader cfg(spec.model_config, kFamily);
  Clap m;
  HtsatConfig& hc = m.hc;
  AM_ASSIGN_OR_RETURN(hc.image, cfg.dim("audio_image_size"));
  AM_ASSIGN_OR_RETURN(hc.patch, cfg.dim("audio_patch"));
  AM_ASSIGN_OR_RETURN(hc.hidden, cfg.dim("audio_hidden"));
  AM_ASSIGN_OR_RETURN(hc.window, cfg.dim("audio_window"));
  AM_ASSIGN_OR_RETURN(hc.mels, cfg.dim("audio_mel_bins"));
  AM_ASSIGN_OR_RETURN(hc.frames, cfg.dim("audio_frames"));
  AM_ASSIGN_OR_RETURN(hc.depths, int_array(spec.model_config, "audio_depths"));
  AM_ASSIGN_OR_RETURN(hc.heads, int_array(spec.model_config, "audio_heads"));
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-30, 1.0));
  hc.eps = static_cast<float>(eps);
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("audio_activation", "gelu"));
  AM_ASSIGN_OR_RETURN(hc.act, activation_from_name(act));
  AM_ASSIGN_OR_RETURN(hc.patch_norm, cfg.flag("audio_patch_norm", true));
  if (hc.image % hc.mels != 0 || hc.mels * hc.frames != hc.image * hc.image) {
    return cfg.error("audio_mel_bins must divide audio_image_size and audio_mel_bins x audio_frames equal "
                     "audio_image_size^2 (HTSAT folds the spectrogram)");
  }
  if (hc.depths.size() != hc.heads.size()) return cfg.error("audio_depths and audio_heads differ in length");
  if (hc.image % hc.patch != 0) return cfg.error("audio_image_size is not a multiple of audio_patch");
  if (hc.window % 2 != 0) return cfg.error("audio_window must be even (shifted windows move by half a window)");
  EncoderConfig tc;
  AM_ASSIGN_OR_RETURN(tc.layers, cfg.dim("text_layers"));
  AM_ASSIGN_OR_RETURN(tc.hidden, cfg.dim("text_hidden"));
  AM_ASSIGN_OR_RETURN(tc.heads, cfg.dim("text_heads"));
  AM_ASSIGN_OR_RETURN(tc.intermediate, cfg.dim("text_intermediate"));
  AM_ASSIGN_OR_RETURN(tc.vocab, cfg.dim("vocab"));
  AM_ASSIGN_OR_RETURN(tc.max_positions, cfg.dim("max_positions"));
  AM_ASSIGN_OR_RETURN(tc.type_vocab, cfg.dim("text_type_vocab", int64_t{1}));
  AM_ASSIGN_OR_RETURN(double text_eps, cfg.number("text_norm_eps", 1e-12, 1e-30, 1.0));
  tc.norm_eps = static_cast<float>(text_eps);
  AM_ASSIGN_OR_RETURN(tc.activation, cfg.text("text_activation", "gelu"));
  AM_RETURN_IF_ERROR(activation_from_name(tc.activation).status());
  AM_ASSIGN_OR_RETURN(double offset, cfg.number("text_position_offset", 2.0, 0.0, 1e6));
  tc.position_offset = static_cast<int64_t>(offset);
  if (tc.hidden % tc.heads != 0) return cfg.error("text_hidden is not a multiple of text_heads");
  if (spec.seq_len + tc.position_offset > tc.max_positions) {
    return cfg.error("seq_len + text_position_offset exceeds max_positions");
  }
  AM_ASSIGN_OR_RETURN(int64_t proj, cfg.dim("projection_dim"));
  AM_ASSIGN_OR_RETURN(double scale, cfg.number("logit_scale", 2.6593, -20.0, 20.0));
  m.logit_scale = static_cast<float>(scale);
  AM_RETURN_IF_ERROR(plan_stages(cfg, hc, m.stages));
  std::size_t est = 0;
  const FormatPlan f = format_plan_for(precision);
  for (const SwinStage& s : m.stages) {
    est += s.blocks.size() * (4 * linear_bytes(s.channels, s.channels, f.attention, true) +
                              2 * linear_bytes(s.channels, kSwinMlpRatio * s.channels, f.feed_forward, true));
  }
  AM_RETURN_IF_ERROR(check_weight_budget(kFamily, est));
  // model_config "weights_path" names a ClapModel checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, kFamily));
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(*checkpoint));
    AM_RETURN_IF_ERROR(read_clap(file, tc, proj, f, ctx, m));
  } else {
    AM_RETURN_IF_ERROR(seed_clap(m, tc, proj, f, spec.seed, ctx));
  }
  m.fold = mel_fold(hc);
  Tensor audio(Shape{spec.batch * hc.frames, hc.mels});
  EncoderInput text_in;
  if (given) {
    if (static_cast<int64_t>(given->mel.size()) != audio.numel() ||
        static_cast<int64_t>(given->ids.size()) != spec.batch * spec.seq_len ||
        given->mask.size() != given->ids.size()) {
      return invalid_argument(std::string(kFamily) + ": given mel must be batch*audio_frames*audio_mel_bins, ids and "
                                                     "mask batch*seq_len");
    }
    std::copy(given->mel.begin(), given->mel.end(), audio.data());
    text_in.batch = spec.batch;
    text_in.seq = spec.seq_len;
    text_in.token_ids = given->ids;
    text_in.attention_mask = given->mask;
    text_in.token_type_ids.assign(given->ids.size(), 0);
  } else {
    fill_normal(audio.data(), audio.numel(), 0.0f, 1.0f, derive_seed(spec.seed, kAudioStream), ctx);
    text_in = make_synthetic_encoder_input(tc, spec.batch, spec.seq_len, spec.seed);
  }
  AM_RETURN_IF_ERROR(validate_encoder_input(tc, text_in));
  return std::unique_ptr<ModelGraph>(
      std::make_unique<ClapGraph>(std::move(m), f, std::move(audio), std::move(text_in), spec.batch));
}

}  // namespace am::kernels
