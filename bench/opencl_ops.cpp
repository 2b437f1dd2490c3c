// Latency of every OpenCL backend op next to the cpu backend on the same inputs, as a Markdown
// table: op x weight format x shape, median milliseconds, and the cpu/opencl ratio (> 1: the
// OpenCL device is faster). Each OpenCL figure includes the per-op host<->device copies of the
// activations (weights are uploaded once, before timing), since that is what a model pays.
//
//   build/bench/bench_opencl_ops [--min-time-s S] [--quick] [--only linear|rows|attention|encoder]
//
// The cpu backend runs on its best SIMD path with every physical core (OpenBLAS for f32), the
// OpenCL backend on the device select_opencl_device() picks (ACCELMATRIX_OPENCL_DEVICE).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/measure.h"
#include "kernels/models/encoder_only.h"
#include "kernels/opencl/opencl_backend.h"
#include "kernels/rng.h"
#include "kernels/thread_pool.h"

namespace am::kernels {
namespace {

constexpr double kDefaultMinTimeS = 0.3;
constexpr double kQuickMinTimeS = 0.05;
constexpr int kWarmup = 2;
constexpr int kMinReps = 3;

struct Row {
  std::string op, format, shape;
  double opencl_ms = 0.0;
  double cpu_ms = 0.0;
  std::string note;
};

Tensor seeded(Shape shape, uint64_t seed, const ExecContext& ctx) {
  Tensor t(shape);
  fill_normal(t.data(), t.numel(), 0.0f, 1.0f, seed, ctx);
  return t;
}

class Bench {
 public:
  Bench(OpenClBackend& cl, Backend& cpu, double min_time_s) : cl_(cl), cpu_(cpu) {
    options_.warmup = kWarmup;
    options_.min_reps = kMinReps;
    options_.min_time_s = min_time_s;
  }

  // `op` runs the measured call on the given backend.
  void measure(std::string op, std::string format, std::string shape,
               const std::function<Status(Backend&)>& run) {
    Row r;
    r.op = std::move(op);
    r.format = std::move(format);
    r.shape = std::move(shape);
    // Inputs of earlier cells are gone and their addresses get reused: start each cell with an
    // empty weight cache (the warm-up runs upload this cell's weights).
    cl_.release_cached_weights();
    Result<LatencyStats> cl = measure_latency([&] { return run(cl_); }, options_);
    Result<LatencyStats> cpu = measure_latency([&] { return run(cpu_); }, options_);
    if (!cl.ok()) r.note = "opencl: " + cl.status().message();
    if (!cpu.ok()) r.note += (r.note.empty() ? "" : "; ") + ("cpu: " + cpu.status().message());
    if (cl.ok()) r.opencl_ms = cl->median_ms;
    if (cpu.ok()) r.cpu_ms = cpu->median_ms;
    std::fprintf(stderr, "  %-12s %-6s %-28s done\n", r.op.c_str(), r.format.c_str(), r.shape.c_str());
    rows_.push_back(std::move(r));
  }

  void print(const std::string& device, const std::string& cpu_device) const {
    std::printf("OpenCL device: %s\ncpu: %s\n\n", device.c_str(), cpu_device.c_str());
    std::printf("| op | format | shape | opencl ms | cpu ms | cpu/opencl |\n|---|---|---|---:|---:|---:|\n");
    for (const Row& r : rows_) {
      if (!r.note.empty()) {
        std::printf("| %s | %s | %s | - | - | %s |\n", r.op.c_str(), r.format.c_str(), r.shape.c_str(),
                    r.note.c_str());
        continue;
      }
      std::printf("| %s | %s | %s | %.3f | %.3f | %.2f |\n", r.op.c_str(), r.format.c_str(),
                  r.shape.c_str(), r.opencl_ms, r.cpu_ms, r.cpu_ms / r.opencl_ms);
    }
  }

 private:
  OpenClBackend& cl_;
  Backend& cpu_;
  MeasureOptions options_;
  std::vector<Row> rows_;
};

std::string dims(std::initializer_list<int64_t> d, const char* sep = "x") {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : sep) + std::to_string(v);
  return s;
}

void bench_linear(Bench& b, const ExecContext& ctx) {
  struct Shape3 {
    int64_t m, k, n;
    const char* what;
  };
  const Shape3 shapes[] = {{256, 128, 128, "bert-tiny qkv, 2x128 tokens"},
                           {256, 128, 512, "bert-tiny ffn up"},
                           {128, 768, 768, "bert-base qkv, 128 tokens"},
                           {1, 2048, 2048, "decode step, 2048 wide"}};
  for (const WeightFormat format : {WeightFormat::kF32, WeightFormat::kBF16, WeightFormat::kQ8_0,
                                    WeightFormat::kQ4_0, WeightFormat::kQ4_1}) {
    const std::string precision(weight_format_name(format));
    uint64_t seed = 1;
    for (const Shape3& s : shapes) {
      Tensor w = seeded(Shape{s.n, s.k}, seed++, ctx);
      Tensor bias = seeded(Shape{s.n}, seed++, ctx);
      const Linear layer = Linear::create(std::move(w), std::move(bias), format, ctx);
      const Tensor x = seeded(Shape{s.m, s.k}, seed++, ctx);
      Tensor y(Shape{s.m, s.n});
      b.measure("linear", precision, dims({s.m, s.k, s.n}) + " (" + s.what + ")",
                [&](Backend& be) { return be.linear(layer, x.view(), y.view()); });
    }
  }
}

void bench_row_ops(Bench& b, const ExecContext& ctx) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{256, 128}, {128, 768}}) {
    const Tensor x = seeded(Shape{rows, cols}, 10, ctx);
    const Tensor gamma = seeded(Shape{cols}, 11, ctx);
    const Tensor beta = seeded(Shape{cols}, 12, ctx);
    Tensor y(Shape{rows, cols});
    b.measure("layer_norm", "-", dims({rows, cols}),
              [&](Backend& be) { return be.layer_norm(x.view(), gamma.data(), beta.data(), 1e-12f, y.view()); });
    b.measure("rms_norm", "-", dims({rows, cols}),
              [&](Backend& be) { return be.rms_norm(x.view(), gamma.data(), 1e-6f, y.view()); });
    Tensor a = x.clone();
    b.measure("add", "-", dims({rows, cols}), [&](Backend& be) { return be.add(a.view(), x.view()); });
    b.measure("mul", "-", dims({rows, cols}), [&](Backend& be) { return be.mul(a.view(), x.view()); });
  }
  {
    Tensor h = seeded(Shape{256, 512}, 13, ctx);
    for (Activation act : {Activation::kGeluErf, Activation::kSilu}) {
      Tensor work = h.clone();
      b.measure("activation", std::string(activation_name(act)), "256x512",
                [&](Backend& be) { return be.activation(act, work.view()); });
    }
  }
  {
    const Tensor scores = seeded(Shape{512, 256}, 14, ctx);
    Tensor work = scores.clone();
    b.measure("softmax", "-", "512x256", [&](Backend& be) {
      std::memcpy(work.data(), scores.data(), scores.bytes());
      return be.softmax(work.view());
    });
  }
  {
    const Tensor table = seeded(Shape{30522, 128}, 15, ctx);
    std::vector<int32_t> ids(256);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % 30522);
    Tensor y(Shape{256, 128});
    b.measure("gather_rows", "-", "256 of 30522x128", [&](Backend& be) {
      return be.gather_rows(table.view(), ids.data(), 256, y.view(), false);
    });
  }
}

void bench_attention(Bench& b, const ExecContext& ctx) {
  struct Case {
    const char* what;
    int64_t batch, q_len, kv_len, heads, kv_heads, head_dim;
    bool causal;
  };
  const Case cases[] = {{"bert-tiny, masked", 2, 128, 128, 2, 2, 64, false},
                        {"causal prompt, GQA", 1, 256, 256, 8, 2, 64, true},
                        {"causal decode, 1 of 1024", 1, 1, 1024, 12, 12, 64, true}};
  for (const Case& c : cases) {
    const Tensor q = seeded(Shape{c.batch * c.q_len, c.heads * c.head_dim}, 20, ctx);
    const Tensor k = seeded(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, 21, ctx);
    const Tensor v = seeded(Shape{c.batch * c.kv_len, c.kv_heads * c.head_dim}, 22, ctx);
    Tensor out(q.shape());
    std::vector<int32_t> mask(static_cast<std::size_t>(c.batch * c.kv_len), 1);
    for (std::size_t j = mask.size() - static_cast<std::size_t>(c.kv_len / 4); j < mask.size(); ++j) mask[j] = 0;
    AttentionArgs a;
    a.q = q.view();
    a.k = k.view();
    a.v = v.view();
    a.out = out.view();
    a.batch = c.batch;
    a.q_len = c.q_len;
    a.kv_len = c.kv_len;
    a.heads = c.heads;
    a.kv_heads = c.kv_heads;
    a.head_dim = c.head_dim;
    a.causal = c.causal;
    a.q_offset = c.causal ? c.kv_len - c.q_len : 0;
    a.key_mask = c.causal ? nullptr : mask.data();
    b.measure("attention", "-",
              "b" + std::to_string(c.batch) + " q" + std::to_string(c.q_len) + " kv" +
                  std::to_string(c.kv_len) + " h" + std::to_string(c.heads) + "/" +
                  std::to_string(c.kv_heads) + " d" + std::to_string(c.head_dim) + " (" + c.what + ")",
              [&](Backend& be) { return be.attention(a); });
  }
}

void bench_encoder(Bench& b, const ExecContext& ctx) {
  // bert-tiny (google/bert_uncased_L-2_H-128_A-2), as in jobs/models/bert-tiny.toml.
  EncoderConfig config;
  config.layers = 2;
  config.hidden = 128;
  config.heads = 2;
  config.intermediate = 512;
  config.vocab = 30522;
  config.max_positions = 512;
  Result<EncoderModel> f32 = EncoderModel::create_synthetic(config, WeightFormat::kF32, 1, ctx);
  if (!f32.ok()) return;
  for (const WeightFormat format : {WeightFormat::kF32, WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    const std::string precision(weight_format_name(format));
    const EncoderModel model = f32->converted(format, ctx);
    for (const auto& [batch, seq] : {std::pair<int64_t, int64_t>{1, 128}, {8, 128}}) {
      const EncoderInput input = make_synthetic_encoder_input(config, batch, seq, 2);
      b.measure("bert-tiny encoder", precision, "batch " + std::to_string(batch) + " seq " + std::to_string(seq),
                [&](Backend& be) { return model.forward(input, be).status(); });
    }
  }
}

int run(int argc, char** argv) {
  double min_time_s = kDefaultMinTimeS;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      min_time_s = kQuickMinTimeS;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--min-time-s") == 0 && i + 1 < argc) {
      min_time_s = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--min-time-s S] [--quick] [--only linear|rows|attention|encoder]\n",
                   argv[0]);
      return 2;
    }
  }
  Result<opencl::OpenClDevice> device = opencl::select_opencl_device();
  if (!device.ok()) {
    std::fprintf(stderr, "%s\n", device.status().message().c_str());
    return 1;
  }
  Result<std::unique_ptr<OpenClBackend>> cl = OpenClBackend::create(*device);
  if (!cl.ok()) {
    std::fprintf(stderr, "%s\n", cl.status().message().c_str());
    return 1;
  }
  const int threads = default_thread_count();
  ThreadPool pool(threads);
  ExecContext ctx{best_kernel_path(), &pool};
  // The layers are uploaded by OpenCL, so they are built in GGUF rows (exec_context.h); the cpu
  // column runs those rows on its row-dot kernels, not in the cpu's interleaved execution layout.
  ctx.cpu_weights = false;
  CpuBackend cpu(ctx);
  Bench bench(**cl, cpu, min_time_s);
  if (only.empty() || only == "linear") bench_linear(bench, ctx);
  if (only.empty() || only == "rows") bench_row_ops(bench, ctx);
  if (only.empty() || only == "attention") bench_attention(bench, ctx);
  if (only.empty() || only == "encoder") bench_encoder(bench, ctx);
  bench.print((*cl)->device_name(), cpu.device_name() + ", " + std::to_string(threads) + " threads");
  return 0;
}

}  // namespace
}  // namespace am::kernels

int main(int argc, char** argv) { return am::kernels::run(argc, argv); }
