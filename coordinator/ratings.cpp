#include "coordinator/ratings.h"

#include <array>

#include "common/check.h"

namespace am::coord {
namespace {

// Most severe last; the index is the severity. A crash says most about a backend's health, a
// skip the least (nothing ran).
constexpr std::array<std::string_view, 11> kSeverityOrder = {
    "", "skipped", "pass", "degraded", "unsupported", "fail", "lost", "error", "timeout", "oom", "crash"};

constexpr int kUnknownStatusSeverity = 7;   // ranks with "error"

}  // namespace

bool is_baseline(std::string_view backend, std::string_view precision) {
  return backend == kBaselineBackend && precision == kBaselinePrecision;
}

bool is_measured_status(std::string_view status) {
  return status == "pass" || status == "degraded";
}

bool is_failure_status(std::string_view status) {
  return status == "fail" || status == "crash" || status == "timeout" || status == "oom" ||
         status == "error" || status == "lost";
}

int status_severity(std::string_view status) {
  for (std::size_t i = 0; i < kSeverityOrder.size(); ++i) {
    if (kSeverityOrder[i] == status) return static_cast<int>(i);
  }
  return kUnknownStatusSeverity;
}

Rating rating_for_speedup(double speedup) {
  if (speedup >= kExcellentMinSpeedup) return Rating::kExcellent;
  if (speedup >= kGoodMinSpeedup) return Rating::kGood;
  if (speedup >= kModerateMinSpeedup) return Rating::kModerate;
  return Rating::kPoor;
}

Rating rate_cell(std::string_view cell_status, bool baseline_cell, std::optional<double> speedup,
                 bool has_latency) {
  if (cell_status == "unsupported") return Rating::kUnsupported;
  if (cell_status.empty() || cell_status == "skipped") return Rating::kNotRun;
  if (!is_measured_status(cell_status)) return Rating::kFailed;   // failures and unknown statuses
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

std::string_view status_emoji(std::string_view status) {
  if (status == "pass") return "✅";
  if (status == "degraded") return "⚠️";
  if (status == "skipped") return "⏭️";
  if (status.empty()) return "⏳";
  return "❌";
}

}  // namespace am::coord
