// X-CLIP (video-text retrieval, Ni et al. 2022; Hugging Face's XCLIPModel) at reduced fidelity
// in one documented respect: every frame runs through the CLIP vision tower on its own (the
// per-layer cross-frame message tokens are not modelled). Then:
//   - frame embeddings (post-LN, visual projection) are integrated by the multi-frame
//     integration transformer (MIT: learned frame positions, pre-LN layers) and mean-pooled over
//     frames into the video embedding;
//   - the video-specific prompt generator: the frames' patch tokens go through a LayerNorm and
//     a projection and are averaged over frames; every text embedding (unnormalised) is then
//     refined per video by prompt_layers layers of [x += cross-attention(LN(x), visual);
//     x += MLP(LN(x))] (MLP: 4x, quick_gelu) over the LayerNorm'ed visual tokens, and the text
//     embedding for that video is text + alpha * x (alpha: a learned per-channel vector,
//     initialised to prompt_alpha);
//   - logits_per_video[v, t] = exp(logit_scale) * <video_v, text_{v,t}>, both L2-normalised.
//
// Keys: clip_model.h's, plus frames, mit_layers, mit_heads, mit_intermediate (MIT width =
// projection_dim), prompt_layers (default 2), prompt_heads (default 8), prompt_alpha (default
// 0.1). Input: `batch` videos of `frames` seeded frames and `batch` seeded texts of seq_len
// tokens. Output: logits_per_video [batch, batch], logits=true.
#include <cmath>
#include <memory>

#include "kernels/models/clip_model.h"
#include "kernels/models/multimodal.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x58434c57ull;  // "XCLW"
constexpr uint64_t kPixelStream = 0x58434c50ull;
constexpr uint64_t kTextStream = 0x58434c54ull;
constexpr float kPositionStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kBiasStd = 0.02f;
constexpr int64_t kPromptMlpMult = 4;

// The video-specific prompt generator's weights (XCLIPPromptGenerator and the two visual
// prompt parameters of XCLIPModel).
struct PromptGenerator {
  struct Layer {
    Tensor norm1_g, norm1_b, norm3_g, norm3_b;
    Linear q, k, v, o, fc1, fc2;
  };
  Tensor visual_ln_g, visual_ln_b;  // prompts_visual_layernorm (vision width)
  Linear visual_projection;          // prompts_visual_projection: vision width -> projection
  Tensor ln_g, ln_b;                 // the generator's LayerNorm on the visual tokens
  std::vector<Layer> layers;
  Tensor alpha;                      // [projection]
  int64_t heads = 1;
  float eps = 1e-5f;

  static PromptGenerator create(SeededWeights& src, const FormatPlan& f, int64_t vision_hidden, int64_t proj,
                                int64_t layers, int64_t heads, float alpha, float eps) {
    PromptGenerator g;
    g.heads = heads;
    g.eps = eps;
    const float proj_std = 1.0f / std::sqrt(static_cast<float>(proj));
    g.visual_ln_g = src.normal(Shape{vision_hidden}, 1.0f, kNormNoiseStd);
    g.visual_ln_b = src.normal(Shape{vision_hidden}, 0.0f, kNormNoiseStd);
    g.visual_projection = src.linear(vision_hidden, proj, 1.0f / std::sqrt(static_cast<float>(vision_hidden)), false,
                                     0.0f, f.output);
    g.ln_g = src.normal(Shape{proj}, 1.0f, kNormNoiseStd);
    g.ln_b = src.normal(Shape{proj}, 0.0f, kNormNoiseStd);
    for (int64_t i = 0; i < layers; ++i) {
      Layer l;
      l.norm1_g = src.normal(Shape{proj}, 1.0f, kNormNoiseStd);
      l.norm1_b = src.normal(Shape{proj}, 0.0f, kNormNoiseStd);
      l.q = src.linear(proj, proj, proj_std, false, 0.0f, f.attention);
      l.k = src.linear(proj, proj, proj_std, false, 0.0f, f.attention);
      l.v = src.linear(proj, proj, proj_std, false, 0.0f, f.attention);
      l.o = src.linear(proj, proj, proj_std, true, kBiasStd, f.attention);
      l.norm3_g = src.normal(Shape{proj}, 1.0f, kNormNoiseStd);
      l.norm3_b = src.normal(Shape{proj}, 0.0f, kNormNoiseStd);
      l.fc1 = src.linear(proj, kPromptMlpMult * proj, proj_std, true, kBiasStd, f.feed_forward);
      l.fc2 = src.linear(kPromptMlpMult * proj, proj, 1.0f / std::sqrt(static_cast<float>(kPromptMlpMult * proj)), true,
                         kBiasStd, f.feed_forward);
      g.layers.push_back(std::move(l));
    }
    g.alpha = Tensor(Shape{1, proj});
    for (int64_t i = 0; i < proj; ++i) g.alpha.data()[i] = alpha;
    return g;
  }

  std::size_t weights_bytes() const {
    std::size_t t = visual_ln_g.bytes() + visual_ln_b.bytes() + visual_projection.weight_bytes() + ln_g.bytes() +
                    ln_b.bytes() + alpha.bytes();
    for (const Layer& l : layers) {
      t += l.norm1_g.bytes() + l.norm1_b.bytes() + l.norm3_g.bytes() + l.norm3_b.bytes();
      for (const Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2}) t += w->weight_bytes();
    }
    return t;
  }

  void add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const {
    for (Op op : {Op::kLayerNorm, Op::kIndexRows, Op::kGlobalAvgPool, Op::kAttention, Op::kActivation, Op::kAdd,
                  Op::kMul})
      require(ops, op);
    require(ops, Op::kLinear, visual_projection.format());
    for (const Layer& l : layers) {
      for (const Linear* w : {&l.q, &l.o, &l.fc1}) require(ops, Op::kLinear, w->format());
    }
  }

  // Visual prompt tokens [videos * patches, proj] from the vision tower's tokens
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
    Tensor patch(Shape{videos * patches * frames, hidden});
    AM_RETURN_IF_ERROR(be.index_rows(tokens, ids.data(), patch.rows(), patch.view()));
    AM_RETURN_IF_ERROR(be.layer_norm(patch.view(), visual_ln_g.data(), visual_ln_b.data(), eps, patch.view()));
    Tensor projected(Shape{patch.rows(), proj});
    AM_RETURN_IF_ERROR(be.linear(visual_projection, patch.view(), projected.view()));
    Tensor visual(Shape{videos * patches, proj});
    AM_RETURN_IF_ERROR(be.global_avg_pool(projected.view(), videos * patches, visual.view()));
    return visual;
  }

  // text: [videos * texts, proj], each video's copy of the unnormalised text embeddings; visual:
  // [videos * patches, proj]. Replaces text with text + alpha * generator(text, visual).
  Status refine(Backend& be, TensorView text, int64_t videos, int64_t texts, ConstTensorView visual) const {
    const int64_t proj = text.cols(), patches = visual.rows() / videos, rows = text.rows();
    Tensor vis(Shape{visual.rows(), proj});
    AM_RETURN_IF_ERROR(be.layer_norm(visual, ln_g.data(), ln_b.data(), eps, vis.view()));
    Tensor x(Shape{rows, proj}), h(Shape{rows, proj}), q(Shape{rows, proj}), ctx(Shape{rows, proj}),
        branch(Shape{rows, proj}), k(Shape{vis.rows(), proj}), v(Shape{vis.rows(), proj}),
        inner(Shape{rows, kPromptMlpMult * proj});
    std::copy(text.data, text.data + text.numel(), x.data());
    for (const Layer& l : layers) {
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), l.norm1_g.data(), l.norm1_b.data(), eps, h.view()));
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
      a.heads = heads;
      a.kv_heads = heads;
      a.head_dim = proj / heads;
      AM_RETURN_IF_ERROR(be.attention(a));
      AM_RETURN_IF_ERROR(be.linear(l.o, ctx.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), l.norm3_g.data(), l.norm3_b.data(), eps, h.view()));
      AM_RETURN_IF_ERROR(be.linear(l.fc1, h.view(), inner.view()));
      AM_RETURN_IF_ERROR(be.activation(Activation::kQuickGelu, inner.view()));
      AM_RETURN_IF_ERROR(be.linear(l.fc2, inner.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), branch.view()));
    }
    // alpha (one row) broadcast over the rows by a gather, then x *= alpha; text += x.
    std::vector<int32_t> zero(static_cast<std::size_t>(rows), 0);
    AM_RETURN_IF_ERROR(be.index_rows(alpha.view(), zero.data(), rows, branch.view()));
    AM_RETURN_IF_ERROR(be.mul(x.view(), branch.view()));
    return be.add(text, x.view());
  }
};

class XclipGraph final : public ModelGraph {
 public:
  XclipGraph(ClipModel clip, TransformerStack mit, Tensor mit_pos, PromptGenerator prompts, Tensor pixels,
             ClipTexts texts, int64_t batch, int64_t frames)
      : clip_(std::move(clip)), mit_(std::move(mit)), mit_pos_(std::move(mit_pos)), prompts_(std::move(prompts)),
        pixels_(std::move(pixels)), texts_(std::move(texts)), batch_(batch), frames_(frames) {}
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    clip_.add_required_ops(ops);
    mit_.add_required_ops(ops);
    prompts_.add_required_ops(ops);
    require(ops, Op::kGlobalAvgPool);
    return ops;
  }
  std::size_t weights_bytes() const override {
    return clip_.weights_bytes() + mit_.weights_bytes() + mit_pos_.bytes() + prompts_.weights_bytes();
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return texts_.batch * texts_.len; }
  Result<GraphOutput> run(Backend& be) const override {
    const int64_t n = batch_ * frames_, proj = clip_.config().projection;
    AM_ASSIGN_OR_RETURN(Tensor tokens, clip_.encode_image_tokens(be, pixels_.view(), n));
    Tensor cls(Shape{n, clip_.config().vision.hidden});
    AM_RETURN_IF_ERROR(take_rows(be, tokens.view(), clip_.config().vision.tokens(), 0, cls.view()));
    AM_ASSIGN_OR_RETURN(Tensor frames, clip_.project_images(be, cls.view(), false));
    std::vector<int32_t> pos(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % frames_);
    AM_RETURN_IF_ERROR(be.gather_rows(mit_pos_.view(), pos.data(), n, frames.view(), true));
    AM_RETURN_IF_ERROR(mit_.forward(be, frames.view(), batch_, frames_, 0, nullptr, nullptr));
    Tensor video(Shape{batch_, proj});
    AM_RETURN_IF_ERROR(be.global_avg_pool(frames.view(), batch_, video.view()));
    AM_RETURN_IF_ERROR(clip_.normalize(be, video.view()));
    // Video-specific prompts: every video refines its own copy of the text embeddings.
    AM_ASSIGN_OR_RETURN(Tensor visual, prompts_.visual_tokens(be, tokens.view(), batch_, frames_,
                                                              clip_.config().vision.tokens()));
    AM_ASSIGN_OR_RETURN(Tensor txt, clip_.encode_texts(be, texts_, false));
    const int64_t nt = texts_.batch;
    std::vector<int32_t> copies(static_cast<std::size_t>(batch_ * nt));
    for (int64_t i = 0; i < batch_ * nt; ++i) copies[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % nt);
    Tensor per_video(Shape{batch_ * nt, proj});
    AM_RETURN_IF_ERROR(be.index_rows(txt.view(), copies.data(), batch_ * nt, per_video.view()));
    AM_RETURN_IF_ERROR(prompts_.refine(be, per_video.view(), batch_, nt, visual.view()));
    AM_RETURN_IF_ERROR(clip_.normalize(be, per_video.view()));
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_, nt});
    for (int64_t v = 0; v < batch_; ++v) {
      const ConstTensorView video_v{video.row(v), Shape{1, proj}};
      const ConstTensorView texts_v{per_video.row(v * nt), Shape{nt, proj}};
      AM_RETURN_IF_ERROR(clip_.similarity(be, video_v, texts_v, TensorView{out.output.row(v), Shape{1, nt}}));
    }
    return out;
  }

 private:
  ClipModel clip_;
  TransformerStack mit_;
  Tensor mit_pos_;
  PromptGenerator prompts_;
  Tensor pixels_;
  ClipTexts texts_;
  int64_t batch_, frames_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_xclip_graph(const jobs::JobSpec& spec, Precision precision,
                                                      const ExecContext& ctx) {
  const std::string family = "multimodal";
  ConfigReader cfg(spec.model_config, family);
  AM_ASSIGN_OR_RETURN(ClipConfig c, clip_config_from(cfg, family));
  AM_ASSIGN_OR_RETURN(int64_t frames, cfg.dim("frames"));
  AM_ASSIGN_OR_RETURN(int64_t mit_layers, cfg.dim("mit_layers"));
  AM_ASSIGN_OR_RETURN(int64_t mit_heads, cfg.dim("mit_heads"));
  AM_ASSIGN_OR_RETURN(int64_t mit_inter, cfg.dim("mit_intermediate"));
  AM_ASSIGN_OR_RETURN(int64_t prompt_layers, cfg.dim("prompt_layers", int64_t{2}));
  AM_ASSIGN_OR_RETURN(int64_t prompt_heads, cfg.dim("prompt_heads", int64_t{8}));
  AM_ASSIGN_OR_RETURN(double prompt_alpha, cfg.number("prompt_alpha", 0.1, 0.0, 10.0));
  if (c.projection % mit_heads != 0) return cfg.error("projection_dim is not a multiple of mit_heads");
  if (c.projection % prompt_heads != 0) return cfg.error("projection_dim is not a multiple of prompt_heads");
  if (spec.seq_len > c.max_positions) return cfg.error("seq_len exceeds max_positions " + std::to_string(c.max_positions));
  const FormatPlan f = format_plan_for(precision);
  SeededWeights src(spec.seed, kWeightStream, ctx);
  AM_ASSIGN_OR_RETURN(ClipModel clip, ClipModel::create(c, f, src));
  StackConfig mc = vit_stack_config(family, mit_layers, c.projection, mit_heads, mit_inter, Activation::kQuickGelu,
                                    c.text.eps, false);
  AM_ASSIGN_OR_RETURN(TransformerStack mit, TransformerStack::create(mc, f, src));
  Tensor mit_pos = src.normal(Shape{frames, c.projection}, 0.0f, kPositionStd);
  PromptGenerator prompts = PromptGenerator::create(src, f, c.vision.hidden, c.projection, prompt_layers, prompt_heads,
                                                    static_cast<float>(prompt_alpha), c.text.eps);
  Tensor pixels = seeded_pixels(spec.batch * frames, c.vision.image_size, c.vision.channels, spec.seed, kPixelStream, ctx);
  ClipTexts texts = seeded_clip_texts(spec.batch, spec.seq_len, c.vocab, spec.seed, kTextStream);
  return std::unique_ptr<ModelGraph>(std::make_unique<XclipGraph>(std::move(clip), std::move(mit), std::move(mit_pos),
                                                                   std::move(prompts), std::move(pixels),
                                                                   std::move(texts), spec.batch, frames));
}

}  // namespace am::kernels
