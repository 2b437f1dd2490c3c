// Rating rules for matrix cells — the one place that decides what a cell earns.
//
// Rules (a cell is one model × backend × precision):
//   ❌            the cell's status is a failure (fail, crash, timeout, oom, error, lost) or
//                 unsupported; the cell carries the reason of the job that set that status.
//   not run       nothing was measured: no job of the cell is terminal yet, or all were skipped.
//   Baseline      cpu f32 cells that ran (pass or degraded).
//   Excellent     speed-up >= 2.0×  ┐ speed-up = median of the raw latency samples of the cpu
//   Good          speed-up >= 1.2×  │ f32 run of the same model and shape — the paired samples
//   Moderate      speed-up >= 0.8×  │ the cell's jobs timed alongside their own, or else the
//   Poor          speed-up <  0.8×  ┘ cpu f32 cell's — ÷ median of this cell's raw samples, at
//                 the cell's representative shape (see matrix.h). A band is given only when the
//                 whole kSpeedupConfidence (95%) bootstrap interval of that ratio lies inside it.
//   ≈ noisy       the interval straddles a threshold (the cell shows "≈ LOW–HIGH×"), or either
//                 side has fewer than kMinIntervalSamples raw samples, so no interval can be
//                 trusted (the cell shows the point estimate "≈ X×" with "few samples").
//   measured, no baseline   ran with a latency, but no cpu f32 latency of the same model and
//                           shape was measured, so no speed-up can be claimed.
//   accuracy only           ran without a latency measurement (mode "accuracy").
// The interval (estimate_speedup) is stats::bootstrap_median_ratio — percentile bootstrap,
// kSpeedupResamples resamples, the fixed seed kSpeedupBootstrapSeed — over the raw samples
// (metrics.latency_ms.samples, at most 1024 per job) of every job of the shape on each side,
// pooled. The same stored results therefore always render the same ratings.
//
// A cell's status is the most severe status among its terminal jobs, in the order
// crash > oom > timeout > error > lost > fail > unsupported > degraded > pass > skipped >
// interrupted > cancelled;
// jobs not yet terminal do not count ("" when none is terminal).
//
// Busy host (host_busy): a perf job's metrics.host (worker/host_load.h) says how loaded its host
// was while it ran. The job ran on a busy host when other work used more than
// kBusyOtherLoadPerCpu of the host's CPUs on average (host non-idle CPU time minus the job's own,
// over the job's wall time), or when more than kBusyStealFraction of the CPU time was stolen by
// the hypervisor. Reports warn about such jobs; the rating itself is left to the interval.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <cstddef>
#include <cstdint>

#include "common/result_status.h"
#include "jobs/precision.h"

namespace am::coord {

inline constexpr std::string_view kBaselineBackend = "cpu";
inline constexpr jobs::Precision kBaselinePrecision = jobs::Precision::kF32;

// Speed-up thresholds (dimensionless ratios baseline latency / cell latency).
inline constexpr double kExcellentMinSpeedup = 2.0;
inline constexpr double kGoodMinSpeedup = 1.2;
inline constexpr double kModerateMinSpeedup = 0.8;

// The speed-up interval (see the header comment).
inline constexpr double kSpeedupConfidence = 0.95;          // two-sided
inline constexpr int kSpeedupResamples = 1000;
inline constexpr uint64_t kSpeedupBootstrapSeed = 0xACCE1A7Eu;
inline constexpr std::size_t kMinIntervalSamples = 5;       // per side; the measure default min_reps

// Busy host thresholds (see the header comment).
inline constexpr double kBusyOtherLoadPerCpu = 0.25;        // other work's CPUs ÷ the host's CPUs
inline constexpr double kBusyStealFraction = 0.05;          // stolen ÷ all CPU time

enum class Rating {
  kBaseline,
  kExcellent,
  kGood,
  kModerate,
  kPoor,
  kFailed,        // ❌ fail, crash, timeout, oom, error, lost
  kUnsupported,   // ❌ the backend lacks an op or format
  kNoBaseline,    // measured, no baseline to compare with
  kAccuracyOnly,  // ran, no latency measured
  kNotRun,        // nothing measured yet, or skipped
  kNoisy,         // ≈ the speed-up interval straddles a threshold, or too few samples for one
  kPending,       // ⏳ some of the cell's jobs are not terminal yet: no rating until they are (the
                  //   shape rated, and so the rating, may still change); a failure is final anyway
};

// A cell's speed-up over its baseline.
struct SpeedupEstimate {
  double estimate = 0.0;              // median(baseline samples) / median(cell samples)
  std::optional<double> low;          // the kSpeedupConfidence interval; both absent when a side
  std::optional<double> high;         //   has fewer than kMinIntervalSamples raw samples
  std::size_t cell_samples = 0;       // raw samples pooled on each side (before thinning)
  std::size_t baseline_samples = 0;
  bool has_interval() const { return low.has_value() && high.has_value(); }
};

// The speed-up of a cell from the raw latency samples (ms) of both sides. Without enough samples
// on a side, the estimate is `fallback_estimate` (the ratio of the stored medians) and no
// interval is given.
SpeedupEstimate estimate_speedup(std::span<const double> baseline_samples, std::span<const double> cell_samples,
                                 double fallback_estimate);

// The host's load while a perf job ran (metrics.host, worker/host_load.h); absent fields unknown.
struct HostLoad {
  std::optional<double> load_start;       // 1-minute load average when the job started
  std::optional<double> load_end;         // ... and when it ended
  std::optional<double> steal_fraction;   // stolen CPU time ÷ all CPU time, over the job
  std::optional<double> other_load;       // CPUs busy with other work, on average, over the job
  std::optional<int> cpus;                // online CPUs
};

bool host_busy(const HostLoad& host);

bool is_baseline(std::string_view backend, jobs::Precision precision);

// pass | degraded: the job ran and its measurements count (nullopt: not terminal).
bool is_measured_status(std::optional<ResultStatus> status);

// Larger is more severe; nullopt (not terminal) is 0.
int status_severity(std::optional<ResultStatus> status);

Rating rating_for_speedup(double speedup);
// The band that holds the whole interval [low, high], or kNoisy when it straddles a threshold.
Rating rating_for_interval(double low, double high);

// The rating of a cell whose status is `cell_status`. `speedup` is present only when both the
// cell and its baseline have a latency for the same shape; without an interval it rates kNoisy.
// `has_latency` says whether the cell itself measured one.
Rating rate_cell(std::optional<ResultStatus> cell_status, bool baseline_cell,
                 const std::optional<SpeedupEstimate>& speedup, bool has_latency);

// A speed-up as the reports write it (no "×"): 0 decimals from 100, 1 from 10, 2 from 0.1, and
// two significant digits below (0.0046: a vulkan job 200 times slower read "0.00").
std::string speedup_number(double v);

// "≈ 1.15–1.62×" for a noisy cell with an interval, "≈ 1.37× (few samples)" without one; the
// band's label otherwise.
std::string speedup_rating_text(Rating rating, const std::optional<SpeedupEstimate>& speedup);

// "Baseline", "Excellent", ..., "❌", "measured, no baseline", "accuracy only", "not run",
// "≈ noisy".
std::string_view rating_label(Rating rating);
// Stable machine name for JSON: "baseline", "excellent", ..., "failed", "unsupported",
// "no_baseline", "accuracy_only", "not_run", "noisy".
std::string_view rating_key(Rating rating);

// ✅ pass, ⚠️ degraded, ❌ failures and unsupported, ⏭️ skipped, ⏳ not terminal.
std::string_view status_emoji(std::optional<ResultStatus> status);

}  // namespace am::coord
