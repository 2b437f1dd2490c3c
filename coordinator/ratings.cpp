#include "coordinator/ratings.h"

#include <array>

#include "common/check.h"

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

}  // namespace

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

Rating rate_cell(std::optional<ResultStatus> cell_status, bool baseline_cell,
                 std::optional<double> speedup, bool has_latency) {
  if (cell_status == ResultStatus::kUnsupported) return Rating::kUnsupported;
  if (!cell_status || cell_status == ResultStatus::kSkipped ||
      cell_status == ResultStatus::kCancelled || cell_status == ResultStatus::kInterrupted) {
    return Rating::kNotRun;
  }
  if (!is_measured_status(cell_status)) return Rating::kFailed;   // fail, crash, ..., lost
  if (baseline_cell) return Rating::kBaseline;
  if (!has_latency) return Rating::kAccuracyOnly;
  if (!speedup) return Rating::kNoBaseline;
  return rating_for_speedup(*speedup);
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
