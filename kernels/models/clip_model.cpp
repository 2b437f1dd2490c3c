#include "kernels/models/clip_model.h"

#include <cmath>

#include "kernels/rng.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {
constexpr float kInitStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kL2Eps = 1e-12f;
}  // namespace

Result<ClipConfig> clip_config_from(const ConfigReader& cfg, const std::string& family) {
  ClipConfig c;
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-30, 1.0));
  AM_ASSIGN_OR_RETURN(c.vision, vit_tower_config_from(cfg, "vision_", family, static_cast<float>(eps)));
  c.vision.pre_norm = true;
  c.vision.final_norm = false;
  AM_ASSIGN_OR_RETURN(int64_t layers, cfg.dim("text_layers"));
  AM_ASSIGN_OR_RETURN(int64_t hidden, cfg.dim("text_hidden"));
  AM_ASSIGN_OR_RETURN(int64_t heads, cfg.dim("text_heads"));
  AM_ASSIGN_OR_RETURN(int64_t inter, cfg.dim("text_intermediate"));
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("text_activation", "quick_gelu"));
  AM_ASSIGN_OR_RETURN(Activation a, activation_from_name(act));
  if (hidden % heads != 0) return cfg.error("text_hidden is not a multiple of text_heads");
  c.text = vit_stack_config(family, layers, hidden, heads, inter, a, static_cast<float>(eps), true);
  c.text.causal = true;
  AM_ASSIGN_OR_RETURN(c.vocab, cfg.dim("vocab"));
  AM_ASSIGN_OR_RETURN(c.max_positions, cfg.dim("max_positions"));
  AM_ASSIGN_OR_RETURN(c.projection, cfg.dim("projection_dim"));
  AM_ASSIGN_OR_RETURN(double scale, cfg.number("logit_scale", 2.6593, -20.0, 20.0));
  c.logit_scale = static_cast<float>(scale);
  if (cfg.has("eos_token_id")) {
    AM_ASSIGN_OR_RETURN(double eos, cfg.number("eos_token_id", 0.0, 0.0, static_cast<double>(c.vocab - 1)));
    c.eos_token = static_cast<int64_t>(eos);
  }
  return c;
}

Result<ClipTexts> clip_texts(std::vector<int32_t> ids, int64_t batch, int64_t len, const ClipConfig& c) {
  if (batch < 1 || len < 1 || static_cast<int64_t>(ids.size()) != batch * len) {
    return invalid_argument(c.text.family + ": texts must hold batch*len ids");
  }
  ClipTexts t;
  t.batch = batch;
  t.len = len;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t pool = -1;
    for (int64_t s = 0; s < len; ++s) {
      const int32_t id = ids[static_cast<std::size_t>(b * len + s)];
      if (id < 0 || id >= c.vocab) {
        return invalid_argument(c.text.family + ": text token id " + std::to_string(id) + " is outside the vocabulary");
      }
      if (c.eos_token >= 0) {
        if (pool < 0 && id == c.eos_token) pool = s;
      } else if (pool < 0 || id > ids[static_cast<std::size_t>(b * len + pool)]) {
        pool = s;  // argmax: the first position of the largest id
      }
    }
    t.eos_rows.push_back(static_cast<int32_t>(b * len + std::max<int64_t>(pool, 0)));
  }
  t.ids = std::move(ids);
  return t;
}

ClipTexts seeded_clip_texts(int64_t batch, int64_t len, int64_t vocab, uint64_t seed, uint64_t stream,
                            int64_t eos_token) {
  ClipTexts t;
  t.batch = batch;
  t.len = len;
  t.ids.assign(static_cast<std::size_t>(batch * len), 0);
  Xoshiro256 rng(derive_seed(seed, stream));
  const int64_t shortest = std::max<int64_t>(1, len / 2);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t real = b == 0 ? len : shortest + rng.below(static_cast<uint32_t>(len - shortest + 1));
    for (int64_t s = 0; s + 1 < real; ++s) {
      t.ids[static_cast<std::size_t>(b * len + s)] = static_cast<int32_t>(rng.below(static_cast<uint32_t>(vocab - 1)));
    }
    t.ids[static_cast<std::size_t>(b * len + real - 1)] = static_cast<int32_t>(eos_token >= 0 ? eos_token : vocab - 1);
    t.eos_rows.push_back(static_cast<int32_t>(b * len + real - 1));
  }
  return t;
}

std::size_t ClipModel::estimate_bytes(const ClipConfig& c, const FormatPlan& f) {
  const int64_t th = c.text.hidden;
  return VitTower::estimate_bytes(c.vision, f) + linear_bytes(c.vision.hidden, c.projection, f.output, false) +
         static_cast<std::size_t>((c.vocab + c.max_positions) * th) * sizeof(float) +
         TransformerStack::estimate_bytes(c.text, f) + linear_bytes(th, c.projection, f.output, false);
}

Result<ClipModel> ClipModel::create(const ClipConfig& c, const FormatPlan& f, SeededWeights& src) {
  AM_RETURN_IF_ERROR(check_weight_budget(c.vision.family, estimate_bytes(c, f)));
  ClipModel m;
  m.config_ = c;
  AM_ASSIGN_OR_RETURN(m.vision_, VitTower::create(c.vision, f, src));
  m.post_g_ = src.normal(Shape{c.vision.hidden}, 1.0f, kNormNoiseStd);
  m.post_b_ = src.normal(Shape{c.vision.hidden}, 0.0f, kNormNoiseStd);
  m.visual_projection_ = src.linear(c.vision.hidden, c.projection, 1.0f / std::sqrt(static_cast<float>(c.vision.hidden)),
                                    false, 0.0f, f.output);
  m.text_embedding_.tokens = src.normal(Shape{c.vocab, c.text.hidden}, 0.0f, kInitStd);
  m.text_embedding_.positions = src.normal(Shape{c.max_positions, c.text.hidden}, 0.0f, kInitStd);
  AM_ASSIGN_OR_RETURN(m.text_, TransformerStack::create(c.text, f, src));
  m.text_projection_ = src.linear(c.text.hidden, c.projection, 1.0f / std::sqrt(static_cast<float>(c.text.hidden)),
                                  false, 0.0f, f.output);
  m.l2_vision_ = l2_norm_gamma(c.projection);
  m.l2_text_ = l2_norm_gamma(c.projection);
  return m;
}

Result<ClipModel> ClipModel::from_tensors(const ClipConfig& c, const FormatPlan& f, ClipTensors t,
                                         const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_weight_budget(c.vision.family, estimate_bytes(c, f)));
  const std::string owner = c.vision.family + " weights";
  const int64_t vh = c.vision.hidden, th = c.text.hidden;
  ClipModel m;
  m.config_ = c;
  m.config_.logit_scale = t.logit_scale;
  AM_ASSIGN_OR_RETURN(m.vision_, VitTower::from_tensors(c.vision, f, std::move(t.vision), ctx));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "vision post_layernorm weight", t.post_g, Shape{vh}));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "vision post_layernorm bias", t.post_b, Shape{vh}));
  m.post_g_ = std::move(t.post_g);
  m.post_b_ = std::move(t.post_b);
  AM_ASSIGN_OR_RETURN(m.visual_projection_, linear_from_tensors(owner, "visual_projection", std::move(t.visual_projection),
                                                                Tensor(), vh, c.projection, false, f.output, ctx));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "token embedding", t.text_tokens, Shape{c.vocab, th}));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "text position embedding", t.text_positions, Shape{c.max_positions, th}));
  m.text_embedding_.tokens = std::move(t.text_tokens);
  m.text_embedding_.positions = std::move(t.text_positions);
  AM_ASSIGN_OR_RETURN(m.text_, TransformerStack::from_tensors(c.text, f, std::move(t.text), ctx));
  AM_ASSIGN_OR_RETURN(m.text_projection_, linear_from_tensors(owner, "text_projection", std::move(t.text_projection),
                                                              Tensor(), th, c.projection, false, f.output, ctx));
  m.l2_vision_ = l2_norm_gamma(c.projection);
  m.l2_text_ = l2_norm_gamma(c.projection);
  return m;
}

std::size_t ClipModel::weights_bytes() const {
  return vision_.weights_bytes() + post_g_.bytes() + post_b_.bytes() + visual_projection_.weight_bytes() +
         text_embedding_.bytes() + text_.weights_bytes() + text_projection_.weight_bytes();
}

void ClipModel::add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const {
  vision_.add_required_ops(ops);
  text_embedding_.add_required_ops(ops);
  text_.add_required_ops(ops);
  for (Op op : {Op::kLayerNorm, Op::kIndexRows, Op::kRmsNorm, Op::kMatmulNt}) require(ops, op);
  require(ops, Op::kLinear, visual_projection_.format());
}

Result<Tensor> ClipModel::encode_image_tokens(Backend& be, ConstTensorView pixels, int64_t batch) const {
  return vision_.forward(be, pixels, batch);
}

Status ClipModel::normalize(Backend& be, TensorView x) const {
  return be.rms_norm(x, l2_vision_.data(), kL2Eps, x);
}

Result<Tensor> ClipModel::project_images(Backend& be, ConstTensorView pooled, bool normalize) const {
  Tensor normed = be.tensor(Shape{pooled.rows(), config_.vision.hidden});
  AM_RETURN_IF_ERROR(be.layer_norm(pooled, post_g_.data(), post_b_.data(), config_.vision.eps, normed.view()));
  Tensor out = be.tensor(Shape{pooled.rows(), config_.projection});
  AM_RETURN_IF_ERROR(be.linear(visual_projection_, normed.view(), out.view()));
  if (normalize) AM_RETURN_IF_ERROR(be.rms_norm(out.view(), l2_vision_.data(), kL2Eps, out.view()));
  return out;
}

Result<Tensor> ClipModel::encode_images(Backend& be, ConstTensorView pixels, int64_t batch) const {
  AM_ASSIGN_OR_RETURN(Tensor hidden, vision_.forward(be, pixels, batch));
  Tensor cls = be.tensor(Shape{batch, config_.vision.hidden});
  AM_RETURN_IF_ERROR(take_rows(be, hidden.view(), config_.vision.tokens(), 0, cls.view()));
  return project_images(be, cls.view());
}

Result<Tensor> ClipModel::encode_texts(Backend& be, const ClipTexts& t, bool normalize) const {
  if (t.len > config_.max_positions) {
    return invalid_argument(config_.text.family + ": text length " + std::to_string(t.len) + " exceeds max_positions " +
                            std::to_string(config_.max_positions));
  }
  Tensor x = be.tensor(Shape{t.batch * t.len, config_.text.hidden});
  AM_RETURN_IF_ERROR(text_embedding_.embed(be, t.ids.data(), t.batch, t.len, 0, x.view()));
  AM_RETURN_IF_ERROR(text_.forward(be, x.view(), t.batch, t.len, 0, nullptr, nullptr));
  Tensor pooled = be.tensor(Shape{t.batch, config_.text.hidden});
  AM_RETURN_IF_ERROR(be.index_rows(x.view(), t.eos_rows.data(), t.batch, pooled.view()));
  Tensor out = be.tensor(Shape{t.batch, config_.projection});
  AM_RETURN_IF_ERROR(be.linear(text_projection_, pooled.view(), out.view()));
  if (normalize) AM_RETURN_IF_ERROR(be.rms_norm(out.view(), l2_text_.data(), kL2Eps, out.view()));
  return out;
}

Status ClipModel::similarity(Backend& be, ConstTensorView images, ConstTensorView texts, TensorView logits) const {
  return be.matmul_nt(images, texts, std::exp(config_.logit_scale), logits);
}

}  // namespace am::kernels
