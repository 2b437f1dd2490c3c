#include "tests/sim_fleet/sim_records.h"

#include <cmath>

#include "jobs/precision.h"

namespace am::sim {
namespace {

// A small deterministic generator (splitmix64), so the same seed gives the same document.
struct Mix {
  uint64_t state;
  double next() {   // uniform in [0, 1)
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) / static_cast<double>(uint64_t{1} << 53);
  }
};

// The number of histogram bins a dashboard summary keeps per job (DECISIONS.md: <= 32).
constexpr int kHistogramBins = 32;
constexpr int kQuantiles = 11;   // p1, p5, p10, p25, p50, p75, p90, p95, p99, p99.9, max

}  // namespace

nlohmann::json sim_capabilities(const std::string& hostname, const std::string& host_id,
                                const std::string& hardware_class) {
  nlohmann::json precisions = nlohmann::json::array();
  for (const jobs::PrecisionInfo& p : jobs::all_precisions()) precisions.push_back(std::string(p.name));
  nlohmann::json device = {
      {"key", "cpu:0"},
      {"backend", "cpu"},
      {"name", "Simulated EPYC 16-core"},
      {"vendor", "AuthenticAMD"},
      {"driver", ""},
      {"type", "cpu"},
      {"software", false},
      {"host_cores", true},
      {"schedulable", true},
      {"compute_units", 16},
      {"memory_bytes", kSimDeviceMemoryBytes},
      {"precisions", precisions},
      {"features", {{"fp16", false}, {"fp16_conversion", true}, {"bf16", true}, {"int_dot_product", true},
                    {"int8_matmul", false}}},
      {"isa_level", "x86-64-v4"},
      {"hardware_class", hardware_class},
  };
  return {
      {"schema", 2},
      {"host", {{"hostname", hostname}, {"os", "Linux"}, {"kernel", "6.1.0-sim"}, {"host_id", host_id}}},
      {"cpu", {{"vendor", "AuthenticAMD"},
               {"model", "Simulated EPYC 16-core"},
               {"arch", "x86_64"},
               {"isa", {{"avx2", true}, {"fma", true}, {"f16c", true}, {"avx512f", true}, {"avx512bw", true},
                        {"avx512vl", true}, {"avx512_vnni", true}, {"avx512_bf16", true}}},
               {"isa_level", "x86-64-v4"}}},
      {"topology", {{"packages", 1},
                    {"cores", 16},
                    {"pus", 32},
                    {"caches", nlohmann::json::array({{{"level", 3}, {"type", "unified"}, {"size_bytes", 33554432},
                                                       {"line_bytes", 64}, {"count", 2}}})},
                    {"numa_nodes", nlohmann::json::array({{{"os_index", 0}, {"memory_bytes", kSimDeviceMemoryBytes}}})},
                    {"memory_bytes_hwloc", kSimDeviceMemoryBytes},
                    {"memory_bytes_os", kSimDeviceMemoryBytes},
                    {"memory_limit_bytes", kSimDeviceMemoryBytes},
                    {"memory_limit_source", "os"}}},
      {"runtimes", {{"opencl", {{"present", false}}},
                    {"vulkan", {{"present", false}}},
                    {"cuda", {{"present", false}}},
                    {"rocm", {{"present", false}}},
                    {"openvino", {{"present", false}}},
                    {"qnn", {{"present", false}}}}},
      {"devices", nlohmann::json::array({device})},
  };
}

nlohmann::json sim_metrics(uint64_t seed) {
  Mix rng{seed * 0x2545f4914f6cdd1dull + 1};
  const double median = 1.0 + 20.0 * rng.next();
  const double spread = 0.02 + 0.1 * rng.next();
  nlohmann::json quantiles = nlohmann::json::array();
  static constexpr double kZ[kQuantiles] = {-2.33, -1.64, -1.28, -0.67, 0.0, 0.67, 1.28, 1.64, 2.33, 3.09, 3.5};
  for (double z : kZ) quantiles.push_back(median * std::exp(spread * z));
  nlohmann::json counts = nlohmann::json::array();
  for (int i = 0; i < kHistogramBins; ++i) {
    const double x = (i - kHistogramBins / 2.0) / 6.0;
    counts.push_back(static_cast<int>(200.0 * std::exp(-x * x) + 3.0 * rng.next()));
  }
  const double lo = median * std::exp(-3.5 * spread);
  const double hi = median * std::exp(3.5 * spread);
  return {
      {"latency_ms", {{"median", median},
                      {"p90", median * std::exp(1.28 * spread)},
                      {"min", lo},
                      {"max", hi},
                      {"mean", median * (1 + spread * spread / 2)},
                      {"stddev", median * spread},
                      {"count", 1000},
                      {"quantiles", quantiles},
                      {"histogram", {{"lo", lo}, {"hi", hi}, {"counts", counts}}}}},
      {"throughput", {{"samples_per_s", 1000.0 / median}, {"tokens_per_s", 32000.0 / median}}},
      {"accuracy", {{"nmse", 1e-6 * rng.next()},
                    {"cosine", 1.0 - 1e-7 * rng.next()},
                    {"max_abs_err", 1e-3 * rng.next()},
                    {"top1_agreement", 1.0},
                    {"kl_divergence", 1e-6 * rng.next()}}},
      {"memory", {{"weights_bytes", 17825792},
                  {"activations_bytes", 4194304},
                  {"kv_cache_bytes", 0},
                  {"peak_rss_bytes", 96468992 + static_cast<int64_t>(1e6 * rng.next())}}},
      {"phases_s", {{"spawn", 0.004 * rng.next()},
                    {"load_weights", 0.05 + 0.1 * rng.next()},
                    {"reference", 0.2 * rng.next()},
                    {"warmup", 0.01 * median},
                    {"measure", 0.5 + rng.next()},
                    {"report", 0.001}}},
      {"kernel", {{"path", "avx512_vnni"}, {"weight_layout", "interleaved8"}, {"threads", 16}, {"pinned", true}}},
      {"output", {{"shape", {1, 32, 128}}, {"checksum", rng.next()}, {"nonfinite", 0}}},
      {"threads", 16},
      {"seed", static_cast<int64_t>(seed & ((uint64_t{1} << 53) - 1))},
      {"process", {{"wall_s", 1.5 + rng.next()},
                   {"cpu_user_s", 20.0 * rng.next()},
                   {"cpu_sys_s", 0.2 * rng.next()},
                   {"peak_rss_bytes", 101711872},
                   {"output_bytes", 2048}}},
      {"host", {{"load_start", 0.8 + rng.next()},
                {"load_end", 0.9 + rng.next()},
                {"cpus", 16},
                {"steal_fraction", 0.001 * rng.next()},
                {"other_load", 0.1 * rng.next()}}},
  };
}

}  // namespace am::sim
