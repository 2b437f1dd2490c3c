// Accuracy of an output against its f32 reference.
//
// Contract: compare_outputs(y, ref, rows, cols) treats both as [rows, cols] row-major and returns
//   nmse            sum((y - r)^2) / sum(r^2)   (0 when both are all zero; +inf when only r is)
//   cosine          <y, r> / (|y| |r|)          (1 when both are all zero, 0 when one is)
//   max_abs_err     max |y - r|
//   top1_agreement  fraction of rows whose argmax over cols (first index on ties) agrees
//   nonfinite       count of NaN/Inf entries in y; nonfinite_reference, the same for r
// All sums accumulate in double. When y or r holds a NaN/Inf, nmse, cosine and max_abs_err are
// NaN (undefined: null in to_json) and the job must fail (see tolerances.h). Pure, thread-safe.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace am::kernels {

struct AccuracyMetrics {
  double nmse = 0.0;
  double cosine = 1.0;
  double max_abs_err = 0.0;
  double top1_agreement = 1.0;
  int64_t nonfinite = 0;
  int64_t nonfinite_reference = 0;
};

AccuracyMetrics compare_outputs(const float* y, const float* ref, int64_t rows, int64_t cols);
int64_t count_nonfinite(const float* y, int64_t n);

// {"nmse", "cosine", "max_abs_err", "top1_agreement", "nonfinite"}; non-finite doubles (an
// infinite NMSE) are written as null since JSON has no Inf.
// Mean over rows of KL(softmax(ref_row) || softmax(y_row)) in nats, for outputs that are logits
// (generation: one row per teacher-forced token). Computed in double with max-subtraction.
// Non-finite logits make the result NaN (the runner fails such jobs anyway).
double mean_kl_divergence(const float* y, const float* ref, int64_t rows, int64_t cols);

nlohmann::json to_json(const AccuracyMetrics& m);

}  // namespace am::kernels
