#include "coordinator/ratings.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "common/check.h"
#include "coordinator/stats.h"

namespace am::coord {
namespace {

// Most severe last; the index + 1 is the severity (0 is "not terminal"). A crash says most about
// a backend's health, a skip the least (nothing ran). Cancelled and interrupted attempts ran
// nothing to judge and rank with skipped.
constexpr std::array<ResultStatus, 12> kSeverityOrder = {
    ResultStatus::kCancelled, ResultStatus::kInterrupted, ResultStatus::kSkipped,
    ResultStatus::kPass,      ResultStatus::kDegraded,    ResultStatus::kUnsupported,
    ResultStatus::kFail,      ResultStatus::kLost,        ResultStatus::kError,
    ResultStatus::kTimeout,   ResultStatus::kOom,         ResultStatus::kCrash};

// "1.15" — two decimals tell 1.19 from 1.21 either side of a threshold; big ratios need fewer.

}  // namespace

std::string speedup_number(double v) {
  if (std::isfinite(v) && v > 0 && v < 0.1) return fmt::format("{:.2g}", v);
  return fmt::format("{:.{}f}", v, v >= 100 ? 0 : v >= 10 ? 1 : 2);
}

SpeedupEstimate estimate_speedup(std::span<const double> baseline_samples, std::span<const double> cell_samples,
                                 double fallback_estimate) {
  SpeedupEstimate out;
  out.estimate = fallback_estimate;
  out.baseline_samples = baseline_samples.size();
  out.cell_samples = cell_samples.size();
  if (baseline_samples.size() < kMinIntervalSamples || cell_samples.size() < kMinIntervalSamples) return out;
  out.estimate = stats::median(baseline_samples) / stats::median(cell_samples);
  stats::BootstrapOptions options;
  options.resamples = kSpeedupResamples;
  options.confidence = kSpeedupConfidence;
  options.seed = kSpeedupBootstrapSeed;
  // median(fresh) / median(base) with fresh = the baseline's samples: the speed-up itself.
  auto interval = stats::bootstrap_median_ratio(cell_samples, baseline_samples, options);
  if (interval.ok() && std::isfinite(interval->low) && std::isfinite(interval->high)) {
    out.low = interval->low;
    out.high = interval->high;
  }
  return out;
}

bool host_busy(const HostLoad& host) {
  if (host.steal_fraction && *host.steal_fraction > kBusyStealFraction) return true;
  if (host.other_load && host.cpus && *host.cpus > 0) {
    return *host.other_load / static_cast<double>(*host.cpus) > kBusyOtherLoadPerCpu;
  }
  return false;
}

bool is_baseline(std::string_view backend, jobs::Precision precision) {
  return backend == kBaselineBackend && precision == kBaselinePrecision;
}

bool is_measured_status(std::optional<ResultStatus> status) { return status && is_working(*status); }

int status_severity(std::optional<ResultStatus> status) {
  if (!status) return 0;
  for (std::size_t i = 0; i < kSeverityOrder.size(); ++i) {
    if (kSeverityOrder[i] == *status) return static_cast<int>(i) + 1;
  }
  return 0;
}

Rating rating_for_speedup(double speedup) {
  if (speedup >= kExcellentMinSpeedup) return Rating::kExcellent;
  if (speedup >= kGoodMinSpeedup) return Rating::kGood;
  if (speedup >= kModerateMinSpeedup) return Rating::kModerate;
  return Rating::kPoor;
}

Rating rating_for_interval(double low, double high) {
  const Rating band = rating_for_speedup(low);
  return rating_for_speedup(high) == band ? band : Rating::kNoisy;
}

Rating rate_cell(std::optional<ResultStatus> cell_status, bool baseline_cell,
                 const std::optional<SpeedupEstimate>& speedup, bool has_latency) {
  if (cell_status == ResultStatus::kUnsupported) return Rating::kUnsupported;
  if (!cell_status || cell_status == ResultStatus::kSkipped ||
      cell_status == ResultStatus::kCancelled || cell_status == ResultStatus::kInterrupted) {
    return Rating::kNotRun;
  }
  if (!is_measured_status(cell_status)) return Rating::kFailed;   // fail, crash, ..., lost
  if (baseline_cell) return Rating::kBaseline;
  if (!has_latency) return Rating::kAccuracyOnly;
  // A speed-up that overflowed or is undefined (samples of a few denormal milliseconds) backs no
  // band: rated as having no usable baseline.
  if (!speedup || !std::isfinite(speedup->estimate) || speedup->estimate <= 0.0) return Rating::kNoBaseline;
  if (!speedup->has_interval()) return Rating::kNoisy;
  return rating_for_interval(*speedup->low, *speedup->high);
}

std::string speedup_rating_text(Rating rating, const std::optional<SpeedupEstimate>& speedup) {
  if (rating != Rating::kNoisy || !speedup) return std::string(rating_label(rating));
  if (!speedup->has_interval()) return "≈ " + speedup_number(speedup->estimate) + "× (few samples)";
  return "≈ " + speedup_number(*speedup->low) + "–" + speedup_number(*speedup->high) + "×";
}

std::string_view rating_label(Rating rating) {
  switch (rating) {
    case Rating::kBaseline: return "Baseline";
    case Rating::kExcellent: return "Excellent";
    case Rating::kGood: return "Good";
    case Rating::kModerate: return "Moderate";
    case Rating::kPoor: return "Poor";
    case Rating::kFailed: return "❌";
    case Rating::kUnsupported: return "❌";
    case Rating::kNoBaseline: return "measured, no baseline";
    case Rating::kAccuracyOnly: return "accuracy only";
    case Rating::kNotRun: return "not run";
    case Rating::kNoisy: return "≈ noisy";
    case Rating::kPending: return "⏳ pending";
  }
  // A fallback would print a corrupt rating as a plausible cell in every report.
  AM_UNREACHABLE("Rating value outside its enum");
}

std::string_view rating_key(Rating rating) {
  switch (rating) {
    case Rating::kBaseline: return "baseline";
    case Rating::kExcellent: return "excellent";
    case Rating::kGood: return "good";
    case Rating::kModerate: return "moderate";
    case Rating::kPoor: return "poor";
    case Rating::kFailed: return "failed";
    case Rating::kUnsupported: return "unsupported";
    case Rating::kNoBaseline: return "no_baseline";
    case Rating::kAccuracyOnly: return "accuracy_only";
    case Rating::kNotRun: return "not_run";
    case Rating::kNoisy: return "noisy";
    case Rating::kPending: return "pending";
  }
  AM_UNREACHABLE("Rating value outside its enum");
}

std::string_view status_emoji(std::optional<ResultStatus> status) {
  if (!status) return "⏳";
  switch (*status) {
    case ResultStatus::kPass:
      return "✅";
    case ResultStatus::kDegraded:
      return "⚠️";
    case ResultStatus::kSkipped:
    case ResultStatus::kCancelled:
    case ResultStatus::kInterrupted:
      return "⏭️";
    default:
      return "❌";
  }
}

}  // namespace am::coord
