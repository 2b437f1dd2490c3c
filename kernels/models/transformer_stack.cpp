#include "kernels/models/transformer_stack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "kernels/rng.h"

namespace am::kernels {

// ---- stack construction ----------------------------------------------------------------------

std::size_t TransformerStack::estimate_bytes(const StackConfig& c, const FormatPlan& f) {
  const int64_t q_cols = c.heads * c.head_dim, kv_cols = c.kv_heads * c.head_dim;
  std::size_t attn = linear_bytes(c.hidden, q_cols, f.attention, c.q_bias) +
                     2 * linear_bytes(c.hidden, kv_cols, f.attention, c.k_bias) +
                     linear_bytes(q_cols, c.hidden, f.attention, c.o_bias);
  if (c.cross) attn *= 2;
  const int64_t mats = c.ffn == FfnKind::kGated ? 2 : 1;
  const std::size_t ffn = static_cast<std::size_t>(mats) * linear_bytes(c.hidden, c.intermediate, f.feed_forward, c.ffn_bias) +
                          linear_bytes(c.intermediate, c.hidden, f.feed_forward, c.ffn_bias);
  std::size_t total = 0;
  for (int64_t i = 0; i < c.layers; ++i) {
    const bool moe = c.experts > 0 && i % c.moe_every == c.moe_every - 1;
    total += attn + (moe ? static_cast<std::size_t>(c.experts) * ffn : ffn);
    total += static_cast<std::size_t>(6 * c.hidden) * sizeof(float);
  }
  return total;
}

Result<TransformerStack> TransformerStack::create(StackConfig c, const FormatPlan& f, SeededWeights& src) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.kv_heads < 1 || c.head_dim < 1 || c.intermediate < 1) {
    return invalid_argument(c.family + ": layers, hidden, heads, kv_heads, head_dim and intermediate must be positive");
  }
  if (c.heads % c.kv_heads != 0) {
    return invalid_argument(c.family + ": kv_heads " + std::to_string(c.kv_heads) + " does not divide heads " +
                            std::to_string(c.heads));
  }
  if (c.experts > 0 && (c.experts_per_token < 1 || c.experts_per_token > c.experts || c.moe_every < 1)) {
    return invalid_argument(c.family + ": experts_per_token must be in [1, experts] and moe_every >= 1");
  }
  if (c.positions == PositionKind::kRope) {
    c.rope.heads = c.heads;
    c.rope.head_dim = c.head_dim;
    const int64_t rd = c.rope.rotary_dim == 0 ? c.head_dim : c.rope.rotary_dim;
    if (rd < 2 || rd > c.head_dim || rd % 2 != 0) {
      return invalid_argument(c.family + ": rotary_dim " + std::to_string(rd) + " must be even and <= head_dim");
    }
  }
  TransformerStack s;
  const int64_t h = c.hidden, q_cols = c.heads * c.head_dim, kv_cols = c.kv_heads * c.head_dim;
  const InitScales& in = c.init;
  auto norm_pair = [&](Tensor& g, Tensor& b) {
    g = src.normal(Shape{h}, 1.0f, in.norm_noise);
    Tensor beta = src.normal(Shape{h}, 0.0f, in.norm_noise);
    if (c.norm == NormKind::kLayer) b = std::move(beta);
  };
  auto attention = [&](Attn& a) {
    a.q = src.linear(h, q_cols, in.q, c.q_bias, in.bias, f.attention);
    a.k = src.linear(h, kv_cols, in.kv, c.k_bias, in.bias, f.attention);
    a.v = src.linear(h, kv_cols, in.kv, c.v_bias, in.bias, f.attention);
    a.o = src.linear(q_cols, h, in.o, c.o_bias, in.bias, f.attention);
  };
  auto ffn = [&](Ffn& x) {
    if (c.ffn == FfnKind::kGated) x.gate = src.linear(h, c.intermediate, in.ffn_in, c.ffn_bias, in.bias, f.feed_forward);
    x.up = src.linear(h, c.intermediate, in.ffn_in, c.ffn_bias, in.bias, f.feed_forward);
    x.down = src.linear(c.intermediate, h, in.ffn_out, c.ffn_bias, in.bias, f.feed_forward);
  };
  if (c.positions == PositionKind::kRelativeBias) {
    s.rel_table_ = src.normal(Shape{c.rel_buckets, c.heads}, 0.0f, 1.0f / std::sqrt(static_cast<float>(h)));
  }
  s.layers_.resize(static_cast<std::size_t>(c.layers));
  for (int64_t i = 0; i < c.layers; ++i) {
    Layer& l = s.layers_[static_cast<std::size_t>(i)];
    norm_pair(l.norm_self_g, l.norm_self_b);
    attention(l.self);
    if (c.cross) {
      norm_pair(l.norm_cross_g, l.norm_cross_b);
      attention(l.cross);
    }
    norm_pair(l.norm_ffn_g, l.norm_ffn_b);
    l.moe = c.experts > 0 && i % c.moe_every == c.moe_every - 1;
    if (l.moe) {
      l.router = src.linear(h, c.experts, in.router, false, 0.0f, f.other);
      l.experts.resize(static_cast<std::size_t>(c.experts));
      for (Ffn& e : l.experts) ffn(e);
    } else {
      ffn(l.ffn);
    }
  }
  if (c.final_norm) norm_pair(s.final_g_, s.final_b_);
  s.config_ = std::move(c);
  return s;
}

std::size_t TransformerStack::weights_bytes() const {
  auto attn = [](const Attn& a) {
    return a.q.weight_bytes() + a.k.weight_bytes() + a.v.weight_bytes() + a.o.weight_bytes();
  };
  auto ffn = [](const Ffn& x) { return x.gate.weight_bytes() + x.up.weight_bytes() + x.down.weight_bytes(); };
  std::size_t total = rel_table_.bytes() + final_g_.bytes() + final_b_.bytes();
  for (const Layer& l : layers_) {
    total += l.norm_self_g.bytes() + l.norm_self_b.bytes() + l.norm_cross_g.bytes() + l.norm_cross_b.bytes() +
             l.norm_ffn_g.bytes() + l.norm_ffn_b.bytes() + attn(l.self) + ffn(l.ffn) + l.router.weight_bytes();
    if (config_.cross) total += attn(l.cross);
    for (const Ffn& e : l.experts) total += ffn(e);
  }
  return total;
}

void TransformerStack::add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const {
  auto add = [&](Op op, WeightFormat f) {
    const std::pair<Op, WeightFormat> p{op, f};
    if (std::find(ops.begin(), ops.end(), p) == ops.end()) ops.push_back(p);
  };
  for (const Layer& l : layers_) {
    add(Op::kLinear, l.self.q.format());
    if (l.moe) {
      add(Op::kLinear, l.router.format());
      add(Op::kLinear, l.experts.front().up.format());
      add(Op::kTopK, WeightFormat::kF32);
      add(Op::kIndexRows, WeightFormat::kF32);
      add(Op::kScatterAddRows, WeightFormat::kF32);
    } else {
      add(Op::kLinear, l.ffn.up.format());
    }
  }
  add(config_.norm == NormKind::kRms ? Op::kRmsNorm : Op::kLayerNorm, WeightFormat::kF32);
  add(config_.positions == PositionKind::kRelativeBias ? Op::kAttentionBias : Op::kAttention, WeightFormat::kF32);
  if (config_.cross) add(Op::kAttention, WeightFormat::kF32);
  if (config_.positions == PositionKind::kRelativeBias) add(Op::kGatherRows, WeightFormat::kF32);
  if (config_.positions == PositionKind::kRope) add(Op::kRope, WeightFormat::kF32);
  add(Op::kActivation, WeightFormat::kF32);
  add(Op::kAdd, WeightFormat::kF32);
  if (config_.ffn == FfnKind::kGated) add(Op::kMul, WeightFormat::kF32);
}

// ---- running ---------------------------------------------------------------------------------

struct TransformerStack::Scratch {
  Tensor h, q, k, v, ctx, branch, ffn_a, ffn_b, bias;
  std::vector<int32_t> positions;
  Scratch(Backend& be, const StackConfig& c, int64_t rows)
      : h(be.tensor(Shape{rows, c.hidden})),
        q(be.tensor(Shape{rows, c.heads * c.head_dim})),
        k(be.tensor(Shape{rows, c.kv_heads * c.head_dim})),
        v(be.tensor(Shape{rows, c.kv_heads * c.head_dim})),
        ctx(be.tensor(Shape{rows, c.heads * c.head_dim})),
        branch(be.tensor(Shape{rows, c.hidden})),
        ffn_a(be.tensor(Shape{rows, c.intermediate})),
        ffn_b(be.tensor(Shape{c.ffn == FfnKind::kGated ? rows : 0, c.intermediate})) {}
};

StackCache TransformerStack::make_cache(Backend& be, int64_t batch, int64_t max_len) const {
  StackCache cache;
  cache.batch = batch;
  cache.max_len = max_len;
  const int64_t kv_cols = config_.kv_heads * config_.head_dim;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    cache.k.push_back(be.tensor(Shape{batch * max_len, kv_cols}));
    cache.v.push_back(be.tensor(Shape{batch * max_len, kv_cols}));
  }
  return cache;
}

Status TransformerStack::precompute_cross(Backend& be, ConstTensorView memory, int64_t batch, int64_t src_len,
                                          const int32_t* src_mask, StackCache& cache) const {
  if (!config_.cross) return invalid_argument(config_.family + ": stack has no cross-attention");
  if (memory.rows() != batch * src_len || memory.cols() != config_.hidden) {
    return invalid_argument(config_.family + ": cross memory must be [batch*src_len, hidden]");
  }
  cache.src_len = src_len;
  cache.src_mask = src_mask;
  cache.cross_k.clear();
  cache.cross_v.clear();
  const int64_t kv_cols = config_.kv_heads * config_.head_dim;
  for (const Layer& l : layers_) {
    Tensor k = be.tensor(Shape{batch * src_len, kv_cols}), v = be.tensor(Shape{batch * src_len, kv_cols});
    AM_RETURN_IF_ERROR(be.linear(l.cross.k, memory, k.view()));
    AM_RETURN_IF_ERROR(be.linear(l.cross.v, memory, v.view()));
    cache.cross_k.push_back(std::move(k));
    cache.cross_v.push_back(std::move(v));
  }
  return Status::Ok();
}

Status TransformerStack::norm(Backend& be, ConstTensorView x, const Tensor& g, const Tensor& b, TensorView y) const {
  if (config_.norm == NormKind::kRms) return be.rms_norm(x, g.data(), config_.eps, y);
  return be.layer_norm(x, g.data(), b.empty() ? nullptr : b.data(), config_.eps, y);
}

Status TransformerStack::run_ffn(Backend& be, const Ffn& f, ConstTensorView x, TensorView y, Scratch& s) const {
  const int64_t rows = x.rows();
  TensorView a = s.ffn_a.view().row_range(0, rows);
  if (config_.ffn == FfnKind::kGated) {
    TensorView b = s.ffn_b.view().row_range(0, rows);
    AM_RETURN_IF_ERROR(be.linear(f.gate, x, a));
    AM_RETURN_IF_ERROR(be.activation(config_.activation, a));
    AM_RETURN_IF_ERROR(be.linear(f.up, x, b));
    AM_RETURN_IF_ERROR(be.mul(a, b));
  } else {
    AM_RETURN_IF_ERROR(be.linear(f.up, x, a));
    AM_RETURN_IF_ERROR(be.activation(config_.activation, a));
  }
  return be.linear(f.down, a, y);
}

Status TransformerStack::run_moe(Backend& be, const Layer& l, ConstTensorView x, TensorView y, Scratch& s) const {
  const int64_t rows = x.rows(), k = config_.experts_per_token;
  Tensor logits = be.tensor(Shape{rows, config_.experts});
  AM_RETURN_IF_ERROR(be.linear(l.router, x, logits.view()));
  std::vector<int32_t> ids(static_cast<std::size_t>(rows * k));
  std::vector<float> weights(static_cast<std::size_t>(rows * k));
  AM_RETURN_IF_ERROR(be.top_k(logits.view(), k, config_.router_renormalize, ids.data(), weights.data()));
  // The experts' sum starts from zeros made where the backend keeps its tensors (no upload).
  Tensor sum = be.tensor(Shape{rows, config_.hidden});
  std::vector<int32_t> tokens;
  std::vector<float> scales;
  for (int64_t e = 0; e < config_.experts; ++e) {
    tokens.clear();
    scales.clear();
    for (int64_t i = 0; i < rows * k; ++i) {
      if (ids[static_cast<std::size_t>(i)] == e) {
        tokens.push_back(static_cast<int32_t>(i / k));
        scales.push_back(weights[static_cast<std::size_t>(i)]);
      }
    }
    if (tokens.empty()) continue;  // no token chose this expert: it does no work, as in real MoE
    const int64_t m = static_cast<int64_t>(tokens.size());
    Tensor xe = be.tensor(Shape{m, config_.hidden}), ye = be.tensor(Shape{m, config_.hidden});
    AM_RETURN_IF_ERROR(be.index_rows(x, tokens.data(), m, xe.view()));
    AM_RETURN_IF_ERROR(run_ffn(be, l.experts[static_cast<std::size_t>(e)], xe.view(), ye.view(), s));
    AM_RETURN_IF_ERROR(be.scatter_add_rows(ye.view(), tokens.data(), scales.data(), m, sum.view()));
  }
  std::vector<int32_t> all(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) all[static_cast<std::size_t>(r)] = static_cast<int32_t>(r);
  return be.index_rows(sum.view(), all.data(), rows, y);
}

int32_t TransformerStack::relative_bucket(int64_t relative) const {
  // T5's bucketing: exact buckets for small distances, log-spaced up to max_distance.
  int64_t buckets = config_.rel_buckets;
  int64_t ret = 0;
  int64_t n = 0;
  if (!config_.causal) {
    buckets /= 2;
    if (relative > 0) ret += buckets;
    n = relative < 0 ? -relative : relative;
  } else {
    n = relative < 0 ? -relative : 0;
  }
  const int64_t max_exact = std::max<int64_t>(1, buckets / 2);
  if (n < max_exact) return static_cast<int32_t>(ret + n);
  const double scaled = std::log(static_cast<double>(n) / static_cast<double>(max_exact)) /
                        std::log(static_cast<double>(config_.rel_max_distance) / static_cast<double>(max_exact)) *
                        static_cast<double>(buckets - max_exact);
  const int64_t large = std::min<int64_t>(max_exact + static_cast<int64_t>(scaled), buckets - 1);
  return static_cast<int32_t>(ret + large);
}

Status TransformerStack::relative_bias(Backend& be, int64_t q_len, int64_t kv_len, int64_t offset, Tensor& bias) const {
  std::vector<int32_t> buckets(static_cast<std::size_t>(q_len * kv_len));
  for (int64_t i = 0; i < q_len; ++i)
    for (int64_t j = 0; j < kv_len; ++j)
      buckets[static_cast<std::size_t>(i * kv_len + j)] = relative_bucket(j - (offset + i));
  bias = be.tensor(Shape{q_len * kv_len, config_.heads});
  return be.gather_rows(rel_table_.view(), buckets.data(), q_len * kv_len, bias.view(), false);
}

Status TransformerStack::forward(Backend& be, TensorView x, int64_t batch, int64_t q_len, int64_t offset,
                                 StackCache* cache, const int32_t* key_mask) const {
  const StackConfig& c = config_;
  const int64_t rows = batch * q_len;
  if (x.rows() != rows || x.cols() != c.hidden) {
    return invalid_argument(c.family + ": stack input must be [batch*q_len, hidden]");
  }
  if (cache != nullptr && (cache->batch != batch || offset < 0 || offset + q_len > cache->max_len)) {
    return invalid_argument(c.family + ": positions [" + std::to_string(offset) + ", " +
                            std::to_string(offset + q_len) + ") do not fit the KV cache");
  }
  if (c.cross && (cache == nullptr || cache->cross_k.size() != layers_.size())) {
    return invalid_argument(c.family + ": cross-attention needs precompute_cross() first");
  }
  Scratch s(be, c, rows);
  // Rows 0..q_len-1 in order: a sample's new keys and values land in its cache rows.
  std::vector<int32_t> step_rows(static_cast<std::size_t>(q_len));
  for (int64_t r = 0; r < q_len; ++r) step_rows[static_cast<std::size_t>(r)] = static_cast<int32_t>(r);
  const int64_t kv_len = cache != nullptr ? cache->max_len : q_len;
  s.positions.resize(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) s.positions[static_cast<std::size_t>(r)] = static_cast<int32_t>(offset + r % q_len);
  if (c.positions == PositionKind::kRelativeBias) AM_RETURN_IF_ERROR(relative_bias(be, q_len, kv_len, offset, s.bias));

  AttentionArgs self;
  self.q = s.q.view();
  self.out = s.ctx.view();
  self.batch = batch;
  self.q_len = q_len;
  self.kv_len = kv_len;
  self.heads = c.heads;
  self.kv_heads = c.kv_heads;
  self.head_dim = c.head_dim;
  self.scale = c.attn_scale;
  self.causal = c.causal || cache != nullptr;
  self.q_offset = cache != nullptr ? offset : 0;
  self.key_mask = cache != nullptr ? nullptr : key_mask;

  for (std::size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    // Self-attention.
    ConstTensorView in = x;
    if (c.pre_norm) {
      AM_RETURN_IF_ERROR(norm(be, x, l.norm_self_g, l.norm_self_b, s.h.view()));
      in = s.h.view();
    }
    AM_RETURN_IF_ERROR(be.linear(l.self.q, in, s.q.view()));
    AM_RETURN_IF_ERROR(be.linear(l.self.k, in, s.k.view()));
    AM_RETURN_IF_ERROR(be.linear(l.self.v, in, s.v.view()));
    if (c.positions == PositionKind::kRope) {
      AM_RETURN_IF_ERROR(be.rope(s.q.view(), s.positions.data(), c.rope));
      RopeParams kp = c.rope;
      kp.heads = c.kv_heads;
      AM_RETURN_IF_ERROR(be.rope(s.k.view(), s.positions.data(), kp));
    }
    if (cache != nullptr) {
      // Append this step's keys and values at their positions in each sample's cache rows.
      Tensor& ck = cache->k[li];
      Tensor& cv = cache->v[li];
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t at = b * cache->max_len + offset;
        AM_RETURN_IF_ERROR(be.index_rows(s.k.view().row_range(b * q_len, q_len), step_rows.data(), q_len,
                                         ck.view().row_range(at, q_len)));
        AM_RETURN_IF_ERROR(be.index_rows(s.v.view().row_range(b * q_len, q_len), step_rows.data(), q_len,
                                         cv.view().row_range(at, q_len)));
      }
      self.k = ck.view();
      self.v = cv.view();
    } else {
      self.k = s.k.view();
      self.v = s.v.view();
    }
    if (c.positions == PositionKind::kRelativeBias) {
      AM_RETURN_IF_ERROR(be.attention_bias(self, s.bias.view()));
    } else {
      AM_RETURN_IF_ERROR(be.attention(self));
    }
    AM_RETURN_IF_ERROR(be.linear(l.self.o, s.ctx.view(), s.branch.view()));
    AM_RETURN_IF_ERROR(be.add(x, s.branch.view()));
    if (!c.pre_norm) AM_RETURN_IF_ERROR(norm(be, x, l.norm_self_g, l.norm_self_b, x));

    // Cross-attention over the precomputed memory.
    if (c.cross) {
      in = x;
      if (c.pre_norm) {
        AM_RETURN_IF_ERROR(norm(be, x, l.norm_cross_g, l.norm_cross_b, s.h.view()));
        in = s.h.view();
      }
      AM_RETURN_IF_ERROR(be.linear(l.cross.q, in, s.q.view()));
      AttentionArgs cross = self;
      cross.k = cache->cross_k[li].view();
      cross.v = cache->cross_v[li].view();
      cross.kv_len = cache->src_len;
      cross.causal = false;
      cross.q_offset = 0;
      cross.key_mask = cache->src_mask;
      AM_RETURN_IF_ERROR(be.attention(cross));
      AM_RETURN_IF_ERROR(be.linear(l.cross.o, s.ctx.view(), s.branch.view()));
      AM_RETURN_IF_ERROR(be.add(x, s.branch.view()));
      if (!c.pre_norm) AM_RETURN_IF_ERROR(norm(be, x, l.norm_cross_g, l.norm_cross_b, x));
    }

    // Feed-forward (dense or experts).
    in = x;
    if (c.pre_norm) {
      AM_RETURN_IF_ERROR(norm(be, x, l.norm_ffn_g, l.norm_ffn_b, s.h.view()));
      in = s.h.view();
    }
    if (l.moe) {
      AM_RETURN_IF_ERROR(run_moe(be, l, in, s.branch.view(), s));
    } else {
      AM_RETURN_IF_ERROR(run_ffn(be, l.ffn, in, s.branch.view(), s));
    }
    AM_RETURN_IF_ERROR(be.add(x, s.branch.view()));
    if (!c.pre_norm) AM_RETURN_IF_ERROR(norm(be, x, l.norm_ffn_g, l.norm_ffn_b, x));
  }
  if (c.final_norm) AM_RETURN_IF_ERROR(norm(be, x, final_g_, final_b_, x));
  return Status::Ok();
}

}  // namespace am::kernels
