// DETR (variant "detr" of the vision family): a ResNet-50-style backbone with BatchNorm folded
// into each convolution's weight and bias (inference form: DETR's frozen BatchNorm is an affine
// map per channel), then DETR's transformer as DetrForObjectDetection runs it.
//
// Keys: image_size, channels (default 3), backbone_width (stem width, 64), backbone_depths
// (array, ResNet-50: [3, 4, 6, 3]), backbone_expansion (4), hidden (d_model 256),
// encoder_layers, decoder_layers, heads, intermediate, num_queries, num_classes, norm_eps
// (default 1e-5), activation (default "relu").
// Backbone: conv7x7/2 + ReLU, maxpool 3x3/2, stages of bottlenecks (1x1, 3x3 with the stage
// stride, 1x1 expand; 1x1 projection shortcut on each stage's first block; ReLU after the sum).
// Transformer: 1x1 input projection to `hidden`; the fixed 2-D sine position embedding of the
// feature map is added to the queries and keys (not the values) of every encoder self-attention
// and to the keys of every decoder cross-attention; post-LN encoder; post-LN decoder whose input
// is zeros, with the learned object queries added to its self-attention queries/keys and to its
// cross-attention queries in every layer; final LayerNorm. Heads: class logits (num_classes + 1
// "no object") and a 3-layer ReLU MLP box head with sigmoid. Output: [batch*num_queries,
// num_classes + 1 + 4] (logits then cx, cy, w, h), logits=false because the row mixes logits and
// boxes.
// weights_path: a DetrForObjectDetection checkpoint with timm's ResNet backbone
// (model.backbone.conv_encoder.model.{conv1, bn1, layerS.B.{conv1..3, bn1..3, downsample.0/1}}
// with BatchNorm running statistics folded on load at eps 1e-5, model.input_projection,
// model.query_position_embeddings, model.encoder.layers.N.{self_attn.{q,k,v,out}_proj,
// self_attn_layer_norm, fc1, fc2, final_layer_norm}, model.decoder.layers.N.{... encoder_attn.*,
// encoder_attn_layer_norm}, model.decoder.layernorm, class_labels_classifier,
// bbox_predictor.layers.{0,1,2}).
// Initialisation (seeded): convolutions He-normal (fan-in), the last 1x1 of every bottleneck
// scaled by 1/sqrt(total blocks) so the residual stream stays bounded without BatchNorm
// statistics; transformer linear layers N(0, 0.02) (xavier-like scale at d_model 256).
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "kernels/models/transformer_stack.h"
#include "kernels/models/vision.h"
#include "kernels/models/vision_tower.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x44455452ull;  // "DETR"
constexpr uint64_t kPixelStream = 0x44455450ull;
constexpr float kInitStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kSineTemperature = 10000.0f;
constexpr int64_t kStemKernel = 7, kStemStride = 2, kPoolKernel = 3, kPoolStride = 2;
constexpr float kFrozenBatchNormEps = 1e-5f;  // DetrFrozenBatchNorm2d

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
  y = be.tensor(Shape{batch * out_side * out_side, c.out});
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

struct Attn {
  Linear q, k, v, o;
};

struct EncoderLayer {
  Attn self;
  Linear up, down;
  Tensor n1g, n1b, n2g, n2b;  // self_attn_layer_norm, final_layer_norm
};

struct DecoderLayer {
  Attn self, cross;
  Linear up, down;
  Tensor n1g, n1b, n2g, n2b, n3g, n3b;  // self_attn_, encoder_attn_, final_layer_norm
};

struct Detr {
  int64_t image = 0, channels = 3, hidden = 0, heads = 0, queries = 0, classes = 0, inter = 0;
  float eps = 1e-5f;
  Activation act = Activation::kRelu;
  Conv stem;
  std::vector<Bottleneck> blocks;
  Conv input_proj;
  std::vector<EncoderLayer> encoder;
  Tensor query_embed;  // [queries, hidden]
  std::vector<DecoderLayer> decoder;
  Tensor dec_norm_g, dec_norm_b;
  Linear class_head, box1, box2, box3;
  // The sine position embedding of the backbone's feature map, computed once: the backends may
  // cache a gather table by address (backend.h), so it lives as long as the graph.
  Tensor positions;
};

// DetrAttention: q from q_in, k from k_in, v from v_in (the position embeddings enter q_in and
// k_in only), scaled dot product, output projection into `out`.
Status attend(Backend& be, const Attn& a, ConstTensorView q_in, ConstTensorView k_in, ConstTensorView v_in,
              int64_t batch, int64_t q_len, int64_t kv_len, int64_t heads, TensorView out) {
  const int64_t h = a.q.out_features();
  Tensor tq = be.tensor(Shape{q_in.rows(), h}), tk = be.tensor(Shape{k_in.rows(), h});
  Tensor tv = be.tensor(Shape{v_in.rows(), h}), ctx = be.tensor(Shape{q_in.rows(), h});
  AM_RETURN_IF_ERROR(be.linear(a.q, q_in, tq.view()));
  AM_RETURN_IF_ERROR(be.linear(a.k, k_in, tk.view()));
  AM_RETURN_IF_ERROR(be.linear(a.v, v_in, tv.view()));
  AttentionArgs args;
  args.q = tq.view();
  args.k = tk.view();
  args.v = tv.view();
  args.out = ctx.view();
  args.batch = batch;
  args.q_len = q_len;
  args.kv_len = kv_len;
  args.heads = args.kv_heads = heads;
  args.head_dim = h / heads;
  AM_RETURN_IF_ERROR(be.attention(args));
  return be.linear(a.o, ctx.view(), out);
}

// y = x + table[row % period] for every row (a position embedding broadcast over the batch).
Status with_positions(Backend& be, ConstTensorView x, ConstTensorView table, int64_t period, Tensor& y) {
  y = be.tensor(x.shape);
  AM_RETURN_IF_ERROR(copy_rows(be, x, y.view(), 0));
  std::vector<int32_t> ids(static_cast<std::size_t>(x.rows()));
  for (int64_t i = 0; i < x.rows(); ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % period);
  return be.gather_rows(table, ids.data(), x.rows(), y.view(), true);
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
    for (Op op : {Op::kConv2d, Op::kActivation, Op::kPool2d, Op::kAdd, Op::kGatherRows, Op::kAttention, Op::kLayerNorm})
      require(ops, op);
    for (WeightFormat w : {f_.attention, f_.feed_forward, f_.output}) require(ops, Op::kLinear, w);
    return ops;
  }
  std::size_t weights_bytes() const override {
    std::size_t t = m_.stem.bytes() + m_.input_proj.bytes() + m_.query_embed.bytes() + m_.dec_norm_g.bytes() * 2 +
                    m_.class_head.weight_bytes() + m_.box1.weight_bytes() + m_.box2.weight_bytes() +
                    m_.box3.weight_bytes();
    for (const Bottleneck& b : m_.blocks) t += b.c1.bytes() + b.c2.bytes() + b.c3.bytes() + b.shortcut.bytes();
    for (const EncoderLayer& l : m_.encoder) {
      for (const Linear* x : {&l.self.q, &l.self.k, &l.self.v, &l.self.o, &l.up, &l.down}) t += x->weight_bytes();
      t += 4 * l.n1g.bytes();
    }
    for (const DecoderLayer& l : m_.decoder) {
      for (const Linear* x : {&l.self.q, &l.self.k, &l.self.v, &l.self.o, &l.cross.q, &l.cross.k, &l.cross.v,
                              &l.cross.o, &l.up, &l.down})
        t += x->weight_bytes();
      t += 6 * l.n1g.bytes();
    }
    return t;
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return 0; }

  Result<GraphOutput> forward(Backend& be) const override {
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
    Tensor p = be.tensor(Shape{batch_ * pooled * pooled, x.cols()});
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
    const int64_t tokens = side * side, h = m_.hidden;
    if (m_.positions.rows() != tokens) {
      return internal_error("vision: DETR feature map size differs from the built one");
    }
    const ConstTensorView pos = m_.positions.view();
    // Encoder: q = k = src + pos, v = src; post-LN.
    Tensor qk, branch = be.tensor(Shape{mem.rows(), h}), mid = be.tensor(Shape{mem.rows(), m_.inter});
    for (const EncoderLayer& l : m_.encoder) {
      AM_RETURN_IF_ERROR(with_positions(be, mem.view(), pos, tokens, qk));
      AM_RETURN_IF_ERROR(
          attend(be, l.self, qk.view(), qk.view(), mem.view(), batch_, tokens, tokens, m_.heads, branch.view()));
      AM_RETURN_IF_ERROR(be.add(mem.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(mem.view(), l.n1g.data(), l.n1b.data(), m_.eps, mem.view()));
      AM_RETURN_IF_ERROR(ffn(be, l.up, l.down, mem.view(), mid, branch));
      AM_RETURN_IF_ERROR(be.add(mem.view(), branch.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(mem.view(), l.n2g.data(), l.n2b.data(), m_.eps, mem.view()));
    }
    // Decoder: the target starts at zero; the object queries are its position embedding.
    const int64_t q = m_.queries, rows = batch_ * q;
    Tensor t = be.tensor(Shape{rows, h}), tq, mem_k, tb = be.tensor(Shape{rows, h});
    Tensor tmid = be.tensor(Shape{rows, m_.inter});
    AM_RETURN_IF_ERROR(with_positions(be, mem.view(), pos, tokens, mem_k));
    for (const DecoderLayer& l : m_.decoder) {
      AM_RETURN_IF_ERROR(with_positions(be, t.view(), m_.query_embed.view(), q, tq));
      AM_RETURN_IF_ERROR(attend(be, l.self, tq.view(), tq.view(), t.view(), batch_, q, q, m_.heads, tb.view()));
      AM_RETURN_IF_ERROR(be.add(t.view(), tb.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(t.view(), l.n1g.data(), l.n1b.data(), m_.eps, t.view()));
      AM_RETURN_IF_ERROR(with_positions(be, t.view(), m_.query_embed.view(), q, tq));
      AM_RETURN_IF_ERROR(attend(be, l.cross, tq.view(), mem_k.view(), mem.view(), batch_, q, tokens, m_.heads, tb.view()));
      AM_RETURN_IF_ERROR(be.add(t.view(), tb.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(t.view(), l.n2g.data(), l.n2b.data(), m_.eps, t.view()));
      AM_RETURN_IF_ERROR(ffn(be, l.up, l.down, t.view(), tmid, tb));
      AM_RETURN_IF_ERROR(be.add(t.view(), tb.view()));
      AM_RETURN_IF_ERROR(be.layer_norm(t.view(), l.n3g.data(), l.n3b.data(), m_.eps, t.view()));
    }
    AM_RETURN_IF_ERROR(be.layer_norm(t.view(), m_.dec_norm_g.data(), m_.dec_norm_b.data(), m_.eps, t.view()));
    Tensor cls = be.tensor(Shape{rows, m_.classes + 1}), b1 = be.tensor(Shape{rows, h});
    Tensor b2 = be.tensor(Shape{rows, h}), box = be.tensor(Shape{rows, 4});
    AM_RETURN_IF_ERROR(be.linear(m_.class_head, t.view(), cls.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.box1, t.view(), b1.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, b1.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.box2, b1.view(), b2.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, b2.view()));
    AM_RETURN_IF_ERROR(be.linear(m_.box3, b2.view(), box.view()));
    AM_RETURN_IF_ERROR(be.activation(Activation::kSigmoid, box.view()));
    // The two heads' outputs side by side: assembled on the host (ops work on whole rows).
    AM_RETURN_IF_ERROR(be.to_host(cls.view()));
    AM_RETURN_IF_ERROR(be.to_host(box.view()));
    GraphOutput out;
    out.output = Tensor(Shape{rows, m_.classes + 1 + 4});
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(out.output.row(r), cls.row(r), static_cast<std::size_t>(m_.classes + 1) * sizeof(float));
      std::memcpy(out.output.row(r) + m_.classes + 1, box.row(r), 4 * sizeof(float));
    }
    return out;
  }

 private:
  Status ffn(Backend& be, const Linear& up, const Linear& down, ConstTensorView x, Tensor& mid, Tensor& out) const {
    AM_RETURN_IF_ERROR(be.linear(up, x, mid.view()));
    AM_RETURN_IF_ERROR(be.activation(m_.act, mid.view()));
    return be.linear(down, mid.view(), out.view());
  }

  Detr m_;
  FormatPlan f_;
  Tensor pixels_;
  int64_t batch_;
};

// ---- checkpoints --------------------------------------------------------------------------------

// A timm conv + frozen BatchNorm pair folded into one biased convolution:
// w' = w * gamma / sqrt(var + eps) per output channel, b' = beta - mean * gamma / sqrt(var + eps).
Status read_conv_bn(const Checkpoint& file, const std::string& conv, const std::string& bn, Conv& c) {
  AM_ASSIGN_OR_RETURN(Tensor w, file.read_f32(conv + ".weight", Shape{c.out, c.in, c.k, c.k}));
  Tensor gamma, beta, mean, var;
  AM_ASSIGN_OR_RETURN(gamma, file.read_f32(bn + ".weight", Shape{c.out}));
  AM_ASSIGN_OR_RETURN(beta, file.read_f32(bn + ".bias", Shape{c.out}));
  AM_ASSIGN_OR_RETURN(mean, file.read_f32(bn + ".running_mean", Shape{c.out}));
  AM_ASSIGN_OR_RETURN(var, file.read_f32(bn + ".running_var", Shape{c.out}));
  const int64_t per_out = c.in * c.k * c.k;
  for (int64_t o = 0; o < c.out; ++o) {
    const double scale = gamma.data()[o] / std::sqrt(static_cast<double>(var.data()[o]) + kFrozenBatchNormEps);
    for (int64_t j = 0; j < per_out; ++j) w.data()[o * per_out + j] = static_cast<float>(w.data()[o * per_out + j] * scale);
    c.b.data()[o] = static_cast<float>(beta.data()[o] - mean.data()[o] * scale);
  }
  c.w = std::move(w);
  return Status::Ok();
}

Status read_linear(const Checkpoint& file, const std::string& name, int64_t in, int64_t out, WeightFormat fmt,
                   const ExecContext& ctx, Linear& dst) {
  AM_ASSIGN_OR_RETURN(Tensor w, file.read_f32(name + ".weight", Shape{out, in}));
  AM_ASSIGN_OR_RETURN(Tensor b, file.read_f32(name + ".bias", Shape{out}));
  AM_ASSIGN_OR_RETURN(dst, linear_from_tensors("vision weights", name, std::move(w), std::move(b), in, out, true, fmt, ctx));
  return Status::Ok();
}

Status read_norm(const Checkpoint& file, const std::string& name, int64_t h, Tensor& g, Tensor& b) {
  AM_ASSIGN_OR_RETURN(g, file.read_f32(name + ".weight", Shape{h}));
  AM_ASSIGN_OR_RETURN(b, file.read_f32(name + ".bias", Shape{h}));
  return Status::Ok();
}

Status read_attn(const Checkpoint& file, const std::string& name, int64_t h, const FormatPlan& f,
                 const ExecContext& ctx, Attn& a) {
  AM_RETURN_IF_ERROR(read_linear(file, name + ".q_proj", h, h, f.attention, ctx, a.q));
  AM_RETURN_IF_ERROR(read_linear(file, name + ".k_proj", h, h, f.attention, ctx, a.k));
  AM_RETURN_IF_ERROR(read_linear(file, name + ".v_proj", h, h, f.attention, ctx, a.v));
  return read_linear(file, name + ".out_proj", h, h, f.attention, ctx, a.o);
}

// Replaces the seeded weights of `m` (whose shapes the config fixed) with a checkpoint's.
Status load_detr(const std::string& path, const std::vector<int64_t>& depths, const FormatPlan& f,
                 const ExecContext& ctx, Detr& m) {
  AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
  const std::string bb = "model.backbone.conv_encoder.model.";
  AM_RETURN_IF_ERROR(read_conv_bn(file, bb + "conv1", bb + "bn1", m.stem));
  std::size_t i = 0;
  for (std::size_t s = 0; s < depths.size(); ++s) {
    for (int64_t b = 0; b < depths[s]; ++b, ++i) {
      const std::string p = bb + "layer" + std::to_string(s + 1) + "." + std::to_string(b) + ".";
      Bottleneck& k = m.blocks[i];
      AM_RETURN_IF_ERROR(read_conv_bn(file, p + "conv1", p + "bn1", k.c1));
      AM_RETURN_IF_ERROR(read_conv_bn(file, p + "conv2", p + "bn2", k.c2));
      AM_RETURN_IF_ERROR(read_conv_bn(file, p + "conv3", p + "bn3", k.c3));
      if (!k.shortcut.w.empty()) {
        AM_RETURN_IF_ERROR(read_conv_bn(file, p + "downsample.0", p + "downsample.1", k.shortcut));
      }
    }
  }
  const int64_t h = m.hidden;
  AM_ASSIGN_OR_RETURN(m.input_proj.w, file.read_f32("model.input_projection.weight", Shape{h, m.input_proj.in, 1, 1}));
  AM_ASSIGN_OR_RETURN(m.input_proj.b, file.read_f32("model.input_projection.bias", Shape{h}));
  AM_ASSIGN_OR_RETURN(m.query_embed, file.read_f32("model.query_position_embeddings.weight", Shape{m.queries, h}));
  for (std::size_t l = 0; l < m.encoder.size(); ++l) {
    const std::string p = "model.encoder.layers." + std::to_string(l) + ".";
    EncoderLayer& e = m.encoder[l];
    AM_RETURN_IF_ERROR(read_attn(file, p + "self_attn", h, f, ctx, e.self));
    AM_RETURN_IF_ERROR(read_norm(file, p + "self_attn_layer_norm", h, e.n1g, e.n1b));
    AM_RETURN_IF_ERROR(read_linear(file, p + "fc1", h, m.inter, f.feed_forward, ctx, e.up));
    AM_RETURN_IF_ERROR(read_linear(file, p + "fc2", m.inter, h, f.feed_forward, ctx, e.down));
    AM_RETURN_IF_ERROR(read_norm(file, p + "final_layer_norm", h, e.n2g, e.n2b));
  }
  for (std::size_t l = 0; l < m.decoder.size(); ++l) {
    const std::string p = "model.decoder.layers." + std::to_string(l) + ".";
    DecoderLayer& d = m.decoder[l];
    AM_RETURN_IF_ERROR(read_attn(file, p + "self_attn", h, f, ctx, d.self));
    AM_RETURN_IF_ERROR(read_norm(file, p + "self_attn_layer_norm", h, d.n1g, d.n1b));
    AM_RETURN_IF_ERROR(read_attn(file, p + "encoder_attn", h, f, ctx, d.cross));
    AM_RETURN_IF_ERROR(read_norm(file, p + "encoder_attn_layer_norm", h, d.n2g, d.n2b));
    AM_RETURN_IF_ERROR(read_linear(file, p + "fc1", h, m.inter, f.feed_forward, ctx, d.up));
    AM_RETURN_IF_ERROR(read_linear(file, p + "fc2", m.inter, h, f.feed_forward, ctx, d.down));
    AM_RETURN_IF_ERROR(read_norm(file, p + "final_layer_norm", h, d.n3g, d.n3b));
  }
  AM_RETURN_IF_ERROR(read_norm(file, "model.decoder.layernorm", h, m.dec_norm_g, m.dec_norm_b));
  AM_RETURN_IF_ERROR(read_linear(file, "class_labels_classifier", h, m.classes + 1, f.output, ctx, m.class_head));
  AM_RETURN_IF_ERROR(read_linear(file, "bbox_predictor.layers.0", h, h, f.output, ctx, m.box1));
  AM_RETURN_IF_ERROR(read_linear(file, "bbox_predictor.layers.1", h, h, f.output, ctx, m.box2));
  return read_linear(file, "bbox_predictor.layers.2", h, 4, f.output, ctx, m.box3);
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_detr_graph(const jobs::JobSpec& spec, Precision precision,
                                                     const ExecContext& ctx) {
  return build_detr_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_detr_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                        const ExecContext& ctx, const std::vector<float>* pixels) {
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
  AM_ASSIGN_OR_RETURN(m.inter, cfg.dim("intermediate"));
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
  const int64_t h = m.hidden, inter = m.inter;
  // Weight budget: backbone convolutions (f32) + transformer.
  std::size_t est = static_cast<std::size_t>(enc_layers) * (4 * linear_bytes(h, h, f.attention, true) +
                                                            linear_bytes(h, inter, f.feed_forward, true) +
                                                            linear_bytes(inter, h, f.feed_forward, true)) +
                    static_cast<std::size_t>(dec_layers) * (8 * linear_bytes(h, h, f.attention, true) +
                                                            linear_bytes(h, inter, f.feed_forward, true) +
                                                            linear_bytes(inter, h, f.feed_forward, true));
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
  m.input_proj = make_conv(src, in, h, 1, 1, std::sqrt(0.5f));
  auto attn = [&] {
    Attn a;
    for (Linear* x : {&a.q, &a.k, &a.v, &a.o}) *x = src.linear(h, h, kInitStd, true, 0.0f, f.attention);
    return a;
  };
  for (int64_t i = 0; i < enc_layers; ++i) {
    EncoderLayer l;
    l.self = attn();
    l.up = src.linear(h, inter, kInitStd, true, 0.0f, f.feed_forward);
    l.down = src.linear(inter, h, kInitStd, true, 0.0f, f.feed_forward);
    for (Tensor* g : {&l.n1g, &l.n2g}) *g = src.normal(Shape{h}, 1.0f, kNormNoiseStd);
    for (Tensor* b : {&l.n1b, &l.n2b}) *b = src.normal(Shape{h}, 0.0f, kNormNoiseStd);
    m.encoder.push_back(std::move(l));
  }
  m.query_embed = src.normal(Shape{m.queries, h}, 0.0f, 1.0f);
  for (int64_t i = 0; i < dec_layers; ++i) {
    DecoderLayer l;
    l.self = attn();
    l.cross = attn();
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
  m.positions = sine_positions(side, h);
  // model_config "weights_path" names a DetrForObjectDetection checkpoint: its values replace the
  // seeded ones drawn above (which fixed every shape).
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, family));
  if (checkpoint) AM_RETURN_IF_ERROR(load_detr(*checkpoint, depths, f, ctx, m));
  Tensor image;
  if (pixels) {
    if (static_cast<int64_t>(pixels->size()) != spec.batch * m.image * m.image * m.channels) {
      return invalid_argument(family + ": given pixels must hold batch*image_size^2*channels values");
    }
    image = Tensor(Shape{spec.batch * m.image * m.image, m.channels});
    std::copy(pixels->begin(), pixels->end(), image.data());
  } else {
    image = seeded_pixels(spec.batch, m.image, m.channels, spec.seed, kPixelStream, ctx);
  }
  return std::unique_ptr<ModelGraph>(std::make_unique<DetrGraph>(std::move(m), f, std::move(image), spec.batch));
}

}  // namespace am::kernels
