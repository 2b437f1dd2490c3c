// bench_dashboard: the HTML dashboard at fleet scale (DECISIONS.md "Measurement": with 100k
// results the page stays under 10 MB and headless Chromium renders it in under 5 s).
//
// The rows are synthetic (this measures the exporter and the browser, not models): N jobs over
// 400 models, 11 architectures, 3 backends, 9 precisions and 7 hardware classes, each with 64
// raw latency samples, accuracy, throughput and memory, as a perf job stores them. It prints the
// page size and the time to build it; with --chromium it loads the page in headless Chromium
// until the page reports data-am-state="ready" and prints the time, next to the time of the same
// browser loading an empty run's page (the browser's own start-up, measured in the same run).
// Exit 1 when the page exceeds --max-bytes (10 MB) or does not draw.
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/cli_parse.h"
#include "common/atomic_file.h"
#include "common/hash.h"
#include "coordinator/report_html.h"

namespace {

using am::coord::ReportRow;
using am::coord::RunRecord;

std::vector<ReportRow> synthetic_rows(int n) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.05);
  const char* backends[] = {"cpu", "opencl", "vulkan"};
  const am::jobs::Precision precisions[] = {
      am::jobs::Precision::kF32,  am::jobs::Precision::kF16,  am::jobs::Precision::kBF16,
      am::jobs::Precision::kQ8_0, am::jobs::Precision::kQ4_0, am::jobs::Precision::kQ4_1,
      am::jobs::Precision::kQ3_K, am::jobs::Precision::kQ2_K, am::jobs::Precision::kMixed};
  std::vector<ReportRow> rows;
  rows.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    ReportRow r;
    r.run_id = "scale";
    r.job_id = am::hex64(rng());
    r.model = "model-" + std::to_string(i % 400);
    r.architecture = "arch-" + std::to_string(i % 11);
    r.backend = backends[i % 3];
    r.precision = precisions[(i / 3) % 9];
    r.state = am::coord::JobState::kDone;
    r.status = i % 50 == 0 ? am::ResultStatus::kUnsupported : am::ResultStatus::kPass;
    if (i % 50 == 0) r.reason = "backend lacks op X";
    r.attempt = r.attempts = 1;
    r.worker_id = "worker-" + std::to_string(i % 50);
    r.hardware_class = std::string(r.backend) + "-class-" + std::to_string(i % 7);
    r.device = "dev:0";
    r.build = "accelmatrix 0.1.0";
    r.spec = {{"batch", 1 + i % 4}, {"seq_len", 32 << (i % 3)}, {"mode", "perf"}, {"seed", rng() >> 11}};
    if (r.status == am::ResultStatus::kPass) {
      std::vector<double> samples(64);
      const double base = 1.0 + static_cast<double>(i % 97);
      for (double& s : samples) s = base * (1.0 + std::fabs(noise(rng)));
      r.metrics = {{"latency_ms", {{"samples", samples}, {"median", base}, {"count", 64}}},
                   {"throughput", {{"tokens_per_s", 1e4 / base}}},
                   {"accuracy", {{"nmse", 1e-5 * (1 + i % 13)}, {"cosine", 0.9999}, {"top1_agreement", 1.0}}},
                   {"process", {{"peak_rss_bytes", 100'000'000 + i}, {"wall_s", 2.5}}}};
    }
    r.started_at_ms = 1'700'000'000'000 + int64_t{i} * 10;
    r.finished_at_ms = r.started_at_ms + 2500;
    rows.push_back(std::move(r));
  }
  return rows;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds until headless Chromium has drawn `page`; negative when it did not draw.
double chromium_seconds(const std::string& chromium, const std::filesystem::path& page,
                        const std::filesystem::path& scratch) {
  const std::string cmd = chromium + " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" +
                          (scratch / "profile").string() + " --virtual-time-budget=60000 --dump-dom file://" +
                          page.string() + " 2>/dev/null";
  const auto t0 = std::chrono::steady_clock::now();
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) return -1;
  std::string dom;
  char buf[65536];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, out)) > 0) dom.append(buf, n);
  const int rc = pclose(out);
  const double s = seconds_since(t0);
  return rc == 0 && dom.find("data-am-state=\"ready\"") != std::string::npos ? s : -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The HTML dashboard at scale: page size, build time, Chromium draw time"};
  int jobs = 100'000;
  double max_mb = 10.0;
  std::string chromium;
  std::string out_dir = std::filesystem::temp_directory_path() / "accelmatrix-bench-dashboard";
  app.add_option("--jobs", jobs, "Synthetic jobs in the run")->check(CLI::Range(0, 10'000'000))->capture_default_str();
  app.add_option("--max-mb", max_mb, "Fail above this page size (MB = 10^6 bytes)")->capture_default_str();
  app.add_option("--chromium", chromium, "Chromium binary: also time drawing the page");
  app.add_option("--out", out_dir, "Directory for the pages")->capture_default_str();
  AM_BENCH_PARSE(app, argc, argv);

  std::filesystem::create_directories(out_dir);
  const std::vector<ReportRow> rows = synthetic_rows(jobs);
  RunRecord run;
  run.run_id = "scale";
  run.plan_name = "synthetic";
  run.created_at_ms = 1'700'000'000'000;
  auto t0 = std::chrono::steady_clock::now();
  auto page = am::coord::render_html(run, rows, {});
  const double build_s = seconds_since(t0);
  auto empty = am::coord::render_html(run, {}, {});
  if (!page.ok() || !empty.ok()) {
    std::cerr << "render failed\n";
    return 1;
  }
  const std::filesystem::path page_path = std::filesystem::path(out_dir) / "dashboard-scale.html";
  const std::filesystem::path empty_path = std::filesystem::path(out_dir) / "dashboard-empty.html";
  if (!am::write_file_atomically(page_path, *page).ok() || !am::write_file_atomically(empty_path, *empty).ok()) {
    std::cerr << "cannot write pages under " << out_dir << "\n";
    return 1;
  }
  std::printf("jobs %d: page %.2f MB (limit %.1f), built in %.2f s -> %s\n", jobs, page->size() / 1e6, max_mb,
              build_s, page_path.c_str());
  bool ok = static_cast<double>(page->size()) <= max_mb * 1e6;
  if (!chromium.empty()) {
    const double base = chromium_seconds(chromium, empty_path, out_dir);
    const double full = chromium_seconds(chromium, page_path, out_dir);
    std::printf("chromium: empty run %.2f s, %d jobs %.2f s (drawing the data: %.2f s over the browser's start-up)\n",
                base, jobs, full, full - base);
    ok = ok && base >= 0 && full >= 0;
  }
  return ok ? 0 : 1;
}
