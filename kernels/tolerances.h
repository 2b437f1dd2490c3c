// The accuracy tolerance of every precision, in one place, and the pass/degraded/fail verdict.
//
// Contract: tolerance_for(precision) returns the NMSE thresholds (vs the f32 reference) for the
// precisions the core implements and nullopt for others. classify_accuracy() gives
//   "fail"      when the output (or the reference) holds any NaN/Inf, or nmse > degraded_nmse;
//   "degraded"  when pass_nmse < nmse <= degraded_nmse;
//   "pass"      when nmse <= pass_nmse;
// with a reason naming the measured value and the threshold it crossed (empty for pass).
// The thresholds and the measurements behind them are documented in tolerances.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernels/accuracy.h"

namespace am::kernels {

struct Tolerance {
  std::string_view precision;
  double pass_nmse = 0.0;
  double degraded_nmse = 0.0;
};

std::optional<Tolerance> tolerance_for(std::string_view precision);

struct Verdict {
  std::string status;  // pass | degraded | fail
  std::string reason;
};

Verdict classify_accuracy(const AccuracyMetrics& m, const Tolerance& tol);

}  // namespace am::kernels
