// bench_decode: token-by-token decode of a TinyLlama-1.1B-shaped decoder (hidden 2048, 22
// layers, 32 heads, 4 KV heads, intermediate 5632, vocab 32000, RoPE theta 10000) on the
// CpuBackend at q4_0 and q8_0, against the machine's read bandwidth measured in the same run.
//
// Decode reads every weight once per token, so its speed limit is memory bandwidth:
//   bandwidth_bound_fraction = weight bytes read per token x decode tokens/s / read bandwidth.
// Weights are seeded synthetic (DecoderLm::create_synthetic: each tensor drawn in f32 and
// quantized at once, so peak memory is the quantized model plus the f32 token table and one f32
// matrix). Each precision: a short prompt is prefilled, then --tokens decode steps; one warm-up
// run, then --repeats measured runs; tokens/s is the median run's. After every decode run one
// round of the read-bandwidth kernel runs (bench_util's StreamingReader, loads with and without
// software prefetch), and the bound for that precision is the best pass among its own rounds:
// the bandwidth a shared host leaves this VM moves by 2x within a minute, so only passes taken
// alternately with the decode runs are comparable with them. Median decode against best
// bandwidth keeps the fraction conservative. The 1-minute load average is recorded.
//
//   bench_decode [--json FILE] [--layers N] [--tokens N] [--threads N] [--prompt N] [--repeats N]
//   bench_decode --scaled-plan [--repeats N] [--threads N] [--json FILE]
//
// --scaled-plan measures instead what the default plan rates: the cpu jobs of its scaled
// TinyLlama (jobs/plans/default.toml, b1 at every seq_len it lists) built as the job runner
// builds them (build_graph: prefill, then the plan's decode steps), whole-run latency at f32,
// bf16 and q8_0. Runs alternate between the precisions, round by round, so background load hits
// all alike; each reports its median over --repeats rounds (at least kPlanMinRounds), and the
// f32 / bf16 latency ratio is taken from those medians in the same run.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "bench/bench_util.h"
#include "bench/cli_parse.h"
#include "common/build_info.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "jobs/plan.h"
#include "kernels/models/model.h"
#include "kernels/models/decoder_only.h"
#include "kernels/thread_pool.h"
#include "kernels/formats/weight_format.h"

namespace am::bench {
namespace {

constexpr int64_t kTinyLlamaLayers = 22;
constexpr uint64_t kSeed = 0x54494E59ull;  // "TINY"
constexpr uint64_t kPromptStream = 101, kForcedStream = 102;
constexpr double kBandwidthMinSeconds = 1.0;
constexpr jobs::Precision kPrecisions[] = {jobs::Precision::kQ4_0, jobs::Precision::kQ8_0};

nlohmann::json tinyllama_config(int64_t layers) {
  return {{"layers", layers},      {"hidden", 2048}, {"heads", 32},          {"kv_heads", 4},
          {"intermediate", 5632},  {"vocab", 32000}, {"max_positions", 2048}, {"rope_theta", 10000.0}};
}

// A decode step's weight products in the order it reads them (per layer q, k, v, o, gate, up,
// down, then the head), in bytes: what ProductReader reads as one token.
std::vector<std::size_t> token_products(const kernels::DecoderLmConfig& c, const kernels::FormatPlan& plan) {
  const kernels::StackConfig& s = c.stack;
  const int64_t q_cols = s.heads * s.head_dim, kv_cols = s.kv_heads * s.head_dim;
  auto bytes = [](kernels::WeightFormat f, int64_t rows, int64_t cols) {
    return static_cast<std::size_t>(rows) * kernels::weight_format_row_bytes(f, cols);
  };
  std::vector<std::size_t> out;
  for (int64_t l = 0; l < s.layers; ++l) {
    for (const int64_t rows : {q_cols, kv_cols, kv_cols}) out.push_back(bytes(plan.attention, rows, s.hidden));
    out.push_back(bytes(plan.attention, s.hidden, q_cols));
    out.push_back(bytes(plan.feed_forward, s.intermediate, s.hidden));
    out.push_back(bytes(plan.feed_forward, s.intermediate, s.hidden));
    out.push_back(bytes(plan.feed_forward, s.hidden, s.intermediate));
  }
  out.push_back(bytes(plan.output, c.vocab, s.hidden));
  return out;
}

// Slices per product of the decode-shaped read: about the tiles the interleaved matmul driver
// makes of a product (kernels/cpu/matmul.cpp, kTasksPerThread per thread).
constexpr int64_t kProductSlicesPerThread = 16;

nlohmann::json bandwidth_json(const ReadBandwidth& bw) {
  return {{"best_bytes_per_second", bw.best_bytes_per_second},
          {"median_bytes_per_second", bw.median_bytes_per_second},
          {"buffer_bytes", bw.buffer_bytes},
          {"threads", bw.threads},
          {"passes", bw.passes},
          {"loop", bw.loop},
          {"loads_only_best_bytes_per_second", bw.loads_only_best_bytes_per_second}};
}

// Rounds of the --scaled-plan comparison, at least, and the warm-up runs of each graph.
constexpr int kPlanMinRounds = 30;
constexpr int kPlanWarmupRuns = 3;
constexpr const char* kPlanModel = "TinyLlama-1.1B-Chat";
constexpr jobs::Precision kPlanPrecisions[] = {jobs::Precision::kF32, jobs::Precision::kBF16,
                                               jobs::Precision::kQ8_0};

struct Options {
  std::string json_path;
  int64_t layers = kTinyLlamaLayers;
  int64_t tokens = 32;
  int64_t prompt = 16;
  int threads = 0;
  int repeats = 3;
  bool scaled_plan = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The default plan's scaled TinyLlama, b1, at each of its seq_lens: f32, bf16 and q8_0 latency
// of the whole job run, as the job runner times it (kernels/job_runner.cpp).
int run_scaled_plan(const Options& o) {
  const int threads = o.threads > 0 ? o.threads : kernels::default_thread_count();
  kernels::ThreadPool pool(threads);
  auto path = kernels::select_kernel_path();
  if (!path.ok()) {
    std::fprintf(stderr, "bench_decode: %s\n", path.status().to_string().c_str());
    return 1;
  }
  const kernels::ExecContext ctx{*path, &pool};
  kernels::CpuBackend be(ctx);
  const auto plan_file = jobs::default_plans_dir() / "default.toml";
  auto plan = jobs::load_plan(plan_file);
  if (!plan.ok()) {
    std::fprintf(stderr, "bench_decode: %s\n", plan.status().to_string().c_str());
    return 1;
  }
  const std::string cpu = cpu_model_name();
  const int rounds = std::max(o.repeats, kPlanMinRounds);
  double load[1] = {0.0};
  std::printf("bench_decode --scaled-plan: %s, %s cpu b1 jobs, %d threads, kernel path %s, CPU %s, load average %.2f\n",
              plan_file.string().c_str(), kPlanModel, threads, std::string(kernels::kernel_path_name(*path)).c_str(),
              cpu.c_str(), ::getloadavg(load, 1) == 1 ? load[0] : -1.0);
  std::printf("whole-run latency (prefill + decode steps), median of %d alternated rounds, ms\n", rounds);
  std::printf("%-6s %8s %8s %8s %12s %12s\n", "seq", "f32", "bf16", "q8_0", "f32 / bf16", "f32 / q8_0");
  nlohmann::json doc = {{"bench", "bench_decode --scaled-plan"}, {"build", build_string()}, {"cpu_model", cpu},
                        {"plan", plan_file.string()}, {"threads", threads},
                        {"kernel_path", kernels::kernel_path_name(*path)}, {"rounds", rounds},
                        {"results", nlohmann::json::array()}};
  for (const jobs::PlannedJob& job : plan->jobs) {
    const jobs::JobSpec& spec = job.spec;
    if (spec.model != kPlanModel || spec.backend != "cpu" || spec.batch != 1 ||
        spec.precision != jobs::Precision::kF32) {
      continue;
    }
    std::vector<std::unique_ptr<kernels::ModelGraph>> graphs;
    for (const jobs::Precision p : kPlanPrecisions) {
      auto g = kernels::build_graph(spec, p, ctx);
      if (!g.ok()) {
        std::fprintf(stderr, "bench_decode: %s: %s\n", jobs::to_string(p).data(), g.status().to_string().c_str());
        return 1;
      }
      graphs.push_back(std::move(*g));
    }
    std::vector<std::vector<double>> ms(graphs.size());
    for (int r = -kPlanWarmupRuns; r < rounds; ++r) {
      for (std::size_t i = 0; i < graphs.size(); ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto out = graphs[i]->run(be);
        const double s = seconds_since(t0);
        if (!out.ok()) {
          std::fprintf(stderr, "bench_decode: %s\n", out.status().to_string().c_str());
          return 1;
        }
        if (r >= 0) ms[i].push_back(s * 1e3);
      }
    }
    const double f32 = median(ms[0]), bf16 = median(ms[1]), q8 = median(ms[2]);
    std::printf("s%-5d %8.3f %8.3f %8.3f %11.2fx %11.2fx\n", spec.seq_len, f32, bf16, q8, f32 / bf16, f32 / q8);
    doc["results"].push_back({{"seq_len", spec.seq_len}, {"batch", spec.batch},
                              {"f32_ms_samples", ms[0]}, {"bf16_ms_samples", ms[1]}, {"q8_0_ms_samples", ms[2]},
                              {"f32_median_ms", f32}, {"bf16_median_ms", bf16}, {"q8_0_median_ms", q8},
                              {"f32_over_bf16", f32 / bf16}});
  }
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_decode: cannot write %s\n", o.json_path.c_str());
      return 1;
    }
  }
  return 0;
}

struct RunResult {
  double decode_tokens_per_s = 0.0;
  double prefill_tokens_per_s = 0.0;
  double first_token_ms = 0.0;
};

Result<RunResult> run_once(kernels::Backend& be, const kernels::DecoderLm& m, const std::vector<int32_t>& prompt,
                           const std::vector<int32_t>& forced) {
  const int64_t prompt_len = static_cast<int64_t>(prompt.size()), steps = static_cast<int64_t>(forced.size());
  kernels::StackCache cache = m.stack.make_cache(be, 1, prompt_len + steps);
  kernels::Tensor logits(kernels::Shape{steps + 1, m.config.vocab});
  kernels::PhaseTimes phases;
  AM_RETURN_IF_ERROR(kernels::generate_teacher_forced(be, m.stack, m.embedding, m.head, 1, prompt, prompt_len, forced,
                                                      steps, cache, std::chrono::steady_clock::now(), logits, phases));
  RunResult r;
  r.decode_tokens_per_s = static_cast<double>(phases.decode_tokens) / (phases.decode_ms / 1e3);
  r.prefill_tokens_per_s = static_cast<double>(phases.prefill_tokens) / (phases.prefill_ms / 1e3);
  r.first_token_ms = phases.first_token_ms;
  return r;
}

int run(const Options& o) {
  if (o.scaled_plan) return run_scaled_plan(o);
  const int threads = o.threads > 0 ? o.threads : kernels::default_thread_count();
  kernels::ThreadPool pool(threads);
  auto path = kernels::select_kernel_path();
  if (!path.ok()) {
    std::fprintf(stderr, "bench_decode: %s\n", path.status().to_string().c_str());
    return 1;
  }
  const kernels::ExecContext ctx{*path, &pool};
  kernels::CpuBackend be(ctx);

  double load[1] = {0.0};
  const double load_average = ::getloadavg(load, 1) == 1 ? load[0] : -1.0;
  StreamingReader reader(pool);
  const ReadBandwidth bw = reader.measure(kBandwidthMinSeconds);
  std::printf("bench_decode: TinyLlama-1.1B shape, %lld of %lld layers, %d threads, kernel path %s, CPU %s\n",
              static_cast<long long>(o.layers), static_cast<long long>(kTinyLlamaLayers), threads,
              std::string(kernels::kernel_path_name(*path)).c_str(), cpu_model_name().c_str());
  std::printf("load average at start: %.2f\n", load_average);
  std::printf("read bandwidth at start: %.2f GB/s best, %.2f GB/s median (%s; loads alone %.2f GB/s; %zu MiB buffer, %d passes)\n",
              bw.best_bytes_per_second / 1e9, bw.median_bytes_per_second / 1e9, bw.loop,
              bw.loads_only_best_bytes_per_second / 1e9, bw.buffer_bytes >> 20, bw.passes);

  nlohmann::json doc = {{"bench", "bench_decode"},
                        {"build", build_string()},
                        {"cpu_model", cpu_model_name()},
                        {"model", "TinyLlama-1.1B shape"},
                        {"config", tinyllama_config(o.layers)},
                        {"scaled", o.layers != kTinyLlamaLayers},
                        {"threads", threads},
                        {"load_average_1min_at_start", load_average},
                        {"kernel_path", kernels::kernel_path_name(*path)},
                        {"prompt_tokens", o.prompt},
                        {"decode_tokens", o.tokens},
                        {"repeats", o.repeats},
                        {"read_bandwidth_at_start", bandwidth_json(bw)},
                        {"results", nlohmann::json::array()},
                        {"skipped", nlohmann::json::array()}};

  auto config = kernels::decoder_lm_config_from_json(tinyllama_config(o.layers), "decoder-only");
  if (!config.ok()) {
    std::fprintf(stderr, "bench_decode: %s\n", config.status().to_string().c_str());
    return 1;
  }
  const std::vector<int32_t> prompt = kernels::seeded_token_ids(o.prompt, config->vocab, kSeed, kPromptStream);
  const std::vector<int32_t> forced = kernels::seeded_token_ids(o.tokens, config->vocab, kSeed, kForcedStream);
  const std::vector<int32_t> warm_forced(forced.begin(), forced.begin() + std::min<int64_t>(o.tokens, 4));

  std::printf("\n(bound: the best read pass among those alternated with this precision's decode runs;\n"
              " token read: the best pass of a read of one token's weight products, each split over the pool as the\n"
              " matmul splits it, alternated likewise: what memory gives short products, no arithmetic)\n");
  std::printf("%-6s %12s %10s %12s %12s %10s %10s %10s %8s %10s %8s\n", "format", "weights/tok", "gen s",
              "prefill t/s", "decode t/s", "TTFT ms", "GB/s", "bound GB/s", "bw frac", "token GB/s", "of it");
  for (const jobs::Precision p : kPrecisions) {
    const std::string name(jobs::to_string(p));
    const char* precision = name.c_str();
    const auto format = kernels::single_format(p);
    if (!format.ok()) {
      const std::string why = format.status().to_string();
      std::printf("%-6s skipped: %s\n", precision, why.c_str());
      doc["skipped"].push_back({{"precision", name}, {"reason", why}});
      continue;
    }
    const kernels::FormatPlan plan = kernels::format_plan_for(p);
    const auto t0 = std::chrono::steady_clock::now();
    auto model = kernels::DecoderLm::create_synthetic(*config, plan, kSeed, ctx);
    const double gen_s = seconds_since(t0);
    if (!model.ok()) {
      std::fprintf(stderr, "bench_decode: %s: %s\n", precision, model.status().to_string().c_str());
      return 1;
    }
    // Per decoded token every stack weight and the head are read once, plus one token row.
    const std::size_t bytes_per_token = model->stack.weights_bytes() + model->head.weight_bytes() +
                                        static_cast<std::size_t>(config->stack.hidden) * sizeof(float);
    if (auto warm = run_once(be, *model, prompt, warm_forced); !warm.ok()) {
      std::fprintf(stderr, "bench_decode: %s: %s\n", precision, warm.status().to_string().c_str());
      return 1;
    }
    ProductReader token_reader(pool, token_products(*config, plan), threads * kProductSlicesPerThread);
    std::vector<RunResult> runs;
    reader.reset();
    ReadBandwidth paired;
    double token_read_best_s = 0.0;
    for (int r = 0; r < o.repeats; ++r) {
      auto res = run_once(be, *model, prompt, forced);
      if (!res.ok()) {
        std::fprintf(stderr, "bench_decode: %s: %s\n", precision, res.status().to_string().c_str());
        return 1;
      }
      runs.push_back(*res);
      paired = reader.round();
      const double t = token_reader.pass_seconds();
      if (r == 0 || t < token_read_best_s) token_read_best_s = t;
    }
    const double token_read_bound = static_cast<double>(token_reader.bytes()) / token_read_best_s;
    std::vector<RunResult> sorted = runs;
    std::sort(sorted.begin(), sorted.end(),
              [](const RunResult& a, const RunResult& b) { return a.decode_tokens_per_s < b.decode_tokens_per_s; });
    const RunResult& med = sorted[sorted.size() / 2];
    const double bytes_per_s = static_cast<double>(bytes_per_token) * med.decode_tokens_per_s;
    const double bound = paired.best_bytes_per_second;
    std::printf("%-6s %9.1f MiB %10.1f %12.1f %12.2f %10.1f %10.2f %10.2f %8.3f %10.2f %8.3f\n", precision,
                static_cast<double>(bytes_per_token) / (1 << 20), gen_s, med.prefill_tokens_per_s,
                med.decode_tokens_per_s, med.first_token_ms, bytes_per_s / 1e9, bound / 1e9, bytes_per_s / bound,
                token_read_bound / 1e9, bytes_per_s / token_read_bound);
    nlohmann::json samples = nlohmann::json::array();
    for (const RunResult& r : runs) samples.push_back(r.decode_tokens_per_s);
    doc["results"].push_back({{"precision", precision},
                              {"attention_format", kernels::weight_format_name(plan.attention)},
                              {"feed_forward_format", kernels::weight_format_name(plan.feed_forward)},
                              {"output_format", kernels::weight_format_name(plan.output)},
                              {"weights_bytes", model->weights_bytes()},
                              {"weight_bytes_per_token", bytes_per_token},
                              {"generation_seconds", gen_s},
                              {"prefill_tokens_per_s", med.prefill_tokens_per_s},
                              {"time_to_first_token_ms", med.first_token_ms},
                              {"decode_tokens_per_s", med.decode_tokens_per_s},
                              {"decode_tokens_per_s_samples", samples},
                              {"weight_bytes_per_s", bytes_per_s},
                              {"read_bandwidth_paired", bandwidth_json(paired)},
                              {"read_bandwidth_bound_bytes_per_second", bound},
                              {"bandwidth_bound_fraction", bytes_per_s / bound},
                              {"token_read_bytes_per_second", token_read_bound},
                              {"token_read_fraction", bytes_per_s / token_read_bound},
                              {"bandwidth_bound_fraction_best_run",
                               static_cast<double>(bytes_per_token) * sorted.back().decode_tokens_per_s / bound}});
  }
  std::printf("\n");
  for (const nlohmann::json& r : doc["results"]) {
    std::printf("%-6s bandwidth_bound_fraction %.3f (best run %.3f); of the token-shaped read %.3f\n",
                r["precision"].get<std::string>().c_str(), r["bandwidth_bound_fraction"].get<double>(),
                r["bandwidth_bound_fraction_best_run"].get<double>(), r["token_read_fraction"].get<double>());
  }
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_decode: cannot write %s\n", o.json_path.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", o.json_path.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
  am::bench::Options o;
  CLI::App app{"Decode tokens/s of a TinyLlama-shaped decoder at q4_0 and q8_0 against the read-bandwidth bound"};
  app.add_option("--json", o.json_path, "write the results as JSON to FILE");
  app.add_option("--layers", o.layers, "decoder layers (default 22, TinyLlama's)")->check(CLI::Range(1, 64));
  app.add_option("--tokens", o.tokens, "decode steps per run")->check(CLI::Range(1, 1024));
  app.add_option("--prompt", o.prompt, "prompt tokens prefilled before decoding")->check(CLI::Range(1, 1024));
  app.add_option("--threads", o.threads, "threads (default: physical cores)")->check(CLI::Range(0, 1024));
  app.add_option("--repeats", o.repeats, "measured runs per precision (median reported)")->check(CLI::Range(1, 100));
  app.add_flag("--scaled-plan", o.scaled_plan,
               "instead: f32 vs bf16 vs q8_0 latency of the default plan's scaled TinyLlama cpu b1 jobs");
  AM_BENCH_PARSE(app, argc, argv);
  return am::bench::run(o);
}
