// X-CLIP (video-text retrieval, Ni et al. 2022; Hugging Face's XCLIPModel):
//   - the vision tower is CLIP's with cross-frame communication in every layer: a message token
//     per frame (message_fc of the frame's class token, refined by message_attn over the video's
//     frames after message_ln, residually) is appended to the frame's tokens for the layer's
//     self-attention, then dropped before the MLP (the MLP is per token, so running it on the
//     message too and dropping it after changes nothing); post_layernorm on the class token and
//     visual_projection give the frame embeddings;
//   - the multi-frame integration transformer (MIT): learned frame positions added, CLIP
//     encoder layers, the input added back residually, the mean over frames = video embedding;
//   - the video-specific prompt generator: the last layer's patch tokens through
//     prompts_visual_layernorm and prompts_visual_projection, averaged over frames; every text
//     embedding (unnormalised) is refined per video by prompt_layers layers of
//     [x += cross-attention(norm1(x), visual); x += MLP(norm3(x))] (MLP 4x, prompt_activation)
//     over the generator's LayerNorm'ed visual tokens, and the video's text embedding is
//     text + alpha * x (alpha: a learned per-channel vector, initialised to prompt_alpha);
//   - logits_per_video[v, t] = exp(logit_scale) * <video_v, text_{v,t}>, both L2-normalised.
//
// Keys: clip_model.h's, plus frames, mit_layers, mit_heads, mit_intermediate (MIT width =
// projection_dim), prompt_layers (default 2), prompt_heads (default 8), prompt_alpha (default
// 0.1), prompt_activation (default "quick_gelu"). The MIT and the generator's visual LayerNorms
// use the vision tower's eps and activation, the generator's layer norms the text tower's, as
// XCLIPModel builds them. Input: `batch` videos of `frames` seeded frames and `batch` seeded
// texts of seq_len tokens. Output: logits_per_video [batch, batch], logits=true.
// weights_path: an XCLIPModel checkpoint (read_xclip below lists the names).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "kernels/models/clip_model.h"
#include "kernels/models/multimodal.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x58434c57ull;  // "XCLW"
constexpr uint64_t kPixelStream = 0x58434c50ull;
constexpr uint64_t kTextStream = 0x58434c54ull;
constexpr float kInitStd = 0.02f;
constexpr float kPositionStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kBiasStd = 0.02f;
constexpr int64_t kPromptMlpMult = 4;
constexpr const char* kFamily = "multimodal";

struct XclipConfig {
  ClipConfig clip;
  int64_t frames = 8, mit_layers = 1, mit_heads = 8, mit_inter = 2048, prompt_layers = 2, prompt_heads = 8;
  float prompt_alpha = 0.1f;
  Activation prompt_act = Activation::kQuickGelu;
  StackConfig layer() const {  // one cross-frame vision layer
    const VitTowerConfig& v = clip.vision;
    return vit_stack_config(kFamily, 1, v.hidden, v.heads, v.intermediate, v.activation, v.eps, false);
  }
  StackConfig mit() const {
    const VitTowerConfig& v = clip.vision;
    return vit_stack_config(kFamily, mit_layers, clip.projection, mit_heads, mit_inter, v.activation, v.eps, false);
  }
};

struct LayerNormWeights {
  Tensor g, b;
};

struct Attention {
  Linear q, k, v, o;
};

// Self-attention of x [batch*len, width] within each sample: o(attention(q(x), k(x), v(x))).
Status self_attend(Backend& be, const Attention& a, ConstTensorView x, int64_t batch, int64_t len, int64_t heads,
                   TensorView out) {
  const int64_t w = a.q.out_features();
  Tensor q = be.tensor(Shape{x.rows(), w}), k = be.tensor(Shape{x.rows(), w}), v = be.tensor(Shape{x.rows(), w}), ctx = be.tensor(Shape{x.rows(), w});
  AM_RETURN_IF_ERROR(be.linear(a.q, x, q.view()));
  AM_RETURN_IF_ERROR(be.linear(a.k, x, k.view()));
  AM_RETURN_IF_ERROR(be.linear(a.v, x, v.view()));
  AttentionArgs args;
  args.q = q.view();
  args.k = k.view();
  args.v = v.view();
  args.out = ctx.view();
  args.batch = batch;
  args.q_len = args.kv_len = len;
  args.heads = args.kv_heads = heads;
  args.head_dim = w / heads;
  AM_RETURN_IF_ERROR(be.attention(args));
  return be.linear(a.o, ctx.view(), out);
}

// One cross-frame vision layer: the message path (XCLIPVisionEncoderLayer's message_fc,
// message_ln, message_attn) and the CLIP layer run over [tokens; message].
struct CrossFrameLayer {
  Linear message_fc;
  LayerNormWeights message_ln;
  Attention message_attn;
  TransformerStack layer;  // one pre-LN CLIP layer
};

// The video-specific prompt generator (XCLIPPromptGenerator and XCLIPModel's prompts_visual_*).
struct PromptGenerator {
  struct Layer {
    LayerNormWeights norm1, norm3;
    Linear q, k, v, o, fc1, fc2;
  };
  LayerNormWeights visual_ln;   // prompts_visual_layernorm (vision width, vision eps)
  Linear visual_projection;     // prompts_visual_projection: vision width -> projection
  LayerNormWeights ln;          // the generator's LayerNorm on the visual tokens (vision eps)
  std::vector<Layer> layers;    // norm1/norm3 at the text eps
  Tensor alpha;                 // [1, projection]
  int64_t heads = 1;
  float vision_eps = 1e-5f, text_eps = 1e-5f;
  Activation act = Activation::kQuickGelu;

  std::size_t weights_bytes() const {
    std::size_t t = visual_ln.g.bytes() * 2 + visual_projection.weight_bytes() + ln.g.bytes() * 2 + alpha.bytes();
    for (const Layer& l : layers) {
      t += 4 * l.norm1.g.bytes();
      for (const Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2}) t += w->weight_bytes();
    }
    return t;
  }

  // Visual prompt tokens [videos * patches, proj] from the vision tower's last states
  // [videos * frames * tokens, hidden] (class token first in each frame): LayerNorm and
  // projection of every patch token, then the mean over each video's frames per patch.
  Result<Tensor> visual_tokens(Backend& be, ConstTensorView tokens, int64_t videos, int64_t frames,
                               int64_t tokens_per_frame) const {
    const int64_t patches = tokens_per_frame - 1, hidden = tokens.cols(), proj = visual_projection.out_features();
    // Rows ordered (video, patch, frame), so each (video, patch) has its frames adjacent.
    std::vector<int32_t> ids(static_cast<std::size_t>(videos * patches * frames));
    for (int64_t v = 0; v < videos; ++v)
      for (int64_t p = 0; p < patches; ++p)
        for (int64_t f = 0; f < frames; ++f)
          ids[static_cast<std::size_t>((v * patches + p) * frames + f)] =
              static_cast<int32_t>((v * frames + f) * tokens_per_frame + 1 + p);
    Tensor patch = be.tensor(Shape{videos * patches * frames, hidden});
    AM_RETURN_IF_ERROR(be.index_rows(tokens, ids.data(), patch.rows(), patch.view()));
    AM_RETURN_IF_ERROR(be.layer_norm(patch.view(), visual_ln.g.data(), visual_ln.b.data(), vision_eps, patch.view()));
    Tensor projected = be.tensor(Shape{patch.rows(), proj});
    AM_RETURN_IF_ERROR(be.linear(visual_projection, patch.view(), projected.view()));
    Tensor visual = be.tensor(Shape{videos * patches, proj});
    AM_RETURN_IF_ERROR(be.global_avg_pool(projected.view(), videos * patches, visual.view()));
    return visual;
  }

  // text: [videos * texts, proj], each video's copy of the unnormalised text embeddings; visual:
  // [videos * patches, proj]. Replaces text with text + alpha * generator(text, visual).
  Status refine(Backend& be, TensorView text, int64_t videos, int64_t texts, ConstTensorView visual) const {
    const int64_t proj = text.cols(), patches = visual.rows() / videos, rows = text.rows();
    Tensor vis = be.tensor(Shape{visual.rows(), proj});
    AM_RETURN_IF_ERROR(be.layer_norm(visual, ln.g.data(), ln.b.data(), vision_eps, vis.view()));
    Tensor x = be.tensor(Shape{rows, proj}), h = be.tensor(Shape{rows, proj}), q = be.tensor(Shape{rows, proj}), ctx = be.tensor(Shape{rows, proj}),
        branch = be.tensor(Shape{rows, proj}), k = be.tensor(Shape{vis.rows(), proj}), v = be.tensor(Shape{vis.rows(), proj}),
        inner = be.tensor(Shape{rows, kPromptMlpMult * proj});
    AM_RETURN_IF_ERROR(copy_rows(be, text, x.view(), 0));
    for (const Layer& l : layers) {
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), l.norm1.g.data(), l.norm1.b.data(), text_eps, h.view()));
      AM_RETURN_IF_ERROR(be.linear(l.q, h.view(), q.view()));
      AM_RETURN_IF_ERROR(be.linear(l.k, vis.view(), k.view()));
      AM_RETURN_IF_ERROR(be.linear(l.v, vis.view(), v.view()));
      AttentionArgs a;
      a.q = q.view();
      a.k = k.view();
      a.v = v.view();
      a.out = ctx.view();
      a.batch = videos;
      a.q_len = texts;
      a.kv_len = patches;
      a.heads = a.kv_heads = heads;
      a.head_dim = proj / heads;
      AM_RETURN_IF_ERROR(be.attention(a));
      AM_RETURN_IF_ERROR(be.linear(l.o, ctx.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), l.norm3.g.data(), l.norm3.b.data(), text_eps, h.view()));
      AM_RETURN_IF_ERROR(be.linear(l.fc1, h.view(), inner.view()));
      AM_RETURN_IF_ERROR(be.activation(act, inner.view()));
      AM_RETURN_IF_ERROR(be.linear(l.fc2, inner.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), branch.view()));
    }
    // alpha (one row, a weight: gather_rows, cached on a device) broadcast over the rows, then x *= alpha; text += x.
    std::vector<int32_t> zero(static_cast<std::size_t>(rows), 0);
    AM_RETURN_IF_ERROR(be.gather_rows(alpha.view(), zero.data(), rows, branch.view(), false));
    AM_RETURN_IF_ERROR(be.mul(x.view(), branch.view()));
    return be.add(text, x.view());
  }
};

struct Xclip {
  XclipConfig c;
  VitEmbedding embedding;
  std::vector<CrossFrameLayer> layers;
  LayerNormWeights post_ln;
  Linear visual_projection;
  TextEmbedding text_embedding;
  TransformerStack text;  // causal, final_layer_norm
  Linear text_projection;
  Tensor mit_positions;   // [frames, projection]
  TransformerStack mit;
  PromptGenerator prompts;
  float logit_scale = 2.6592f;
  Tensor l2;              // l2_norm_gamma(projection)

  std::size_t weights_bytes() const {
    std::size_t t = embedding.bytes() + post_ln.g.bytes() * 2 + visual_projection.weight_bytes() + text_embedding.bytes() +
                    text.weights_bytes() + text_projection.weight_bytes() + mit_positions.bytes() +
                    mit.weights_bytes() + prompts.weights_bytes();
    for (const CrossFrameLayer& l : layers) {
      t += l.message_fc.weight_bytes() + l.message_ln.g.bytes() * 2 + l.layer.weights_bytes();
      for (const Linear* w : {&l.message_attn.q, &l.message_attn.k, &l.message_attn.v, &l.message_attn.o})
        t += w->weight_bytes();
    }
    return t;
  }

  // The vision tower's last states [videos*frames*tokens, hidden].
  Result<Tensor> vision_states(Backend& be, ConstTensorView pixels, int64_t videos) const {
    const VitTowerConfig& v = c.clip.vision;
    const int64_t n = videos * c.frames, tokens = v.tokens(), hd = v.hidden;
    AM_ASSIGN_OR_RETURN(Tensor x, vit_embed(be, v, embedding, pixels, n));
    Tensor cls = be.tensor(Shape{n, hd}), msg = be.tensor(Shape{n, hd}), normed = be.tensor(Shape{n, hd}), branch = be.tensor(Shape{n, hd});
    Tensor ext = be.tensor(Shape{n * (tokens + 1), hd});
    for (const CrossFrameLayer& l : layers) {
      AM_RETURN_IF_ERROR(take_rows(be, x.view(), tokens, 0, cls.view()));
      AM_RETURN_IF_ERROR(be.linear(l.message_fc, cls.view(), msg.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(msg.view(), l.message_ln.g.data(), l.message_ln.b.data(), v.eps, normed.view()));
      AM_RETURN_IF_ERROR(self_attend(be, l.message_attn, normed.view(), videos, c.frames, v.heads, branch.view()));
      AM_RETURN_IF_ERROR(be.add(msg.view(), branch.view()));
      for (int64_t f = 0; f < n; ++f) {
        AM_RETURN_IF_ERROR(copy_rows(be, x.view().row_range(f * tokens, tokens), ext.view(), f * (tokens + 1)));
        AM_RETURN_IF_ERROR(copy_rows(be, msg.view().row_range(f, 1), ext.view(), f * (tokens + 1) + tokens));
      }
      AM_RETURN_IF_ERROR(l.layer.forward(be, ext.view(), n, tokens + 1, 0, nullptr, nullptr));
      for (int64_t f = 0; f < n; ++f) AM_RETURN_IF_ERROR(copy_rows(be, ext.view().row_range(f * (tokens + 1), tokens), x.view(), f * tokens));
    }
    return x;
  }

  Status normalize(Backend& be, TensorView x) const { return be.rms_norm(x, l2.data(), 1e-12f, x); }

  Result<Tensor> encode_texts(Backend& be, const ClipTexts& t) const {
    Tensor x = be.tensor(Shape{t.batch * t.len, text.config().hidden});
    AM_RETURN_IF_ERROR(text_embedding.embed(be, t.ids.data(), t.batch, t.len, 0, x.view()));
    AM_RETURN_IF_ERROR(text.forward(be, x.view(), t.batch, t.len, 0, nullptr, nullptr));
    Tensor pooled = be.tensor(Shape{t.batch, text.config().hidden});
    AM_RETURN_IF_ERROR(be.index_rows(x.view(), t.eos_rows.data(), t.batch, pooled.view()));
    Tensor out = be.tensor(Shape{t.batch, c.clip.projection});
    AM_RETURN_IF_ERROR(be.linear(text_projection, pooled.view(), out.view()));
    return out;
  }

  // logits_per_video [videos, texts].
  Result<Tensor> logits(Backend& be, ConstTensorView pixels, int64_t videos, const ClipTexts& texts) const {
    const VitTowerConfig& v = c.clip.vision;
    const int64_t n = videos * c.frames, proj = c.clip.projection;
    AM_ASSIGN_OR_RETURN(Tensor states, vision_states(be, pixels, videos));
    Tensor cls = be.tensor(Shape{n, v.hidden});
    AM_RETURN_IF_ERROR(take_rows(be, states.view(), v.tokens(), 0, cls.view()));
    AM_RETURN_IF_ERROR(be.layer_norm(cls.view(), post_ln.g.data(), post_ln.b.data(), v.eps, cls.view()));
    Tensor frames = be.tensor(Shape{n, proj});
    AM_RETURN_IF_ERROR(be.linear(visual_projection, cls.view(), frames.view()));
    // MIT: positions added, the encoder, the input added back, the mean over frames.
    Tensor mixed = be.tensor(frames.shape());
    AM_RETURN_IF_ERROR(copy_rows(be, frames.view(), mixed.view(), 0));
    std::vector<int32_t> pos(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % c.frames);
    AM_RETURN_IF_ERROR(be.gather_rows(mit_positions.view(), pos.data(), n, mixed.view(), true));
    AM_RETURN_IF_ERROR(mit.forward(be, mixed.view(), videos, c.frames, 0, nullptr, nullptr));
    AM_RETURN_IF_ERROR(be.add(mixed.view(), frames.view()));
    Tensor video = be.tensor(Shape{videos, proj});
    AM_RETURN_IF_ERROR(be.global_avg_pool(mixed.view(), videos, video.view()));
    AM_RETURN_IF_ERROR(normalize(be, video.view()));
    // Video-specific prompts: every video refines its own copy of the text embeddings.
    AM_ASSIGN_OR_RETURN(Tensor visual, prompts.visual_tokens(be, states.view(), videos, c.frames, v.tokens()));
    AM_ASSIGN_OR_RETURN(Tensor txt, encode_texts(be, texts));
    const int64_t nt = texts.batch;
    std::vector<int32_t> copies(static_cast<std::size_t>(videos * nt));
    for (int64_t i = 0; i < videos * nt; ++i) copies[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % nt);
    Tensor per_video = be.tensor(Shape{videos * nt, proj});
    AM_RETURN_IF_ERROR(be.index_rows(txt.view(), copies.data(), videos * nt, per_video.view()));
    AM_RETURN_IF_ERROR(prompts.refine(be, per_video.view(), videos, nt, visual.view()));
    AM_RETURN_IF_ERROR(normalize(be, per_video.view()));
    Tensor out = be.tensor(Shape{videos, nt});
    for (int64_t vi = 0; vi < videos; ++vi) {
      const ConstTensorView video_v{video.row(vi), Shape{1, proj}};
      const ConstTensorView texts_v{per_video.row(vi * nt), Shape{nt, proj}};
      AM_RETURN_IF_ERROR(be.matmul_nt(video_v, texts_v, std::exp(logit_scale), TensorView{out.row(vi), Shape{1, nt}}));
    }
    return out;
  }
};

class XclipGraph final : public ModelGraph {
 public:
  XclipGraph(Xclip m, FormatPlan f, Tensor pixels, ClipTexts texts, int64_t batch)
      : m_(std::move(m)), f_(f), pixels_(std::move(pixels)), texts_(std::move(texts)), batch_(batch) {}
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    for (const CrossFrameLayer& l : m_.layers) l.layer.add_required_ops(ops);
    m_.text.add_required_ops(ops);
    m_.mit.add_required_ops(ops);
    m_.text_embedding.add_required_ops(ops);
    for (Op op : {Op::kConv2d, Op::kGatherRows, Op::kLayerNorm, Op::kIndexRows, Op::kAttention, Op::kAdd, Op::kMul,
                  Op::kActivation, Op::kGlobalAvgPool, Op::kRmsNorm, Op::kMatmulNt})
      require(ops, op);
    for (WeightFormat w : {f_.attention, f_.feed_forward, f_.output, f_.other}) require(ops, Op::kLinear, w);
    return ops;
  }
  std::size_t weights_bytes() const override { return m_.weights_bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return texts_.batch * texts_.len; }
  Result<GraphOutput> forward(Backend& be) const override {
    GraphOutput out;
    out.logits = true;
    AM_ASSIGN_OR_RETURN(out.output, m_.logits(be, pixels_.view(), batch_, texts_));
    return out;
  }

 private:
  Xclip m_;
  FormatPlan f_;
  Tensor pixels_;
  ClipTexts texts_;
  int64_t batch_;
};

// ---- seeded weights ------------------------------------------------------------------------------

LayerNormWeights seeded_norm(SeededWeights& src, int64_t width) {
  return {src.normal(Shape{width}, 1.0f, kNormNoiseStd), src.normal(Shape{width}, 0.0f, kNormNoiseStd)};
}

Attention seeded_attention(SeededWeights& src, int64_t in, int64_t width, bool biases, WeightFormat f) {
  const float std = 1.0f / std::sqrt(static_cast<float>(in));
  return {src.linear(in, width, std, biases, kBiasStd, f), src.linear(in, width, std, biases, kBiasStd, f),
          src.linear(in, width, std, biases, kBiasStd, f), src.linear(width, width, std, true, kBiasStd, f)};
}

Result<Xclip> seeded_xclip(const XclipConfig& c, const FormatPlan& f, uint64_t seed, const ExecContext& ctx) {
  SeededWeights src(seed, kWeightStream, ctx);
  const VitTowerConfig& v = c.clip.vision;
  const int64_t vh = v.hidden, th = c.clip.text.hidden, proj = c.clip.projection;
  Xclip m;
  m.c = c;
  const int64_t fan_in = v.channels * v.patch * v.patch;
  m.embedding.patch_w =
      src.normal(Shape{vh, v.channels, v.patch, v.patch}, 0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in)));
  m.embedding.patch_b = Tensor(Shape{vh});  // CLIP's patch convolution has no bias
  m.embedding.extra = src.normal(Shape{1, vh}, 0.0f, kInitStd);
  m.embedding.positions = src.normal(Shape{v.tokens(), vh}, 0.0f, kInitStd);
  m.embedding.pre_g = src.normal(Shape{vh}, 1.0f, kNormNoiseStd);
  m.embedding.pre_b = src.normal(Shape{vh}, 0.0f, kNormNoiseStd);
  for (int64_t i = 0; i < v.layers; ++i) {
    CrossFrameLayer l;
    l.message_fc = src.linear(vh, vh, 1.0f / std::sqrt(static_cast<float>(vh)), true, kBiasStd, f.other);
    l.message_ln = seeded_norm(src, vh);
    l.message_attn = seeded_attention(src, vh, vh, true, f.attention);
    AM_ASSIGN_OR_RETURN(l.layer, TransformerStack::create(c.layer(), f, src));
    m.layers.push_back(std::move(l));
  }
  m.post_ln = seeded_norm(src, vh);
  m.visual_projection = src.linear(vh, proj, 1.0f / std::sqrt(static_cast<float>(vh)), false, 0.0f, f.output);
  m.text_embedding.tokens = src.normal(Shape{c.clip.vocab, th}, 0.0f, kInitStd);
  m.text_embedding.positions = src.normal(Shape{c.clip.max_positions, th}, 0.0f, kInitStd);
  AM_ASSIGN_OR_RETURN(m.text, TransformerStack::create(c.clip.text, f, src));
  m.text_projection = src.linear(th, proj, 1.0f / std::sqrt(static_cast<float>(th)), false, 0.0f, f.output);
  m.mit_positions = src.normal(Shape{c.frames, proj}, 0.0f, kPositionStd);
  AM_ASSIGN_OR_RETURN(m.mit, TransformerStack::create(c.mit(), f, src));
  PromptGenerator& g = m.prompts;
  g.visual_ln = seeded_norm(src, vh);
  g.visual_projection = src.linear(vh, proj, 1.0f / std::sqrt(static_cast<float>(vh)), false, 0.0f, f.output);
  g.ln = seeded_norm(src, proj);
  const float proj_std = 1.0f / std::sqrt(static_cast<float>(proj));
  for (int64_t i = 0; i < c.prompt_layers; ++i) {
    PromptGenerator::Layer l;
    l.norm1 = seeded_norm(src, proj);
    Attention a = seeded_attention(src, proj, proj, false, f.attention);
    l.q = std::move(a.q);
    l.k = std::move(a.k);
    l.v = std::move(a.v);
    l.o = std::move(a.o);
    l.norm3 = seeded_norm(src, proj);
    l.fc1 = src.linear(proj, kPromptMlpMult * proj, proj_std, true, kBiasStd, f.feed_forward);
    l.fc2 = src.linear(kPromptMlpMult * proj, proj, 1.0f / std::sqrt(static_cast<float>(kPromptMlpMult * proj)), true,
                       kBiasStd, f.feed_forward);
    g.layers.push_back(std::move(l));
  }
  g.alpha = Tensor(Shape{1, proj});
  for (int64_t i = 0; i < proj; ++i) g.alpha.data()[i] = c.prompt_alpha;
  m.logit_scale = c.clip.logit_scale;
  return m;
}

// ---- checkpoints ---------------------------------------------------------------------------------

class XclipReader {
 public:
  XclipReader(const Checkpoint& file, const FormatPlan& f, const ExecContext& ctx) : file_(file), f_(f), ctx_(ctx) {}

  Status norm(const std::string& name, int64_t width, LayerNormWeights& n) const {
    AM_ASSIGN_OR_RETURN(n.g, file_.read_f32(name + ".weight", Shape{width}));
    AM_ASSIGN_OR_RETURN(n.b, file_.read_f32(name + ".bias", Shape{width}));
    return Status::Ok();
  }
  Status linear(const std::string& name, int64_t in, int64_t out, bool bias, WeightFormat fmt, Linear& l) const {
    AM_ASSIGN_OR_RETURN(Tensor w, file_.read_f32(name + ".weight", Shape{out, in}));
    Tensor b;
    if (bias) {
      AM_ASSIGN_OR_RETURN(b, file_.read_f32(name + ".bias", Shape{out}));
    }
    AM_ASSIGN_OR_RETURN(l, linear_from_tensors(std::string(kFamily) + " weights", name, std::move(w), std::move(b), in,
                                               out, bias, fmt, ctx_));
    return Status::Ok();
  }
  Status attention(const std::string& name, int64_t width, Attention& a) const {
    AM_RETURN_IF_ERROR(linear(name + ".q_proj", width, width, true, f_.attention, a.q));
    AM_RETURN_IF_ERROR(linear(name + ".k_proj", width, width, true, f_.attention, a.k));
    AM_RETURN_IF_ERROR(linear(name + ".v_proj", width, width, true, f_.attention, a.v));
    return linear(name + ".out_proj", width, width, true, f_.attention, a.o);
  }

 private:
  const Checkpoint& file_;
  const FormatPlan& f_;
  const ExecContext& ctx_;
};

// XCLIPModel names: vision_model.{embeddings.{class_embedding, patch_embedding, position_embedding},
// pre_layernorm, encoder.layers.N.{message_fc, message_ln, message_attn.{q,k,v,out}_proj,
// self_attn.*, layer_norm1, mlp.fc1, mlp.fc2, layer_norm2}, post_layernorm}, visual_projection,
// text_model.* and text_projection as CLIP's, logit_scale, mit.{position_embedding [1, frames,
// proj], encoder.layers.N.*}, prompts_visual_layernorm, prompts_visual_projection [vision hidden,
// proj] (applied as x @ P), prompts_generator.{layernorm, decoder.N.{norm1, cross_attn.{q,k,v}_proj
// (no bias), cross_attn.proj, norm3, mlp.0, mlp.3}, alpha}.
Result<Xclip> read_xclip(const Checkpoint& file, const XclipConfig& c, const FormatPlan& f, const ExecContext& ctx) {
  const XclipReader r(file, f, ctx);
  const VitTowerConfig& v = c.clip.vision;
  const int64_t vh = v.hidden, th = c.clip.text.hidden, proj = c.clip.projection;
  Xclip m;
  m.c = c;
  const std::string vm = "vision_model.";
  AM_ASSIGN_OR_RETURN(m.embedding.patch_w, file.read_f32(vm + "embeddings.patch_embedding.weight",
                                                         Shape{vh, v.channels, v.patch, v.patch}));
  m.embedding.patch_b = Tensor(Shape{vh});
  AM_ASSIGN_OR_RETURN(m.embedding.extra, file.read_f32(vm + "embeddings.class_embedding", Shape{vh}));
  m.embedding.extra.reshape(Shape{1, vh});
  AM_ASSIGN_OR_RETURN(m.embedding.positions,
                      file.read_f32(vm + "embeddings.position_embedding.weight", Shape{v.tokens(), vh}));
  AM_ASSIGN_OR_RETURN(m.embedding.pre_g, file.read_f32(vm + "pre_layernorm.weight", Shape{vh}));
  AM_ASSIGN_OR_RETURN(m.embedding.pre_b, file.read_f32(vm + "pre_layernorm.bias", Shape{vh}));
  for (int64_t i = 0; i < v.layers; ++i) {
    const std::string b = vm + "encoder.layers." + std::to_string(i) + ".";
    CrossFrameLayer l;
    AM_RETURN_IF_ERROR(r.linear(b + "message_fc", vh, vh, true, f.other, l.message_fc));
    AM_RETURN_IF_ERROR(r.norm(b + "message_ln", vh, l.message_ln));
    AM_RETURN_IF_ERROR(r.attention(b + "message_attn", vh, l.message_attn));
    AM_ASSIGN_OR_RETURN(StackTensors layer, read_clip_layers(file, vm + "encoder.layers.", c.layer(), i));
    AM_ASSIGN_OR_RETURN(l.layer, TransformerStack::from_tensors(c.layer(), f, std::move(layer), ctx));
    m.layers.push_back(std::move(l));
  }
  AM_RETURN_IF_ERROR(r.norm(vm + "post_layernorm", vh, m.post_ln));
  AM_RETURN_IF_ERROR(r.linear("visual_projection", vh, proj, false, f.output, m.visual_projection));
  AM_ASSIGN_OR_RETURN(m.text_embedding.tokens,
                      file.read_f32("text_model.embeddings.token_embedding.weight", Shape{c.clip.vocab, th}));
  AM_ASSIGN_OR_RETURN(m.text_embedding.positions,
                      file.read_f32("text_model.embeddings.position_embedding.weight", Shape{c.clip.max_positions, th}));
  AM_ASSIGN_OR_RETURN(StackTensors text, read_clip_layers(file, "text_model.encoder.layers.", c.clip.text));
  AM_ASSIGN_OR_RETURN(text.final_g, file.read_f32("text_model.final_layer_norm.weight", Shape{th}));
  AM_ASSIGN_OR_RETURN(text.final_b, file.read_f32("text_model.final_layer_norm.bias", Shape{th}));
  AM_ASSIGN_OR_RETURN(m.text, TransformerStack::from_tensors(c.clip.text, f, std::move(text), ctx));
  AM_RETURN_IF_ERROR(r.linear("text_projection", th, proj, false, f.output, m.text_projection));
  AM_ASSIGN_OR_RETURN(Tensor scale, file.read_f32("logit_scale", Shape{}));
  m.logit_scale = scale.data()[0];
  AM_ASSIGN_OR_RETURN(m.mit_positions, file.read_f32("mit.position_embedding", Shape{1, c.frames, proj}));
  m.mit_positions.reshape(Shape{c.frames, proj});
  AM_ASSIGN_OR_RETURN(StackTensors mit, read_clip_layers(file, "mit.encoder.layers.", c.mit()));
  AM_ASSIGN_OR_RETURN(m.mit, TransformerStack::from_tensors(c.mit(), f, std::move(mit), ctx));
  PromptGenerator& g = m.prompts;
  AM_RETURN_IF_ERROR(r.norm("prompts_visual_layernorm", vh, g.visual_ln));
  // A Parameter [vision hidden, proj] applied as x @ P: the Linear weight is its transpose.
  AM_ASSIGN_OR_RETURN(Tensor p, file.read_f32("prompts_visual_projection", Shape{vh, proj}));
  Tensor pt(Shape{proj, vh});
  for (int64_t i = 0; i < vh; ++i)
    for (int64_t j = 0; j < proj; ++j) pt.data()[j * vh + i] = p.data()[i * proj + j];
  AM_ASSIGN_OR_RETURN(g.visual_projection, linear_from_tensors(std::string(kFamily) + " weights", "prompts_visual_projection",
                                                               std::move(pt), Tensor(), vh, proj, false, f.output, ctx));
  const std::string pg = "prompts_generator.";
  AM_RETURN_IF_ERROR(r.norm(pg + "layernorm", proj, g.ln));
  for (int64_t i = 0; i < c.prompt_layers; ++i) {
    const std::string b = pg + "decoder." + std::to_string(i) + ".";
    PromptGenerator::Layer l;
    AM_RETURN_IF_ERROR(r.norm(b + "norm1", proj, l.norm1));
    AM_RETURN_IF_ERROR(r.linear(b + "cross_attn.q_proj", proj, proj, false, f.attention, l.q));
    AM_RETURN_IF_ERROR(r.linear(b + "cross_attn.k_proj", proj, proj, false, f.attention, l.k));
    AM_RETURN_IF_ERROR(r.linear(b + "cross_attn.v_proj", proj, proj, false, f.attention, l.v));
    AM_RETURN_IF_ERROR(r.linear(b + "cross_attn.proj", proj, proj, true, f.attention, l.o));
    AM_RETURN_IF_ERROR(r.norm(b + "norm3", proj, l.norm3));
    AM_RETURN_IF_ERROR(r.linear(b + "mlp.0", proj, kPromptMlpMult * proj, true, f.feed_forward, l.fc1));
    AM_RETURN_IF_ERROR(r.linear(b + "mlp.3", kPromptMlpMult * proj, proj, true, f.feed_forward, l.fc2));
    g.layers.push_back(std::move(l));
  }
  AM_ASSIGN_OR_RETURN(g.alpha, file.read_f32(pg + "alpha", Shape{proj}));
  g.alpha.reshape(Shape{1, proj});
  return m;
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_xclip_graph(const jobs::JobSpec& spec, Precision precision,
                                                      const ExecContext& ctx) {
  return build_xclip_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_xclip_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                         const ExecContext& ctx, const ClipInputs* given) {
  ConfigReader cfg(spec.model_config, kFamily);
  XclipConfig c;
  AM_ASSIGN_OR_RETURN(c.clip, clip_config_from(cfg, kFamily));
  AM_ASSIGN_OR_RETURN(c.frames, cfg.dim("frames"));
  AM_ASSIGN_OR_RETURN(c.mit_layers, cfg.dim("mit_layers"));
  AM_ASSIGN_OR_RETURN(c.mit_heads, cfg.dim("mit_heads"));
  AM_ASSIGN_OR_RETURN(c.mit_inter, cfg.dim("mit_intermediate"));
  AM_ASSIGN_OR_RETURN(c.prompt_layers, cfg.dim("prompt_layers", int64_t{2}));
  AM_ASSIGN_OR_RETURN(c.prompt_heads, cfg.dim("prompt_heads", int64_t{8}));
  AM_ASSIGN_OR_RETURN(double alpha, cfg.number("prompt_alpha", 0.1, 0.0, 10.0));
  c.prompt_alpha = static_cast<float>(alpha);
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("prompt_activation", "quick_gelu"));
  AM_ASSIGN_OR_RETURN(c.prompt_act, activation_from_name(act));
  if (c.clip.projection % c.mit_heads != 0) return cfg.error("projection_dim is not a multiple of mit_heads");
  if (c.clip.projection % c.prompt_heads != 0) return cfg.error("projection_dim is not a multiple of prompt_heads");
  if (spec.seq_len > c.clip.max_positions) {
    return cfg.error("seq_len exceeds max_positions " + std::to_string(c.clip.max_positions));
  }
  const FormatPlan f = format_plan_for(precision);
  AM_RETURN_IF_ERROR(check_weight_budget(kFamily, ClipModel::estimate_bytes(c.clip, f) +
                                                      TransformerStack::estimate_bytes(c.mit(), f)));
  Xclip m;
  // model_config "weights_path" names an XCLIPModel checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, kFamily));
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(*checkpoint));
    AM_ASSIGN_OR_RETURN(m, read_xclip(file, c, f, ctx));
  } else {
    AM_ASSIGN_OR_RETURN(m, seeded_xclip(c, f, spec.seed, ctx));
  }
  m.l2 = l2_norm_gamma(c.clip.projection);
  m.prompts.heads = c.prompt_heads;
  m.prompts.vision_eps = c.clip.vision.eps;
  m.prompts.text_eps = c.clip.text.eps;
  m.prompts.act = c.prompt_act;
  const VitTowerConfig& v = c.clip.vision;
  Tensor pixels;
  ClipTexts texts;
  if (given) {
    const std::size_t want = static_cast<std::size_t>(spec.batch * c.frames * v.image_size * v.image_size * v.channels);
    if (given->pixels.size() != want) {
      return invalid_argument(std::string(kFamily) + ": given pixels must hold batch*frames*image_size^2*channels values");
    }
    pixels = Tensor(Shape{spec.batch * c.frames * v.image_size * v.image_size, v.channels});
    std::copy(given->pixels.begin(), given->pixels.end(), pixels.data());
    AM_ASSIGN_OR_RETURN(texts, clip_texts(given->ids, given->texts, given->text_len, c.clip));
  } else {
    pixels = seeded_pixels(spec.batch * c.frames, v.image_size, v.channels, spec.seed, kPixelStream, ctx);
    AM_ASSIGN_OR_RETURN(texts, clip_texts(seeded_clip_texts(spec.batch, spec.seq_len, c.clip.vocab, spec.seed,
                                                            kTextStream, c.clip.eos_token).ids,
                                          spec.batch, spec.seq_len, c.clip));
  }
  return std::unique_ptr<ModelGraph>(
      std::make_unique<XclipGraph>(std::move(m), f, std::move(pixels), std::move(texts), spec.batch));
}

}  // namespace am::kernels
