// TransformerStack to and from f32 tensors (checkpoint import / export).
#include <string>
#include <utility>

#include "kernels/models/transformer_stack.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

std::string layer_name(std::size_t i, const char* what) { return "layer " + std::to_string(i) + " " + what; }

Status check_supported(const StackConfig& c) {
  if (c.cross || c.experts > 0 || c.positions == PositionKind::kRelativeBias) {
    return unsupported(c.family +
                       ": weights from tensors are implemented for dense self-attention stacks only (no "
                       "cross-attention, experts or relative position bias)");
  }
  return Status::Ok();
}

// A norm's gamma/beta pair: beta only for LayerNorm.
Status take_norm(const StackConfig& c, const std::string& owner, const std::string& what, Tensor& g, Tensor& b,
                 Tensor& dst_g, Tensor& dst_b) {
  AM_RETURN_IF_ERROR(check_tensor_shape(owner, what + " gamma", g, Shape{c.hidden}));
  if (c.norm == NormKind::kLayer) {
    AM_RETURN_IF_ERROR(check_tensor_shape(owner, what + " beta", b, Shape{c.hidden}));
  } else if (!b.empty()) {
    return invalid_argument(owner + ": " + what + " has a beta, but RMSNorm has none");
  }
  dst_g = std::move(g);
  dst_b = std::move(b);
  return Status::Ok();
}

}  // namespace

Result<TransformerStack> TransformerStack::from_tensors(StackConfig c, const FormatPlan& f, StackTensors t,
                                                        const ExecContext& ctx) {
  AM_RETURN_IF_ERROR(check_supported(c));
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.kv_heads < 1 || c.head_dim < 1 || c.intermediate < 1) {
    return invalid_argument(c.family + ": layers, hidden, heads, kv_heads, head_dim and intermediate must be positive");
  }
  if (c.heads % c.kv_heads != 0) {
    return invalid_argument(c.family + ": kv_heads " + std::to_string(c.kv_heads) + " does not divide heads " +
                            std::to_string(c.heads));
  }
  if (c.positions == PositionKind::kRope) {
    // The same completion of the rope parameters as create().
    c.rope.heads = c.heads;
    c.rope.head_dim = c.head_dim;
    const int64_t rd = c.rope.rotary_dim == 0 ? c.head_dim : c.rope.rotary_dim;
    if (rd < 2 || rd > c.head_dim || rd % 2 != 0) {
      return invalid_argument(c.family + ": rotary_dim " + std::to_string(rd) + " must be even and <= head_dim");
    }
  }
  const std::string owner = c.family + " weights";
  if (static_cast<int64_t>(t.layers.size()) != c.layers) {
    return invalid_argument(owner + ": " + std::to_string(t.layers.size()) + " layers given, config has " +
                            std::to_string(c.layers));
  }
  const int64_t h = c.hidden, q_cols = c.heads * c.head_dim, kv_cols = c.kv_heads * c.head_dim;
  TransformerStack s;
  s.layers_.resize(t.layers.size());
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    StackLayerTensors& src = t.layers[i];
    Layer& l = s.layers_[i];
    AM_RETURN_IF_ERROR(take_norm(c, owner, layer_name(i, "attention norm"), src.norm_self_g, src.norm_self_b,
                                 l.norm_self_g, l.norm_self_b));
    auto lin = [&](const char* what, Tensor& w, Tensor& b, int64_t in, int64_t out, bool bias, WeightFormat fmt,
                   Linear& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, linear_from_tensors(owner, layer_name(i, what), std::move(w), std::move(b), in, out,
                                                   bias, fmt, ctx));
      return Status::Ok();
    };
    AM_RETURN_IF_ERROR(lin("q", src.q_w, src.q_b, h, q_cols, c.q_bias, f.attention, l.self.q));
    AM_RETURN_IF_ERROR(lin("k", src.k_w, src.k_b, h, kv_cols, c.k_bias, f.attention, l.self.k));
    AM_RETURN_IF_ERROR(lin("v", src.v_w, src.v_b, h, kv_cols, c.v_bias, f.attention, l.self.v));
    AM_RETURN_IF_ERROR(lin("o", src.o_w, src.o_b, q_cols, h, c.o_bias, f.attention, l.self.o));
    AM_RETURN_IF_ERROR(take_norm(c, owner, layer_name(i, "feed-forward norm"), src.norm_ffn_g, src.norm_ffn_b,
                                 l.norm_ffn_g, l.norm_ffn_b));
    if (c.ffn == FfnKind::kGated) {
      AM_RETURN_IF_ERROR(lin("gate", src.gate_w, src.gate_b, h, c.intermediate, c.ffn_bias, f.feed_forward, l.ffn.gate));
    } else if (!src.gate_w.empty()) {
      return invalid_argument(owner + ": " + layer_name(i, "gate") + " given, but the feed-forward is not gated");
    }
    AM_RETURN_IF_ERROR(lin("up", src.up_w, src.up_b, h, c.intermediate, c.ffn_bias, f.feed_forward, l.ffn.up));
    AM_RETURN_IF_ERROR(lin("down", src.down_w, src.down_b, c.intermediate, h, c.ffn_bias, f.feed_forward, l.ffn.down));
  }
  if (c.final_norm) {
    AM_RETURN_IF_ERROR(take_norm(c, owner, "final norm", t.final_g, t.final_b, s.final_g_, s.final_b_));
  } else if (!t.final_g.empty()) {
    return invalid_argument(owner + ": final norm given, but the config has none");
  }
  s.config_ = std::move(c);
  return s;
}

Result<StackTensors> TransformerStack::tensors() const {
  AM_RETURN_IF_ERROR(check_supported(config_));
  const std::string owner = config_.family + " weights";
  StackTensors t;
  t.final_g = final_g_.clone();
  t.final_b = final_b_.clone();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    StackLayerTensors d;
    auto take = [&](const char* what, const Linear& lin, Tensor& w, Tensor& b) -> Status {
      AM_ASSIGN_OR_RETURN(auto wb, linear_to_tensors(owner, layer_name(i, what), lin));
      w = std::move(wb.first);
      b = std::move(wb.second);
      return Status::Ok();
    };
    d.norm_self_g = l.norm_self_g.clone();
    d.norm_self_b = l.norm_self_b.clone();
    AM_RETURN_IF_ERROR(take("q", l.self.q, d.q_w, d.q_b));
    AM_RETURN_IF_ERROR(take("k", l.self.k, d.k_w, d.k_b));
    AM_RETURN_IF_ERROR(take("v", l.self.v, d.v_w, d.v_b));
    AM_RETURN_IF_ERROR(take("o", l.self.o, d.o_w, d.o_b));
    d.norm_ffn_g = l.norm_ffn_g.clone();
    d.norm_ffn_b = l.norm_ffn_b.clone();
    if (config_.ffn == FfnKind::kGated) AM_RETURN_IF_ERROR(take("gate", l.ffn.gate, d.gate_w, d.gate_b));
    AM_RETURN_IF_ERROR(take("up", l.ffn.up, d.up_w, d.up_b));
    AM_RETURN_IF_ERROR(take("down", l.ffn.down, d.down_w, d.down_b));
    t.layers.push_back(std::move(d));
  }
  return t;
}

}  // namespace am::kernels
