// Rating rules for matrix cells — the one place that decides what a cell earns.
//
// Rules (a cell is one model × backend × precision):
//   ❌            the cell's status is a failure (fail, crash, timeout, oom, error, lost) or
//                 unsupported; the cell carries the reason of the job that set that status.
//   not run       nothing was measured: no job of the cell is terminal yet, or all were skipped.
//   Baseline      cpu f32 cells that ran (pass or degraded).
//   Excellent     speed-up >= 2.0×  ┐ speed-up = median latency of the cpu f32 cell of the same
//   Good          speed-up >= 1.2×  │ model and shape ÷ this cell's median latency, at the
//   Moderate      speed-up >= 0.8×  │ cell's representative shape (see matrix.h).
//   Poor          speed-up <  0.8×  ┘
//   measured, no baseline   ran with a latency, but no cpu f32 latency of the same model and
//                           shape was measured, so no speed-up can be claimed.
//   accuracy only           ran without a latency measurement (mode "accuracy").
// A cell's status is the most severe status among its terminal jobs, in the order
// crash > oom > timeout > error > lost > fail > unsupported > degraded > pass > skipped >
// interrupted > cancelled;
// jobs not yet terminal do not count ("" when none is terminal).
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "common/result_status.h"
#include "jobs/precision.h"

namespace am::coord {

inline constexpr std::string_view kBaselineBackend = "cpu";
inline constexpr jobs::Precision kBaselinePrecision = jobs::Precision::kF32;

// Speed-up thresholds (dimensionless ratios baseline latency / cell latency).
inline constexpr double kExcellentMinSpeedup = 2.0;
inline constexpr double kGoodMinSpeedup = 1.2;
inline constexpr double kModerateMinSpeedup = 0.8;

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
};

bool is_baseline(std::string_view backend, jobs::Precision precision);

// pass | degraded: the job ran and its measurements count (nullopt: not terminal).
bool is_measured_status(std::optional<ResultStatus> status);

// Larger is more severe; nullopt (not terminal) is 0.
int status_severity(std::optional<ResultStatus> status);

Rating rating_for_speedup(double speedup);

// The rating of a cell whose status is `cell_status`. `speedup` is present only when both the
// cell and its baseline have a latency for the same shape; `has_latency` says whether the cell
// itself measured one.
Rating rate_cell(std::optional<ResultStatus> cell_status, bool baseline_cell, std::optional<double> speedup,
                 bool has_latency);

// "Baseline", "Excellent", ..., "❌", "measured, no baseline", "accuracy only", "not run".
std::string_view rating_label(Rating rating);
// Stable machine name for JSON: "baseline", "excellent", ..., "failed", "unsupported",
// "no_baseline", "accuracy_only", "not_run".
std::string_view rating_key(Rating rating);

// ✅ pass, ⚠️ degraded, ❌ failures and unsupported, ⏭️ skipped, ⏳ not terminal.
std::string_view status_emoji(std::optional<ResultStatus> status);

}  // namespace am::coord
