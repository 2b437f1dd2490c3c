#include "kernels/models/diffusion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/models/transformer_stack.h"
#include "kernels/models/vision_tower.h"
#include "kernels/rng.h"
#include "kernels/weights/checkpoint.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/linear_tensors.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x554e4554ull;  // "UNET"
constexpr uint64_t kLatentStream = 0x554e454cull;
constexpr uint64_t kTextStream = 0x554e4558ull;
constexpr uint64_t kUncondTextStream = 0x554e4555ull;  // the empty prompt's encoder states
// guidance_scale read as "absent": one conditional UNet pass per step.
constexpr double kNoGuidance = -1.0;
constexpr double kMaxGuidance = 100.0;
constexpr float kLinearStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kMaxPeriod = 10000.0f;  // sinusoidal timestep embedding
constexpr int64_t kGegluMult = 4;       // feed-forward inner width = 4 * channels
constexpr float kTransformerGroupNormEps = 1e-6f;

struct UnetConfig {
  int64_t sample = 0, in_ch = 0, out_ch = 0, layers = 0, attn_levels = 0, heads = 0, ctx_dim = 0, text_len = 0,
          groups = 0, steps = 0, train_steps = 1000;
  std::vector<int64_t> channels;
  float eps = 1e-5f, beta_start = 0.00085f, beta_end = 0.012f;
  double guidance = kNoGuidance;  // >= 0: classifier-free guidance at this scale
  int64_t steps_offset = 0;       // DDIMScheduler's steps_offset (SD: 1)
  bool alpha_to_one = true;       // set_alpha_to_one: the last step's alpha_prod_prev is 1, else alphas_cumprod[0]
  bool guided() const { return guidance >= 0.0; }
};

struct Conv {
  Tensor w, b;
  int64_t in = 0, out = 0, k = 1, stride = 1;
  std::size_t bytes() const { return w.bytes() + b.bytes(); }
};

struct Norm {
  Tensor g, b;
};

// Shared per-run state: the backend and the spatial size of the current activation.
struct Ctx {
  Backend& be;
  int64_t batch;
  ConstTensorView text;  // the text conditioning, where the backend keeps activations
};

// A copy of x made through the backend (resident tensors stay on the device).
Result<Tensor> copy_of(Backend& be, ConstTensorView x) {
  Tensor y = be.tensor(x.shape);
  AM_RETURN_IF_ERROR(copy_rows(be, x, y.view(), 0));
  return y;
}

// y = [a | b] along columns, through the backend: viewed as rows of g = gcd(widths) values, each
// source's rows are scattered into their places of a zero-filled y (0 + 1 * v is exact).
Result<Tensor> concat_columns(Backend& be, ConstTensorView a, ConstTensorView b) {
  const int64_t rows = a.rows(), ca = a.cols(), cb = b.cols(), cy = ca + cb;
  const int64_t g = std::gcd(ca, cb);
  Tensor y = be.tensor(Shape{rows, cy});
  const TensorView yv{y.data(), Shape{rows * cy / g, g}};
  for (const auto& [src, width, first] : {std::tuple{a, ca, int64_t{0}}, std::tuple{b, cb, ca}}) {
    const int64_t per = width / g, n = rows * per;
    std::vector<int32_t> ids(static_cast<std::size_t>(n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < per; ++j) ids[static_cast<std::size_t>(r * per + j)] = static_cast<int32_t>(r * cy / g + first / g + j);
    const std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
    AM_RETURN_IF_ERROR(be.scatter_add_rows(ConstTensorView{src.data, Shape{n, g}}, ids.data(), ones.data(), n, yv));
  }
  return y;
}

class Weights {
 public:
  Weights(SeededWeights& src, const FormatPlan& f) : src_(src), f_(f) {}
  Conv conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1) {
    Conv c;
    c.in = in;
    c.out = out;
    c.k = k;
    c.stride = stride;
    c.w = src_.normal(Shape{out, in, k, k}, 0.0f, 1.0f / std::sqrt(static_cast<float>(in * k * k)));
    c.b = src_.normal(Shape{out}, 0.0f, kLinearStd);
    return c;
  }
  Norm norm(int64_t c) { return {src_.normal(Shape{c}, 1.0f, kNormNoiseStd), src_.normal(Shape{c}, 0.0f, kNormNoiseStd)}; }
  Linear linear(int64_t in, int64_t out, WeightFormat fmt, bool bias) {
    return src_.linear(in, out, 1.0f / std::sqrt(static_cast<float>(in)), bias, bias ? kLinearStd : 0.0f, fmt);
  }
  const FormatPlan& formats() const { return f_; }

 private:
  SeededWeights& src_;
  const FormatPlan& f_;
};

Status run_conv(Ctx& c, const Conv& k, ConstTensorView x, int64_t side, Tensor& y) {
  const int64_t pad = k.k / 2;
  const int64_t out_side = conv_out_size(side, k.k, k.stride, pad);
  y = c.be.tensor(Shape{c.batch * out_side * out_side, k.out});
  Conv2dArgs a;
  a.x = x;
  a.y = y.view();
  a.weight = k.w.data();
  a.bias = k.b.data();
  a.batch = c.batch;
  a.height = a.width = side;
  a.in_channels = k.in;
  a.out_channels = k.out;
  a.kernel_h = a.kernel_w = k.k;
  a.stride = k.stride;
  a.padding = pad;
  return c.be.conv2d(a);
}

struct ResBlock {
  Norm n1, n2;
  Conv c1, c2, shortcut;  // shortcut.w empty when in == out
  Linear temb;
  int64_t groups = 32;
  float eps = 1e-5f;

  static ResBlock create(Weights& w, int64_t in, int64_t out, int64_t temb_dim, int64_t groups, float eps) {
    ResBlock r;
    r.groups = groups;
    r.eps = eps;
    r.n1 = w.norm(in);
    r.c1 = w.conv(in, out, 3);
    r.temb = w.linear(temb_dim, out, w.formats().other, true);
    r.n2 = w.norm(out);
    r.c2 = w.conv(out, out, 3);
    if (in != out) r.shortcut = w.conv(in, out, 1);
    return r;
  }
  std::size_t bytes() const {
    return n1.g.bytes() * 2 + n2.g.bytes() * 2 + c1.bytes() + c2.bytes() + shortcut.bytes() + temb.weight_bytes();
  }
  // x [batch*side^2, in] -> [batch*side^2, out]; temb_act = SiLU(time embedding) [batch, temb_dim].
  Status forward(Ctx& c, const Tensor& x, int64_t side, ConstTensorView temb_act, Tensor& y) const {
    AM_ASSIGN_OR_RETURN(Tensor h, copy_of(c.be, x.view()));
    AM_RETURN_IF_ERROR(c.be.group_norm(h.view(), c.batch, groups, n1.g.data(), n1.b.data(), eps, h.view()));
    AM_RETURN_IF_ERROR(c.be.activation(Activation::kSilu, h.view()));
    Tensor h1;
    AM_RETURN_IF_ERROR(run_conv(c, c1, h.view(), side, h1));
    Tensor t = c.be.tensor(Shape{c.batch, c1.out});
    AM_RETURN_IF_ERROR(c.be.linear(temb, temb_act, t.view()));
    AM_RETURN_IF_ERROR(add_per_group(c.be, t.view(), side * side, h1.view()));
    AM_RETURN_IF_ERROR(c.be.group_norm(h1.view(), c.batch, groups, n2.g.data(), n2.b.data(), eps, h1.view()));
    AM_RETURN_IF_ERROR(c.be.activation(Activation::kSilu, h1.view()));
    AM_RETURN_IF_ERROR(run_conv(c, c2, h1.view(), side, y));
    if (shortcut.w.empty()) return c.be.add(y.view(), x.view());
    Tensor s;
    AM_RETURN_IF_ERROR(run_conv(c, shortcut, x.view(), side, s));
    return c.be.add(y.view(), s.view());
  }
};

struct Attn {
  Linear q, k, v, o;
};

struct SpatialTransformer {
  Norm gn, ln1, ln2, ln3;
  Linear proj_in, proj_out, ff_gate, ff_up, ff_down;
  Attn self, cross;
  int64_t channels = 0, heads = 1, groups = 32;
  float eps = 1e-5f;

  static SpatialTransformer create(Weights& w, int64_t ch, int64_t heads, int64_t ctx_dim, int64_t groups, float eps) {
    const FormatPlan& f = w.formats();
    SpatialTransformer s;
    s.channels = ch;
    s.heads = heads;
    s.groups = groups;
    s.eps = eps;
    s.gn = w.norm(ch);
    s.proj_in = w.linear(ch, ch, f.other, true);
    s.ln1 = w.norm(ch);
    s.self = {w.linear(ch, ch, f.attention, false), w.linear(ch, ch, f.attention, false),
              w.linear(ch, ch, f.attention, false), w.linear(ch, ch, f.attention, true)};
    s.ln2 = w.norm(ch);
    s.cross = {w.linear(ch, ch, f.attention, false), w.linear(ctx_dim, ch, f.attention, false),
               w.linear(ctx_dim, ch, f.attention, false), w.linear(ch, ch, f.attention, true)};
    s.ln3 = w.norm(ch);
    s.ff_gate = w.linear(ch, kGegluMult * ch, f.feed_forward, true);
    s.ff_up = w.linear(ch, kGegluMult * ch, f.feed_forward, true);
    s.ff_down = w.linear(kGegluMult * ch, ch, f.feed_forward, true);
    s.proj_out = w.linear(ch, ch, f.other, true);
    return s;
  }
  std::size_t bytes() const {
    std::size_t t = 8 * gn.g.bytes() + proj_in.weight_bytes() + proj_out.weight_bytes() + ff_gate.weight_bytes() +
                    ff_up.weight_bytes() + ff_down.weight_bytes();
    for (const Attn* a : {&self, &cross}) t += a->q.weight_bytes() + a->k.weight_bytes() + a->v.weight_bytes() + a->o.weight_bytes();
    return t;
  }
  Status attend(Ctx& c, const Attn& a, ConstTensorView x, ConstTensorView memory, int64_t q_len, int64_t kv_len,
                Tensor& x_res) const {
    const int64_t rows = x.rows();
    Tensor q = c.be.tensor(Shape{rows, channels}), k = c.be.tensor(Shape{memory.rows(), channels});
    Tensor v = c.be.tensor(Shape{memory.rows(), channels});
    Tensor ctx = c.be.tensor(Shape{rows, channels}), out = c.be.tensor(Shape{rows, channels});
    AM_RETURN_IF_ERROR(c.be.linear(a.q, x, q.view()));
    AM_RETURN_IF_ERROR(c.be.linear(a.k, memory, k.view()));
    AM_RETURN_IF_ERROR(c.be.linear(a.v, memory, v.view()));
    AttentionArgs args;
    args.q = q.view();
    args.k = k.view();
    args.v = v.view();
    args.out = ctx.view();
    args.batch = c.batch;
    args.q_len = q_len;
    args.kv_len = kv_len;
    args.heads = args.kv_heads = heads;
    args.head_dim = channels / heads;
    AM_RETURN_IF_ERROR(c.be.attention(args));
    AM_RETURN_IF_ERROR(c.be.linear(a.o, ctx.view(), out.view()));
    return c.be.add(x_res.view(), out.view());
  }
  Status forward(Ctx& c, Tensor& x, int64_t side, ConstTensorView text, int64_t text_len) const {
    const int64_t rows = x.rows(), pos = side * side;
    AM_ASSIGN_OR_RETURN(Tensor h, copy_of(c.be, x.view()));
    Tensor t = c.be.tensor(Shape{rows, channels}), n = c.be.tensor(Shape{rows, channels});
    // Transformer2DModel builds its GroupNorm with eps 1e-6 whatever the UNet's norm_eps.
    AM_RETURN_IF_ERROR(c.be.group_norm(h.view(), c.batch, groups, gn.g.data(), gn.b.data(), kTransformerGroupNormEps,
                                       h.view()));
    AM_RETURN_IF_ERROR(c.be.linear(proj_in, h.view(), t.view()));
    AM_RETURN_IF_ERROR(c.be.layer_norm(t.view(), ln1.g.data(), ln1.b.data(), eps, n.view()));
    AM_RETURN_IF_ERROR(attend(c, self, n.view(), n.view(), pos, pos, t));
    AM_RETURN_IF_ERROR(c.be.layer_norm(t.view(), ln2.g.data(), ln2.b.data(), eps, n.view()));
    AM_RETURN_IF_ERROR(attend(c, cross, n.view(), text, pos, text_len, t));
    AM_RETURN_IF_ERROR(c.be.layer_norm(t.view(), ln3.g.data(), ln3.b.data(), eps, n.view()));
    Tensor gate = c.be.tensor(Shape{rows, kGegluMult * channels}), up = c.be.tensor(Shape{rows, kGegluMult * channels});
    AM_RETURN_IF_ERROR(c.be.linear(ff_gate, n.view(), gate.view()));
    AM_RETURN_IF_ERROR(c.be.linear(ff_up, n.view(), up.view()));
    AM_RETURN_IF_ERROR(c.be.activation(Activation::kGeluErf, gate.view()));
    AM_RETURN_IF_ERROR(c.be.mul(up.view(), gate.view()));
    AM_RETURN_IF_ERROR(c.be.linear(ff_down, up.view(), n.view()));
    AM_RETURN_IF_ERROR(c.be.add(t.view(), n.view()));
    AM_RETURN_IF_ERROR(c.be.linear(proj_out, t.view(), h.view()));
    return c.be.add(x.view(), h.view());
  }
};

struct Unit {  // one ResNet block and its optional transformer
  ResBlock res;
  bool has_attn = false;
  SpatialTransformer attn;
};

// ---- diffusers checkpoints ----------------------------------------------------------------------
// UNet2DConditionModel names: conv_in, time_embedding.linear_{1,2}, down_blocks.L.{resnets.I,
// attentions.I, downsamplers.0.conv}, mid_block.{resnets.{0,1}, attentions.0},
// up_blocks.K.{resnets.I, attentions.I, upsamplers.0.conv} (K = 0 is the deepest level),
// conv_norm_out, conv_out. A resnet: norm1, conv1, time_emb_proj, norm2, conv2, conv_shortcut. An
// attention (Transformer2DModel, one block): norm, proj_in / proj_out (1x1 convs, or linears with
// use_linear_projection), transformer_blocks.0.{norm1, attn1.{to_q, to_k, to_v, to_out.0},
// norm2, attn2.*, norm3, ff.net.0.proj (GEGLU: the value half, then the gate half), ff.net.2}.
class UnetReader {
 public:
  UnetReader(const Checkpoint& file, const FormatPlan& f, const ExecContext& ctx) : file_(file), f_(f), ctx_(ctx) {}

  Status conv(const std::string& name, Conv& c) const {
    AM_ASSIGN_OR_RETURN(c.w, file_.read_f32(name + ".weight", Shape{c.out, c.in, c.k, c.k}));
    AM_ASSIGN_OR_RETURN(c.b, file_.read_f32(name + ".bias", Shape{c.out}));
    return Status::Ok();
  }
  Status norm(const std::string& name, Norm& n) const {
    const int64_t ch = n.g.numel();
    AM_ASSIGN_OR_RETURN(n.g, file_.read_f32(name + ".weight", Shape{ch}));
    AM_ASSIGN_OR_RETURN(n.b, file_.read_f32(name + ".bias", Shape{ch}));
    return Status::Ok();
  }
  // A linear layer; `pointwise` also accepts a 1x1 conv's [out, in, 1, 1] weight.
  Status linear(const std::string& name, WeightFormat fmt, Linear& l, bool pointwise = false) const {
    const int64_t in = l.in_features(), out = l.out_features();
    const bool bias = l.bias_data() != nullptr;
    const SafetensorsEntry* e = file_.find(name + ".weight");
    Tensor w;
    if (pointwise && e != nullptr && e->shape.size() == 4) {
      AM_ASSIGN_OR_RETURN(w, file_.read_f32(name + ".weight", Shape{out, in, 1, 1}));
      w.reshape(Shape{out, in});
    } else {
      AM_ASSIGN_OR_RETURN(w, file_.read_f32(name + ".weight", Shape{out, in}));
    }
    Tensor b;
    if (bias) {
      AM_ASSIGN_OR_RETURN(b, file_.read_f32(name + ".bias", Shape{out}));
    }
    AM_ASSIGN_OR_RETURN(l, linear_from_tensors("diffusion weights", name, std::move(w), std::move(b), in, out, bias, fmt,
                                               ctx_));
    return Status::Ok();
  }
  Status resnet(const std::string& p, ResBlock& r) const {
    AM_RETURN_IF_ERROR(norm(p + "norm1", r.n1));
    AM_RETURN_IF_ERROR(conv(p + "conv1", r.c1));
    AM_RETURN_IF_ERROR(linear(p + "time_emb_proj", f_.other, r.temb));
    AM_RETURN_IF_ERROR(norm(p + "norm2", r.n2));
    AM_RETURN_IF_ERROR(conv(p + "conv2", r.c2));
    if (!r.shortcut.w.empty()) AM_RETURN_IF_ERROR(conv(p + "conv_shortcut", r.shortcut));
    return Status::Ok();
  }
  Status attention(const std::string& p, SpatialTransformer& t) const {
    AM_RETURN_IF_ERROR(norm(p + "norm", t.gn));
    AM_RETURN_IF_ERROR(linear(p + "proj_in", f_.other, t.proj_in, true));
    const std::string b = p + "transformer_blocks.0.";
    AM_RETURN_IF_ERROR(norm(b + "norm1", t.ln1));
    const std::pair<const char*, Attn*> attns[] = {{"attn1.", &t.self}, {"attn2.", &t.cross}};
    for (const auto& [name, a] : attns) {
      AM_RETURN_IF_ERROR(linear(b + name + "to_q", f_.attention, a->q));
      AM_RETURN_IF_ERROR(linear(b + name + "to_k", f_.attention, a->k));
      AM_RETURN_IF_ERROR(linear(b + name + "to_v", f_.attention, a->v));
      AM_RETURN_IF_ERROR(linear(b + name + "to_out.0", f_.attention, a->o));
    }
    AM_RETURN_IF_ERROR(norm(b + "norm2", t.ln2));
    AM_RETURN_IF_ERROR(norm(b + "norm3", t.ln3));
    // GEGLU: proj = [value; gate] rows; out = value * GELU(gate).
    const int64_t ch = t.channels, inner = kGegluMult * ch;
    AM_ASSIGN_OR_RETURN(Tensor proj, file_.read_f32(b + "ff.net.0.proj.weight", Shape{2 * inner, ch}));
    AM_ASSIGN_OR_RETURN(Tensor proj_b, file_.read_f32(b + "ff.net.0.proj.bias", Shape{2 * inner}));
    Tensor up_w(Shape{inner, ch}), gate_w(Shape{inner, ch}), up_b(Shape{inner}), gate_b(Shape{inner});
    std::copy(proj.data(), proj.data() + inner * ch, up_w.data());
    std::copy(proj.data() + inner * ch, proj.data() + 2 * inner * ch, gate_w.data());
    std::copy(proj_b.data(), proj_b.data() + inner, up_b.data());
    std::copy(proj_b.data() + inner, proj_b.data() + 2 * inner, gate_b.data());
    AM_ASSIGN_OR_RETURN(t.ff_up, linear_from_tensors("diffusion weights", b + "ff.net.0.proj (value half)", std::move(up_w),
                                                     std::move(up_b), ch, inner, true, f_.feed_forward, ctx_));
    AM_ASSIGN_OR_RETURN(t.ff_gate, linear_from_tensors("diffusion weights", b + "ff.net.0.proj (gate half)",
                                                       std::move(gate_w), std::move(gate_b), ch, inner, true,
                                                       f_.feed_forward, ctx_));
    AM_RETURN_IF_ERROR(linear(b + "ff.net.2", f_.feed_forward, t.ff_down));
    return linear(p + "proj_out", f_.other, t.proj_out, true);
  }
  Status unit(const std::string& block, int64_t i, Unit& u) const {
    AM_RETURN_IF_ERROR(resnet(block + "resnets." + std::to_string(i) + ".", u.res));
    if (u.has_attn) AM_RETURN_IF_ERROR(attention(block + "attentions." + std::to_string(i) + ".", u.attn));
    return Status::Ok();
  }

 private:
  const Checkpoint& file_;
  const FormatPlan& f_;
  const ExecContext& ctx_;
};

class UnetGraph final : public ModelGraph {
 public:
  UnetGraph(UnetConfig c, const FormatPlan& f, uint64_t seed, const ExecContext& ctx, int64_t batch) : c_(std::move(c)), batch_(batch) {
    SeededWeights src(seed, kWeightStream, ctx);
    Weights w(src, f);
    const int64_t c0 = c_.channels.front(), temb_dim = 4 * c0, levels = static_cast<int64_t>(c_.channels.size());
    temb1_ = w.linear(c0, temb_dim, f.other, true);
    temb2_ = w.linear(temb_dim, temb_dim, f.other, true);
    conv_in_ = w.conv(c_.in_ch, c0, 3);
    int64_t ch = c0;
    std::vector<int64_t> skip_ch{ch};
    for (int64_t l = 0; l < levels; ++l) {
      const int64_t out = c_.channels[static_cast<std::size_t>(l)];
      for (int64_t i = 0; i < c_.layers; ++i) {
        down_.push_back(unit(w, ch, out, temb_dim, l < c_.attn_levels));
        ch = out;
        skip_ch.push_back(ch);
      }
      if (l + 1 < levels) {
        downsample_.push_back(w.conv(ch, ch, 3, 2));
        skip_ch.push_back(ch);
      }
    }
    mid1_ = ResBlock::create(w, ch, ch, temb_dim, c_.groups, c_.eps);
    mid_attn_ = SpatialTransformer::create(w, ch, c_.heads, c_.ctx_dim, c_.groups, c_.eps);
    mid2_ = ResBlock::create(w, ch, ch, temb_dim, c_.groups, c_.eps);
    for (int64_t l = levels - 1; l >= 0; --l) {
      const int64_t out = c_.channels[static_cast<std::size_t>(l)];
      for (int64_t i = 0; i <= c_.layers; ++i) {
        const int64_t skip = skip_ch.back();
        skip_ch.pop_back();
        up_.push_back(unit(w, ch + skip, out, temb_dim, l < c_.attn_levels));
        ch = out;
      }
      if (l > 0) upsample_.push_back(w.conv(ch, ch, 3));
    }
    norm_out_ = w.norm(ch);
    conv_out_ = w.conv(ch, c_.out_ch, 3);
    latent_ = Tensor(Shape{batch_ * c_.sample * c_.sample, c_.in_ch});
    fill_normal(latent_.data(), latent_.numel(), 0.0f, 1.0f, derive_seed(seed, kLatentStream), ctx);
    // With guidance the UNet runs on [unconditional; conditional] halves of a doubled batch:
    // the unconditional states (SD: the empty prompt's encoding) come first.
    const int64_t text_rows = batch_ * c_.text_len;
    text_ = Tensor(Shape{(c_.guided() ? 2 : 1) * text_rows, c_.ctx_dim});
    float* cond = text_.data() + (c_.guided() ? text_rows * c_.ctx_dim : 0);
    fill_normal(cond, text_rows * c_.ctx_dim, 0.0f, 1.0f, derive_seed(seed, kTextStream), ctx);
    if (c_.guided()) fill_normal(text_.data(), text_rows * c_.ctx_dim, 0.0f, 1.0f, derive_seed(seed, kUncondTextStream), ctx);
    formats_ = f;
  }

  // Replaces the seeded weights (whose shapes the config fixed) with a checkpoint's.
  Status load(const Checkpoint& file, const ExecContext& ctx) {
    const UnetReader r(file, formats_, ctx);
    AM_RETURN_IF_ERROR(r.linear("time_embedding.linear_1", formats_.other, temb1_));
    AM_RETURN_IF_ERROR(r.linear("time_embedding.linear_2", formats_.other, temb2_));
    AM_RETURN_IF_ERROR(r.conv("conv_in", conv_in_));
    const int64_t levels = static_cast<int64_t>(c_.channels.size());
    std::size_t ui = 0;
    for (int64_t l = 0; l < levels; ++l) {
      const std::string block = "down_blocks." + std::to_string(l) + ".";
      for (int64_t i = 0; i < c_.layers; ++i) AM_RETURN_IF_ERROR(r.unit(block, i, down_[ui++]));
      if (l + 1 < levels) {
        AM_RETURN_IF_ERROR(r.conv(block + "downsamplers.0.conv", downsample_[static_cast<std::size_t>(l)]));
      }
    }
    AM_RETURN_IF_ERROR(r.resnet("mid_block.resnets.0.", mid1_));
    AM_RETURN_IF_ERROR(r.attention("mid_block.attentions.0.", mid_attn_));
    AM_RETURN_IF_ERROR(r.resnet("mid_block.resnets.1.", mid2_));
    ui = 0;
    for (int64_t k = 0; k < levels; ++k) {
      const std::string block = "up_blocks." + std::to_string(k) + ".";
      for (int64_t i = 0; i <= c_.layers; ++i) AM_RETURN_IF_ERROR(r.unit(block, i, up_[ui++]));
      if (k + 1 < levels) {
        AM_RETURN_IF_ERROR(r.conv(block + "upsamplers.0.conv", upsample_[static_cast<std::size_t>(k)]));
      }
    }
    AM_RETURN_IF_ERROR(r.norm("conv_norm_out", norm_out_));
    return r.conv("conv_out", conv_out_);
  }
  // Replaces the seeded latent and text states with given ones (reference checks).
  Status set_inputs(const DiffusionInputs& in) {
    const int64_t text_rows = batch_ * c_.text_len;
    if (static_cast<int64_t>(in.latent.size()) != latent_.numel() ||
        static_cast<int64_t>(in.text.size()) != text_rows * c_.ctx_dim ||
        (c_.guided() && static_cast<int64_t>(in.uncond_text.size()) != text_rows * c_.ctx_dim)) {
      return invalid_argument("diffusion: given latent must be batch*sample_size^2*in_channels, text (and uncond_text "
                              "with guidance) batch*text_len*cross_attention_dim");
    }
    std::copy(in.latent.begin(), in.latent.end(), latent_.data());
    float* cond = text_.data() + (c_.guided() ? text_rows * c_.ctx_dim : 0);
    std::copy(in.text.begin(), in.text.end(), cond);
    if (c_.guided()) std::copy(in.uncond_text.begin(), in.uncond_text.end(), text_.data());
    return Status::Ok();
  }

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> ops;
    for (Op op : {Op::kConv2d, Op::kGroupNorm, Op::kActivation, Op::kAdd, Op::kMul, Op::kGatherRows, Op::kLayerNorm,
                  Op::kAttention, Op::kIndexRows})
      require(ops, op);
    for (WeightFormat f : {formats_.attention, formats_.feed_forward, formats_.other}) require(ops, Op::kLinear, f);
    return ops;
  }
  std::size_t weights_bytes() const override {
    std::size_t t = temb1_.weight_bytes() + temb2_.weight_bytes() + conv_in_.bytes() + conv_out_.bytes() +
                    2 * norm_out_.g.bytes() + mid1_.bytes() + mid2_.bytes() + mid_attn_.bytes();
    for (const auto* v : {&down_, &up_})
      for (const Unit& u : *v) t += u.res.bytes() + (u.has_attn ? u.attn.bytes() : 0);
    for (const auto* v : {&downsample_, &upsample_})
      for (const Conv& k : *v) t += k.bytes();
    return t;
  }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return 0; }

  Result<GraphOutput> forward(Backend& be) const override {
    const int64_t passes = c_.guided() ? 2 : 1;
    // The conditioning, uploaded once per run; the latent stays on the host between steps (the
    // scheduler's update is host arithmetic), each step's noise estimate comes back.
    Tensor text = be.tensor(text_.shape());
    std::memcpy(text.data(), text_.data(), text_.bytes());
    AM_RETURN_IF_ERROR(be.from_host(text.view()));
    Ctx c{be, passes * batch_, text.view()};
    Tensor x = be.tensor(latent_.shape());
    std::memcpy(x.data(), latent_.data(), latent_.bytes());
    AM_RETURN_IF_ERROR(be.from_host(x.view()));
    Tensor in = c_.guided() ? be.tensor(Shape{passes * x.rows(), x.cols()}) : Tensor();
    const std::vector<double> acp = alphas_cumprod();
    const int64_t ratio = c_.train_steps / c_.steps;
    for (int64_t s = 0; s < c_.steps; ++s) {
      // DDIMScheduler's "leading" spacing: every ratio-th training step, highest first, shifted
      // by steps_offset; the previous timestep is one ratio earlier.
      const int64_t t = (c_.steps - 1 - s) * ratio + c_.steps_offset;
      const int64_t t_prev = t - ratio;
      Tensor eps;
      if (c_.guided()) {
        // One UNet pass over [x; x] with [unconditional; conditional] text, then
        // eps = eps_u + g (eps_c - eps_u), as diffusers' pipelines do.
        AM_RETURN_IF_ERROR(copy_rows(be, x.view(), in.view(), 0));
        AM_RETURN_IF_ERROR(copy_rows(be, x.view(), in.view(), x.rows()));
        Tensor both;
        AM_RETURN_IF_ERROR(unet(c, in, static_cast<float>(t), both));
        AM_RETURN_IF_ERROR(be.to_host(both.view()));
        eps = Tensor(x.shape());
        const float g = static_cast<float>(c_.guidance);
        const float* eu = both.data();
        const float* ec = both.data() + x.numel();
        for (int64_t i = 0; i < x.numel(); ++i) eps.data()[i] = eu[i] + g * (ec[i] - eu[i]);
      } else {
        AM_RETURN_IF_ERROR(unet(c, x, static_cast<float>(t), eps));
        AM_RETURN_IF_ERROR(be.to_host(eps.view()));
      }
      AM_RETURN_IF_ERROR(be.to_host(x.view()));
      const double final_alpha = c_.alpha_to_one ? 1.0 : acp[0];
      const double a = acp[static_cast<std::size_t>(t)];
      const double a_prev = t_prev >= 0 ? acp[static_cast<std::size_t>(t_prev)] : final_alpha;
      const double sa = std::sqrt(a), s1a = std::sqrt(1.0 - a), sp = std::sqrt(a_prev), s1p = std::sqrt(1.0 - a_prev);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double e = eps.data()[i];
        const double x0 = (x.data()[i] - s1a * e) / sa;
        x.data()[i] = static_cast<float>(sp * x0 + s1p * e);
      }
      AM_RETURN_IF_ERROR(be.from_host(x.view()));
    }
    GraphOutput out;
    out.output = std::move(x);
    return out;
  }

 private:
  Unit unit(Weights& w, int64_t in, int64_t out, int64_t temb_dim, bool attn) const {
    Unit u;
    u.res = ResBlock::create(w, in, out, temb_dim, c_.groups, c_.eps);
    u.has_attn = attn;
    if (attn) u.attn = SpatialTransformer::create(w, out, c_.heads, c_.ctx_dim, c_.groups, c_.eps);
    return u;
  }
  std::vector<double> alphas_cumprod() const {
    std::vector<double> acp(static_cast<std::size_t>(c_.train_steps));
    double prod = 1.0;
    const double s0 = std::sqrt(static_cast<double>(c_.beta_start)), s1 = std::sqrt(static_cast<double>(c_.beta_end));
    for (int64_t i = 0; i < c_.train_steps; ++i) {
      const double r = c_.train_steps > 1 ? static_cast<double>(i) / static_cast<double>(c_.train_steps - 1) : 0.0;
      const double beta = std::pow(s0 + r * (s1 - s0), 2.0);  // "scaled_linear"
      prod *= 1.0 - beta;
      acp[static_cast<std::size_t>(i)] = prod;
    }
    return acp;
  }
  Status run_unit(Ctx& c, const Unit& u, Tensor& x, int64_t side, ConstTensorView temb) const {
    Tensor y;
    AM_RETURN_IF_ERROR(u.res.forward(c, x, side, temb, y));
    x = std::move(y);
    if (u.has_attn) AM_RETURN_IF_ERROR(u.attn.forward(c, x, side, c.text, c_.text_len));
    return Status::Ok();
  }
  Status unet(Ctx& c, const Tensor& latent, float timestep, Tensor& eps) const {
    const int64_t c0 = c_.channels.front(), half = c0 / 2;
    // Sinusoidal embedding (diffusers: flip_sin_to_cos, shift 0): [cos | sin].
    Tensor sinus = c.be.tensor(Shape{c.batch, c0});  // an input of the step: written on the host
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t i = 0; i < half; ++i) {
        const float freq = std::exp(-std::log(kMaxPeriod) * static_cast<float>(i) / static_cast<float>(half));
        sinus.row(b)[i] = std::cos(timestep * freq);
        sinus.row(b)[half + i] = std::sin(timestep * freq);
      }
    AM_RETURN_IF_ERROR(c.be.from_host(sinus.view()));
    Tensor temb = c.be.tensor(Shape{c.batch, temb2_.in_features()});
    Tensor temb2 = c.be.tensor(Shape{c.batch, temb2_.out_features()});
    AM_RETURN_IF_ERROR(c.be.linear(temb1_, sinus.view(), temb.view()));
    AM_RETURN_IF_ERROR(c.be.activation(Activation::kSilu, temb.view()));
    AM_RETURN_IF_ERROR(c.be.linear(temb2_, temb.view(), temb2.view()));
    AM_RETURN_IF_ERROR(c.be.activation(Activation::kSilu, temb2.view()));  // every ResNet applies SiLU first

    int64_t side = c_.sample;
    Tensor x;
    AM_RETURN_IF_ERROR(run_conv(c, conv_in_, latent.view(), side, x));
    std::vector<std::pair<Tensor, int64_t>> skips;
    AM_ASSIGN_OR_RETURN(Tensor skip0, copy_of(c.be, x.view()));
    skips.emplace_back(std::move(skip0), side);
    const int64_t levels = static_cast<int64_t>(c_.channels.size());
    std::size_t ui = 0;
    for (int64_t l = 0; l < levels; ++l) {
      for (int64_t i = 0; i < c_.layers; ++i) {
        AM_RETURN_IF_ERROR(run_unit(c, down_[ui++], x, side, temb2.view()));
        AM_ASSIGN_OR_RETURN(Tensor skip, copy_of(c.be, x.view()));
        skips.emplace_back(std::move(skip), side);
      }
      if (l + 1 < levels) {
        Tensor y;
        AM_RETURN_IF_ERROR(run_conv(c, downsample_[static_cast<std::size_t>(l)], x.view(), side, y));
        x = std::move(y);
        side = conv_out_size(side, 3, 2, 1);
        AM_ASSIGN_OR_RETURN(Tensor skip, copy_of(c.be, x.view()));
        skips.emplace_back(std::move(skip), side);
      }
    }
    Tensor y;
    AM_RETURN_IF_ERROR(mid1_.forward(c, x, side, temb2.view(), y));
    AM_RETURN_IF_ERROR(mid_attn_.forward(c, y, side, c.text, c_.text_len));
    AM_RETURN_IF_ERROR(mid2_.forward(c, y, side, temb2.view(), x));
    ui = 0;
    std::size_t upi = 0;
    for (int64_t l = levels - 1; l >= 0; --l) {
      for (int64_t i = 0; i <= c_.layers; ++i) {
        Tensor skip = std::move(skips.back().first);
        skips.pop_back();
        AM_ASSIGN_OR_RETURN(Tensor cat, concat_columns(c.be, x.view(), skip.view()));
        x = std::move(cat);
        AM_RETURN_IF_ERROR(run_unit(c, up_[ui++], x, side, temb2.view()));
      }
      if (l > 0) {
        // Nearest-neighbour 2x upsampling as a row gather, then conv3x3.
        const int64_t big = 2 * side;
        std::vector<int32_t> ids(static_cast<std::size_t>(c.batch * big * big));
        for (int64_t b = 0; b < c.batch; ++b)
          for (int64_t yy = 0; yy < big; ++yy)
            for (int64_t xx = 0; xx < big; ++xx)
              ids[static_cast<std::size_t>((b * big + yy) * big + xx)] =
                  static_cast<int32_t>((b * side + yy / 2) * side + xx / 2);
        Tensor up = c.be.tensor(Shape{c.batch * big * big, x.cols()});
        AM_RETURN_IF_ERROR(c.be.index_rows(x.view(), ids.data(), c.batch * big * big, up.view()));
        side = big;
        AM_RETURN_IF_ERROR(run_conv(c, upsample_[upi++], up.view(), side, x));
      }
    }
    AM_RETURN_IF_ERROR(c.be.group_norm(x.view(), c.batch, c_.groups, norm_out_.g.data(), norm_out_.b.data(), c_.eps, x.view()));
    AM_RETURN_IF_ERROR(c.be.activation(Activation::kSilu, x.view()));
    return run_conv(c, conv_out_, x.view(), side, eps);
  }

  UnetConfig c_;
  int64_t batch_;
  FormatPlan formats_;
  Linear temb1_, temb2_;
  Conv conv_in_, conv_out_;
  std::vector<Unit> down_, up_;
  std::vector<Conv> downsample_, upsample_;
  ResBlock mid1_, mid2_;
  SpatialTransformer mid_attn_;
  Norm norm_out_;
  Tensor latent_, text_;
};

Result<std::vector<int64_t>> positive_array(const ConfigReader& cfg, const nlohmann::json& doc, const char* key) {
  if (!doc.contains(key) || !doc.at(key).is_array() || doc.at(key).empty()) {
    return cfg.error(std::string("'") + key + "' must be a non-empty array of positive integers");
  }
  std::vector<int64_t> v;
  for (const auto& e : doc.at(key)) {
    if (!e.is_number_integer() || e.get<int64_t>() < 1) return cfg.error(std::string("'") + key + "' must hold positive integers");
    v.push_back(e.get<int64_t>());
  }
  return v;
}

// Stored bytes of the UNet's weights, estimated level by level before anything is drawn.
std::size_t estimate_unet_bytes(const UnetConfig& c, const FormatPlan& f) {
  std::size_t total = 0;
  const int64_t temb = 4 * c.channels.front();
  auto conv = [](int64_t in, int64_t out, int64_t k) { return static_cast<std::size_t>(out * (in * k * k + 1)) * 4; };
  auto res = [&](int64_t in, int64_t out) {
    return conv(in, out, 3) + conv(out, out, 3) + (in != out ? conv(in, out, 1) : 0) + linear_bytes(temb, out, f.other, true);
  };
  auto attn = [&](int64_t ch) {
    return 2 * linear_bytes(ch, ch, f.other, true) + 4 * linear_bytes(ch, ch, f.attention, true) +
           2 * linear_bytes(c.ctx_dim, ch, f.attention, false) + 2 * linear_bytes(ch, kGegluMult * ch, f.feed_forward, true) +
           linear_bytes(kGegluMult * ch, ch, f.feed_forward, true);
  };
  int64_t ch = c.channels.front();
  for (std::size_t l = 0; l < c.channels.size(); ++l) {
    const int64_t out = c.channels[l];
    const bool a = static_cast<int64_t>(l) < c.attn_levels;
    total += static_cast<std::size_t>(c.layers) * (res(out, out) + (a ? attn(out) : 0)) + res(ch, out);
    total += static_cast<std::size_t>(c.layers + 1) * (res(2 * out, out) + (a ? attn(out) : 0)) + 2 * conv(out, out, 3);
    ch = out;
  }
  return total + 2 * res(ch, ch) + attn(ch) + linear_bytes(ch, temb, f.other, true) + linear_bytes(temb, temb, f.other, true);
}

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_diffusion_graph(const jobs::JobSpec& spec, Precision precision,
                                                          const ExecContext& ctx) {
  return build_diffusion_graph_on(spec, precision, ctx, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_diffusion_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                             const ExecContext& ctx, const DiffusionInputs* given) {
  ConfigReader cfg(spec.model_config, "diffusion");
  UnetConfig c;
  AM_ASSIGN_OR_RETURN(c.sample, cfg.dim("sample_size"));
  AM_ASSIGN_OR_RETURN(c.in_ch, cfg.dim("in_channels"));
  AM_ASSIGN_OR_RETURN(c.out_ch, cfg.dim("out_channels"));
  AM_ASSIGN_OR_RETURN(c.channels, positive_array(cfg, spec.model_config, "block_channels"));
  AM_ASSIGN_OR_RETURN(c.layers, cfg.dim("layers_per_block"));
  AM_ASSIGN_OR_RETURN(c.attn_levels, cfg.dim("attention_levels"));
  AM_ASSIGN_OR_RETURN(c.heads, cfg.dim("attention_heads"));
  AM_ASSIGN_OR_RETURN(c.ctx_dim, cfg.dim("cross_attention_dim"));
  AM_ASSIGN_OR_RETURN(c.text_len, cfg.dim("text_len"));
  AM_ASSIGN_OR_RETURN(c.groups, cfg.dim("norm_groups"));
  AM_ASSIGN_OR_RETURN(c.steps, cfg.dim("steps"));
  AM_ASSIGN_OR_RETURN(c.train_steps, cfg.dim("train_timesteps", int64_t{1000}));
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-30, 1.0));
  AM_ASSIGN_OR_RETURN(double b0, cfg.number("beta_start", 0.00085, 1e-8, 0.5));
  AM_ASSIGN_OR_RETURN(double b1, cfg.number("beta_end", 0.012, 1e-8, 0.5));
  AM_ASSIGN_OR_RETURN(c.guidance, cfg.number("guidance_scale", kNoGuidance, 0.0, kMaxGuidance));
  AM_ASSIGN_OR_RETURN(double offset, cfg.number("steps_offset", 0.0, 0.0, 1000.0));
  c.steps_offset = static_cast<int64_t>(offset);
  AM_ASSIGN_OR_RETURN(c.alpha_to_one, cfg.flag("set_alpha_to_one", true));
  c.eps = static_cast<float>(eps);
  c.beta_start = static_cast<float>(b0);
  c.beta_end = static_cast<float>(b1);
  const int64_t levels = static_cast<int64_t>(c.channels.size());
  if (c.steps > c.train_steps) return cfg.error("'steps' exceeds train_timesteps");
  if ((c.steps - 1) * (c.train_steps / c.steps) + c.steps_offset >= c.train_steps) {
    return cfg.error("'steps_offset' puts the first timestep past train_timesteps");
  }
  if (c.in_ch != c.out_ch) return cfg.error("in_channels must equal out_channels (the UNet predicts the latent's noise)");
  if (c.channels.front() % 2 != 0) return cfg.error("block_channels[0] must be even (sinusoidal embedding)");
  if (c.sample % (int64_t{1} << (levels - 1)) != 0) {
    return cfg.error("sample_size " + std::to_string(c.sample) + " must be divisible by 2^(levels-1)");
  }
  for (int64_t ch : c.channels) {
    if (ch % c.groups != 0) return cfg.error("norm_groups must divide every block_channels entry");
    if (ch % c.heads != 0) return cfg.error("attention_heads must divide every block_channels entry");
  }
  const FormatPlan f = format_plan_for(precision);
  AM_RETURN_IF_ERROR(check_weight_budget("diffusion", estimate_unet_bytes(c, f)));
  // model_config "weights_path" names a diffusers UNet2DConditionModel checkpoint (a .safetensors
  // file, or its directory: diffusion_pytorch_model.safetensors); its values replace the seeded
  // ones. The scheduler and the sampling settings stay the plan's. It is opened before the
  // seeded graph is built (gigabytes at SD's size, most of a minute): a checkpoint too small for
  // the configuration (a config.json that is not its own) is refused before that, not after.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "diffusion"));
  std::optional<Checkpoint> file;
  if (checkpoint) {
    AM_ASSIGN_OR_RETURN(file, Checkpoint::open(*checkpoint));
    // The estimate with every weight f32 is 4 bytes a parameter; it leaves out the norms and
    // counts some skip inputs high, so half of it is a floor no real checkpoint falls below.
    const uint64_t needed = estimate_unet_bytes(c, format_plan_for(Precision::kF32)) / 4;
    uint64_t held = 0;
    for (const std::string& name : file->names()) held += static_cast<uint64_t>(file->find(name)->numel());
    if (held < needed / 2) {
      return invalid_argument("checkpoint " + *checkpoint + " holds " + std::to_string(held) +
                              " parameters; a UNet of this configuration has about " + std::to_string(needed) +
                              ": it is not this configuration's checkpoint");
    }
  }
  auto graph = std::make_unique<UnetGraph>(std::move(c), f, spec.seed, ctx, spec.batch);
  if (file) AM_RETURN_IF_ERROR(graph->load(*file, ctx));
  if (given) AM_RETURN_IF_ERROR(graph->set_inputs(*given));
  return std::unique_ptr<ModelGraph>(std::move(graph));
}

}  // namespace am::kernels
