// The op harness's table (tests/kernels/backend_ops/op_cases.h) in perf mode, then the perf-only
// cases (issue 12's target shapes: GEMV 4096 x 14336 both ways, GEMM 512 x 4096 x 4096): per
// case, the mean time of one call on each backend, the GB/s of the tensors and weights it reads
// and writes, and the GFLOPS of the matmuls, each next to a ceiling the same backend measures
// in the same run — a 128 MiB copy through its own kernels (read + write) and its fp32 FMA rate
// (Backend::fma_chain: long chains of dependent FMAs over a million work-items).
//
//   build/bench/bench_backend_ops [--backend cpu|opencl|vulkan] [--cases TEXT] [--json FILE]
//                                 [--min-time-s S] [--rotate-mib M] [--quick]
//
// Inputs and outputs are resident tensors (Backend::tensor()), so a device figure is the op on
// the device, waited for; the weights are uploaded in the untimed warm-up call. The cpu backend
// runs its best SIMD path with every hardware thread. A backend with no device here is reported
// as such. --quick: 0.02 s per case, 32 MiB copy, GEMV 1x1024x2048, GEMM 64x512x512 (the CI
// smoke run). Exit status 2 on a usage error, 1 when no backend could run.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/process_stats.h"
#include "kernels/backend.h"
#include "kernels/cpu/fma_chain.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/backend_ops/op_cases.h"

namespace am::kernels {
namespace {

using testing::OpCase;
using testing::op_timing;

struct Measured {
  double ms = 0.0, host_ms = 0.0, gbps = 0.0, gflops = 0.0;
  std::string error;
  std::vector<DeviceKernelTime> profile;  // per timed call: seconds / reps
  int64_t reps = 0;
};

Measured measure(Backend& be, const OpCase& c, double min_s) {
  Measured m;
  if (Status s = be.supports(c.op, c.format); !s.ok()) {
    m.error = "unsupported: " + s.message();
    return m;
  }
  op_timing() = testing::OpTiming{true, min_s, 0.0, 0.0, 0.0, {}, 0};
  Result<std::vector<Tensor>> r = c.run(be);
  op_timing().on = false;
  if (!r.ok()) {
    m.error = r.status().message();
    return m;
  }
  m.ms = op_timing().ms;
  m.host_ms = op_timing().host_ms;
  m.profile = std::move(op_timing().profile);
  m.reps = op_timing().reps;
  const double s = m.ms * 1e-3;
  m.gbps = (op_timing().bytes + c.weight_bytes) / s / 1e9;
  m.gflops = c.flops > 0 ? c.flops / s / 1e9 : 0.0;
  return m;
}

// The fp32 FMA rate: fma_chain over `items` elements, its steps doubled until one call takes
// kFmaCallSeconds (the clock then sees the arithmetic, not the launch), then timed for min_s.
constexpr double kFmaCallSeconds = 0.02;
constexpr int32_t kFmaMaxIterations = 1 << 20;

Measured measure_fma(Backend& be, int64_t items, double min_s) {
  Measured m;
  if (Status s = be.supports(Op::kFmaChain); !s.ok()) {
    m.error = "unsupported: " + s.message();
    return m;
  }
  Tensor out = be.tensor(Shape{items / 256, 256});
  using Clock = std::chrono::steady_clock;
  auto timed_call = [&](int32_t iterations) -> Result<double> {
    const auto t0 = Clock::now();
    AM_RETURN_IF_ERROR(be.fma_chain(iterations, out.view()));
    AM_RETURN_IF_ERROR(be.synchronize());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  int32_t iterations = 8;
  (void)timed_call(iterations);  // builds the kernel; an error shows in the next call
  for (;;) {
    Result<double> t = timed_call(iterations);
    if (!t.ok()) {
      m.error = t.status().message();
      return m;
    }
    if (*t >= kFmaCallSeconds || iterations >= kFmaMaxIterations) break;
    iterations *= 2;
  }
  int64_t reps = 0;
  double total = 0.0;
  while (total < min_s || reps < 3) {
    Result<double> t = timed_call(iterations);
    if (!t.ok()) {
      m.error = t.status().message();
      return m;
    }
    total += *t;
    ++reps;
  }
  m.ms = total * 1e3 / static_cast<double>(reps);
  m.gflops = static_cast<double>(items) * iterations * kFmaChainFlopsPerStep / (m.ms * 1e-3) / 1e9;
  return m;
}

int run(int argc, char** argv) {
  CLI::App app{"The op harness's cases timed on each backend, with the backend's own copy bandwidth and fp32 FMA rate"};
  std::string only, json_path, filter;
  double min_s = 0.2;
  double rotate_mib = testing::kDefaultRotateBytes / (1 << 20);
  bool quick = false;
  app.add_option("--backend", only, "cpu, opencl or vulkan (default: every one present)")
      ->check(CLI::IsMember({"cpu", "opencl", "vulkan"}));
  app.add_option("--cases", filter, "only the cases whose name contains this text (the ceilings always run)");
  app.add_option("--rotate-mib", rotate_mib, "GEMV weight copies cycled per call total at least this many MiB (default 256; 0: one copy, cache-resident when it fits)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", json_path, "also write the table as JSON to this file");
  app.add_option("--min-time-s", min_s, "seconds each case runs for (default 0.2)")->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "0.02 s per case, small perf shapes (a smoke run)");
  bool profile = false;
  app.add_flag("--profile", profile,
               "device time per kernel under each case (sets ACCELMATRIX_DEVICE_PROFILE for the device backends)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (quick) min_s = 0.02;
  if (profile) setenv(kDeviceProfileEnv, "1", 1);  // read when each backend is made

  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  ExecContext ctx{best_kernel_path(), &pool};
  ctx.cpu_weights = false;  // the cases' weights are GGUF rows
  std::vector<OpCase> cases = testing::all_op_cases();
  std::vector<OpCase> perf = testing::perf_op_cases(quick, rotate_mib * double(1 << 20));
  const OpCase copy_case = perf.front();
  for (std::size_t i = 1; i < perf.size(); ++i) cases.push_back(std::move(perf[i]));
  const int64_t fma_items = quick ? int64_t{1} << 16 : int64_t{1} << 20;
  // The host's CPU with every table (DECISIONS.md): the cpu backend and, on PoCL and lavapipe,
  // the device backends run on it.
  const std::string cpu = am::bench::cpu_model_name();
  std::printf("host CPU: %s\n", cpu.c_str());
  nlohmann::json doc = {{"min_time_s", min_s}, {"cpu_model", cpu}, {"backends", nlohmann::json::array()}};
  int ran = 0;
  for (const char* name : {"cpu", "opencl", "vulkan"}) {
    if (!only.empty() && only != name) continue;
    Result<std::unique_ptr<Backend>> be = make_backend(name, ctx);
    if (!be.ok()) {
      std::printf("## %s: not here (%s)\n\n", name, be.status().message().c_str());
      doc["backends"].push_back({{"backend", name}, {"error", be.status().message()}});
      continue;
    }
    ++ran;
    const Measured copy = measure(**be, copy_case, min_s);
    const Measured fma = measure_fma(**be, fma_items, min_s);
    // The copy reads and writes its bytes: its GB/s counts both, as the cases' do.
    std::printf("## %s on %s\n\n%s: %.1f GB/s (read + write)%s; fp32 FMA rate: %.1f GFLOPS%s\n\n", name,
                (*be)->device_name().c_str(), copy_case.name.c_str(), copy.gbps,
                copy.error.empty() ? "" : (" [" + copy.error + "]").c_str(), fma.gflops,
                fma.error.empty() ? "" : (" [" + fma.error + "]").c_str());
    std::printf("| case | ms | host ms | GB/s | %% of copy | GFLOPS | %% of FMA rate |\n|---|---:|---:|---:|---:|---:|---:|\n");
    nlohmann::json rows = nlohmann::json::array();
    for (const OpCase& c : cases) {
      if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
      const Measured m = measure(**be, c, min_s);
      if (!m.error.empty()) {
        std::printf("| %s | - | - | - | - | - | %s |\n", c.name.c_str(), m.error.c_str());
        rows.push_back({{"case", c.name}, {"error", m.error}});
        continue;
      }
      const double bw_pct = copy.gbps > 0 ? 100.0 * m.gbps / copy.gbps : 0.0;
      if (c.flops > 0) {
        std::printf("| %s | %.4f | %.4f | %.2f | %.1f | %.2f | %.1f |\n", c.name.c_str(), m.ms, m.host_ms, m.gbps, bw_pct, m.gflops,
                    fma.gflops > 0 ? 100.0 * m.gflops / fma.gflops : 0.0);
      } else {
        std::printf("| %s | %.4f | %.4f | %.2f | %.1f | - | - |\n", c.name.c_str(), m.ms, m.host_ms, m.gbps, bw_pct);
      }
      nlohmann::json row = {{"case", c.name}, {"ms", m.ms}, {"host_ms", m.host_ms}, {"gb_per_s", m.gbps}, {"gflops", m.gflops}};
      if (!m.profile.empty() && m.reps > 0) {
        // Device time of one call, by kernel: where a call's ms go on the device.
        nlohmann::json kernels = nlohmann::json::array();
        std::string line;
        for (const DeviceKernelTime& k : m.profile) {
          const double per_call_ms = k.seconds * 1e3 / static_cast<double>(m.reps);
          const double per_launch_us = k.seconds * 1e6 / static_cast<double>(k.calls);
          kernels.push_back({{"kernel", k.kernel}, {"launches", k.calls}, {"ms_per_call", per_call_ms},
                             {"us_per_launch", per_launch_us}});
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s%s %.4f ms/call (%.1f us x %.2f)", line.empty() ? "" : "; ", k.kernel.c_str(),
                        per_call_ms, per_launch_us, static_cast<double>(k.calls) / static_cast<double>(m.reps));
          line += buf;
        }
        std::printf("|   device: %s | | | | | | |\n", line.c_str());
        row["device_profile"] = kernels;
      }
      rows.push_back(row);
    }
    std::printf("\n");
    doc["backends"].push_back({{"backend", name},
                               {"device", (*be)->device_name()},
                               {"copy_gb_per_s", copy.gbps},
                               {"fma_f32_gflops", fma.gflops},
                               {"cases", rows}});
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << doc.dump(1) << "\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return ran > 0 ? 0 : 1;
}

}  // namespace
}  // namespace am::kernels

int main(int argc, char** argv) { return am::kernels::run(argc, argv); }
