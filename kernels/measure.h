// Latency measurement: warm-up, then repetitions until both a minimum count and a minimum time
// are reached, keeping every raw sample.
//
// Contract:
//   - measure_latency() calls run_once `warmup` times untimed, then times calls (steady clock)
//     until count >= min_reps AND total timed >= min_time_s, or count == max_reps, whichever
//     comes first (max_reps wins over the other two). The first failing call's Status is
//     returned at once. Options are clamped to sane values (min_reps >= 1, max_reps >= min_reps).
//   - Statistics are over the raw samples in milliseconds: median (mean of the middle two for an
//     even count), p90 (nearest rank), min, max, mean, stddev (sample, n-1; 0 for one sample).
//   - peak_rss_bytes() is this process's peak resident set (getrusage ru_maxrss, in bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::kernels {

struct MeasureOptions {
  int warmup = 2;
  int min_reps = 5;
  int max_reps = 1000;
  double min_time_s = 0.5;
};

struct LatencyStats {
  std::vector<double> samples_ms;
  double median_ms = 0.0;
  double p90_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  double mean_ms = 0.0;
  double stddev_ms = 0.0;
};

LatencyStats summarize_latency(std::vector<double> samples_ms);
Result<LatencyStats> measure_latency(const std::function<Status()>& run_once,
                                     const MeasureOptions& options);

// At most this many raw samples travel in a result document (a RESULT must stay within the
// protocol's limits). Statistics are always computed over every sample.
inline constexpr std::size_t kMaxReportedSamples = 1024;

// {"median", "p90", "min", "max", "mean", "stddev", "count", "samples": [...]} in ms.
// "count" is the number of runs measured; "samples" holds them all in run order when there are
// at most kMaxReportedSamples, else an evenly strided subset of that many (first and last run
// included) and "samples_stride" says the step.
nlohmann::json to_json(const LatencyStats& s);

int64_t peak_rss_bytes();

}  // namespace am::kernels
