// TransformerStack to and from f32 tensors (checkpoint import / export).
#include <string>
#include <utility>

#include "kernels/models/transformer_stack.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

std::string layer_name(std::size_t i, const char* what) { return "layer " + std::to_string(i) + " " + what; }

Status check_supported(const StackConfig& c) {
  if (c.experts > 0 && (c.experts_per_token < 1 || c.experts_per_token > c.experts || c.moe_every < 1)) {
    return invalid_argument(c.family + ": experts_per_token must be in [1, experts] and moe_every >= 1");
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
    if (c.cross) {
      AM_RETURN_IF_ERROR(take_norm(c, owner, layer_name(i, "cross-attention norm"), src.norm_cross_g,
                                   src.norm_cross_b, l.norm_cross_g, l.norm_cross_b));
      AM_RETURN_IF_ERROR(lin("cross q", src.cross_q_w, src.cross_q_b, h, q_cols, c.q_bias, f.attention, l.cross.q));
      AM_RETURN_IF_ERROR(lin("cross k", src.cross_k_w, src.cross_k_b, h, kv_cols, c.k_bias, f.attention, l.cross.k));
      AM_RETURN_IF_ERROR(lin("cross v", src.cross_v_w, src.cross_v_b, h, kv_cols, c.v_bias, f.attention, l.cross.v));
      AM_RETURN_IF_ERROR(lin("cross o", src.cross_o_w, src.cross_o_b, q_cols, h, c.o_bias, f.attention, l.cross.o));
    } else if (!src.cross_q_w.empty() || !src.norm_cross_g.empty()) {
      return invalid_argument(owner + ": " + layer_name(i, "cross-attention") + " given, but the config has none");
    }
    AM_RETURN_IF_ERROR(take_norm(c, owner, layer_name(i, "feed-forward norm"), src.norm_ffn_g, src.norm_ffn_b,
                                 l.norm_ffn_g, l.norm_ffn_b));
    auto ffn = [&](const std::string& prefix, StackFfnTensors ft, Ffn& dst) -> Status {
      const std::string gate = prefix + "gate", up = prefix + "up", down = prefix + "down";
      if (c.ffn == FfnKind::kGated) {
        AM_RETURN_IF_ERROR(lin(gate.c_str(), ft.gate_w, ft.gate_b, h, c.intermediate, c.ffn_bias, f.feed_forward, dst.gate));
      } else if (!ft.gate_w.empty()) {
        return invalid_argument(owner + ": " + layer_name(i, gate.c_str()) + " given, but the feed-forward is not gated");
      }
      AM_RETURN_IF_ERROR(lin(up.c_str(), ft.up_w, ft.up_b, h, c.intermediate, c.ffn_bias, f.feed_forward, dst.up));
      return lin(down.c_str(), ft.down_w, ft.down_b, c.intermediate, h, c.ffn_bias, f.feed_forward, dst.down);
    };
    // The same rule as create(): which layers route to experts.
    l.moe = c.experts > 0 && static_cast<int64_t>(i) % c.moe_every == c.moe_every - 1;
    if (l.moe) {
      if (static_cast<int64_t>(src.experts.size()) != c.experts) {
        return invalid_argument(owner + ": " + layer_name(i, "") + std::to_string(src.experts.size()) +
                                " experts given, config has " + std::to_string(c.experts));
      }
      Tensor no_bias;
      AM_RETURN_IF_ERROR(lin("router", src.router_w, no_bias, h, c.experts, false, f.other, l.router));
      l.experts.resize(src.experts.size());
      for (std::size_t e = 0; e < src.experts.size(); ++e) {
        AM_RETURN_IF_ERROR(ffn("expert " + std::to_string(e) + " ", std::move(src.experts[e]), l.experts[e]));
      }
    } else {
      if (!src.experts.empty() || !src.router_w.empty()) {
        return invalid_argument(owner + ": " + layer_name(i, "experts") + " given, but the layer is dense");
      }
      AM_RETURN_IF_ERROR(ffn("", {std::move(src.gate_w), std::move(src.gate_b), std::move(src.up_w), std::move(src.up_b),
                                  std::move(src.down_w), std::move(src.down_b)},
                             l.ffn));
    }
  }
  if (c.positions == PositionKind::kRelativeBias) {
    AM_RETURN_IF_ERROR(check_tensor_shape(owner, "relative position bias", t.rel_table, Shape{c.rel_buckets, c.heads}));
    s.rel_table_ = std::move(t.rel_table);
  } else if (!t.rel_table.empty()) {
    return invalid_argument(owner + ": relative position bias given, but the config has none");
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
  t.rel_table = rel_table_.clone();
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
    if (config_.cross) {
      d.norm_cross_g = l.norm_cross_g.clone();
      d.norm_cross_b = l.norm_cross_b.clone();
      AM_RETURN_IF_ERROR(take("cross q", l.cross.q, d.cross_q_w, d.cross_q_b));
      AM_RETURN_IF_ERROR(take("cross k", l.cross.k, d.cross_k_w, d.cross_k_b));
      AM_RETURN_IF_ERROR(take("cross v", l.cross.v, d.cross_v_w, d.cross_v_b));
      AM_RETURN_IF_ERROR(take("cross o", l.cross.o, d.cross_o_w, d.cross_o_b));
    }
    d.norm_ffn_g = l.norm_ffn_g.clone();
    d.norm_ffn_b = l.norm_ffn_b.clone();
    auto take_ffn = [&](const std::string& prefix, const Ffn& x, StackFfnTensors& ft) -> Status {
      if (config_.ffn == FfnKind::kGated) AM_RETURN_IF_ERROR(take((prefix + "gate").c_str(), x.gate, ft.gate_w, ft.gate_b));
      AM_RETURN_IF_ERROR(take((prefix + "up").c_str(), x.up, ft.up_w, ft.up_b));
      return take((prefix + "down").c_str(), x.down, ft.down_w, ft.down_b);
    };
    if (l.moe) {
      Tensor no_bias;
      AM_RETURN_IF_ERROR(take("router", l.router, d.router_w, no_bias));
      d.experts.resize(l.experts.size());
      for (std::size_t e = 0; e < l.experts.size(); ++e) {
        AM_RETURN_IF_ERROR(take_ffn("expert " + std::to_string(e) + " ", l.experts[e], d.experts[e]));
      }
    } else {
      StackFfnTensors ft;
      AM_RETURN_IF_ERROR(take_ffn("", l.ffn, ft));
      d.gate_w = std::move(ft.gate_w);
      d.gate_b = std::move(ft.gate_b);
      d.up_w = std::move(ft.up_w);
      d.up_b = std::move(ft.up_b);
      d.down_w = std::move(ft.down_w);
      d.down_b = std::move(ft.down_b);
    }
    t.layers.push_back(std::move(d));
  }
  return t;
}

}  // namespace am::kernels
