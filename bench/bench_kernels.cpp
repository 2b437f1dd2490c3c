// Throughput of the quantized matmul kernels against what this machine can do, measured in the
// same run: OpenBLAS sgemm at the same shapes (the GEMM baseline) and a STREAM-like read of a
// buffer much larger than the last-level cache (the GEMV baseline: decode streams every weight
// byte once per token, so memory bandwidth is its bound).
//
//   build/bench/bench_kernels [--threads N] [--json FILE] [--quick] [--min-time-s S]
//                             [--formats f32,q8_0,q4_0,...] [--kinds gemm,gemv,smallm]
//                             [--layout exec|rows|both]
//
// For every weight format: GEMM at prefill shapes (M = 512 tokens, N = 4096, K = 4096 and
// 14336) and GEMV (M = 1, N = 4096, K = 14336), at 1 thread and at N threads (default: the
// physical cores). GEMM reports GOPS (2 M N K per second) and the ratio to sgemm's GFLOPS;
// GEMV reports weight bytes per second and its fraction of the measured read bandwidth, and beside
// it the kernel's cache-resident rate (a 4 MiB matrix of the same K: its compute ceiling). Where
// the avx512 path runs a format interleaved, the packed-tile GEMM kernel is also timed alone, on
// operands held in L1 and on the GEMM's panel of weights in L2 (tile_kernel_gops). The
// GEMV cycles through copies of the weights totalling at least the bandwidth baseline's buffer
// (bench_util's streaming_buffer_bytes(), many times the last-level cache), so both read from
// the same memory system. The arithmetic peaks (fp32 FMA, int8 and bf16 dot products) are
// measured in the same run too, and every GEMM is also reported as a fraction of the peak of
// the arithmetic it runs on (int8 for the quantized formats, bf16 dot for bf16 where the CPU has
// it, fp32 FMA for f16), so a figure can be checked against what the silicon can do. The peaks
// are measured again right after each GEMM and the GEMM is judged against the higher of the two
// (paired, as the GEMVs are with bandwidth): on these shared VMs the one-thread int8 peak read
// anywhere from 715 to 1007 GOPS between runs of the same binary (Zen 5, 2026-12-07), and a
// peak caught in a slow window had put a GEMM at "105%". Each figure is the best of repeated runs after a warm-up
// (both for our kernels and for the baselines, so noise from other processes on a shared
// machine biases neither side); medians are in the JSON too. A third baseline, the parallel
// capacity (independent FMA chains on N threads vs 1), says how much parallel hardware the run
// actually got: on an overcommitted machine it falls below N, and GEMM scaling with it.
//
// f32 runs through matmul_f32's dispatch like a model does: its GEMV row is our own GEMV
// (kernels/cpu/gemm_f32.h) judged against the same paired read bandwidth as the other formats,
// and its M = 512 GEMM row is the OpenBLAS side of the crossover (single-threaded slices on the
// pool) against sgemm on OpenBLAS's own threads. The small-M table (--kinds smallm) puts our
// f32 GEMM next to OpenBLAS at M = 1-256 for three weight shapes, both ways OpenBLAS can own
// the cores, and says where OpenBLAS first wins: the measurement behind f32_blas_min_rows().
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "bench/bench_util.h"
#include "bench/cli_parse.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_f32.h"
#include "kernels/cpu/matmul.h"
#include "kernels/formats/dot_kernels.h"
#include "kernels/formats/quantized_activations.h"
#include "kernels/formats/weight_matrix.h"
#include "kernels/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace am::kernels {
namespace {

constexpr double kDefaultMinTimeS = 0.4;
constexpr double kQuickMinTimeS = 0.05;
constexpr int kMinRuns = 3;
constexpr int64_t kSlabRows = 64;                    // distinct quantized rows, tiled over N
constexpr float kWeightStd = 0.02f;
// A GEMV's compute ceiling: the same kernel on a matrix of about this many bytes (the rows of K
// that fit, a multiple of 8 for the interleaved groups), small enough to stay in the last-level
// cache between calls, so memory does not limit it. When the ceiling sits below the read
// bandwidth, the streaming GEMV cannot reach the bandwidth on this core count, whatever the memory.
constexpr std::size_t kResidentBytes = std::size_t{4} << 20;

struct Shapes {
  int64_t gemm_m, gemm_n;
  std::vector<int64_t> gemm_k;
  int64_t gemv_n, gemv_k;
  // f32 small-M table: (K, N) weight shapes and the rows of X tried at each.
  std::vector<std::pair<int64_t, int64_t>> small_kn;
  std::vector<int64_t> small_m;
};

struct Timing {
  double best_s = 0.0;
  double median_s = 0.0;
  int runs = 0;
};

Timing time_it(const std::function<void()>& fn, double min_time_s) {
  fn();  // warm-up: caches, page faults, thread start-up
  std::vector<double> samples;
  double total = 0.0;
  while (total < min_time_s || static_cast<int>(samples.size()) < kMinRuns) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const double s = seconds_since(t0);
    samples.push_back(s);
    total += s;
  }
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2], static_cast<int>(samples.size())};
}

Tensor random_tensor(int64_t rows, int64_t cols, uint32_t seed, float stddev) {
  Tensor t(Shape{rows, cols});
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = dist(gen);
  return t;
}

// An [n, k] matrix in `format` whose rows cycle through kSlabRows really quantized rows: the
// bytes are those of real Gaussian weights, without quantizing n x k values per format.
WeightMatrix make_weights(WeightFormat format, int64_t n, int64_t k, const ExecContext& ctx, WeightLayout layout) {
  const Tensor slab = random_tensor(std::min(n, kSlabRows), k, 7, kWeightStd);
  const WeightMatrix q = WeightMatrix::quantize(slab.view(), format, ctx);
  std::vector<uint8_t> bytes(q.row_bytes() * static_cast<std::size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    std::memcpy(bytes.data() + q.row_bytes() * r, q.row_data(r % q.rows()), q.row_bytes());
  }
  return std::move(WeightMatrix::from_bytes(format, n, k, bytes, layout)).value();
}

// The AVX-512 packed-tile GEMM kernel's own rate: one tile of X (kPackedTileRows rows) against a
// panel of `groups` interleaved groups (8 weight rows each), K = 512 (the driver's K slice of 16
// blocks), one call over the whole panel at a time, back to back on one thread (GOPS; 0 where the
// path has no packed-tile kernel for the format). With 4 groups every operand stays in L1: the
// kernel's own ceiling, what its instruction mix allows. With the panel the GEMM driver walks per
// tile of X (kTileBytesTarget of weights, kernels/cpu/matmul.cpp) the weights stream from L2 as
// in the GEMM: what that traffic leaves. A GEMM's share of the peak is judged against both
// (docs/FORMATS.md).
constexpr int64_t kTileK = 512;
constexpr std::size_t kGemmPanelBytes = 256 * 1024;
double tile_kernel_gops(WeightFormat f, const ExecContext& ctx, double min_time_s, int64_t groups) {
  const detail::GroupDot gd = detail::group_dot_kernel(f, ctx.path);
  if (gd.tile == nullptr || cpu_execution_layout(f, ctx.path, kTileK) != WeightLayout::kInterleaved8) return 0.0;
  constexpr int64_t kRowsOfX = detail::kPackedTileRows;
  const int64_t rows_of_w = groups * kInterleaveRows;
  const WeightMatrix w = make_weights(f, rows_of_w, kTileK, ctx, WeightLayout::kInterleaved8);
  const Tensor x = random_tensor(kRowsOfX, kTileK, 5, 1.0f);
  PreparedActivations a;
  a.prepare(x.view(), f, ctx);
  std::vector<ActRow> rows;
  for (int64_t m = 0; m < kRowsOfX; ++m) rows.push_back(a.row(m));
  detail::PackedActTile tile;
  detail::pack_act_tile(f, rows.data(), kRowsOfX, tile);
  const detail::PackedActView view = detail::packed_view(tile, 0, a.blocks_per_row());
  const std::size_t group_stride = static_cast<std::size_t>(w.group_data(1) - w.group_data(0));
  std::vector<float> y(static_cast<std::size_t>(kRowsOfX * rows_of_w));
  // About 100 M multiply-adds per timed call, whatever the panel.
  const int64_t calls = std::max<int64_t>(1, 100'000'000 / (kRowsOfX * rows_of_w * kTileK));
  const Timing t = time_it(
      [&] {
        for (int64_t i = 0; i < calls; ++i) {
          gd.tile(view, kRowsOfX, w.group_data(0), group_stride, groups, y.data(), rows_of_w, /*accumulate=*/i > 0);
        }
      },
      min_time_s);
  return 2.0 * kRowsOfX * rows_of_w * kTileK * calls / t.best_s / 1e9;
}

// The groups of the panel the GEMM driver streams per tile of X: kGemmPanelBytes of K-slice
// weights, whole 4-group kernel calls.
int64_t gemm_panel_groups(WeightFormat f) {
  const std::size_t slice_bytes = weight_format_row_bytes(f, kTileK) * kInterleaveRows;
  return std::max<int64_t>(4, static_cast<int64_t>(kGemmPanelBytes / slice_bytes) / 4 * 4);
}

// The layouts to measure a format in: "exec" (default) is the layout the cpu backend executes it
// in on this path (what Linear::create picks), "rows" GGUF rows, "both" the two in one run where
// they differ (an A/B of the execution layout against the same baselines).
constexpr int64_t kBenchEvenK = 4096;   // every K this bench times is even (bf16 strips64 takes only those)
std::vector<WeightLayout> bench_layouts(WeightFormat f, KernelPath path, const std::string& which) {
  const WeightLayout exec = cpu_execution_layout(f, path, kBenchEvenK);
  if (which == "rows") return {WeightLayout::kRows};
  if (which == "both" && exec != WeightLayout::kRows) return {WeightLayout::kRows, exec};
  return {exec};
}

// Compute throughput available to `pool` right now: every thread runs independent register-only
// FMA chains for a fixed count. On a shared or overcommitted machine the N-thread rate divided by
// the 1-thread rate (the parallel capacity) can fall well below N; GEMM scaling cannot beat it.
double compute_rate(ThreadPool& pool, double min_time_s) {
  constexpr int64_t kIterations = 20'000'000;
  const int64_t parts = pool.size();
  std::vector<double> sink(parts);
  const Timing t = time_it(
      [&] {
        pool.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            double a0 = 1.0, a1 = 1.1, a2 = 1.2, a3 = 1.3, a4 = 1.4, a5 = 1.5, a6 = 1.6, a7 = 1.7;
            for (int64_t i = 0; i < kIterations; ++i) {
              a0 = a0 * 0.999999 + 1e-7; a1 = a1 * 0.999999 + 1e-7; a2 = a2 * 0.999999 + 1e-7;
              a3 = a3 * 0.999999 + 1e-7; a4 = a4 * 0.999999 + 1e-7; a5 = a5 * 0.999999 + 1e-7;
              a6 = a6 * 0.999999 + 1e-7; a7 = a7 * 0.999999 + 1e-7;
            }
            sink[p] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
          }
        });
      },
      min_time_s);
  return static_cast<double>(parts * kIterations) / t.best_s;
}

struct Row {
  std::string format, kind;
  int64_t m, n, k;
  int threads;
  Timing t;
  double gops = 0.0, ratio = 0.0, bytes_per_s = 0.0, bw_fraction = 0.0;
  double peak_fraction = 0.0, paired_bw = 0.0;
  double peak = 0.0;  // GEMM: the peak (ops/s) it is judged against, paired with its own timing
  const char* peak_kind = "";
  std::size_t weight_bytes = 0;
  std::string layout = "rows";  // the weight layout the kernels ran on
  double resident_bytes_per_s = 0.0;  // GEMV: the cache-resident ceiling (kResidentBytes)
};

nlohmann::json to_json(const Row& r) {
  nlohmann::json j = {{"format", r.format},       {"kind", r.kind},
                      {"m", r.m},                 {"n", r.n},
                      {"k", r.k},                 {"threads", r.threads},
                      {"seconds_best", r.t.best_s}, {"seconds_median", r.t.median_s},
                      {"runs", r.t.runs},         {"gops", r.gops},
                      {"layout", r.layout}};
  if (r.kind == "gemm") {
    j["ratio_vs_sgemm"] = r.ratio;
    if (r.peak_fraction > 0) {
      j["fraction_of_peak"] = r.peak_fraction;
      j["above_measured_peak"] = r.peak_fraction > 1.0;   // the host changed speed: not a valid share
      j["peak"] = r.peak_kind;
      if (r.peak > 0) j["paired_peak_ops_per_second"] = r.peak;
    }
  }
  if (r.kind == "gemv") {
    j["weight_bytes"] = r.weight_bytes;
    j["weight_bytes_per_second"] = r.bytes_per_s;
    j["bandwidth_fraction"] = r.bw_fraction;
    j["paired_read_bandwidth_bytes_per_second"] = r.paired_bw;
    j["cache_resident_bytes_per_second"] = r.resident_bytes_per_s;
  }
  return j;
}

// The 1-minute load average, recorded with the results: on a shared machine it says how much
// other work competed with the measurement.
double load_average() {
  std::ifstream f("/proc/loadavg");
  double l = -1.0;
  f >> l;
  return l;
}

bool wanted(const std::string& list, const std::string& item) {
  if (list.empty()) return true;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t end = std::min(list.find(',', pos), list.size());
    if (list.compare(pos, end - pos, item) == 0) return true;
    pos = end + 1;
  }
  return false;
}

int run(int threads, const std::string& json_path, bool quick, double min_time_s,
        const std::string& formats, const std::string& kinds, const std::string& layouts) {
  // Small-M shapes: a 7B-class square projection, TinyLlama's FFN up projection and the default
  // plan's scaled TinyLlama FFN (hidden 256, intermediate 704), where per-call overheads rule.
  const Shapes shapes =
      quick ? Shapes{64, 512, {1024}, 512, 2048, {{1024, 512}}, {1, 4, 16, 64}}
            : Shapes{512, 4096, {4096, 14336}, 4096, 14336,
                     {{4096, 4096}, {2048, 5632}, {256, 704}}, {1, 2, 4, 8, 16, 32, 64, 128, 256}};
  const Result<KernelPath> path = select_kernel_path();
  if (!path.ok()) {
    std::fprintf(stderr, "%s\n", path.status().to_string().c_str());
    return 2;
  }
  std::vector<int> thread_counts = {1};
  if (threads > 1) thread_counts.push_back(threads);

  nlohmann::json doc;
  doc["kernel_path"] = std::string(kernel_path_name(*path));
  doc["avx512bf16"] = cpu_features().avx512bf16;
  doc["threads"] = threads;
  doc["quick"] = quick;
  doc["llc_bytes"] = am::bench::last_level_cache_bytes();
  doc["load_average_start"] = load_average();
  doc["baselines"] = nlohmann::json::array();
  doc["results"] = nlohmann::json::array();
  std::vector<Row> rows;
  double one_thread_rate = 0.0, parallel_capacity = 0.0;

  const std::string cpu = am::bench::cpu_model_name();
  doc["cpu_model"] = cpu;
  doc["f32_small_m"] = nlohmann::json::array();
  std::printf("CPU %s: kernel path %s, threads 1 and %d, min time %.2f s per figure, load average %.2f\n",
              cpu.c_str(), std::string(kernel_path_name(*path)).c_str(), threads, min_time_s, load_average());
  for (int t : thread_counts) {
    ThreadPool pool(t);
    const ExecContext ctx{*path, &pool};

    const double rate = compute_rate(pool, min_time_s);
    doc["baselines"].push_back({{"kind", "compute_rate"}, {"threads", t}, {"iterations_per_second", rate}});
    if (t == 1) {
      one_thread_rate = rate;
    } else {
      parallel_capacity = rate / one_thread_rate;
      doc["parallel_capacity"] = parallel_capacity;
      std::printf("\n[%d threads] parallel capacity (independent FMA chains, %d threads / 1): %.2fx\n", t,
                  t, parallel_capacity);
    }
    const am::bench::ComputePeaks peaks = am::bench::measure_compute_peaks(pool, min_time_s, *path);
    doc["baselines"].push_back({{"kind", "compute_peaks"}, {"threads", t}, {"isa", peaks.isa},
                                {"fp32_fma_gflops", peaks.fp32_flops / 1e9},
                                {"int8_dot_gops", peaks.int8_ops / 1e9},
                                {"bf16_dot_gflops", peaks.bf16_flops / 1e9}});
    std::printf("\n[%d thread%s] peaks (%s): fp32 FMA %.0f GFLOPS, int8 dot %.0f GOPS, bf16 dot %.0f GFLOPS\n", t,
                t > 1 ? "s" : "", peaks.isa, peaks.fp32_flops / 1e9, peaks.int8_ops / 1e9, peaks.bf16_flops / 1e9);
    am::bench::StreamingReader reader(pool);
    const am::bench::ReadBandwidth rb = reader.measure(min_time_s);
    doc["baselines"].push_back({{"kind", "read_bandwidth"}, {"threads", t}, {"bytes_per_second", rb.best_bytes_per_second},
                                {"median_bytes_per_second", rb.median_bytes_per_second}, {"loop", rb.loop},
                                {"loads_only_bytes_per_second", rb.loads_only_best_bytes_per_second},
                                {"buffer_bytes", rb.buffer_bytes}});
    std::printf("[%d thread%s] read bandwidth %.1f GB/s (%s; loads alone %.1f GB/s; %zu MiB; each GEMV below "
                "is judged against passes alternated with its own runs)\n",
                t, t > 1 ? "s" : "", rb.best_bytes_per_second / 1e9, rb.loop,
                rb.loads_only_best_bytes_per_second / 1e9, rb.buffer_bytes >> 20);

    std::vector<double> sgemm_gflops;
    for (int64_t k : shapes.gemm_k) {
      if (!wanted(kinds, "gemm")) break;
      const Tensor x = random_tensor(shapes.gemm_m, k, 1, 1.0f);
      const Tensor w = random_tensor(shapes.gemm_n, k, 2, kWeightStd);
      Tensor y(Shape{shapes.gemm_m, shapes.gemm_n});
      const Timing tm = time_it([&] { matmul_f32_blas(x.view(), w.view(), nullptr, y.view(), ctx, BlasThreading::kOpenBlasThreads); }, min_time_s);
      const double gf = 2.0 * shapes.gemm_m * shapes.gemm_n * k / tm.best_s / 1e9;
      sgemm_gflops.push_back(gf);
      doc["baselines"].push_back({{"kind", "sgemm"}, {"threads", t}, {"m", shapes.gemm_m},
                                  {"n", shapes.gemm_n}, {"k", k}, {"gflops", gf},
                                  {"seconds_best", tm.best_s}, {"seconds_median", tm.median_s}});
      std::printf("  sgemm  M=%lld N=%lld K=%lld: %.1f GFLOPS\n", static_cast<long long>(shapes.gemm_m),
                  static_cast<long long>(shapes.gemm_n), static_cast<long long>(k), gf);
    }

    std::printf("  [%s, %d thread%s; f32 runs matmul_f32's dispatch: our GEMV below the OpenBLAS crossover, "
                "OpenBLAS slices on the pool above it]\n",
                cpu.c_str(), t, t > 1 ? "s" : "");
    std::printf("  %-5s %-4s %5s %6s %6s %9s %9s %10s %8s %8s\n", "fmt", "kind", "M", "N", "K", "ms", "GOPS",
                "x sgemm", "of peak", "of BW");
    for (WeightFormat f : all_weight_formats()) {
      const std::string name(weight_format_name(f));
      if (!wanted(formats, name)) continue;
      for (WeightLayout layout : bench_layouts(f, *path, layouts)) {
      for (std::size_t i = 0; i < shapes.gemm_k.size() && wanted(kinds, "gemm"); ++i) {
        const int64_t k = shapes.gemm_k[i];
        const WeightMatrix w = make_weights(f, shapes.gemm_n, k, ctx, layout);
        const Tensor x = random_tensor(shapes.gemm_m, k, 3, 1.0f);
        Tensor y(Shape{shapes.gemm_m, shapes.gemm_n});
        Row r{name, "gemm", shapes.gemm_m, shapes.gemm_n, k, t, {}};
        r.t = time_it([&] { matmul(x.view(), w, nullptr, y.view(), ctx); }, min_time_s);
        r.gops = 2.0 * r.m * r.n * r.k / r.t.best_s / 1e9;
        r.ratio = r.gops / sgemm_gflops[i];
        // The peak re-measured right after this GEMM; the higher of it and the table's peak is
        // the one judged against (a slow window only ever lowers a peak).
        const am::bench::ComputePeaks after = am::bench::measure_compute_peaks(pool, min_time_s, *path);
        double peak = std::max(peaks.int8_ops, after.int8_ops);
        r.peak_kind = "int8_dot";
        if (f == WeightFormat::kF32 || f == WeightFormat::kF16 ||
            (f == WeightFormat::kBF16 && peaks.bf16_flops <= 0)) {
          peak = std::max(peaks.fp32_flops, after.fp32_flops);
          r.peak_kind = "fp32_fma";
        } else if (f == WeightFormat::kBF16) {
          peak = std::max(peaks.bf16_flops, after.bf16_flops);
          r.peak_kind = "bf16_dot";
        }
        r.peak = peak;
        r.peak_fraction = peak > 0 ? r.gops * 1e9 / peak : 0.0;
        r.layout = std::string(weight_layout_name(w.layout()));
        // Above the peak is impossible for the kernel: both peak passes (before the GEMM and
        // right after it) ran in a slower phase of the host than the GEMM. Said, not hidden.
        std::printf("  %-5s %-4s %5lld %6lld %6lld %9.2f %9.1f %9.2fx %7.0f%% %8s  %s%s\n", name.c_str(), "gemm",
                    static_cast<long long>(r.m), static_cast<long long>(r.n), static_cast<long long>(r.k),
                    r.t.best_s * 1e3, r.gops, r.ratio, 100.0 * r.peak_fraction, "", r.layout.c_str(),
                    r.peak_fraction > 1.0 ? "  (above the peak measured beside it: the host changed speed; not a valid share)"
                                          : "");
        rows.push_back(r);
      }
      if (t == 1 && wanted(kinds, "gemm") && layout == WeightLayout::kInterleaved8 && peaks.int8_ops > 0) {
        if (const double l1 = tile_kernel_gops(f, ctx, min_time_s, 4); l1 > 0) {
          const int64_t panel = gemm_panel_groups(f);
          const double l2 = tile_kernel_gops(f, ctx, min_time_s, panel);
          // Paired like the GEMMs: the higher of the table's peak and one measured right after.
          const double peak =
              std::max(peaks.int8_ops, am::bench::measure_compute_peaks(pool, min_time_s, *path).int8_ops);
          std::printf("  %-5s tile kernel alone (6 rows of X, K = 512): 4 groups in L1 %.1f GOPS = %.0f%% of the int8 "
                      "peak; the GEMM's %lld-group panel from L2 %.1f GOPS = %.0f%%\n",
                      name.c_str(), l1, 100.0 * l1 * 1e9 / peak, static_cast<long long>(panel), l2,
                      100.0 * l2 * 1e9 / peak);
          // The kernel's own ceiling: its instruction mix with every operand in registers or L1
          // (bench_util.h), with and without the per-block scaling.
          const double mix = am::bench::measure_tile_mix_ceiling(pool, min_time_s, f);
          const double unscaled = am::bench::measure_tile_mix_ceiling(pool, min_time_s, f, /*scaled=*/false);
          if (mix > 0) {
            std::printf("  %-5s tile kernel's instruction mix, its weights in registers: %.0f%% of the int8 peak", name.c_str(),
                        100.0 * mix / peak);
            if (unscaled > 0) std::printf(" (without its per-block scaling %.0f%%)", 100.0 * unscaled / peak);
            std::printf("; the kernel alone in L1 reaches %.0f%% of that\n", 100.0 * l1 * 1e9 / mix);
          }
          doc["tile_kernel"].push_back({{"format", name}, {"l1_gops", l1},
                                        {"l1_fraction_of_peak", l1 * 1e9 / peak},
                                        {"panel_groups", panel}, {"l2_gops", l2},
                                        {"l2_fraction_of_peak", l2 * 1e9 / peak},
                                        {"mix_ceiling_fraction_of_peak", mix / peak},
                                        {"unscaled_mix_fraction_of_peak", unscaled / peak}});
        }
      }
      if (!wanted(kinds, "gemv")) continue;
      // GEMV: cycle through copies totalling at least the bandwidth baseline's buffer.
      const WeightMatrix w0 = make_weights(f, shapes.gemv_n, shapes.gemv_k, ctx, layout);
      const std::size_t copies = std::max<std::size_t>(
          2, (am::bench::streaming_buffer_bytes() + w0.size_bytes() - 1) / w0.size_bytes());
      std::vector<WeightMatrix> ws;
      std::vector<uint8_t> gguf(w0.size_bytes());
      w0.gguf_rows(gguf.data());
      for (std::size_t c = 0; c < copies; ++c) {
        ws.push_back(std::move(WeightMatrix::from_bytes(f, w0.rows(), w0.cols(), gguf, w0.layout())).value());
      }
      const Tensor x = random_tensor(1, shapes.gemv_k, 4, 1.0f);
      Tensor y(Shape{1, shapes.gemv_n});
      Row r{name, "gemv", 1, shapes.gemv_n, shapes.gemv_k, t, {}};
      // Paired: each round is one sweep over every copy, then one pass of each read loop, so
      // both see the same background load; each side keeps its best.
      auto sweep = [&] {
        for (const WeightMatrix& w : ws) matmul(x.view(), w, nullptr, y.view(), ctx);
      };
      sweep();  // warm-up
      reader.reset();
      am::bench::ReadBandwidth paired;
      std::vector<double> samples;
      for (double spent = 0.0; spent < min_time_s || static_cast<int>(samples.size()) < kMinRuns;) {
        const auto t0 = std::chrono::steady_clock::now();
        sweep();
        samples.push_back(seconds_since(t0) /
                          static_cast<double>(ws.size()));
        paired = reader.round();
        spent += seconds_since(t0);
      }
      std::sort(samples.begin(), samples.end());
      r.t = {samples.front(), samples[samples.size() / 2], static_cast<int>(samples.size())};
      r.weight_bytes = w0.size_bytes();
      r.gops = 2.0 * r.n * r.k / r.t.best_s / 1e9;
      r.bytes_per_s = static_cast<double>(r.weight_bytes) / r.t.best_s;
      r.paired_bw = paired.best_bytes_per_second;
      r.bw_fraction = r.bytes_per_s / r.paired_bw;
      r.layout = std::string(weight_layout_name(w0.layout()));
      {
        const int64_t per_row = static_cast<int64_t>(w0.row_bytes());
        const int64_t resident_rows =
            std::max<int64_t>(8, static_cast<int64_t>(kResidentBytes) / std::max<int64_t>(1, per_row) / 8 * 8);
        const WeightMatrix wr = make_weights(f, resident_rows, shapes.gemv_k, ctx, layout);
        Tensor yr(Shape{1, resident_rows});
        const Timing tr = time_it([&] { matmul(x.view(), wr, nullptr, yr.view(), ctx); }, min_time_s / 2);
        r.resident_bytes_per_s = static_cast<double>(wr.size_bytes()) / tr.best_s;
      }
      std::printf("  %-5s %-4s %5d %6lld %6lld %9.3f %9.1f %10s %8s %7.0f%%  (%.1f GB/s of %.1f; cache-resident %.1f GB/s)  %s\n",
                  name.c_str(), "gemv", 1, static_cast<long long>(r.n), static_cast<long long>(r.k), r.t.best_s * 1e3,
                  r.gops, "", "", 100.0 * r.bw_fraction, r.bytes_per_s / 1e9, r.paired_bw / 1e9,
                  r.resident_bytes_per_s / 1e9, r.layout.c_str());
      rows.push_back(r);
      }  // layouts
    }

    // f32 small-M: our GEMM (gemm_f32) against OpenBLAS at the same shapes, both ways OpenBLAS can
    // own the cores (matmul.h's BlasThreading): single-threaded slices on the pool, and its own
    // threads while the pool idles. The first M from which OpenBLAS (slices) is faster is where
    // matmul_f32's crossover belongs.
    if (wanted(kinds, "smallm") && wanted(formats, "f32")) {
      std::printf("\n  [%s, %d thread%s] f32 small-M: ours = gemm_f32, sgemm/pool = OpenBLAS 1-thread slices on the "
                  "pool, sgemm/own = OpenBLAS on its own %d thread%s; GFLOPS = 2MNK/s; pool/ours and own/pool are time "
                  "ratios (> 1: ours, resp. the pool slices, faster)\n",
                  cpu.c_str(), t, t > 1 ? "s" : "", t, t > 1 ? "s" : "");
      std::printf("  %5s %6s %6s %10s %10s %10s %9s %9s %9s %12s %12s\n", "M", "N", "K", "ours ms", "pool ms", "own ms",
                  "ours GF", "pool GF", "own GF", "pool/ours", "own/pool");
      for (const auto& [k, n] : shapes.small_kn) {
        const Tensor w = random_tensor(n, k, 5, kWeightStd);
        int64_t first_blas_win = -1;
        for (int64_t m : shapes.small_m) {
          const Tensor x = random_tensor(m, k, 6, 1.0f);
          Tensor y(Shape{m, n});
          const Timing ours = time_it([&] { gemm_f32(x.view(), w.view(), nullptr, y.view(), ctx); }, min_time_s);
          const Timing pool_blas = time_it(
              [&] { matmul_f32_blas(x.view(), w.view(), nullptr, y.view(), ctx, BlasThreading::kPoolSlices); },
              min_time_s);
          const Timing own_blas = time_it(
              [&] { matmul_f32_blas(x.view(), w.view(), nullptr, y.view(), ctx, BlasThreading::kOpenBlasThreads); },
              min_time_s);
          const double flop = 2.0 * static_cast<double>(m) * n * k;
          if (first_blas_win < 0 && pool_blas.best_s < ours.best_s) first_blas_win = m;
          std::printf("  %5lld %6lld %6lld %10.3f %10.3f %10.3f %9.1f %9.1f %9.1f %11.2fx %11.2fx\n",
                      static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                      ours.best_s * 1e3, pool_blas.best_s * 1e3, own_blas.best_s * 1e3, flop / ours.best_s / 1e9,
                      flop / pool_blas.best_s / 1e9, flop / own_blas.best_s / 1e9, pool_blas.best_s / ours.best_s,
                      own_blas.best_s / pool_blas.best_s);
          doc["f32_small_m"].push_back({{"threads", t}, {"m", m}, {"n", n}, {"k", k},
                                        {"ours_seconds_best", ours.best_s},
                                        {"ours_seconds_median", ours.median_s},
                                        {"sgemm_pool_slices_seconds_best", pool_blas.best_s},
                                        {"sgemm_pool_slices_seconds_median", pool_blas.median_s},
                                        {"sgemm_own_threads_seconds_best", own_blas.best_s},
                                        {"sgemm_own_threads_seconds_median", own_blas.median_s}});
        }
        if (first_blas_win > 0) {
          std::printf("  K=%lld N=%lld: OpenBLAS (pool slices) first faster at M=%lld; matmul_f32 switches at M=%lld\n",
                      static_cast<long long>(k), static_cast<long long>(n), static_cast<long long>(first_blas_win),
                      static_cast<long long>(f32_blas_min_rows(k, n)));
        } else {
          std::printf("  K=%lld N=%lld: ours faster at every M tried; matmul_f32 switches at M=%lld\n",
                      static_cast<long long>(k), static_cast<long long>(n),
                      static_cast<long long>(f32_blas_min_rows(k, n)));
        }
      }
    }
  }
  if (thread_counts.size() > 1) {
    std::printf("\nGEMM scaling 1 -> %d threads:", threads);
    for (const Row& a : rows) {
      if (a.kind != "gemm" || a.threads != 1) continue;
      for (const Row& b : rows) {
        if (b.kind == a.kind && b.format == a.format && b.k == a.k && b.threads == threads && b.layout == a.layout) {
          std::printf(" %s%s/K=%lld %.2fx", a.format.c_str(), a.layout == "rows" ? "" : a.layout == "strips64" ? "(s64)" : "(i8)",
                      static_cast<long long>(a.k), b.gops / a.gops);
        }
      }
    }
    std::printf("\n");
  }
  // Summary at the highest thread count: GEMM ratios per K, GEMV bandwidth fraction, scaling.
  const int top = thread_counts.back();
  std::printf("\nsummary at %d thread%s (GEMM: x sgemm and share of the arithmetic peak per K; GEMV: share of read bandwidth; "
              "scaling: GEMM GOPS at %d threads / 1 thread)\n",
              top, top > 1 ? "s" : "", top);
  for (WeightFormat f : all_weight_formats()) {
    const std::string name(weight_format_name(f));
    for (const char* layout : {"rows", "interleaved8", "strips64"}) {
    std::string line;
    char buf[96];
    for (const Row& r : rows) {
      if (r.format != name || r.threads != top || r.layout != layout) continue;
      if (r.kind == "gemm") {
        double one = 0.0;
        for (const Row& o : rows) {
          if (o.format == name && o.kind == "gemm" && o.k == r.k && o.threads == 1 && o.layout == r.layout) one = o.gops;
        }
        std::snprintf(buf, sizeof(buf), "  gemm K=%lld %.2fx %.0f%% of peak (scaling %.2fx)",
                      static_cast<long long>(r.k), r.ratio, 100.0 * r.peak_fraction, one > 0 ? r.gops / one : 0.0);
      } else {
        // The ceiling as a share of the same bandwidth: what the kernel could reach at most.
        std::snprintf(buf, sizeof(buf), "  gemv %.0f%% (ceiling %.0f%%)", 100.0 * r.bw_fraction,
                      r.paired_bw > 0 ? 100.0 * r.resident_bytes_per_s / r.paired_bw : 0.0);
      }
      line += buf;
    }
    if (!line.empty()) std::printf("  %-5s %-12s%s\n", name.c_str(), layout, line.c_str());
    }
  }
  if (thread_counts.size() > 1) {
    std::printf("parallel capacity of the machine during the run: %.2fx of %d\n", parallel_capacity, top);
  }
  doc["load_average_end"] = load_average();
  std::printf("load average at the end: %.2f\n", load_average());
  for (const Row& r : rows) doc["results"].push_back(to_json(r));
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace am::kernels

int main(int argc, char** argv) {
  CLI::App app{"Throughput of the quantized matmul kernels vs OpenBLAS sgemm and memory bandwidth"};
  int threads = am::kernels::default_thread_count();
  std::string json;
  bool quick = false;
  double min_time_s = -1.0;
  app.add_option("--threads", threads, "threads for the multi-threaded figures (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--json", json, "write the results as JSON to this file");
  app.add_flag("--quick", quick, "small shapes and short timings (a smoke test)");
  app.add_option("--min-time-s", min_time_s, "minimum measured time per figure")->check(CLI::Range(0.001, 3600.0));
  std::string formats, kinds;
  // Every name must be one the bench knows: an unknown one was dropped and the tables came out
  // empty or short, exit 0.
  std::vector<std::string> format_names;
  for (am::kernels::WeightFormat f : am::kernels::all_weight_formats()) format_names.emplace_back(am::kernels::weight_format_name(f));
  const auto list_of = [](const std::vector<std::string>& known, const char* what) {
    return CLI::Validator(
        [known, what](const std::string& list) {
          std::size_t pos = 0;
          while (pos <= list.size()) {
            const std::size_t end = std::min(list.find(',', pos), list.size());
            const std::string item = list.substr(pos, end - pos);
            if (std::find(known.begin(), known.end(), item) == known.end()) {
              std::string names;
              for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
              return "unknown " + std::string(what) + " '" + item + "' (known: " + names + ")";
            }
            pos = end + 1;
          }
          return std::string();
        },
        "LIST");
  };
  app.add_option("--formats", formats, "comma-separated formats to run (default: all)")->check(list_of(format_names, "format"));
  app.add_option("--kinds", kinds, "comma-separated: gemm, gemv, smallm (f32 small-M vs OpenBLAS; default: all)")
      ->check(list_of({"gemm", "gemv", "smallm"}, "kind"));
  std::string layouts = "exec";
  app.add_option("--layout", layouts,
                 "weight layout of the formats with an execution layout (q8_0/q4_0/q4_1 interleaved8, f16 and bf16 strips64): "
                 "exec (the cpu backend's execution layout on this path), rows (GGUF rows), both (each, in one run)")
      ->check(CLI::IsMember({"exec", "rows", "both"}));
  AM_BENCH_PARSE(app, argc, argv);
  if (min_time_s <= 0) min_time_s = quick ? am::kernels::kQuickMinTimeS : am::kernels::kDefaultMinTimeS;
  return am::kernels::run(threads, json, quick, min_time_s, formats, kinds, layouts);
}
