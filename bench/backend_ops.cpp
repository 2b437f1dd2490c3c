// The op harness's table (tests/kernels/backend_ops/op_cases.h) in perf mode: per case, the mean
// time of one call on each backend, the GB/s of the tensors and weights it reads and writes, and
// the GFLOPS of the matmuls, each next to a baseline the same backend measures in the same run —
// a 32 MiB copy through its own kernels (read + write) and its f32 GEMM of 512x1024x1024.
//
//   build/bench/bench_backend_ops [--backend cpu|opencl|vulkan] [--json FILE] [--min-time-s S] [--quick]
//
// Inputs and outputs are resident tensors (Backend::tensor()), so a device figure is the op on
// the device, waited for; the weights are uploaded in the untimed warm-up call. The cpu backend
// runs its best SIMD path with every hardware thread. A backend with no device here is reported
// as such. Exit status 2 on a usage error, 1 when no backend could run.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/backend_ops/op_cases.h"

namespace am::kernels {
namespace {

using testing::OpCase;
using testing::op_timing;

struct Measured {
  double ms = 0.0, gbps = 0.0, gflops = 0.0;
  std::string error;
};

Measured measure(Backend& be, const OpCase& c, double min_s) {
  Measured m;
  if (Status s = be.supports(c.op, c.format); !s.ok()) {
    m.error = "unsupported: " + s.message();
    return m;
  }
  op_timing() = testing::OpTiming{true, min_s, 0.0, 0.0};
  Result<std::vector<Tensor>> r = c.run(be);
  op_timing().on = false;
  if (!r.ok()) {
    m.error = r.status().message();
    return m;
  }
  m.ms = op_timing().ms;
  const double s = m.ms * 1e-3;
  m.gbps = (op_timing().bytes + c.weight_bytes) / s / 1e9;
  m.gflops = c.flops > 0 ? c.flops / s / 1e9 : 0.0;
  return m;
}

int run(int argc, char** argv) {
  CLI::App app{"The op harness's cases timed on each backend, with the backend's own copy bandwidth and f32 GEMM rate"};
  std::string only, json_path;
  double min_s = 0.2;
  bool quick = false;
  app.add_option("--backend", only, "cpu, opencl or vulkan (default: every one present)")
      ->check(CLI::IsMember({"cpu", "opencl", "vulkan"}));
  app.add_option("--json", json_path, "also write the table as JSON to this file");
  app.add_option("--min-time-s", min_s, "seconds each case runs for (default 0.2)")->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "0.02 s per case (a smoke run)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (quick) min_s = 0.02;

  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  ExecContext ctx{best_kernel_path(), &pool};
  ctx.cpu_weights = false;  // the cases' weights are GGUF rows
  const std::vector<OpCase> cases = testing::all_op_cases();
  const std::vector<OpCase> baselines = testing::baseline_op_cases();
  nlohmann::json doc = {{"min_time_s", min_s}, {"backends", nlohmann::json::array()}};
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
    const Measured copy = measure(**be, baselines[0], min_s);
    const Measured gemm = measure(**be, baselines[1], min_s);
    // The copy reads and writes its 32 MiB: its GB/s counts both, as the cases' do.
    std::printf("## %s on %s\n\ncopy bandwidth (own kernels, read + write): %.1f GB/s; f32 GEMM 512x1024x1024: %.1f GFLOPS\n\n",
                name, (*be)->device_name().c_str(), copy.gbps, gemm.gflops);
    std::printf("| case | ms | GB/s | %% of copy | GFLOPS | %% of f32 GEMM |\n|---|---:|---:|---:|---:|---:|\n");
    nlohmann::json rows = nlohmann::json::array();
    for (const OpCase& c : cases) {
      const Measured m = measure(**be, c, min_s);
      if (!m.error.empty()) {
        std::printf("| %s | - | - | - | - | %s |\n", c.name.c_str(), m.error.c_str());
        rows.push_back({{"case", c.name}, {"error", m.error}});
        continue;
      }
      const double bw_pct = copy.gbps > 0 ? 100.0 * m.gbps / copy.gbps : 0.0;
      if (c.flops > 0) {
        std::printf("| %s | %.4f | %.2f | %.1f | %.2f | %.1f |\n", c.name.c_str(), m.ms, m.gbps, bw_pct, m.gflops,
                    gemm.gflops > 0 ? 100.0 * m.gflops / gemm.gflops : 0.0);
      } else {
        std::printf("| %s | %.4f | %.2f | %.1f | - | - |\n", c.name.c_str(), m.ms, m.gbps, bw_pct);
      }
      rows.push_back({{"case", c.name}, {"ms", m.ms}, {"gb_per_s", m.gbps}, {"gflops", m.gflops}});
    }
    std::printf("\n");
    doc["backends"].push_back({{"backend", name},
                               {"device", (*be)->device_name()},
                               {"copy_gb_per_s", copy.gbps},
                               {"f32_gemm_gflops", gemm.gflops},
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
