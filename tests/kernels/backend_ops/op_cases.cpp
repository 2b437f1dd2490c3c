#include "tests/kernels/backend_ops/op_cases.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "jobs/precision.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/fma_chain.h"
#include "kernels/cpu/linear.h"
#include "kernels/exec_context.h"
#include "kernels/formats/weight_format.h"
#include "kernels/rng.h"

namespace am::kernels::testing {
namespace {

const ExecContext kBuildCtx{KernelPath::kScalar, nullptr, /*cpu_weights=*/false};
constexpr int64_t kCallsPerWait = 64;

// Inputs live where the backend keeps activations (tensor() + from_host()), as a graph's do;
// outputs are poisoned with NaN first, so an element the op never writes fails the comparison.
class Io {
 public:
  explicit Io(Backend& be) : be_(be) {}
  Result<Tensor> in(Shape shape, uint64_t seed, float mean = 0.0f, float stddev = 1.0f) {
    Tensor t = be_.tensor(shape);
    fill_normal(t.data(), t.numel(), mean, stddev, seed, kBuildCtx);
    AM_RETURN_IF_ERROR(be_.from_host(t.view()));
    made_.push_back(t.view());
    return t;
  }
  Result<Tensor> out(Shape shape) {
    Tensor t = be_.tensor(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = std::numeric_limits<float>::quiet_NaN();
    AM_RETURN_IF_ERROR(be_.from_host(t.view()));
    made_.push_back(t.view());
    return t;
  }
  // The case's op call: run once, or, while timing is on, timed (op_timing()) after
  // `warmup_calls` untimed calls (a call per weight copy it rotates over).
  Status op(const std::function<Status()>& call, int64_t warmup_calls = 1) {
    OpTiming& t = op_timing();
    if (!t.on) return call();
    t.bytes = 0;
    for (ConstTensorView v : made_) t.bytes += static_cast<double>(v.numel()) * sizeof(float);
    for (int64_t i = 0; i < warmup_calls; ++i) AM_RETURN_IF_ERROR(call());  // weights uploaded, pipelines built
    AM_RETURN_IF_ERROR(sync());
    (void)be_.take_device_profile();  // the warm-up's uploads are not the op's
    int64_t reps = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0.0, waiting = 0.0;
    auto timed_sync = [&]() -> Status {
      const auto w0 = std::chrono::steady_clock::now();
      Status st = sync();
      waiting += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      return st;
    };
    while (elapsed < t.min_s || reps < 3) {
      AM_RETURN_IF_ERROR(call());
      ++reps;
      // Waits every kCallsPerWait calls: the clock then sees the device's work and the recorded
      // work stays bounded, while the wait (a submit and a fence, ~100 us on a GPU) stays a
      // small part of a short op's time, as it is in a model's forward pass.
      if (reps % kCallsPerWait == 0) AM_RETURN_IF_ERROR(timed_sync());
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    AM_RETURN_IF_ERROR(timed_sync());
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    t.host_ms = (elapsed - waiting) * 1e3 / static_cast<double>(reps);
    t.ms = elapsed * 1e3 / static_cast<double>(reps);
    t.profile = be_.take_device_profile();
    t.reps = reps;
    return Status::Ok();
  }
  // The outputs, on the host.
  Result<std::vector<Tensor>> done(std::vector<Tensor> outs) {
    for (Tensor& t : outs) AM_RETURN_IF_ERROR(be_.to_host(t.view()));
    return outs;
  }
  Result<std::vector<Tensor>> done(Tensor out) {
    std::vector<Tensor> outs;
    outs.push_back(std::move(out));
    return done(std::move(outs));
  }

 private:
  // Waits for the recorded work; moves no data (a download here would be timed as the op's).
  Status sync() { return be_.synchronize(); }
  Backend& be_;
  std::vector<ConstTensorView> made_;
};

Tensor host(Shape shape, uint64_t seed, float mean = 0.0f, float stddev = 1.0f) {
  Tensor t(shape);
  fill_normal(t.data(), t.numel(), mean, stddev, seed, kBuildCtx);
  return t;
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

void add_linear_cases(std::vector<OpCase>& cases) {
  struct Shape3 {
    int64_t m, k, n;
  };
  for (const jobs::WeightFormatInfo& fi : jobs::all_weight_formats()) {
    const WeightFormat f = fi.format;
    const bool kquant = f == WeightFormat::kQ2_K || f == WeightFormat::kQ3_K;
    // m 1: the matrix-vector path; 7: below the GEMM threshold, batch > 1; 37: the tiled GEMM
    // with a partial tile; 130 x 131: more than one 128 x 128 tile each way. n odd (not a
    // multiple of any tile or vector width); k a whole number of blocks (256 values for the
    // k-quants), long rows at 2048 and 4128 (129 blocks: a matrix-vector row spread over more
    // invocations on Vulkan).
    const std::vector<Shape3> shapes = kquant ? std::vector<Shape3>{{1, 512, 33}, {7, 256, 65}, {37, 512, 19}}
                                              : std::vector<Shape3>{{1, 96, 33}, {7, 160, 65}, {37, 96, 19}, {3, 2048, 11},
                                                                    {130, 224, 131}, {2, 4128, 37}};
    for (const Shape3& s : shapes) {
      auto layer = std::make_shared<Linear>(
          Linear::create(host(Shape{s.n, s.k}, 100 + s.k, 0.0f, 0.5f), host(Shape{s.n}, 200 + s.n), f, kBuildCtx));
      OpCase c;
      c.name = "linear " + std::string(fi.name) + " " + dims({s.m, s.k, s.n});
      c.op = Op::kLinear;
      c.format = f;
      c.flops = 2.0 * static_cast<double>(s.m * s.k * s.n);
      c.weight_bytes = static_cast<double>(layer->weight_bytes());
      c.tolerance = f == WeightFormat::kF32 || f == WeightFormat::kBF16 ? OpTolerance::kFloatMatmul
                    : f == WeightFormat::kF16                             ? OpTolerance::kF16Matmul
                                                                          : OpTolerance::kQuantMatmul;
      c.run = [layer, s](Backend& be) -> Result<std::vector<Tensor>> {
        Io io(be);
        AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{s.m, s.k}, 300 + s.m));
        AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{s.m, s.n}));
        AM_RETURN_IF_ERROR(io.op([&] { return be.linear(*layer, x.view(), y.view()); }));
        std::vector<Tensor> outs;
        outs.push_back(std::move(y));
        return io.done(std::move(outs));
      };
      cases.push_back(std::move(c));
    }
  }
}

// A case over one or more outputs, inputs built by the body.
OpCase make_case(std::string name, Op op, double tol, std::function<Result<std::vector<Tensor>>(Backend&, Io&)> body) {
  OpCase c;
  c.name = std::move(name);
  c.op = op;
  c.tolerance = tol;
  c.run = [body = std::move(body)](Backend& be) -> Result<std::vector<Tensor>> {
    Io io(be);
    return body(be, io);
  };
  return c;
}

void add_row_cases(std::vector<OpCase>& cases) {
  auto table = std::make_shared<Tensor>(host(Shape{50, 37}, 11));
  auto gamma = std::make_shared<Tensor>(host(Shape{4099}, 12, 1.0f, 0.2f));
  auto beta = std::make_shared<Tensor>(host(Shape{4099}, 13));
  for (bool acc : {false, true}) {
    cases.push_back(make_case(std::string("gather_rows ") + (acc ? "accumulate" : "overwrite") + " 23x37",
                              Op::kGatherRows, OpTolerance::kElementwise,
                              [table, acc](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                std::vector<int32_t> ids;
                                for (int i = 0; i < 23; ++i) ids.push_back((i * 17 + 3) % 50);
                                AM_ASSIGN_OR_RETURN(Tensor y, acc ? io.in(Shape{23, 37}, 14) : io.out(Shape{23, 37}));
                                AM_RETURN_IF_ERROR(io.op([&] { return be.gather_rows(table->view(), ids.data(), 23, y.view(), acc); }));
                                return io.done(std::move(y));
                              }));
  }
  // Short rows, rows longer than a work-group, in place and out of place.
  for (const std::pair<int64_t, int64_t>& shape_rc : {std::pair<int64_t, int64_t>{9, 37}, {3, 4099}}) {
    // Named copies: clang 14 cannot capture structured bindings in the lambdas below.
    const int64_t rows = shape_rc.first, cols = shape_rc.second;
    for (bool in_place : {false, true}) {
      const std::string shape = dims({rows, cols}) + (in_place ? " in place" : "");
      cases.push_back(make_case("layer_norm " + shape, Op::kLayerNorm, OpTolerance::kNorm,
                                [=](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                  AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{rows, cols}, 20, 0.5f, 2.0f));
                                  AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{rows, cols}));
                                  TensorView out = in_place ? x.view() : y.view();
                                  AM_RETURN_IF_ERROR(io.op([&] { return be.layer_norm(x.view(), gamma->data(), beta->data(), 1e-5f, out); }));
                                  return io.done(in_place ? std::move(x) : std::move(y));
                                }));
      cases.push_back(make_case("rms_norm " + shape, Op::kRmsNorm, OpTolerance::kNorm,
                                [=](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                  AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{rows, cols}, 21, 0.5f, 2.0f));
                                  AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{rows, cols}));
                                  TensorView out = in_place ? x.view() : y.view();
                                  AM_RETURN_IF_ERROR(io.op([&] { return be.rms_norm(x.view(), gamma->data(), 1e-6f, out); }));
                                  return io.done(in_place ? std::move(x) : std::move(y));
                                }));
      cases.push_back(make_case("softmax " + dims({rows, cols}) + (in_place ? " scaled" : ""), Op::kSoftmax,
                                OpTolerance::kTranscendental, [=](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                  AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{rows, cols}, 22, 0.0f, in_place ? 8.0f : 1.0f));
                                  AM_RETURN_IF_ERROR(io.op([&] { return be.softmax(x.view()); }));
                                  return io.done(std::move(x));
                                }));
    }
  }
  for (Activation act : {Activation::kGeluErf, Activation::kGeluTanh, Activation::kRelu, Activation::kSilu,
                         Activation::kSigmoid, Activation::kQuickGelu}) {
    cases.push_back(make_case("activation " + std::string(activation_name(act)) + " 1037", Op::kActivation,
                              act == Activation::kRelu ? OpTolerance::kElementwise : OpTolerance::kTranscendental,
                              [act](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{17, 61}, 23, 0.0f, 3.0f));
                                AM_RETURN_IF_ERROR(io.op([&] { return be.activation(act, x.view()); }));
                                return io.done(std::move(x));
                              }));
  }
  for (Op op : {Op::kAdd, Op::kMul}) {
    for (bool aliased : {false, true}) {
      cases.push_back(make_case(std::string(op_name(op)) + (aliased ? " y,y" : " y,a") + " 17x33", op,
                                OpTolerance::kElementwise, [op, aliased](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                  AM_ASSIGN_OR_RETURN(Tensor y, io.in(Shape{17, 33}, 24));
                                  AM_ASSIGN_OR_RETURN(Tensor a, io.in(Shape{17, 33}, 25));
                                  ConstTensorView rhs = aliased ? ConstTensorView(y.view()) : ConstTensorView(a.view());
                                  AM_RETURN_IF_ERROR(io.op([&] { return op == Op::kAdd ? be.add(y.view(), rhs) : be.mul(y.view(), rhs); }));
                                  return io.done(std::move(y));
                                }));
    }
  }
  cases.push_back(make_case("index_rows 9 of 23x37, into rows 2..10", Op::kIndexRows, OpTolerance::kElementwise,
                            [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                              const std::vector<int32_t> ids = {22, 0, 5, 5, 17, 3, 9, 1, 12};
                              AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{23, 37}, 26));
                              AM_ASSIGN_OR_RETURN(Tensor y, io.in(Shape{12, 37}, 27));
                              AM_RETURN_IF_ERROR(io.op([&] { return be.index_rows(x.view(), ids.data(), 9, y.view().row_range(2, 9)); }));
                              return io.done(std::move(y));
                            }));
  cases.push_back(make_case("scatter_add_rows repeated ids 11x37 into 6x37", Op::kScatterAddRows,
                            OpTolerance::kElementwise, [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                              const std::vector<int32_t> ids = {0, 5, 2, 2, 4, 0, 1, 3, 5, 5, 2};
                              const std::vector<float> scales = {0.5f, 1.0f, -2.0f, 0.25f, 1.5f, 3.0f,
                                                                 0.1f, -1.0f, 0.75f, 2.0f, 1.0f};
                              AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{11, 37}, 28));
                              AM_ASSIGN_OR_RETURN(Tensor y, io.in(Shape{6, 37}, 29));
                              AM_RETURN_IF_ERROR(io.op([&] { return be.scatter_add_rows(x.view(), ids.data(), scales.data(), 11, y.view()); }));
                              return io.done(std::move(y));
                            }));
  for (bool renorm : {false, true}) {
    cases.push_back(make_case(std::string("top_k 2 of 8 experts, 13 rows") + (renorm ? " renormalised" : ""),
                              Op::kTopK, OpTolerance::kTranscendental,
                              [renorm](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor logits, io.in(Shape{13, 8}, 30, 0.0f, 2.0f));
                                std::vector<int32_t> ids(26);
                                Tensor w(Shape{13, 2}), idf(Shape{13, 2});
                                AM_RETURN_IF_ERROR(io.op([&] { return be.top_k(logits.view(), 2, renorm, ids.data(), w.data()); }));
                                for (int i = 0; i < 26; ++i) idf.data()[i] = static_cast<float>(ids[static_cast<std::size_t>(i)]);
                                std::vector<Tensor> o;
                                o.push_back(std::move(w));
                                o.push_back(std::move(idf));
                                return io.done(std::move(o));
                              }));
  }
  cases.push_back(make_case("matmul_nt 19x40 . 23x40^T scaled", Op::kMatmulNt, OpTolerance::kFloatMatmul,
                            [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                              AM_ASSIGN_OR_RETURN(Tensor a, io.in(Shape{19, 40}, 31));
                              AM_ASSIGN_OR_RETURN(Tensor b, io.in(Shape{23, 40}, 32));
                              AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{19, 23}));
                              AM_RETURN_IF_ERROR(io.op([&] { return be.matmul_nt(a.view(), b.view(), 0.125f, y.view()); }));
                              return io.done(std::move(y));
                            }));
  {
    // 1003 elements: not a multiple of any work-group or vector width.
    constexpr int32_t kIterations = 64;
    OpCase fma = make_case("fma_chain 17x59, 64 steps", Op::kFmaChain, OpTolerance::kTranscendental,
                           [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                             AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{17, 59}));
                             AM_RETURN_IF_ERROR(io.op([&] { return be.fma_chain(kIterations, y.view()); }));
                             return io.done(std::move(y));
                           });
    fma.flops = 17.0 * 59.0 * kIterations * kFmaChainFlopsPerStep;
    cases.push_back(std::move(fma));
  }
  cases.push_back(make_case("global_avg_pool 3 samples x 7 positions x 29", Op::kGlobalAvgPool,
                            OpTolerance::kNorm, [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                              AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{21, 29}, 33));
                              AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{3, 29}));
                              AM_RETURN_IF_ERROR(io.op([&] { return be.global_avg_pool(x.view(), 3, y.view()); }));
                              return io.done(std::move(y));
                            }));
}

void add_attention_cases(std::vector<OpCase>& cases) {
  struct A {
    const char* what;
    int64_t batch, q_len, kv_len, heads, kv_heads, head_dim, q_offset;
    bool causal;
    enum Mask { kNone, kEveryThird, kSecondSampleEmpty } mask;
    bool bias;
  };
  constexpr A::Mask kNo = A::kNone, kThird = A::kEveryThird;
  const A shapes[] = {
      {"encoder, masked", 2, 13, 13, 4, 4, 16, 0, false, kThird, false},
      {"causal GQA 8/2", 2, 11, 11, 8, 2, 32, 0, true, kNo, false},
      {"decode step over a cache, q_offset", 3, 1, 17, 4, 2, 24, 16, true, kNo, false},
      {"cross, q 5 kv 19, masked", 2, 5, 19, 2, 2, 40, 0, false, kThird, false},
      {"long kv 300, head_dim 80", 1, 4, 300, 2, 1, 80, 296, true, kNo, false},
      {"score bias (T5), masked", 2, 7, 9, 3, 3, 16, 0, false, kThird, true},
      {"odd head_dim 13", 2, 7, 7, 3, 3, 13, 0, false, kNo, false},
      {"head_dim 200, above a work-group", 1, 4, 4, 1, 1, 200, 0, false, kNo, false},
      {"600 keys, several chunks, masked", 1, 3, 600, 2, 2, 64, 0, false, kThird, false},
      // Sample 1 has no key at all: its rows are zeros, sample 0's are ordinary.
      {"sample with every key masked", 2, 4, 4, 2, 2, 4, 0, false, A::kSecondSampleEmpty, false},
  };
  for (const A& s : shapes) {
    const Op op = s.bias ? Op::kAttentionBias : Op::kAttention;
    cases.push_back(make_case(std::string(op_name(op)) + " " + s.what, op, OpTolerance::kAttention,
                              [s](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor q, io.in(Shape{s.batch * s.q_len, s.heads * s.head_dim}, 40));
                                AM_ASSIGN_OR_RETURN(Tensor k, io.in(Shape{s.batch * s.kv_len, s.kv_heads * s.head_dim}, 41));
                                AM_ASSIGN_OR_RETURN(Tensor v, io.in(Shape{s.batch * s.kv_len, s.kv_heads * s.head_dim}, 42));
                                AM_ASSIGN_OR_RETURN(Tensor out, io.out(Shape{s.batch * s.q_len, s.heads * s.head_dim}));
                                std::vector<int32_t> mask(static_cast<std::size_t>(s.batch * s.kv_len), 1);
                                // kEveryThird: keys 0, 3, 6, ... of [batch, kv_len] off;
                                // kSecondSampleEmpty: sample 0 loses key 2, sample 1 every key.
                                for (int64_t i = 0; i < s.batch * s.kv_len; ++i) {
                                  const bool off = s.mask == A::kEveryThird ? i % 3 == 0 : i == 2 || i >= s.kv_len;
                                  if (off) mask[static_cast<std::size_t>(i)] = 0;
                                }
                                AttentionArgs a;
                                a.q = q.view();
                                a.k = k.view();
                                a.v = v.view();
                                a.out = out.view();
                                a.batch = s.batch;
                                a.q_len = s.q_len;
                                a.kv_len = s.kv_len;
                                a.heads = s.heads;
                                a.kv_heads = s.kv_heads;
                                a.head_dim = s.head_dim;
                                a.causal = s.causal;
                                a.q_offset = s.q_offset;
                                a.key_mask = s.mask != A::kNone ? mask.data() : nullptr;
                                if (s.bias) {
                                  AM_ASSIGN_OR_RETURN(Tensor bias, io.in(Shape{s.q_len * s.kv_len, s.heads}, 43));
                                  AM_RETURN_IF_ERROR(io.op([&] { return be.attention_bias(a, bias.view()); }));
                                } else {
                                  AM_RETURN_IF_ERROR(io.op([&] { return be.attention(a); }));
                                }
                                return io.done(std::move(out));
                              }));
  }
  for (const std::pair<RopeLayout, int64_t>& lr : {std::pair<RopeLayout, int64_t>{RopeLayout::kNeox, 0},
                                                    {RopeLayout::kGptj, 0}, {RopeLayout::kNeox, 16}}) {
    const RopeLayout layout = lr.first;
    const int64_t rotary = lr.second;
    const std::string name = std::string("rope ") + (layout == RopeLayout::kNeox ? "neox" : "gptj") +
                             (rotary != 0 ? " partial 16 of 32" : "") + " 4 heads, positions to 5000";
    cases.push_back(make_case(name, Op::kRope, OpTolerance::kTranscendental,
                              [layout, rotary](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{9, 4 * 32}, 44));
                                std::vector<int32_t> pos = {0, 1, 2, 7, 100, 511, 1000, 4095, 5000};
                                RopeParams p;
                                p.heads = 4;
                                p.head_dim = 32;
                                p.rotary_dim = rotary;
                                p.layout = layout;
                                AM_RETURN_IF_ERROR(io.op([&] { return be.rope(x.view(), pos.data(), p); }));
                                return io.done(std::move(x));
                              }));
  }
}

void add_spatial_cases(std::vector<OpCase>& cases) {
  struct C1 {
    const char* what;
    int64_t batch, len, cin, cout, kernel, stride, dilation, pad_left, pad_right, groups;
  };
  for (const C1& s : {C1{"strided, padded", 2, 29, 12, 10, 3, 2, 1, 1, 1, 1},
                      C1{"dilated, causal", 2, 17, 8, 8, 3, 1, 2, 4, 0, 1},
                      C1{"depthwise (groups = channels)", 1, 21, 16, 16, 4, 1, 1, 3, 0, 16},
                      C1{"grouped 4, kernel 16", 2, 40, 24, 12, 16, 1, 1, 8, 7, 4}}) {
    auto w = std::make_shared<Tensor>(host(Shape{s.cout, s.cin / s.groups, s.kernel}, 50 + s.kernel, 0.0f, 0.3f));
    auto b = std::make_shared<Tensor>(host(Shape{s.cout}, 51));
    cases.push_back(make_case(std::string("conv1d ") + s.what, Op::kConv1d, OpTolerance::kConvolution,
                              [s, w, b](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                Conv1dArgs a;
                                a.weight = w->data();
                                a.bias = b->data();
                                a.batch = s.batch;
                                a.in_len = s.len;
                                a.in_channels = s.cin;
                                a.out_channels = s.cout;
                                a.kernel = s.kernel;
                                a.stride = s.stride;
                                a.dilation = s.dilation;
                                a.pad_left = s.pad_left;
                                a.pad_right = s.pad_right;
                                a.groups = s.groups;
                                AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{s.batch * s.len, s.cin}, 52));
                                AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{s.batch * conv1d_out_len(a), s.cout}));
                                a.x = x.view();
                                a.y = y.view();
                                AM_RETURN_IF_ERROR(io.op([&] { return be.conv1d(a); }));
                                return io.done(std::move(y));
                              }));
  }
  struct C2 {
    const char* what;
    int64_t batch, side, cin, cout, k, stride, pad, groups;
  };
  for (const C2& s : {C2{"3x3 padded", 2, 9, 6, 10, 3, 1, 1, 1}, C2{"patch embedding 4x4 stride 4", 2, 16, 3, 12, 4, 4, 0, 1},
                      C2{"strided 2, grouped 2", 1, 11, 8, 6, 3, 2, 1, 2}}) {
    auto w = std::make_shared<Tensor>(host(Shape{s.cout, s.cin / s.groups, s.k, s.k}, 60 + s.k, 0.0f, 0.3f));
    auto b = std::make_shared<Tensor>(host(Shape{s.cout}, 61));
    cases.push_back(make_case(std::string("conv2d ") + s.what, Op::kConv2d, OpTolerance::kConvolution,
                              [s, w, b](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                const int64_t o_side = conv_out_size(s.side, s.k, s.stride, s.pad);
                                AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{s.batch * s.side * s.side, s.cin}, 62));
                                AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{s.batch * o_side * o_side, s.cout}));
                                Conv2dArgs a;
                                a.x = x.view();
                                a.y = y.view();
                                a.weight = w->data();
                                a.bias = b->data();
                                a.batch = s.batch;
                                a.height = a.width = s.side;
                                a.in_channels = s.cin;
                                a.out_channels = s.cout;
                                a.kernel_h = a.kernel_w = s.k;
                                a.stride = s.stride;
                                a.padding = s.pad;
                                a.groups = s.groups;
                                AM_RETURN_IF_ERROR(io.op([&] { return be.conv2d(a); }));
                                return io.done(std::move(y));
                              }));
  }
  auto ng = std::make_shared<Tensor>(host(Shape{24}, 70, 1.0f, 0.2f));
  auto nb = std::make_shared<Tensor>(host(Shape{24}, 71));
  for (bool in_place : {false, true}) {
    cases.push_back(make_case(std::string("group_norm 2 samples x 15 positions x 24, 6 groups") + (in_place ? " in place" : ""),
                              Op::kGroupNorm, OpTolerance::kNorm,
                              [ng, nb, in_place](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{30, 24}, 72, 1.0f, 2.0f));
                                AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{30, 24}));
                                TensorView out = in_place ? x.view() : y.view();
                                AM_RETURN_IF_ERROR(io.op([&] { return be.group_norm(x.view(), 2, 6, ng->data(), nb->data(), 1e-5f, out); }));
                                return io.done(in_place ? std::move(x) : std::move(y));
                              }));
  }
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
    cases.push_back(make_case(std::string("pool2d ") + (kind == PoolKind::kMax ? "max" : "avg") + " 3x3 stride 2 pad 1",
                              Op::kPool2d, kind == PoolKind::kMax ? OpTolerance::kExact : OpTolerance::kElementwise,
                              [kind](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                const int64_t side = 9, o_side = conv_out_size(side, 3, 2, 1);
                                AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{2 * side * side, 5}, 73));
                                AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{2 * o_side * o_side, 5}));
                                Pool2dArgs a;
                                a.x = x.view();
                                a.y = y.view();
                                a.kind = kind;
                                a.batch = 2;
                                a.height = a.width = side;
                                a.kernel = 3;
                                a.stride = 2;
                                a.padding = 1;
                                AM_RETURN_IF_ERROR(io.op([&] { return be.pool2d(a); }));
                                return io.done(std::move(y));
                              }));
  }
  auto A = std::make_shared<Tensor>(host(Shape{12, 6}, 80, -1.0f, 0.3f));
  auto D = std::make_shared<Tensor>(host(Shape{12}, 81));
  auto dbias = std::make_shared<Tensor>(host(Shape{12}, 82, 0.0f, 0.3f));
  for (bool carried : {false, true}) {
    cases.push_back(make_case(std::string("selective_scan 2 x 9 steps x 12 channels x 6 states") + (carried ? " carried state" : ""),
                              Op::kSelectiveScan, OpTolerance::kRecurrence,
                              [A, D, dbias, carried](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor u, io.in(Shape{18, 12}, 83));
                                AM_ASSIGN_OR_RETURN(Tensor delta, io.in(Shape{18, 12}, 84, 0.0f, 0.5f));
                                AM_ASSIGN_OR_RETURN(Tensor B, io.in(Shape{18, 6}, 85));
                                AM_ASSIGN_OR_RETURN(Tensor C, io.in(Shape{18, 6}, 86));
                                AM_ASSIGN_OR_RETURN(Tensor state, io.in(Shape{2, 12, 6}, 87, 0.0f, 0.5f));
                                AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{18, 12}));
                                SelectiveScanArgs a;
                                a.u = u.view();
                                a.delta = delta.view();
                                a.B = B.view();
                                a.C = C.view();
                                a.y = y.view();
                                a.A = A->data();
                                a.D = D->data();
                                a.delta_bias = dbias->data();
                                a.batch = 2;
                                a.len = 9;
                                a.channels = 12;
                                a.state_size = 6;
                                a.state = carried ? state.data() : nullptr;
                                AM_RETURN_IF_ERROR(io.op([&] { return be.selective_scan(a); }));
                                std::vector<Tensor> o;
                                o.push_back(std::move(y));
                                if (carried) o.push_back(std::move(state));
                                return io.done(std::move(o));
                              }));
  }
  auto decay = std::make_shared<Tensor>(host(Shape{20}, 90, -1.0f, 1.0f));
  auto first = std::make_shared<Tensor>(host(Shape{20}, 91));
  for (bool carried : {false, true}) {
    cases.push_back(make_case(std::string("time_mix 2 x 7 steps x 20 channels") + (carried ? " carried state" : ""),
                              Op::kTimeMix, OpTolerance::kRecurrence,
                              [decay, first, carried](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                                AM_ASSIGN_OR_RETURN(Tensor k, io.in(Shape{14, 20}, 92));
                                AM_ASSIGN_OR_RETURN(Tensor v, io.in(Shape{14, 20}, 93));
                                AM_ASSIGN_OR_RETURN(Tensor state, io.in(Shape{2, 3, 20}, 94, 0.5f, 0.2f));
                                AM_ASSIGN_OR_RETURN(Tensor out, io.out(Shape{14, 20}));
                                TimeMixArgs a;
                                a.k = k.view();
                                a.v = v.view();
                                a.out = out.view();
                                a.time_decay = decay->data();
                                a.time_first = first->data();
                                a.batch = 2;
                                a.len = 7;
                                a.channels = 20;
                                a.state = carried ? state.data() : nullptr;
                                AM_RETURN_IF_ERROR(io.op([&] { return be.time_mix(a); }));
                                std::vector<Tensor> o;
                                o.push_back(std::move(out));
                                if (carried) o.push_back(std::move(state));
                                return io.done(std::move(o));
                              }));
  }
}

}  // namespace


// Where the reference is not finite: NaN activations, masked rows (the fully masked attention
// sample is in add_attention_cases' table); and the k-quants at sizes that are not whole super-blocks, with a bias.
void add_edge_cases(std::vector<OpCase>& cases) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kQ8_0, WeightFormat::kQ4_0, WeightFormat::kQ2_K}) {
    const int64_t k = f == WeightFormat::kQ2_K ? 512 : 64;
    auto layer = std::make_shared<Linear>(Linear::create(host(Shape{6, k}, 90 + k), Tensor(), f, kBuildCtx));
    OpCase c = make_case("linear " + std::string(weight_format_name(f)) + " NaN in one activation block of row 1",
                         Op::kLinear, f == WeightFormat::kF32 ? OpTolerance::kFloatMatmul : OpTolerance::kQuantMatmul,
                         [layer, k](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                           AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{2, k}, 91));
                           x.data()[k + k / 2 + 3] = kNaN;  // row 1, not its first block
                           AM_RETURN_IF_ERROR(be.from_host(x.view()));
                           AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{2, 6}));
                           AM_RETURN_IF_ERROR(io.op([&] { return be.linear(*layer, x.view(), y.view()); }));
                           return io.done(std::move(y));
                         });
    c.format = f;
    cases.push_back(std::move(c));
  }
  struct K {
    int64_t m, k, n;
  };
  for (WeightFormat f : {WeightFormat::kQ2_K, WeightFormat::kQ3_K}) {
    for (const K& s : {K{1, 45, 33}, K{9, 1100, 18}, K{1, 4128, 5}}) {
      auto layer = std::make_shared<Linear>(
          Linear::create(host(Shape{s.n, s.k}, 94 + s.k, 0.0f, 0.5f), host(Shape{s.n}, 95), f, kBuildCtx));
      OpCase c = make_case("linear " + std::string(weight_format_name(f)) + " " + dims({s.m, s.k, s.n}) +
                               " partial super-block, bias",
                           Op::kLinear, OpTolerance::kQuantMatmul, [layer, s](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                             AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{s.m, s.k}, 96));
                             AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{s.m, s.n}));
                             AM_RETURN_IF_ERROR(io.op([&] { return be.linear(*layer, x.view(), y.view()); }));
                             return io.done(std::move(y));
                           });
      c.format = f;
      cases.push_back(std::move(c));
    }
  }
  cases.push_back(make_case("activation relu keeps NaN", Op::kActivation, OpTolerance::kElementwise,
                            [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                              AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{3, 7}, 97));
                              x.data()[1] = kNaN;
                              x.data()[15] = kNaN;
                              AM_RETURN_IF_ERROR(be.from_host(x.view()));
                              AM_RETURN_IF_ERROR(io.op([&] { return be.activation(Activation::kRelu, x.view()); }));
                              return io.done(std::move(x));
                            }));
  // Row 0 fully masked (zeros), row 1 with a NaN (a NaN row), row 2 partly masked, row 3 plain.
  cases.push_back(make_case("softmax masked rows and NaN", Op::kSoftmax, OpTolerance::kTranscendental,
                            [](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                              AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{4, 37}, 98, 0.0f, 4.0f));
                              for (int64_t c = 0; c < 37; ++c) {
                                x.row(0)[c] = -kInf;
                                if (c % 3 == 0) x.row(2)[c] = -kInf;
                              }
                              x.row(1)[5] = kNaN;
                              AM_RETURN_IF_ERROR(be.from_host(x.view()));
                              AM_RETURN_IF_ERROR(io.op([&] { return be.softmax(x.view()); }));
                              return io.done(std::move(x));
                            }));
}

std::vector<OpCase> perf_op_cases(bool quick, double rotate_bytes) {
  std::vector<OpCase> cases;
  // Few long rows: the ids stay small (a host input), the bytes are the rows'. 128 MiB each way
  // is twice the largest GPU L2 we know and within lavapipe's 128 MiB buffer limit.
  constexpr int64_t copy_cols = 65536;
  const int64_t copy_rows = quick ? 128 : 512;  // 32 / 128 MiB each way
  OpCase copy = make_case("copy " + std::to_string(copy_rows * copy_cols * 4 >> 20) + " MiB (index_rows)",
                          Op::kIndexRows, OpTolerance::kElementwise,
                          [copy_rows](Backend& be, Io& io) -> Result<std::vector<Tensor>> {
                            std::vector<int32_t> ids(static_cast<std::size_t>(copy_rows));
                            for (int64_t i = 0; i < copy_rows; ++i) ids[static_cast<std::size_t>(i)] = static_cast<int32_t>(i);
                            AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{copy_rows, copy_cols}, 1));
                            AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{copy_rows, copy_cols}));
                            AM_RETURN_IF_ERROR(io.op([&] { return be.index_rows(x.view(), ids.data(), copy_rows, y.view()); }));
                            return io.done(std::move(y));
                          });
  cases.push_back(std::move(copy));
  struct Shape3 {
    int64_t m, k, n;
  };
  std::vector<std::pair<WeightFormat, Shape3>> shapes;
  const std::vector<Shape3> gemv = quick ? std::vector<Shape3>{{1, 1024, 2048}} : std::vector<Shape3>{{1, 4096, 14336}, {1, 14336, 4096}};
  for (WeightFormat f : {WeightFormat::kQ4_0, WeightFormat::kQ8_0, WeightFormat::kF16, WeightFormat::kF32}) {
    for (const Shape3& s : gemv) shapes.push_back({f, s});
  }
  const Shape3 gemm = quick ? Shape3{64, 512, 512} : Shape3{512, 4096, 4096};
  for (WeightFormat f : {WeightFormat::kF16, WeightFormat::kF32, WeightFormat::kQ8_0}) shapes.push_back({f, gemm});
  for (const auto& [f, s] : shapes) {
    const WeightFormat format = f;
    const Shape3 sh = s;
    OpCase c;
    c.name = "linear " + std::string(weight_format_name(format)) + " " + dims({sh.m, sh.k, sh.n});
    c.op = Op::kLinear;
    c.format = format;
    c.tolerance = OpTolerance::kQuantMatmul;
    c.flops = 2.0 * static_cast<double>(sh.m * sh.k * sh.n);
    c.weight_bytes = static_cast<double>(weight_format_row_bytes(format, sh.k)) * static_cast<double>(sh.n);
    // A GEMV's weights would stay in a GPU's L2 (60 MB on an H200) or a CPU's L3 from one call
    // to the next: its calls rotate over copies of the layer that together exceed
    // `rotate_bytes`, so each call streams its weights from memory (not with `quick`, a smoke
    // run). Built at the run, not with
    // the table, and freed after it: together they take several GB.
    const int64_t copies = sh.m == 1 && !quick ? std::max<int64_t>(1, static_cast<int64_t>(std::ceil(rotate_bytes / c.weight_bytes))) : 1;
    c.name += copies > 1 ? " (" + std::to_string(copies) + " copies)" : "";
    c.run = [format, sh, copies](Backend& be) -> Result<std::vector<Tensor>> {
      const Tensor w = host(Shape{sh.n, sh.k}, 400 + sh.k, 0.0f, 0.05f);
      std::vector<std::unique_ptr<Linear>> layers;
      for (int64_t i = 0; i < copies; ++i) {
        layers.push_back(std::make_unique<Linear>(Linear::create(w.clone(), Tensor(), format, kBuildCtx)));
      }
      Io io(be);
      AM_ASSIGN_OR_RETURN(Tensor x, io.in(Shape{sh.m, sh.k}, 500 + sh.m));
      AM_ASSIGN_OR_RETURN(Tensor y, io.out(Shape{sh.m, sh.n}));
      std::size_t next = 0;
      AM_RETURN_IF_ERROR(io.op([&] { return be.linear(*layers[next++ % layers.size()], x.view(), y.view()); }, copies));
      return io.done(std::move(y));
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

OpTiming& op_timing() {
  static thread_local OpTiming t;
  return t;
}

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> cases;
  add_linear_cases(cases);
  add_row_cases(cases);
  add_attention_cases(cases);
  add_spatial_cases(cases);
  add_edge_cases(cases);
  return cases;
}

std::vector<RejectCase> all_reject_cases() {
  std::vector<RejectCase> r;
  auto layer = std::make_shared<Linear>(Linear::create(host(Shape{5, 6}, 110), Tensor(), WeightFormat::kF32, kBuildCtx));
  r.push_back({"linear with x of the wrong width", Op::kLinear, "linear", [layer](Backend& be) {
                 Tensor x(Shape{2, 7}), y(Shape{2, 5});
                 return be.linear(*layer, x.view(), y.view());
               }});
  auto table = std::make_shared<Tensor>(host(Shape{50, 37}, 111));
  r.push_back({"gather_rows with an id past the table", Op::kGatherRows, "id 50", [table](Backend& be) {
                 std::vector<int32_t> ids = {0, 50};
                 Tensor y(Shape{2, 37});
                 return be.gather_rows(table->view(), ids.data(), 2, y.view(), false);
               }});
  r.push_back({"add of different shapes", Op::kAdd, "add", [](Backend& be) {
                 Tensor y(Shape{17, 32}), a(Shape{17, 33});
                 return be.add(y.view(), a.view());
               }});
  r.push_back({"mul of different shapes", Op::kMul, "mul", [](Backend& be) {
                 Tensor y(Shape{17, 32}), a(Shape{17, 33});
                 return be.mul(y.view(), a.view());
               }});
  r.push_back({"attention with kv_heads not dividing heads", Op::kAttention, "kv_heads", [](Backend& be) {
                 Tensor q(Shape{8, 8}), k(Shape{8, 12}), v(Shape{8, 12}), out(Shape{8, 8});
                 AttentionArgs a;
                 a.q = q.view();
                 a.k = k.view();
                 a.v = v.view();
                 a.out = out.view();
                 a.batch = 2;
                 a.q_len = a.kv_len = 4;
                 a.heads = 2;
                 a.kv_heads = 3;
                 a.head_dim = 4;
                 return be.attention(a);
               }});
  r.push_back({"index_rows into y of the wrong width", Op::kIndexRows, "index_rows", [](Backend& be) {
                 std::vector<int32_t> ids = {0, 1};
                 Tensor x(Shape{4, 8}), y(Shape{2, 9});
                 return be.index_rows(x.view(), ids.data(), 2, y.view());
               }});
  r.push_back({"fma_chain with negative steps", Op::kFmaChain, "iterations", [](Backend& be) {
                 Tensor y(Shape{2, 8});
                 return be.fma_chain(-1, y.view());
               }});
  return r;
}

}  // namespace am::kernels::testing
