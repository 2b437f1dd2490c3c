// The accuracy tolerance of every precision, in one place, and the pass/degraded/fail verdict.
//
// Contract: tolerance_for(precision) returns the NMSE thresholds (vs the f32 reference); every
// precision of jobs/precision.h has one (a test checks it). classify_accuracy() gives
//   "fail"      when the output (or the reference) holds any NaN/Inf, or nmse > degraded_nmse;
//   "degraded"  when pass_nmse < nmse <= degraded_nmse;
//   "pass"      when nmse <= pass_nmse;
// with a reason naming the measured value and the threshold it crossed (empty for pass).
// The thresholds and the measurements behind them are documented in tolerances.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result_status.h"
#include "jobs/precision.h"
#include "kernels/accuracy.h"

namespace am::kernels {

struct Tolerance {
  jobs::Precision precision;
  double pass_nmse = 0.0;
  double degraded_nmse = 0.0;
};

Tolerance tolerance_for(jobs::Precision precision);

struct Verdict {
  ResultStatus status;  // pass | degraded | fail
  std::string reason;
};

Verdict classify_accuracy(const AccuracyMetrics& m, const Tolerance& tol);

}  // namespace am::kernels
