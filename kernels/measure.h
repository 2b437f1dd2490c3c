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
//   - measure_paired_latency() measures a candidate and its baseline under the same conditions:
//     candidate warm-up, then `before_baseline` (once, e.g. to build the baseline), baseline
//     warm-up, then alternating timed blocks — candidate, baseline, candidate, ... — each block
//     repeating its side until kPairedBlockSeconds of timed runs (at least one run) or its
//     max_reps. It stops after a block pair once the candidate alone meets min_reps AND
//     min_time_s and the baseline has min_reps, or once the candidate reaches max_reps. A
//     baseline at max_reps runs no more blocks (the candidate's continue alone); a baseline short
//     of min_reps when the candidate stops gets blocks of its own until it has them. So the
//     candidate's samples follow measure_latency's rule, each side has min_reps, the baseline
//     gets about as much timed wall time as the candidate, and drift of the host (frequency,
//     neighbours, steal) over the job lands on both sides alike. First failing Status returned.
//   - peak_rss_bytes() is this process's peak resident set in bytes since its exec (VmHWM; not
//     ru_maxrss, which also holds the spawning process's peak: common/proc_memory.h).
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

// Length of one block of measure_paired_latency: long enough that switching sides (and the
// caches refilling with the other side's weights) touches few samples, short enough that the
// two sides see the same host over a job of a few tenths of a second.
inline constexpr double kPairedBlockSeconds = 0.05;

struct PairedLatency {
  LatencyStats candidate;
  LatencyStats baseline;
  int blocks = 0;        // timed blocks run, both sides together
};

Result<PairedLatency> measure_paired_latency(const std::function<Status()>& run_candidate,
                                             const std::function<Status()>& before_baseline,
                                             const std::function<Status()>& run_baseline,
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
