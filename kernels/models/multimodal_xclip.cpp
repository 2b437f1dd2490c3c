// X-CLIP (video-text retrieval) at reduced fidelity in one documented respect: every frame runs
// through the CLIP vision tower on its own (X-CLIP's per-layer cross-frame message tokens and
// its video-specific prompt generator are not modelled); frame embeddings are then integrated by
// the multi-frame integration transformer (MIT: learned frame positions, pre-LN layers) and
// mean-pooled over frames into the video embedding.
//
// Keys: clip_model.h's, plus frames, mit_layers, mit_heads, mit_intermediate (MIT width =
// projection_dim). Input: `batch` videos of `frames` seeded frames and `batch` seeded texts
// of seq_len tokens. Output: logits_per_video [batch, batch], logits=true.
#include <memory>

#include "kernels/models/clip_model.h"
#include "kernels/models/multimodal.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x58434c57ull;  // "XCLW"
constexpr uint64_t kPixelStream = 0x58434c50ull;
constexpr uint64_t kTextStream = 0x58434c54ull;
constexpr float kPositionStd = 0.02f;

class XclipGraph final : public ModelGraph {
 public:
  XclipGraph(ClipModel clip, TransformerStack mit, Tensor mit_pos, Tensor pixels, ClipTexts texts, int64_t batch,
             int64_t frames)
      : clip_(std::move(clip)), mit_(std::move(mit)), mit_pos_(std::move(mit_pos)), pixels_(std::move(pixels)),
        texts_(std::move(texts)), batch_(batch), frames_(frames) {}
  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    clip_.add_required_ops(ops);
    mit_.add_required_ops(ops);
    require(ops, Op::kGlobalAvgPool);
    return ops;
  }
  std::size_t weights_bytes() const override { return clip_.weights_bytes() + mit_.weights_bytes() + mit_pos_.bytes(); }
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
    AM_ASSIGN_OR_RETURN(Tensor txt, clip_.encode_texts(be, texts_));
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_, texts_.batch});
    AM_RETURN_IF_ERROR(clip_.similarity(be, video.view(), txt.view(), out.output.view()));
    return out;
  }

 private:
  ClipModel clip_;
  TransformerStack mit_;
  Tensor mit_pos_, pixels_;
  ClipTexts texts_;
  int64_t batch_, frames_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_xclip_graph(const jobs::JobSpec& spec, std::string_view precision,
                                                      const ExecContext& ctx) {
  const std::string family = "multimodal";
  ConfigReader cfg(spec.model_config, family);
  AM_ASSIGN_OR_RETURN(ClipConfig c, clip_config_from(cfg, family));
  AM_ASSIGN_OR_RETURN(int64_t frames, cfg.dim("frames"));
  AM_ASSIGN_OR_RETURN(int64_t mit_layers, cfg.dim("mit_layers"));
  AM_ASSIGN_OR_RETURN(int64_t mit_heads, cfg.dim("mit_heads"));
  AM_ASSIGN_OR_RETURN(int64_t mit_inter, cfg.dim("mit_intermediate"));
  if (c.projection % mit_heads != 0) return cfg.error("projection_dim is not a multiple of mit_heads");
  if (spec.seq_len > c.max_positions) return cfg.error("seq_len exceeds max_positions " + std::to_string(c.max_positions));
  AM_ASSIGN_OR_RETURN(FormatPlan f, format_plan_for(precision));
  SeededWeights src(spec.seed, kWeightStream, ctx);
  AM_ASSIGN_OR_RETURN(ClipModel clip, ClipModel::create(c, f, src));
  StackConfig mc = vit_stack_config(family, mit_layers, c.projection, mit_heads, mit_inter, Activation::kQuickGelu,
                                    c.text.eps, false);
  AM_ASSIGN_OR_RETURN(TransformerStack mit, TransformerStack::create(mc, f, src));
  Tensor mit_pos = src.normal(Shape{frames, c.projection}, 0.0f, kPositionStd);
  Tensor pixels = seeded_pixels(spec.batch * frames, c.vision.image_size, c.vision.channels, spec.seed, kPixelStream, ctx);
  ClipTexts texts = seeded_clip_texts(spec.batch, spec.seq_len, c.vocab, spec.seed, kTextStream);
  return std::unique_ptr<ModelGraph>(std::make_unique<XclipGraph>(std::move(clip), std::move(mit), std::move(mit_pos),
                                                                   std::move(pixels), std::move(texts), spec.batch,
                                                                   frames));
}

}  // namespace am::kernels
