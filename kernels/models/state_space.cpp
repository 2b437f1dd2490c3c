#include "kernels/models/state_space.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "kernels/models/decoder_only_lm.h"
#include "kernels/models/transformer_stack.h"
#include "kernels/models/vision_tower.h"
#include "kernels/rng.h"
#include "kernels/weights/checkpoints.h"
#include "kernels/weights/checkpoint.h"

namespace am::kernels {
namespace {

constexpr uint64_t kWeightStream = 0x53534d57ull;  // "SSMW"
constexpr uint64_t kPromptStream = 0x53534d50ull;  // "SSMP"
constexpr uint64_t kForcedStream = 0x53534d46ull;  // "SSMF"
constexpr float kLinearStd = 0.02f;
constexpr float kNormNoiseStd = 0.02f;
constexpr float kDtMin = 1e-3f, kDtMax = 1e-1f, kDtFloor = 1e-4f;
constexpr float kRwkvInitialMax = kTimeMixInitialMax;

using Clock = SteadyClock;

// A recurrent LM: embeds ids, runs `q_len` positions per sample through its layers carrying the
// state, writes hidden states after the final norm.
class RecurrentLm {
 public:
  virtual ~RecurrentLm() = default;
  struct State {
    std::vector<Tensor> t;  // per layer, layout owned by the model
  };
  // The carried state at the start of a sequence, in be.tensor()s.
  virtual Result<State> fresh_state(Backend& be, int64_t batch) const = 0;
  virtual Status step(Backend& be, const int32_t* ids, int64_t batch, int64_t q_len, State& st, Tensor& hidden) const = 0;
  virtual const Linear& head() const = 0;
  virtual int64_t hidden() const = 0;
  virtual std::size_t bytes() const = 0;
  virtual void ops(std::vector<std::pair<Op, WeightFormat>>& o) const = 0;
};

// Copies each sample's last row of [batch*q_len, cols] into [batch, cols].
Status last_rows(Backend& be, ConstTensorView x, int64_t batch, int64_t q_len, TensorView y) {
  return take_rows(be, x, q_len, q_len - 1, y);
}

// ---------------------------------------------------------------- Mamba
class MambaLm final : public RecurrentLm {
 public:
  struct Cfg {
    int64_t layers, hidden, inner, state, kernel, dt_rank, vocab;
    float eps;
  };
  static Result<std::unique_ptr<MambaLm>> create(const Cfg& c, const FormatPlan& f, uint64_t seed, const ExecContext& ctx) {
    std::size_t est = static_cast<std::size_t>(c.vocab * c.hidden) * 4 +
                      c.layers * (linear_bytes(c.hidden, 2 * c.inner, f.attention, false) +
                                  linear_bytes(c.inner, c.dt_rank + 2 * c.state, f.attention, false) +
                                  linear_bytes(c.dt_rank, c.inner, f.attention, false) +
                                  linear_bytes(c.inner, c.hidden, f.feed_forward, false));
    AM_RETURN_IF_ERROR(check_weight_budget("state-space", est));
    auto m = std::make_unique<MambaLm>();
    m->c_ = c;
    SeededWeights src(seed, kWeightStream, ctx);
    m->embed_ = src.normal(Shape{c.vocab, c.hidden}, 0.0f, kLinearStd);
    const float out_std = kLinearStd / std::sqrt(static_cast<float>(c.layers));
    for (int64_t i = 0; i < c.layers; ++i) {
      Layer l;
      l.norm = src.normal(Shape{c.hidden}, 1.0f, kNormNoiseStd);
      l.in_x = src.linear(c.hidden, c.inner, kLinearStd, false, 0.0f, f.attention);
      l.in_z = src.linear(c.hidden, c.inner, kLinearStd, false, 0.0f, f.attention);
      const float conv_bound = 1.0f / std::sqrt(static_cast<float>(c.kernel));
      l.conv_w = src.uniform(Shape{c.inner, 1, c.kernel}, -conv_bound, conv_bound);
      l.conv_b = src.uniform(Shape{c.inner}, -conv_bound, conv_bound);
      l.x_dt = src.linear(c.inner, c.dt_rank, kLinearStd, false, 0.0f, f.attention);
      l.x_b = src.linear(c.inner, c.state, kLinearStd, false, 0.0f, f.attention);
      l.x_c = src.linear(c.inner, c.state, kLinearStd, false, 0.0f, f.attention);
      const float dt_bound = 1.0f / std::sqrt(static_cast<float>(c.dt_rank));
      Tensor dtw = src.uniform(Shape{c.inner, c.dt_rank}, -dt_bound, dt_bound);
      l.dt_proj = Linear::create(std::move(dtw), Tensor(), f.attention, ctx);
      Tensor u = src.uniform(Shape{c.inner}, 0.0f, 1.0f);
      l.dt_bias = Tensor(Shape{c.inner});
      for (int64_t d = 0; d < c.inner; ++d) {
        const float dt = std::max(kDtFloor, std::exp(u.data()[d] * (std::log(kDtMax) - std::log(kDtMin)) + std::log(kDtMin)));
        l.dt_bias.data()[d] = dt + std::log(-std::expm1(-dt));  // softplus^-1(dt)
      }
      l.a = Tensor(Shape{c.inner, c.state});
      for (int64_t d = 0; d < c.inner; ++d)
        for (int64_t n = 0; n < c.state; ++n) l.a.row(d)[n] = -static_cast<float>(n + 1);  // -exp(log(n+1))
      l.d = Tensor(Shape{c.inner});
      for (int64_t d = 0; d < c.inner; ++d) l.d.data()[d] = 1.0f;
      l.out = src.linear(c.inner, c.hidden, out_std, false, 0.0f, f.feed_forward);
      m->layers_.push_back(std::move(l));
    }
    m->final_norm_ = src.normal(Shape{c.hidden}, 1.0f, kNormNoiseStd);
    m->head_ = tied_head(m->embed_, 1.0f, f.output, ctx);
    return m;
  }

  // HF MambaForCausalLM names: backbone.embeddings.weight, backbone.norm_f.weight and per layer
  // backbone.layers.N.norm.weight, .mixer.{in_proj.weight [2*inner, hidden] (x then z),
  // conv1d.weight [inner, 1, kernel], conv1d.bias, x_proj.weight [dt_rank + 2*state, inner] (dt, B,
  // C), dt_proj.weight, dt_proj.bias, A_log [inner, state] (A = -exp(A_log)), D [inner],
  // out_proj.weight}; the head is tied to the embeddings (tie_word_embeddings, Mamba's default).
  static Result<std::unique_ptr<MambaLm>> load(const Cfg& c, const FormatPlan& f, const std::string& path,
                                               const ExecContext& ctx) {
    AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
    auto m = std::make_unique<MambaLm>();
    m->c_ = c;
    AM_ASSIGN_OR_RETURN(m->embed_, file.read_f32("backbone.embeddings.weight", Shape{c.vocab, c.hidden}));
    // Rows [first, first + count) of a [rows, cols] tensor, as a Linear.
    auto rows = [&](const Tensor& w, int64_t first, int64_t count, WeightFormat fmt) {
      Tensor part(Shape{count, w.cols()});
      std::memcpy(part.data(), w.row(first), static_cast<std::size_t>(count * w.cols()) * sizeof(float));
      return Linear::create(std::move(part), Tensor(), fmt, ctx);
    };
    for (int64_t i = 0; i < c.layers; ++i) {
      const std::string b = "backbone.layers." + std::to_string(i) + ".";
      const std::string x = b + "mixer.";
      Layer l;
      AM_ASSIGN_OR_RETURN(l.norm, file.read_f32(b + "norm.weight", Shape{c.hidden}));
      AM_ASSIGN_OR_RETURN(Tensor in_proj, file.read_f32(x + "in_proj.weight", Shape{2 * c.inner, c.hidden}));
      l.in_x = rows(in_proj, 0, c.inner, f.attention);
      l.in_z = rows(in_proj, c.inner, c.inner, f.attention);
      AM_ASSIGN_OR_RETURN(l.conv_w, file.read_f32(x + "conv1d.weight", Shape{c.inner, 1, c.kernel}));
      AM_ASSIGN_OR_RETURN(l.conv_b, file.read_f32(x + "conv1d.bias", Shape{c.inner}));
      AM_ASSIGN_OR_RETURN(Tensor x_proj, file.read_f32(x + "x_proj.weight", Shape{c.dt_rank + 2 * c.state, c.inner}));
      l.x_dt = rows(x_proj, 0, c.dt_rank, f.attention);
      l.x_b = rows(x_proj, c.dt_rank, c.state, f.attention);
      l.x_c = rows(x_proj, c.dt_rank + c.state, c.state, f.attention);
      AM_ASSIGN_OR_RETURN(Tensor dt_w, file.read_f32(x + "dt_proj.weight", Shape{c.inner, c.dt_rank}));
      l.dt_proj = Linear::create(std::move(dt_w), Tensor(), f.attention, ctx);
      AM_ASSIGN_OR_RETURN(l.dt_bias, file.read_f32(x + "dt_proj.bias", Shape{c.inner}));
      AM_ASSIGN_OR_RETURN(l.a, file.read_f32(x + "A_log", Shape{c.inner, c.state}));
      for (int64_t k = 0; k < l.a.numel(); ++k) l.a.data()[k] = -std::exp(l.a.data()[k]);
      AM_ASSIGN_OR_RETURN(l.d, file.read_f32(x + "D", Shape{c.inner}));
      AM_ASSIGN_OR_RETURN(Tensor out_w, file.read_f32(x + "out_proj.weight", Shape{c.hidden, c.inner}));
      l.out = Linear::create(std::move(out_w), Tensor(), f.feed_forward, ctx);
      m->layers_.push_back(std::move(l));
    }
    AM_ASSIGN_OR_RETURN(m->final_norm_, file.read_f32("backbone.norm_f.weight", Shape{c.hidden}));
    m->head_ = tied_head(m->embed_, 1.0f, f.output, ctx);
    return m;
  }

  Result<State> fresh_state(Backend& be, int64_t batch) const override {
    State s;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      s.t.push_back(be.tensor(Shape{batch, c_.kernel - 1 > 0 ? c_.kernel - 1 : 1, c_.inner}));  // conv window
      s.t.push_back(be.tensor(Shape{batch, c_.inner, c_.state}));                                 // scan state
    }
    return s;
  }

  Status step(Backend& be, const int32_t* ids, int64_t batch, int64_t q_len, State& st, Tensor& x) const override {
    const int64_t rows = batch * q_len, hist = c_.kernel - 1;
    x = be.tensor(Shape{rows, c_.hidden});
    AM_RETURN_IF_ERROR(be.gather_rows(embed_.view(), ids, rows, x.view(), false));
    Tensor h = be.tensor(Shape{rows, c_.hidden}), xin = be.tensor(Shape{rows, c_.inner});
    Tensor z = be.tensor(Shape{rows, c_.inner}), xc = be.tensor(Shape{rows, c_.inner});
    Tensor window = be.tensor(Shape{batch * (hist + q_len), c_.inner});
    Tensor dtl = be.tensor(Shape{rows, c_.dt_rank}), bm = be.tensor(Shape{rows, c_.state});
    Tensor cm = be.tensor(Shape{rows, c_.state}), delta = be.tensor(Shape{rows, c_.inner});
    Tensor y = be.tensor(Shape{rows, c_.inner}), out = be.tensor(Shape{rows, c_.hidden});
    for (std::size_t li = 0; li < layers_.size(); ++li) {
      const Layer& l = layers_[li];
      Tensor& conv_state = st.t[2 * li];
      AM_RETURN_IF_ERROR(be.rms_norm(x.view(), l.norm.data(), c_.eps, h.view()));
      AM_RETURN_IF_ERROR(be.linear(l.in_x, h.view(), xin.view()));
      AM_RETURN_IF_ERROR(be.linear(l.in_z, h.view(), z.view()));
      // [carried window; this chunk] per sample, convolved without padding: the window is the
      // zero padding of a prompt and the history of a decode step alike.
      for (int64_t b = 0; b < batch; ++b) {
        if (hist > 0) AM_RETURN_IF_ERROR(copy_rows(be, conv_state.view().row_range(b * hist, hist), window.view(), b * (hist + q_len)));
        AM_RETURN_IF_ERROR(copy_rows(be, xin.view().row_range(b * q_len, q_len), window.view(), b * (hist + q_len) + hist));
      }
      Conv1dArgs conv;
      conv.x = window.view();
      conv.y = xc.view();
      conv.weight = l.conv_w.data();
      conv.bias = l.conv_b.data();
      conv.batch = batch;
      conv.in_len = hist + q_len;
      conv.in_channels = conv.out_channels = conv.groups = c_.inner;
      conv.kernel = c_.kernel;
      AM_RETURN_IF_ERROR(be.conv1d(conv));
      for (int64_t b = 0; b < batch && hist > 0; ++b) {
        AM_RETURN_IF_ERROR(copy_rows(be, window.view().row_range(b * (hist + q_len) + q_len, hist), conv_state.view(), b * hist));
      }
      AM_RETURN_IF_ERROR(be.activation(Activation::kSilu, xc.view()));
      AM_RETURN_IF_ERROR(be.linear(l.x_dt, xc.view(), dtl.view()));
      AM_RETURN_IF_ERROR(be.linear(l.x_b, xc.view(), bm.view()));
      AM_RETURN_IF_ERROR(be.linear(l.x_c, xc.view(), cm.view()));
      AM_RETURN_IF_ERROR(be.linear(l.dt_proj, dtl.view(), delta.view()));
      SelectiveScanArgs scan;
      scan.u = xc.view();
      scan.delta = delta.view();
      scan.B = bm.view();
      scan.C = cm.view();
      scan.y = y.view();
      scan.A = l.a.data();
      scan.D = l.d.data();
      scan.delta_bias = l.dt_bias.data();
      scan.delta_softplus = true;
      scan.batch = batch;
      scan.len = q_len;
      scan.channels = c_.inner;
      scan.state_size = c_.state;
      scan.state = st.t[2 * li + 1].data();
      AM_RETURN_IF_ERROR(be.selective_scan(scan));
      AM_RETURN_IF_ERROR(be.activation(Activation::kSilu, z.view()));
      AM_RETURN_IF_ERROR(be.mul(y.view(), z.view()));
      AM_RETURN_IF_ERROR(be.linear(l.out, y.view(), out.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), out.view()));
    }
    return be.rms_norm(x.view(), final_norm_.data(), c_.eps, x.view());
  }
  const Linear& head() const override { return head_; }
  int64_t hidden() const override { return c_.hidden; }
  std::size_t bytes() const override {
    std::size_t t = embed_.bytes() + final_norm_.bytes() + head_.weight_bytes();
    for (const Layer& l : layers_) {
      t += l.norm.bytes() + l.in_x.weight_bytes() + l.in_z.weight_bytes() + l.conv_w.bytes() + l.conv_b.bytes() +
           l.x_dt.weight_bytes() + l.x_b.weight_bytes() + l.x_c.weight_bytes() + l.dt_proj.weight_bytes() +
           l.dt_bias.bytes() + l.a.bytes() + l.d.bytes() + l.out.weight_bytes();
    }
    return t;
  }
  void ops(std::vector<std::pair<Op, WeightFormat>>& o) const override {
    for (Op op : {Op::kGatherRows, Op::kRmsNorm, Op::kConv1d, Op::kActivation, Op::kSelectiveScan, Op::kMul, Op::kAdd})
      require(o, op);
    require(o, Op::kLinear, layers_.front().in_x.format());
    require(o, Op::kLinear, layers_.front().out.format());
    require(o, Op::kLinear, head_.format());
  }

 private:
  struct Layer {
    Tensor norm;
    Linear in_x, in_z, x_dt, x_b, x_c, dt_proj, out;
    Tensor conv_w, conv_b, dt_bias, a, d;
  };
  Cfg c_{};
  Tensor embed_, final_norm_;
  std::vector<Layer> layers_;
  Linear head_;
};

// ---------------------------------------------------------------- RWKV-4
class RwkvLm final : public RecurrentLm {
 public:
  struct Cfg {
    int64_t layers, hidden, intermediate, vocab;
    float eps;
  };
  static Result<std::unique_ptr<RwkvLm>> create(const Cfg& c, const FormatPlan& f, uint64_t seed, const ExecContext& ctx) {
    std::size_t est = static_cast<std::size_t>(c.vocab * c.hidden) * 4 + linear_bytes(c.hidden, c.vocab, f.output, false) +
                      c.layers * (4 * linear_bytes(c.hidden, c.hidden, f.attention, false) +
                                  2 * linear_bytes(c.hidden, c.intermediate, f.feed_forward, false) +
                                  linear_bytes(c.hidden, c.hidden, f.feed_forward, false));
    AM_RETURN_IF_ERROR(check_weight_budget("state-space", est));
    auto m = std::make_unique<RwkvLm>();
    m->c_ = c;
    SeededWeights src(seed, kWeightStream, ctx);
    const int64_t C = c.hidden;
    m->embed_ = src.normal(Shape{c.vocab, C}, 0.0f, kLinearStd);
    m->ln0_g_ = src.normal(Shape{C}, 1.0f, kNormNoiseStd);
    m->ln0_b_ = src.normal(Shape{C}, 0.0f, kNormNoiseStd);
    const float out_std = kLinearStd / std::sqrt(2.0f * static_cast<float>(c.layers));
    for (int64_t i = 0; i < c.layers; ++i) {
      Layer l;
      const double r01 = c.layers > 1 ? static_cast<double>(i) / static_cast<double>(c.layers - 1) : 0.0;
      const double r1a0 = 1.0 - static_cast<double>(i) / static_cast<double>(c.layers);
      l.decay = Tensor(Shape{C});
      l.first = Tensor(Shape{C});
      Tensor mk(Shape{1, C}), mv(Shape{1, C}), mr(Shape{1, C});
      for (int64_t j = 0; j < C; ++j) {
        const double frac = static_cast<double>(j) / static_cast<double>(C);
        l.decay.data()[j] = static_cast<float>(-5.0 + 8.0 * std::pow(static_cast<double>(j) / std::max<int64_t>(1, C - 1), 0.7 + 1.3 * r01));
        const double zigzag = 0.5 * (static_cast<double>((j + 1) % 3) - 1.0);
        l.first.data()[j] = static_cast<float>(std::log(0.3) + zigzag);
        mk.data()[j] = static_cast<float>(std::pow(frac, r1a0));
        mv.data()[j] = static_cast<float>(std::pow(frac, r1a0) + 0.3 * r01);
        mr.data()[j] = static_cast<float>(std::pow(frac, 0.5 * r1a0));
      }
      l.att_mix = mixes({&mk, &mv, &mr});
      l.ffn_mix = mixes({&mk, &mr});
      l.ln1_g = src.normal(Shape{C}, 1.0f, kNormNoiseStd);
      l.ln1_b = src.normal(Shape{C}, 0.0f, kNormNoiseStd);
      l.ln2_g = src.normal(Shape{C}, 1.0f, kNormNoiseStd);
      l.ln2_b = src.normal(Shape{C}, 0.0f, kNormNoiseStd);
      l.att_k = src.linear(C, C, kLinearStd, false, 0.0f, f.attention);
      l.att_v = src.linear(C, C, kLinearStd, false, 0.0f, f.attention);
      l.att_r = src.linear(C, C, kLinearStd, false, 0.0f, f.attention);
      l.att_o = src.linear(C, C, out_std, false, 0.0f, f.attention);
      l.ffn_k = src.linear(C, c.intermediate, kLinearStd, false, 0.0f, f.feed_forward);
      l.ffn_r = src.linear(C, C, kLinearStd, false, 0.0f, f.feed_forward);
      l.ffn_v = src.linear(c.intermediate, C, out_std, false, 0.0f, f.feed_forward);
      m->layers_.push_back(std::move(l));
    }
    m->lnf_g_ = src.normal(Shape{C}, 1.0f, kNormNoiseStd);
    m->lnf_b_ = src.normal(Shape{C}, 0.0f, kNormNoiseStd);
    m->head_ = src.linear(C, c.vocab, kLinearStd, false, 0.0f, f.output);
    return m;
  }

  // HF RwkvForCausalLM (RWKV-4) names: rwkv.embeddings.weight, rwkv.blocks.0.pre_ln.*,
  // rwkv.blocks.N.{ln1,ln2}.{weight,bias}, rwkv.blocks.N.attention.{time_decay, time_first,
  // time_mix_key, time_mix_value, time_mix_receptance, key, value, receptance, output},
  // rwkv.blocks.N.feed_forward.{time_mix_key, time_mix_receptance, key, receptance, value},
  // rwkv.ln_out.*, head.weight. time_decay is stored raw (the WKV op applies -exp).
  static Result<std::unique_ptr<RwkvLm>> load(const Cfg& c, const FormatPlan& f, const std::string& path,
                                              const ExecContext& ctx) {
    AM_ASSIGN_OR_RETURN(Checkpoint file, Checkpoint::open(path));
    const int64_t C = c.hidden;
    auto m = std::make_unique<RwkvLm>();
    m->c_ = c;
    auto read = [&](const std::string& name, const Shape& shape, Tensor& dst) -> Status {
      AM_ASSIGN_OR_RETURN(dst, file.read_f32(name, shape));
      return Status::Ok();
    };
    auto linear = [&](const std::string& name, int64_t in, int64_t out, WeightFormat fmt, Linear& dst) -> Status {
      AM_ASSIGN_OR_RETURN(Tensor w, file.read_f32(name + ".weight", Shape{out, in}));
      dst = Linear::create(std::move(w), Tensor(), fmt, ctx);
      return Status::Ok();
    };
    AM_RETURN_IF_ERROR(read("rwkv.embeddings.weight", Shape{c.vocab, C}, m->embed_));
    AM_RETURN_IF_ERROR(read("rwkv.blocks.0.pre_ln.weight", Shape{C}, m->ln0_g_));
    AM_RETURN_IF_ERROR(read("rwkv.blocks.0.pre_ln.bias", Shape{C}, m->ln0_b_));
    for (int64_t i = 0; i < c.layers; ++i) {
      const std::string b = "rwkv.blocks." + std::to_string(i) + ".";
      const std::string a = b + "attention.", ff = b + "feed_forward.";
      Layer l;
      Tensor mk, mv, mr, fmk, fmr;
      AM_RETURN_IF_ERROR(read(b + "ln1.weight", Shape{C}, l.ln1_g));
      AM_RETURN_IF_ERROR(read(b + "ln1.bias", Shape{C}, l.ln1_b));
      AM_RETURN_IF_ERROR(read(b + "ln2.weight", Shape{C}, l.ln2_g));
      AM_RETURN_IF_ERROR(read(b + "ln2.bias", Shape{C}, l.ln2_b));
      AM_RETURN_IF_ERROR(read(a + "time_decay", Shape{C}, l.decay));
      AM_RETURN_IF_ERROR(read(a + "time_first", Shape{C}, l.first));
      AM_RETURN_IF_ERROR(read(a + "time_mix_key", Shape{1, 1, C}, mk));
      AM_RETURN_IF_ERROR(read(a + "time_mix_value", Shape{1, 1, C}, mv));
      AM_RETURN_IF_ERROR(read(a + "time_mix_receptance", Shape{1, 1, C}, mr));
      AM_RETURN_IF_ERROR(read(ff + "time_mix_key", Shape{1, 1, C}, fmk));
      AM_RETURN_IF_ERROR(read(ff + "time_mix_receptance", Shape{1, 1, C}, fmr));
      l.att_mix = mixes({&mk, &mv, &mr});
      l.ffn_mix = mixes({&fmk, &fmr});
      AM_RETURN_IF_ERROR(linear(a + "key", C, C, f.attention, l.att_k));
      AM_RETURN_IF_ERROR(linear(a + "value", C, C, f.attention, l.att_v));
      AM_RETURN_IF_ERROR(linear(a + "receptance", C, C, f.attention, l.att_r));
      AM_RETURN_IF_ERROR(linear(a + "output", C, C, f.attention, l.att_o));
      AM_RETURN_IF_ERROR(linear(ff + "key", C, c.intermediate, f.feed_forward, l.ffn_k));
      AM_RETURN_IF_ERROR(linear(ff + "receptance", C, C, f.feed_forward, l.ffn_r));
      AM_RETURN_IF_ERROR(linear(ff + "value", c.intermediate, C, f.feed_forward, l.ffn_v));
      m->layers_.push_back(std::move(l));
    }
    AM_RETURN_IF_ERROR(read("rwkv.ln_out.weight", Shape{C}, m->lnf_g_));
    AM_RETURN_IF_ERROR(read("rwkv.ln_out.bias", Shape{C}, m->lnf_b_));
    AM_RETURN_IF_ERROR(linear("head", C, c.vocab, f.output, m->head_));
    return m;
  }

  Result<State> fresh_state(Backend& be, int64_t batch) const override {
    State s;
    const int64_t C = c_.hidden;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      s.t.push_back(be.tensor(Shape{batch, C}));  // time-mix token shift
      s.t.push_back(be.tensor(Shape{batch, C}));  // channel-mix token shift
      Tensor wkv = be.tensor(Shape{batch, 3, C});  // aa, bb, pp
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < C; ++j) wkv.data()[(b * 3 + 2) * C + j] = kRwkvInitialMax;
      AM_RETURN_IF_ERROR(be.from_host(wkv.view()));
      s.t.push_back(std::move(wkv));
    }
    return s;
  }

  Status step(Backend& be, const int32_t* ids, int64_t batch, int64_t q_len, State& st, Tensor& x) const override {
    const int64_t rows = batch * q_len, C = c_.hidden;
    const float eps = c_.eps;
    x = be.tensor(Shape{rows, C});
    AM_RETURN_IF_ERROR(be.gather_rows(embed_.view(), ids, rows, x.view(), false));
    AM_RETURN_IF_ERROR(be.layer_norm(x.view(), ln0_g_.data(), ln0_b_.data(), eps, x.view()));
    const Shape rc{rows, C};
    Tensor h = be.tensor(rc), shifted = be.tensor(rc), xk = be.tensor(rc), xv = be.tensor(rc), xr = be.tensor(rc);
    Tensor k = be.tensor(rc), v = be.tensor(rc), r = be.tensor(rc), wkv = be.tensor(rc), out = be.tensor(rc);
    Tensor fk = be.tensor(Shape{rows, c_.intermediate}), fk2 = be.tensor(Shape{rows, c_.intermediate});
    std::vector<int32_t> zeros(static_cast<std::size_t>(rows), 0);
    for (std::size_t li = 0; li < layers_.size(); ++li) {
      const Layer& l = layers_[li];
      // Time mix.
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), l.ln1_g.data(), l.ln1_b.data(), eps, h.view()));
      AM_RETURN_IF_ERROR(shift(be, h.view(), batch, q_len, st.t[3 * li], shifted.view()));
      AM_RETURN_IF_ERROR(mix(be, l.att_mix, 0, h.view(), shifted.view(), zeros, xk.view()));
      AM_RETURN_IF_ERROR(mix(be, l.att_mix, 1, h.view(), shifted.view(), zeros, xv.view()));
      AM_RETURN_IF_ERROR(mix(be, l.att_mix, 2, h.view(), shifted.view(), zeros, xr.view()));
      AM_RETURN_IF_ERROR(be.linear(l.att_k, xk.view(), k.view()));
      AM_RETURN_IF_ERROR(be.linear(l.att_v, xv.view(), v.view()));
      AM_RETURN_IF_ERROR(be.linear(l.att_r, xr.view(), r.view()));
      AM_RETURN_IF_ERROR(be.activation(Activation::kSigmoid, r.view()));
      TimeMixArgs tm;
      tm.k = k.view();
      tm.v = v.view();
      tm.out = wkv.view();
      tm.time_decay = l.decay.data();
      tm.time_first = l.first.data();
      tm.batch = batch;
      tm.len = q_len;
      tm.channels = C;
      tm.state = st.t[3 * li + 2].data();
      AM_RETURN_IF_ERROR(be.time_mix(tm));
      AM_RETURN_IF_ERROR(be.mul(wkv.view(), r.view()));
      AM_RETURN_IF_ERROR(be.linear(l.att_o, wkv.view(), out.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), out.view()));
      // Channel mix.
      AM_RETURN_IF_ERROR(be.layer_norm(x.view(), l.ln2_g.data(), l.ln2_b.data(), eps, h.view()));
      AM_RETURN_IF_ERROR(shift(be, h.view(), batch, q_len, st.t[3 * li + 1], shifted.view()));
      AM_RETURN_IF_ERROR(mix(be, l.ffn_mix, 0, h.view(), shifted.view(), zeros, xk.view()));
      AM_RETURN_IF_ERROR(mix(be, l.ffn_mix, 1, h.view(), shifted.view(), zeros, xr.view()));
      AM_RETURN_IF_ERROR(be.linear(l.ffn_k, xk.view(), fk.view()));
      AM_RETURN_IF_ERROR(be.activation(Activation::kRelu, fk.view()));
      AM_RETURN_IF_ERROR(copy_rows(be, fk.view(), fk2.view(), 0));
      AM_RETURN_IF_ERROR(be.mul(fk.view(), fk2.view()));  // squared ReLU
      AM_RETURN_IF_ERROR(be.linear(l.ffn_v, fk.view(), out.view()));
      AM_RETURN_IF_ERROR(be.linear(l.ffn_r, xr.view(), r.view()));
      AM_RETURN_IF_ERROR(be.activation(Activation::kSigmoid, r.view()));
      AM_RETURN_IF_ERROR(be.mul(out.view(), r.view()));
      AM_RETURN_IF_ERROR(be.add(x.view(), out.view()));
    }
    return be.layer_norm(x.view(), lnf_g_.data(), lnf_b_.data(), eps, x.view());
  }
  const Linear& head() const override { return head_; }
  int64_t hidden() const override { return c_.hidden; }
  std::size_t bytes() const override {
    std::size_t t = embed_.bytes() + ln0_g_.bytes() + ln0_b_.bytes() + lnf_g_.bytes() + lnf_b_.bytes() + head_.weight_bytes();
    for (const Layer& l : layers_) {
      t += l.decay.bytes() + l.first.bytes() + l.att_mix.bytes() + l.ffn_mix.bytes() + 4 * l.ln1_g.bytes() +
           l.att_k.weight_bytes() + l.att_v.weight_bytes() + l.att_r.weight_bytes() + l.att_o.weight_bytes() +
           l.ffn_k.weight_bytes() + l.ffn_r.weight_bytes() + l.ffn_v.weight_bytes();
    }
    return t;
  }
  void ops(std::vector<std::pair<Op, WeightFormat>>& o) const override {
    for (Op op : {Op::kGatherRows, Op::kLayerNorm, Op::kActivation, Op::kTimeMix, Op::kMul, Op::kAdd}) require(o, op);
    require(o, Op::kLinear, layers_.front().att_k.format());
    require(o, Op::kLinear, layers_.front().ffn_k.format());
    require(o, Op::kLinear, head_.format());
  }

 private:
  struct Layer {
    Tensor decay, first, att_mix, ffn_mix;  // mixes: [2*n, C] rows (mix_i, 1 - mix_i)
    Tensor ln1_g, ln1_b, ln2_g, ln2_b;
    Linear att_k, att_v, att_r, att_o, ffn_k, ffn_r, ffn_v;
  };
  static Tensor mixes(std::initializer_list<const Tensor*> ms) {
    const int64_t C = (*ms.begin())->cols();
    Tensor t(Shape{static_cast<int64_t>(2 * ms.size()), C});
    int64_t i = 0;
    for (const Tensor* m : ms) {
      for (int64_t j = 0; j < C; ++j) {
        t.row(2 * i)[j] = m->data()[j];
        t.row(2 * i + 1)[j] = 1.0f - m->data()[j];
      }
      ++i;
    }
    return t;
  }
  // shifted[t] = h[t-1] within a sample, the carried previous row at t = 0; the carry becomes
  // each sample's last row.
  static Status shift(Backend& be, ConstTensorView h, int64_t batch, int64_t q_len, Tensor& carry,
                      TensorView shifted) {
    for (int64_t b = 0; b < batch; ++b) {
      AM_RETURN_IF_ERROR(copy_rows(be, carry.view().row_range(b, 1), shifted, b * q_len));
      if (q_len > 1) AM_RETURN_IF_ERROR(copy_rows(be, h.row_range(b * q_len, q_len - 1), shifted, b * q_len + 1));
      AM_RETURN_IF_ERROR(copy_rows(be, h.row_range(b * q_len + q_len - 1, 1), carry.view(), b));
    }
    return Status::Ok();
  }
  // y = h * mix_i + shifted * (1 - mix_i), the per-channel vectors broadcast via gather_rows.
  static Status mix(Backend& be, const Tensor& table, int64_t i, ConstTensorView h, ConstTensorView shifted,
                    std::vector<int32_t>& ids, TensorView y) {
    const int64_t rows = h.rows();
    Tensor other = be.tensor(Shape{rows, h.cols()});
    std::fill(ids.begin(), ids.end(), static_cast<int32_t>(2 * i));
    AM_RETURN_IF_ERROR(be.gather_rows(table.view(), ids.data(), rows, y, false));
    AM_RETURN_IF_ERROR(be.mul(y, h));
    std::fill(ids.begin(), ids.end(), static_cast<int32_t>(2 * i + 1));
    AM_RETURN_IF_ERROR(be.gather_rows(table.view(), ids.data(), rows, other.view(), false));
    AM_RETURN_IF_ERROR(be.mul(other.view(), shifted));
    return be.add(y, other.view());
  }

  Cfg c_{};
  Tensor embed_, ln0_g_, ln0_b_, lnf_g_, lnf_b_;
  std::vector<Layer> layers_;
  Linear head_;
};

// ---------------------------------------------------------------- the graph
class RecurrentGraph final : public ModelGraph {
 public:
  RecurrentGraph(std::unique_ptr<RecurrentLm> lm, int64_t batch, int64_t prompt_len, int64_t steps,
                 std::vector<int32_t> prompt, std::vector<int32_t> forced)
      : lm_(std::move(lm)), batch_(batch), prompt_len_(prompt_len), steps_(steps), prompt_(std::move(prompt)),
        forced_(std::move(forced)) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override {
    std::vector<std::pair<Op, WeightFormat>> o;
    lm_->ops(o);
    return o;
  }
  std::size_t weights_bytes() const override { return lm_->bytes(); }
  int64_t samples_per_run() const override { return batch_; }
  int64_t tokens_per_run() const override { return batch_ * (prompt_len_ + steps_); }

  Result<GraphOutput> forward(Backend& be) const override {
    const int64_t vocab = lm_->head().out_features();
    GraphOutput out;
    out.logits = true;
    out.output = Tensor(Shape{batch_ * (steps_ + 1), vocab});
    AM_ASSIGN_OR_RETURN(RecurrentLm::State st, lm_->fresh_state(be, batch_));
    Tensor hidden, last = be.tensor(Shape{batch_, lm_->hidden()}), logits = be.tensor(Shape{batch_, vocab});
    const Clock::time_point start = Clock::now();
    AM_RETURN_IF_ERROR(lm_->step(be, prompt_.data(), batch_, prompt_len_, st, hidden));
    AM_RETURN_IF_ERROR(last_rows(be, hidden.view(), batch_, prompt_len_, last.view()));
    AM_RETURN_IF_ERROR(be.linear(lm_->head(), last.view(), logits.view()));
    // Each step's logits come to the host, as a sampler needs them (the wait is in the timing).
    AM_RETURN_IF_ERROR(be.to_host(logits.view()));
    out.phases.prefill_ms = ms_since(start);
    out.phases.prefill_tokens = batch_ * prompt_len_;
    store(logits, 0, out.output);
    const Clock::time_point decode_start = Clock::now();
    std::vector<int32_t> ids(static_cast<std::size_t>(batch_));
    for (int64_t t = 0; t < steps_; ++t) {
      for (int64_t b = 0; b < batch_; ++b) ids[static_cast<std::size_t>(b)] = forced_[static_cast<std::size_t>(b * steps_ + t)];
      AM_RETURN_IF_ERROR(lm_->step(be, ids.data(), batch_, 1, st, hidden));
      AM_RETURN_IF_ERROR(be.linear(lm_->head(), hidden.view(), logits.view()));
      AM_RETURN_IF_ERROR(be.to_host(logits.view()));
      store(logits, t + 1, out.output);
      if (t == 0) out.phases.first_token_ms = ms_since(start);
    }
    out.phases.decode_ms = steps_ > 0 ? ms_since(decode_start) : 0.0;
    out.phases.decode_tokens = batch_ * steps_;
    if (steps_ == 0) out.phases.first_token_ms = out.phases.prefill_ms;
    return out;
  }

 private:
  void store(const Tensor& logits, int64_t t, Tensor& all) const {
    for (int64_t b = 0; b < batch_; ++b) {
      std::memcpy(all.row(b * (steps_ + 1) + t), logits.row(b), logits.cols() * sizeof(float));
    }
  }
  std::unique_ptr<RecurrentLm> lm_;
  int64_t batch_, prompt_len_, steps_;
  std::vector<int32_t> prompt_, forced_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_state_space_graph(const jobs::JobSpec& spec, Precision precision,
                                                            const ExecContext& ctx) {
  return build_state_space_graph_on(spec, precision, ctx, nullptr, nullptr);
}

Result<std::unique_ptr<ModelGraph>> build_state_space_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                               const ExecContext& ctx,
                                                               const std::vector<int32_t>* prompt,
                                                               const std::vector<int32_t>* forced) {
  ConfigReader cfg(spec.model_config, "state-space");
  AM_ASSIGN_OR_RETURN(std::string variant, cfg.text("variant", "mamba"));
  const FormatPlan formats = format_plan_for(precision);
  AM_ASSIGN_OR_RETURN(int64_t layers, cfg.dim("layers"));
  AM_ASSIGN_OR_RETURN(int64_t hidden, cfg.dim("hidden"));
  AM_ASSIGN_OR_RETURN(int64_t intermediate, cfg.dim("intermediate"));
  AM_ASSIGN_OR_RETURN(int64_t vocab, cfg.dim("vocab"));
  AM_ASSIGN_OR_RETURN(double eps, cfg.number("norm_eps", 1e-5, 1e-30, 1.0));
  AM_ASSIGN_OR_RETURN(int64_t steps, decode_steps_from(cfg));
  std::unique_ptr<RecurrentLm> lm;
  if (variant == "mamba") {
    MambaLm::Cfg c{layers, hidden, intermediate, 0, 0, 0, vocab, static_cast<float>(eps)};
    AM_ASSIGN_OR_RETURN(c.state, cfg.dim("state_size"));
    AM_ASSIGN_OR_RETURN(c.kernel, cfg.dim("conv_kernel"));
    AM_ASSIGN_OR_RETURN(c.dt_rank, cfg.dim("dt_rank"));
    // model_config "weights_path" names a Mamba safetensors checkpoint; without it, seeded weights.
    AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "state-space"));
    if (checkpoint) {
      AM_ASSIGN_OR_RETURN(lm, MambaLm::load(c, formats, *checkpoint, ctx));
    } else {
      AM_ASSIGN_OR_RETURN(lm, MambaLm::create(c, formats, spec.seed, ctx));
    }
  } else if (variant == "rwkv") {
    RwkvLm::Cfg c{layers, hidden, intermediate, vocab, static_cast<float>(eps)};
    // model_config "weights_path" names an RWKV-4 safetensors checkpoint; without it, seeded weights.
    AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "state-space"));
    if (checkpoint) {
      AM_ASSIGN_OR_RETURN(lm, RwkvLm::load(c, formats, *checkpoint, ctx));
    } else {
      AM_ASSIGN_OR_RETURN(lm, RwkvLm::create(c, formats, spec.seed, ctx));
    }
  } else {
    return cfg.error("'variant' must be \"mamba\" or \"rwkv\", got \"" + variant + "\"");
  }
  const int64_t batch = spec.batch, prompt_len = spec.seq_len;
  if ((prompt && static_cast<int64_t>(prompt->size()) != batch * prompt_len) ||
      (forced && static_cast<int64_t>(forced->size()) != batch * steps)) {
    return invalid_argument("state-space: given tokens must be batch*seq_len (prompt) and batch*decode_steps (forced)");
  }
  for (const std::vector<int32_t>* ids : {prompt, forced}) {
    for (std::size_t i = 0; ids && i < ids->size(); ++i) {
      if ((*ids)[i] < 0 || (*ids)[i] >= vocab) return invalid_argument("state-space: token id out of range");
    }
  }
  return std::unique_ptr<ModelGraph>(std::make_unique<RecurrentGraph>(
      std::move(lm), batch, prompt_len, steps,
      prompt ? *prompt : seeded_token_ids(batch * prompt_len, vocab, spec.seed, kPromptStream),
      forced ? *forced : seeded_token_ids(batch * steps, vocab, spec.seed, kForcedStream)));
}

}  // namespace am::kernels
