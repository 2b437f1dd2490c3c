// DETR (variant "detr" of the vision family): a ResNet-50-style backbone with BatchNorm folded
// into each convolution's weight and bias (inference form), then DETR's transformer.
//
// Keys: image_size, channels (default 3), backbone_width (stem width, 64), backbone_depths
// (array, ResNet-50: [3, 4, 6, 3]), backbone_expansion (4), hidden (d_model 256),
// encoder_layers, decoder_layers, heads, intermediate, num_queries, num_classes, norm_eps
// (default 1e-5), activation (default "relu").
// Backbone: conv7x7/2 + ReLU, maxpool 3x3/2, stages of bottlenecks (1x1, 3x3 with the stage
// stride, 1x1 expand; 1x1 projection shortcut on each stage's first block; ReLU after the sum).
// Transformer: 1x1 input projection to `hidden`, fixed 2-D sine position embedding added once
// to the flattened feature map (DETR adds it to queries and keys in every layer; adding it to
// the input is the documented simplification), post-LN encoder, post-LN decoder whose inputs are
// the learned object queries (DETR feeds zeros plus the query embedding at every layer), with
// bidirectional self-attention over queries and cross-attention to the encoder memory, final
// LayerNorm. Heads: class logits (num_classes + 1 "no object") and a 3-layer ReLU MLP box head
// with sigmoid. Output: [batch*num_queries, num_classes + 1 + 4] (logits then cx, cy, w, h),
// logits=false because the row mixes logits and boxes.
// Initialisation: convolutions He-normal (fan-in), the last 1x1 of every bottleneck scaled by
// 1/sqrt(total blocks) so the residual stream stays bounded without BatchNorm statistics;
// transformer linear layers N(0, 0.02) (xavier-like scale at d_model 256).
#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/models/transformer_stack.h"
#include "kernels/models/vision.h"
#include "kernels/models/vision_tower.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x44455452ull;  // "DETR"
constexpr uint64_t kPixelStream = 0x44455450ull;
constexpr float kInitStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kSineTemperature = 10000.0f;
constexpr int64_t kStemKernel = 7, kStemStride = 2, kPoolKernel = 3, kPoolStride = 2;

struct Conv {
  Tensor w, b;
  int64_t in = 0, out = 0, k = 1, stride = 1, pad = 0;
  std::size_t bytes() const { return w.bytes() + b.bytes(); }
};

Conv make_conv(SeededWeights& src, int64_t in, int64_t out, int64_t k, int64_t stride, float gain = 1.0f) {
  Conv c;
  c.in = in;
  c.out = out;
  c.k = k;
  c.stride = stride;
  c.pad = k / 2;
  c.w = src.normal(Shape{out, in, k, k}, 0.0f, gain * std::sqrt(2.0f / static_cast<float>(in * k * k)));
  c.b = src.normal(Shape{out}, 0.0f, kInitStd);  // folded BatchNorm shift
  return c;
}

Status conv(Backend& be, const Conv& c, ConstTensorView x, int64_t batch, int64_t& side, Tensor& y) {
  const int64_t out_side = conv_out_size(side, c.k, c.stride, c.pad);
  y = Tensor(Shape{batch * out_side * out_side, c.out});
  Conv2dArgs a;
  a.x = x;
  a.y = y.view();
  a.weight = c.w.data();
  a.bias = c.b.data();
  a.batch = batch;
  a.height = a.width = side;
  a.in_channels = c.in;
  a.out_channels = c.out;
  a.kernel_h = a.kernel_w = c.k;
  a.stride = c.stride;
  a.padding = c.pad;
  side = out_side;
  return be.conv2d(a);
}

struct Bottleneck {
  Conv c1, c2, c3, shortcut;  // shortcut.w empty when the identity is used
};

struct DecoderLayer {
  Linear sq, sk, sv, so, cq, ck, cv, co, up, down;
  Tensor n1g, n1b, n2g, n2b, n3g, n3b;
};

struct Detr {
  int64_t image = 0, channels = 3, hidden = 0, heads = 0, queries = 0, classes = 0;
  float eps = 1e-5f;
  Activation act = Activation::kRelu;
  Conv stem;
  std::vector<Bottleneck> blocks;
  Conv input_proj;
  TransformerStack encoder;
  Tensor query_embed;
  std::vector<DecoderLayer> decoder;
  Tensor dec_norm_g, dec_norm_b;
  Linear class_head, box1, box2, box3;
};

Status attend(Backend& be, const Linear& q, const Linear& k, const Linear& v, const Linear& o, ConstTensorView x,
              ConstTensorView mem, int64_t batch, int64_t q_len, int64_t kv_len, int64_t heads, TensorView out) {
  const int64_t h = q.out_features();
  Tensor tq(Shape{x.rows(), h}), tk(Shape{mem.rows(), h}), tv(Shape{mem.rows(), h}), ctx(Shape{x.rows(), h});
  AM_RETURN_IF_ERROR(be.linear(q, x, tq.view()));
  AM_RETURN_IF_ERROR(be.linear(k, mem, tk.view()));
  AM_RETURN_IF_ERROR(be.linear(v, mem, tv.view()));
  AttentionArgs a;
  a.q = tq.view();
  a.k = tk.view();
  a.v = tv.view();
  a.out = ctx.view();
  a.batch = batch;
  a.q_len = q_len;
  a.kv_len = kv_len;
  a.heads = a.kv_heads = heads;
  a.head_dim = h / heads;
  AM_RETURN_IF_ERROR(be.attention(a));
  return be.linear(o, ctx.view(), out);
}

// DETR's PositionEmbeddingSine (normalised, scale 2*pi): y features then x features, each
// interleaving sin/cos over hidden/4 frequencies.
Tensor sine_positions(int64_t side, int64_t hidden) {
  const int64_t feats = hidden / 2;
  Tensor t(Shape{side * side, hidden});
  const double scale = 2.0 * M_PI, eps = 1e-6;
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x) {
      float* row = t.row(y * side + x);
      const double ey = (y + 1) / (side + eps) * scale, ex = (x + 1) / (side + eps) * scale;
      for (int64_t i = 0; i < feats; ++i) {
        const double dim_t = std::pow(kSineTemperature, 2.0 * static_cast<double>(i / 2) / static_cast<double>(feats));
        row[i] = static_cast<float>(i % 2 == 0 ? std::sin(ey / dim_t) : std::cos(ey / dim_t));
        row[feats + i] = static_cast<float>(i % 2 == 0 ? std::sin(ex / dim_t) : std::cos(ex / dim_t));
      }
    }
  return t;
}

class DetrGraph final : public ModelGraph {
 public:
  DetrGraph(Detr m, FormatPlan f, Tensor pixels, int64_t batch)
      : m_(std::move(m)), f_(f), pixels_(std::move(pixels)), batch_(batch) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    m_.encoder.add_required_ops(ops);
    for (Op op : {Op::kConv2d, Op::kActivation, Op::kPool2d, Op::kAdd, Op::kGatherRows, Op::kIndexRows, Op::kAttention,
                  Op::kLayerNorm})
      require(ops, op);
    for (WeightFormat w : {f_.attention, f_.feed_forward, f_.output}) require(ops, Op::kLinear, w);
    return ops;
  }
  std::size_t weights_bytes() const override {
    std::size_t t = m_.stem.bytes() + m_.input_proj.bytes() + m_.encoder.weights_bytes() + m_.query_embed.bytes() +
                    m_.dec_norm_g.bytes() * 2 + m_.class_head.weight_bytes() + m_.box1.weight_bytes() +
                    m_.box2.weight_bytes() + m_.box3.weight_bytes();
    for (const Bottleneck& b : m_.blocks) t += b.c1.bytes() + b.c2.bytes() + b.c3.bytes() + b.shortcut.bytes();
    for (const DecoderLayer& l : m_.decoder) {
      for (const Linear* x : {&l.sq, &l.sk, &l.sv, &l.so, &l.cq, &l.ck, &l.cv, &l.co, &l.up, &l.down}) t += x->weight_bytes();
      t += 6 * l.n1g.bytes();
    }
    return t;
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return 0; }

  Result<GraphOutput> run(Backend& be) const override {
    int64_t side = m_.image;
    Tensor x;
    AM_RETURN_IF_ERROR(conv(be, m_.stem, pixels_.view(), batch_, side, x));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, x.view()));
    Pool2dArgs pool;
    pool.x = x.view();
    pool.kind = PoolKind::kMax;
    pool.batch = batch_;
    pool.height = pool.width = side;
    pool.kernel = kPoolKernel;
    pool.stride = kPoolStride;
    pool.padding = 1;
    const int64_t pooled = conv_out_size(side, kPoolKernel, kPoolStride, 1);
    Tensor p(Shape{batch_ * pooled * pooled, x.cols()});
    pool.y = p.view();
    AM_RETURN_IF_ERROR(be.pool2d(pool));
    x = std::move(p);
    side = pooled;
    for (const Bottleneck& b : m_.blocks) {
      int64_t s = side;
      Tensor h1, h2, h3;
      AM_RETURN_IF_ERROR(conv(be, b.c1, x.view(), batch_, s, h1));
      AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, h1.view()));
      AM_RETURN_IF_ERROR(conv(be, b.c2, h1.view(), batch_, s, h2));
      AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, h2.view()));
      AM_RETURN_IF_ERROR(conv(be, b.c3, h2.view(), batch_, s, h3));
      if (b.shortcut.w.empty()) {
        AM_RETURN_IF_ERROR(be.add(h3.view(), x.view()));
      } else {
        int64_t ss = side;
        Tensor sc;
        AM_RETURN_IF_ERROR(conv(be, b.shortcut, x.view(), batch_, ss, sc));
        AM_RETURN_IF_ERROR(be.add(h3.view(), sc.view()));
      }
      AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, h3.view()));
      x = std::move(h3);
      side = s;
    }
    Tensor mem;
    AM_RETURN_IF_ERROR(conv(be, m_.input_proj, x.view(), batch_, side, mem));
    const int64_t tokens = side * side;
    Tensor pos = sine_positions(side, m_.hidden);
    std::vector<int32_t> ids(static_cast<std::size_t>(batch_ * tokens));
    for (int64_t i = 0; i < batch_ * tokens; ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % tokens);
    // index_rows + add, not gather_rows: `pos` is computed per run, and a gather table is a
    // weight that device backends cache by address (backend.h).
    Tensor pos_rows(Shape{batch_ * tokens, m_.hidden});
    AM_RETURN_IF_ERROR(be.index_rows(pos.view(), ids.data(), batch_ * tokens, pos_rows.view()));
    AM_RETURN_IF_ERROR(be.add(mem.view(), pos_rows.view()));
    AM_RETURN_IF_ERROR(m_.encoder.forward(be, mem.view(), batch_, tokens, 0, nullptr, nullptr));

    const int64_t q = m_.queries, rows = batch_ * q, h = m_.hidden;
    Tensor t(Shape{rows, h}), branch(Shape{rows, h});
    std::vector<int32_t> qids(static_cast<std::size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) qids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % q);
    AM_RETURN_IF_ERROR(be.gather_rows(m_.query_embed.view(), qids.data(), rows, t.view(), false));
    for (const DecoderLayer& l : m_.decoder) {
      AM_RETURN_IF_ERROR(attend(be, l.sq, l.sk, l.sv, l.so, t.view(), t.view(), batch_, q, q, m_.heads, branch.view()));
      AM_RETURN_IF_ERROR(be.add(t.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(t.view(), l.n1g.data(), l.n1b.data(), m_.eps, t.view()));
      AM_RETURN_IF_ERROR(attend(be, l.cq, l.ck, l.cv, l.co, t.view(), mem.view(), batch_, q, tokens, m_.heads, branch.view()));
      AM_RETURN_IF_ERROR(be.add(t.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(t.view(), l.n2g.data(), l.n2b.data(), m_.eps, t.view()));
      Tensor mid(Shape{rows, l.up.out_features()});
      AM_RETURN_IF_ERROR(be.linear(l.up, t.view(), mid.view()));
      AM_RETURN_IF_ERROR(be.activation(m_.act, mid.view()));
      AM_RETURN_IF_ERROR(be.linear(l.down, mid.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.add(t.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(t.view(), l.n3g.data(), l.n3b.data(), m_.eps, t.view()));
    }
    AM_RETURN_IF_ERROR(be.layer_norm(t.view(), m_.dec_norm_g.data(), m_.dec_norm_b.data(), m_.eps, t.view()));
    Tensor cls(Shape{rows, m_.classes + 1}), b1(Shape{rows, h}), b2(Shape{rows, h}), box(Shape{rows, 4});
    AM_RETURN_IF_ERROR(be.linear(m_.class_head, t.view(), cls.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.box1, t.view(), b1.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, b1.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.box2, b1.view(), b2.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, b2.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.box3, b2.view(), box.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kSigmoid, box.view()));
    GraphOutput out;
    out.output = Tensor(Shape{rows, m_.classes + 1 + 4});
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(out.output.row(r), cls.row(r), static_cast<std::size_t>(m_.classes + 1) * sizeof(float));
      std::memcpy(out.output.row(r) + m_.classes + 1, box.row(r), 4 * sizeof(float));
    }
    return out;
  }

 private:
  Detr m_;
  FormatPlan f_;
  Tensor pixels_;
  int64_t batch_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_detr_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx) {
  const std::string family = "vision";
  ConfigReader cfg(spec.model_config, family);
  Detr m;
  AM_ASSIGN_OR_RETURN(m.image, cfg.dim("image_size"));
  AM_ASSIGN_OR_RETURN(m.channels, cfg.dim("channels", int64_t{3}));
  AM_ASSIGN_OR_RETURN(int64_t width, cfg.dim("backbone_width"));
  AM_ASSIGN_OR_RETURN(int64_t expansion, cfg.dim("backbone_expansion"));
  AM_ASSIGN_OR_RETURN(m.hidden, cfg.dim("hidden"));
  AM_ASSIGN_OR_RETURN(int64_t enc_layers, cfg.dim("encoder_layers"));
  AM_ASSIGN_OR_RETURN(int64_t dec_layers, cfg.dim("decoder_layers"));
  AM_ASSIGN_OR_RETURN(m.heads, cfg.dim("heads"));
  AM_ASSIGN_OR_RETURN(int64_t inter, cfg.dim("intermediate"));
  AM_ASSIGN_OR_RETURN(m.queries, cfg.dim("num_queries"));
  AM_ASSIGN_OR_RETURN(m.classes, cfg.dim("num_classes"));
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-30, 1.0));
  m.eps = static_cast<float>(eps);
  AM_ASSIGN_OR_RETURN(std::string act, cfg.text("activation", "relu"));
  AM_ASSIGN_OR_RETURN(m.act, activation_from_name(act));
  const nlohmann::json& doc = spec.model_config;
  if (!doc.contains("backbone_depths") || !doc.at("backbone_depths").is_array() || doc.at("backbone_depths").empty()) {
    return cfg.error("'backbone_depths' must be a non-empty array of positive integers");
  }
  std::vector<int64_t> depths;
  for (const auto& e : doc.at("backbone_depths")) {
    if (!e.is_number_integer() || e.get<int64_t>() < 1) return cfg.error("'backbone_depths' must hold positive integers");
    depths.push_back(e.get<int64_t>());
  }
  if (m.hidden % m.heads != 0) return cfg.error("hidden is not a multiple of heads");
  if (m.hidden % 4 != 0) return cfg.error("hidden must be a multiple of 4 (2-D sine positions)");
  int64_t side = conv_out_size(m.image, kStemKernel, kStemStride, kStemKernel / 2);
  side = conv_out_size(side, kPoolKernel, kPoolStride, 1);
  for (std::size_t i = 1; i < depths.size(); ++i) side = conv_out_size(side, 3, 2, 1);
  if (side < 1) return cfg.error("image_size " + std::to_string(m.image) + " is too small for the backbone");

  const FormatPlan f = format_plan_for(precision);
  StackConfig ec;
  ec.family = family;
  ec.layers = enc_layers;
  ec.hidden = m.hidden;
  ec.heads = ec.kv_heads = m.heads;
  ec.head_dim = m.hidden / m.heads;
  ec.intermediate = inter;
  ec.norm = NormKind::kLayer;
  ec.eps = m.eps;
  ec.pre_norm = false;
  ec.final_norm = false;
  ec.ffn = FfnKind::kMlp;
  ec.activation = m.act;
  ec.q_bias = ec.k_bias = ec.v_bias = ec.o_bias = ec.ffn_bias = true;
  // Weight budget: backbone convolutions (f32) + transformer.
  std::size_t est = TransformerStack::estimate_bytes(ec, f) +
                    static_cast<std::size_t>(dec_layers) * (8 * linear_bytes(m.hidden, m.hidden, f.attention, true) +
                                                            linear_bytes(m.hidden, inter, f.feed_forward, true) +
                                                            linear_bytes(inter, m.hidden, f.feed_forward, true));
  {
    int64_t in = width, w = width;
    for (int64_t d : depths) {
      const int64_t out = w * expansion;
      est += static_cast<std::size_t>(d) * static_cast<std::size_t>(out * w + 9 * w * w + w * out) * 4 +
             static_cast<std::size_t>(in * out) * 4;
      in = out;
      w *= 2;
    }
  }
  AM_RETURN_IF_ERROR(check_weight_budget(family, est));

  SeededWeights src(spec.seed, kWeightStream, ctx);
  m.stem = make_conv(src, m.channels, width, kStemKernel, kStemStride);
  int64_t total_blocks = 0;
  for (int64_t d : depths) total_blocks += d;
  const float residual_gain = 1.0f / std::sqrt(static_cast<float>(total_blocks));
  int64_t in = width, w = width;
  for (std::size_t s = 0; s < depths.size(); ++s) {
    const int64_t out = w * expansion;
    for (int64_t i = 0; i < depths[s]; ++i) {
      const int64_t stride = (s > 0 && i == 0) ? 2 : 1;
      Bottleneck b;
      b.c1 = make_conv(src, in, w, 1, 1);
      b.c2 = make_conv(src, w, w, 3, stride);
      b.c3 = make_conv(src, w, out, 1, 1, residual_gain);
      if (i == 0) b.shortcut = make_conv(src, in, out, 1, stride, residual_gain);
      m.blocks.push_back(std::move(b));
      in = out;
    }
    w *= 2;
  }
  m.input_proj = make_conv(src, in, m.hidden, 1, 1, std::sqrt(0.5f));
  AM_ASSIGN_OR_RETURN(m.encoder, TransformerStack::create(ec, f, src));
  m.query_embed = src.normal(Shape{m.queries, m.hidden}, 0.0f, 1.0f);
  const int64_t h = m.hidden;
  for (int64_t i = 0; i < dec_layers; ++i) {
    DecoderLayer l;
    for (Linear* x : {&l.sq, &l.sk, &l.sv, &l.so, &l.cq, &l.ck, &l.cv, &l.co}) *x = src.linear(h, h, kInitStd, true, 0.0f, f.attention);
    l.up = src.linear(h, inter, kInitStd, true, 0.0f, f.feed_forward);
    l.down = src.linear(inter, h, kInitStd, true, 0.0f, f.feed_forward);
    for (Tensor* g : {&l.n1g, &l.n2g, &l.n3g}) *g = src.normal(Shape{h}, 1.0f, kNormNoiseStd);
    for (Tensor* b : {&l.n1b, &l.n2b, &l.n3b}) *b = src.normal(Shape{h}, 0.0f, kNormNoiseStd);
    m.decoder.push_back(std::move(l));
  }
  m.dec_norm_g = src.normal(Shape{h}, 1.0f, kNormNoiseStd);
  m.dec_norm_b = src.normal(Shape{h}, 0.0f, kNormNoiseStd);
  m.class_head = src.linear(h, m.classes + 1, 1.0f / std::sqrt(static_cast<float>(h)), true, 0.0f, f.output);
  m.box1 = src.linear(h, h, 1.0f / std::sqrt(static_cast<float>(h)), true, 0.0f, f.output);
  m.box2 = src.linear(h, h, 1.0f / std::sqrt(static_cast<float>(h)), true, 0.0f, f.output);
  m.box3 = src.linear(h, 4, 1.0f / std::sqrt(static_cast<float>(h)), true, 0.0f, f.output);
  Tensor pixels = seeded_pixels(spec.batch, m.image, m.channels, spec.seed, kPixelStream, ctx);
  return std::unique_ptr<ModelGraph>(std::make_unique<DetrGraph>(std::move(m), f, std::move(pixels), spec.batch));
}

}  // namespace am::kernels
