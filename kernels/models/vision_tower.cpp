#include "kernels/models/vision_tower.h"

#include <cmath>
#include <cstring>

#include "kernels/rng.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {
constexpr float kEmbeddingStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
}  // namespace

Result<VitTowerConfig> vit_tower_config_from(const ConfigReader& cfg, const std::string& prefix,
                                             const std::string& family, float default_eps) {
  VitTowerConfig c;
  c.family = family;
  auto key = [&](const char* k) { return prefix + k; };
  AM_ASSIGN_OR_RETURN(c.image_size, cfg.dim(key("image_size").c_str()));
  AM_ASSIGN_OR_RETURN(c.patch, cfg.dim(key("patch").c_str()));
  AM_ASSIGN_OR_RETURN(c.channels, cfg.dim(key("channels").c_str(), int64_t{3}));
  AM_ASSIGN_OR_RETURN(c.layers, cfg.dim(key("layers").c_str()));
  AM_ASSIGN_OR_RETURN(c.hidden, cfg.dim(key("hidden").c_str()));
  AM_ASSIGN_OR_RETURN(c.heads, cfg.dim(key("heads").c_str()));
  AM_ASSIGN_OR_RETURN(c.intermediate, cfg.dim(key("intermediate").c_str()));
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text(key("activation").c_str(), "gelu"));
  AM_ASSIGN_OR_RETURN(c.activation, activation_from_name(act));
  AM_ASSIGN_OR_RETURN(double eps, cfg.number(key("norm_eps").c_str(), default_eps, 1e-30, 1.0));
  c.eps = static_cast<float>(eps);
  if (c.image_size % c.patch != 0) {
    return cfg.error(key("image_size") + " " + std::to_string(c.image_size) + " is not a multiple of " +
                     key("patch") + " " + std::to_string(c.patch));
  }
  if (c.hidden % c.heads != 0) return cfg.error(key("hidden") + " is not a multiple of " + key("heads"));
  return c;
}

StackConfig vit_stack_config(const std::string& family, int64_t layers, int64_t hidden, int64_t heads,
                             int64_t intermediate, Activation act, float eps, bool final_norm) {
  StackConfig s;
  s.family = family;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = heads;
  s.head_dim = hidden / heads;
  s.intermediate = intermediate;
  s.norm = NormKind::kLayer;
  s.eps = eps;
  s.pre_norm = true;
  s.final_norm = final_norm;
  s.ffn = FfnKind::kMlp;
  s.activation = act;
  s.q_bias = s.k_bias = s.v_bias = s.o_bias = s.ffn_bias = true;
  s.positions = PositionKind::kNone;
  return s;
}

Result<VitTower> VitTower::create(const VitTowerConfig& c, const FormatPlan& formats, SeededWeights& src) {
  AM_RETURN_IF_ERROR(check_weight_budget(c.family, estimate_bytes(c, formats)));
  VitTower t;
  t.config_ = c;
  const int64_t fan_in = c.channels * c.patch * c.patch;
  VitEmbedding& e = t.embedding_;
  e.patch_w = src.normal(Shape{c.hidden, c.channels, c.patch, c.patch}, 0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in)));
  e.patch_b = src.normal(Shape{c.hidden}, 0.0f, kEmbeddingStd);
  e.extra = src.normal(Shape{c.extra_tokens, c.hidden}, 0.0f, kEmbeddingStd);
  e.positions = src.normal(Shape{c.tokens(), c.hidden}, 0.0f, kEmbeddingStd);
  if (c.pre_norm) {
    e.pre_g = src.normal(Shape{c.hidden}, 1.0f, kNormNoiseStd);
    e.pre_b = src.normal(Shape{c.hidden}, 0.0f, kNormNoiseStd);
  }
  AM_ASSIGN_OR_RETURN(t.stack_, TransformerStack::create(vit_stack_config(c.family, c.layers, c.hidden, c.heads,
                                                                          c.intermediate, c.activation, c.eps,
                                                                          c.final_norm),
                                                         formats, src));
  return t;
}

Result<VitTower> VitTower::from_tensors(const VitTowerConfig& c, const FormatPlan& formats, VitTowerTensors t,
                                        const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_weight_budget(c.family, estimate_bytes(c, formats)));
  const std::string owner = c.family + " weights";
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "patch embedding", t.patch_w, Shape{c.hidden, c.channels, c.patch, c.patch}));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "patch embedding bias", t.patch_b, Shape{c.hidden}));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "extra tokens", t.extra, Shape{c.extra_tokens, c.hidden}));
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, "position embeddings", t.positions, Shape{c.tokens(), c.hidden}));
  if (c.pre_norm) {
    AM_RETURN_IF_ERROR(check_tensor_shape(owner, "pre-encoder norm gamma", t.pre_g, Shape{c.hidden}));
    AM_RETURN_IF_ERROR(check_tensor_shape(owner, "pre-encoder norm beta", t.pre_b, Shape{c.hidden}));
  }
  VitTower v;
  v.config_ = c;
  v.embedding_ = VitEmbedding{std::move(t.patch_w), std::move(t.patch_b), std::move(t.extra), std::move(t.positions),
                              std::move(t.pre_g), std::move(t.pre_b)};
  AM_ASSIGN_OR_RETURN(v.stack_, TransformerStack::from_tensors(vit_stack_config(c.family, c.layers, c.hidden, c.heads,
                                                                                c.intermediate, c.activation, c.eps,
                                                                                c.final_norm),
                                                               formats, std::move(t.stack), ctx));
  return v;
}

std::size_t VitTower::estimate_bytes(const VitTowerConfig& c, const FormatPlan& formats) {
  const std::size_t f = sizeof(float);
  const std::size_t embed = static_cast<std::size_t>(c.hidden * (c.channels * c.patch * c.patch + 1) +
                                                     (c.extra_tokens + c.tokens() + 2) * c.hidden) * f;
  return embed + TransformerStack::estimate_bytes(vit_stack_config(c.family, c.layers, c.hidden, c.heads,
                                                                   c.intermediate, c.activation, c.eps,
                                                                   c.final_norm),
                                                  formats);
}

std::size_t VitTower::weights_bytes() const {
  return embedding_.bytes() + stack_.weights_bytes();
}

void VitTower::add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const {
  require(ops, Op::kConv2d);
  require(ops, Op::kGatherRows);
  if (config_.pre_norm) require(ops, Op::kLayerNorm);
  stack_.add_required_ops(ops);
}

Result<Tensor> vit_embed(Backend& be, const VitTowerConfig& c, const VitEmbedding& e, ConstTensorView pixels,
                         int64_t batch) {
  const int64_t grid = c.image_size / c.patch;
  Tensor patches = be.tensor(Shape{batch * grid * grid, c.hidden});
  Conv2dArgs conv;
  conv.x = pixels;
  conv.y = patches.view();
  conv.weight = e.patch_w.data();
  conv.bias = e.patch_b.data();
  conv.batch = batch;
  conv.height = conv.width = c.image_size;
  conv.in_channels = c.channels;
  conv.out_channels = c.hidden;
  conv.kernel_h = conv.kernel_w = conv.stride = c.patch;
  AM_RETURN_IF_ERROR(be.conv2d(conv));

  const int64_t tokens = c.tokens();
  Tensor x = be.tensor(Shape{batch * tokens, c.hidden});
  for (int64_t b = 0; b < batch; ++b) {
    AM_RETURN_IF_ERROR(copy_weight_rows(be, e.extra.view(), x.view(), b * tokens));
    AM_RETURN_IF_ERROR(
        copy_rows(be, patches.view().row_range(b * grid * grid, grid * grid), x.view(), b * tokens + c.extra_tokens));
  }
  std::vector<int32_t> pos(static_cast<std::size_t>(batch * tokens));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(static_cast<int64_t>(i) % tokens);
  AM_RETURN_IF_ERROR(be.gather_rows(e.positions.view(), pos.data(), batch * tokens, x.view(), true));
  if (c.pre_norm) AM_RETURN_IF_ERROR(be.layer_norm(x.view(), e.pre_g.data(), e.pre_b.data(), c.eps, x.view()));
  return x;
}

Result<Tensor> VitTower::forward(Backend& be, ConstTensorView pixels, int64_t batch) const {
  AM_ASSIGN_OR_RETURN(Tensor x, vit_embed(be, config_, embedding_, pixels, batch));
  AM_RETURN_IF_ERROR(stack_.forward(be, x.view(), batch, config_.tokens(), 0, nullptr, nullptr));
  return x;
}

Tensor seeded_pixels(int64_t batch, int64_t image, int64_t channels, uint64_t seed, uint64_t stream,
                     const ExecContext& ctx) {
  Tensor t(Shape{batch * image * image, channels});
  fill_normal(t.data(), t.numel(), 0.0f, 1.0f, derive_seed(seed, stream), ctx);
  return t;
}

Status take_rows(Backend& be, ConstTensorView x, int64_t stride, int64_t offset, TensorView y) {
  std::vector<int32_t> ids(static_cast<std::size_t>(y.rows()));
  for (int64_t i = 0; i < y.rows(); ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i * stride + offset);
  return be.index_rows(x, ids.data(), y.rows(), y);
}

Status add_per_group(Backend& be, ConstTensorView table, int64_t rows_per_group, TensorView y) {
  std::vector<int32_t> ids(static_cast<std::size_t>(y.rows()));
  for (int64_t i = 0; i < y.rows(); ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i / rows_per_group);
  // index_rows, not gather_rows: the table is an activation (a per-run time embedding), and a
  // gather table is a weight that device backends cache by address (backend.h).
  Tensor rows = be.tensor(Shape{y.rows(), y.cols()});
  AM_RETURN_IF_ERROR(be.index_rows(table, ids.data(), y.rows(), rows.view()));
  return be.add(y, rows.view());
}

namespace {
std::vector<int32_t> first_rows(int64_t n) {
  std::vector<int32_t> ids(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i);
  return ids;
}
}  // namespace

Status copy_rows(Backend& be, ConstTensorView src, TensorView dst, int64_t dst_row) {
  const int64_t n = src.rows();
  if (n == 0) return Status::Ok();
  const std::vector<int32_t> ids = first_rows(n);
  return be.index_rows(src, ids.data(), n, dst.row_range(dst_row, n));
}

Status copy_weight_rows(Backend& be, ConstTensorView weight, TensorView dst, int64_t dst_row) {
  const int64_t n = weight.rows();
  if (n == 0) return Status::Ok();
  const std::vector<int32_t> ids = first_rows(n);
  return be.gather_rows(weight, ids.data(), n, dst.row_range(dst_row, n), false);
}

void host_copy_rows(ConstTensorView src, TensorView dst, int64_t dst_row) {
  std::memcpy(dst.row(dst_row), src.data, static_cast<std::size_t>(src.numel()) * sizeof(float));
}

void require(std::vector<std::pair<Op, WeightFormat>>& ops, Op op, WeightFormat f) {
  for (const auto& p : ops) {
    if (p.first == op && p.second == f) return;
  }
  ops.emplace_back(op, f);
}

Tensor l2_norm_gamma(int64_t cols) {
  Tensor g(Shape{cols});
  const float v = 1.0f / std::sqrt(static_cast<float>(cols));
  for (int64_t i = 0; i < cols; ++i) g.data()[i] = v;
  return g;
}

}  // namespace am::kernels
