#include "kernels/measure.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "common/clock.h"
#include "common/proc_memory.h"

namespace am::kernels {

LatencyStats summarize_latency(std::vector<double> samples_ms) {
  LatencyStats s;
  s.samples_ms = std::move(samples_ms);
  const std::size_t n = s.samples_ms.size();
  if (n == 0) return s;
  std::vector<double> sorted = s.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  // Midpoint without the sum (two samples near the largest double would overflow it).
  s.median_ms = n % 2 == 1 ? sorted[n / 2] : sorted[n / 2 - 1] + 0.5 * (sorted[n / 2] - sorted[n / 2 - 1]);
  // Nearest rank: the smallest sample with at least 90% of samples at or below it.
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n)));
  s.p90_ms = sorted[std::max<std::size_t>(rank, 1) - 1];
  const auto moments = [&](double scale) {
    double sum = 0.0;
    for (double v : sorted) sum += v / scale;
    const double mean = sum / static_cast<double>(n);
    double sq = 0.0;
    for (double v : sorted) sq += (v / scale - mean) * (v / scale - mean);
    return std::pair<double, double>(mean, n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0.0);
  };
  auto [mean, stddev] = moments(1.0);
  // Finite samples whose sum or squares overflow (a command may report any latency > 0): the
  // same moments of the samples scaled by the largest magnitude, scaled back.
  const double largest = std::max(std::fabs(s.min_ms), std::fabs(s.max_ms));
  if ((!std::isfinite(mean) || !std::isfinite(stddev)) && std::isfinite(largest) && largest > 0.0) {
    std::tie(mean, stddev) = moments(largest);
    mean *= largest;
    stddev *= largest;
  }
  s.mean_ms = mean;
  if (n > 1) s.stddev_ms = stddev;
  return s;
}

Result<LatencyStats> measure_latency(const std::function<Status()>& run_once,
                                     const MeasureOptions& options) {
  const int min_reps = std::max(1, options.min_reps);
  const int max_reps = std::max(min_reps, options.max_reps);
  const double min_time_s = std::max(0.0, options.min_time_s);
  for (int i = 0; i < std::max(0, options.warmup); ++i) AM_RETURN_IF_ERROR(run_once());

  std::vector<double> samples;
  double total_s = 0.0;
  while (static_cast<int>(samples.size()) < max_reps &&
         (static_cast<int>(samples.size()) < min_reps || total_s < min_time_s)) {
    const auto start = SteadyClock::now();
    AM_RETURN_IF_ERROR(run_once());
    const double took_ms = ms_since(start);
    samples.push_back(took_ms);
    total_s += took_ms / 1e3;
  }
  return summarize_latency(std::move(samples));
}

namespace {

// Runs `run_once` until `block_s` of timed runs (at least one) or `max_reps` samples in total.
Status run_block(const std::function<Status()>& run_once, double block_s, int max_reps,
                 std::vector<double>& samples, double& total_s) {
  double block_total_s = 0.0;
  do {
    const auto start = SteadyClock::now();
    AM_RETURN_IF_ERROR(run_once());
    const double took_ms = ms_since(start);
    samples.push_back(took_ms);
    total_s += took_ms / 1e3;
    block_total_s += took_ms / 1e3;
  } while (block_total_s < block_s && static_cast<int>(samples.size()) < max_reps);
  return Status::Ok();
}

}  // namespace

Result<PairedLatency> measure_paired_latency(const std::function<Status()>& run_candidate,
                                             const std::function<Status()>& before_baseline,
                                             const std::function<Status()>& run_baseline,
                                             const MeasureOptions& options) {
  const int min_reps = std::max(1, options.min_reps);
  const int max_reps = std::max(min_reps, options.max_reps);
  const double min_time_s = std::max(0.0, options.min_time_s);
  const int warmup = std::max(0, options.warmup);
  for (int i = 0; i < warmup; ++i) AM_RETURN_IF_ERROR(run_candidate());
  if (before_baseline) AM_RETURN_IF_ERROR(before_baseline());
  for (int i = 0; i < warmup; ++i) AM_RETURN_IF_ERROR(run_baseline());

  std::vector<double> candidate, baseline;
  double candidate_s = 0.0, baseline_s = 0.0;
  int blocks = 0;
  auto at_cap = [&](const std::vector<double>& v) { return static_cast<int>(v.size()) >= max_reps; };
  for (;;) {
    AM_RETURN_IF_ERROR(run_block(run_candidate, kPairedBlockSeconds, max_reps, candidate, candidate_s));
    ++blocks;
    if (!at_cap(baseline)) {
      AM_RETURN_IF_ERROR(run_block(run_baseline, kPairedBlockSeconds, max_reps, baseline, baseline_s));
      ++blocks;
    }
    const bool candidate_done =
        static_cast<int>(candidate.size()) >= min_reps && candidate_s >= min_time_s;
    const bool baseline_done = static_cast<int>(baseline.size()) >= min_reps;   // true at its cap
    if ((candidate_done && baseline_done) || at_cap(candidate)) break;
  }
  // A candidate that reached max_reps first (fast runs, a small max_reps) leaves the baseline
  // its min_reps to finish.
  while (static_cast<int>(baseline.size()) < min_reps) {
    AM_RETURN_IF_ERROR(run_block(run_baseline, kPairedBlockSeconds, min_reps, baseline, baseline_s));
    ++blocks;
  }
  PairedLatency out;
  out.candidate = summarize_latency(std::move(candidate));
  out.baseline = summarize_latency(std::move(baseline));
  out.blocks = blocks;
  return out;
}

nlohmann::json to_json(const LatencyStats& s) {
  nlohmann::json out = {{"median", s.median_ms}, {"p90", s.p90_ms},   {"min", s.min_ms},
                        {"max", s.max_ms},       {"mean", s.mean_ms}, {"stddev", s.stddev_ms},
                        {"count", s.samples_ms.size()}};
  const std::size_t n = s.samples_ms.size();
  if (n <= kMaxReportedSamples) {
    out["samples"] = s.samples_ms;
    return out;
  }
  std::vector<double> kept;
  kept.reserve(kMaxReportedSamples);
  const double stride = static_cast<double>(n - 1) / static_cast<double>(kMaxReportedSamples - 1);
  for (std::size_t i = 0; i < kMaxReportedSamples; ++i) {
    kept.push_back(s.samples_ms[static_cast<std::size_t>(static_cast<double>(i) * stride + 0.5)]);
  }
  out["samples"] = std::move(kept);
  out["samples_stride"] = stride;
  return out;
}

int64_t peak_rss_bytes() {
  // VmHWM first: ru_maxrss also holds the peak of the address space this process left at exec,
  // i.e. the spawning worker's whole footprint (common/proc_memory.h).
  if (std::optional<int64_t> hwm = vm_hwm_bytes()) return *hwm;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

}  // namespace am::kernels
