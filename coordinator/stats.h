// Statistics over raw latency samples: the one module behind `compare` and (DECISIONS.md,
// "Measurement") the confidence of ratings.
//
// - mann_whitney_u(): the Mann–Whitney U test with the normal approximation, the tie correction
//   of the variance and a continuity correction of 0.5 — the same numbers as
//   scipy.stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=True). It makes no
//   assumption about the shape of the latency distribution (latencies are skewed, with long
//   right tails), only that the samples of each side are independent draws.
// - holm_adjust(): Holm's step-down adjustment of a family of p-values (family-wise error rate),
//   as statsmodels' multipletests(method="holm") returns them.
// - bootstrap_median_ratio(): a percentile bootstrap confidence interval of
//   median(new) / median(base), resampling each side independently with a seeded generator, so
//   the same inputs and seed give the same interval on every run. Each resample's median is
//   drawn from its exact distribution (the order position of the resample's middle draw, from
//   binomial tails) rather than by drawing n values — the same bootstrap distribution in
//   O(log n) per resample. The tails use the C library's exp/log/lgamma/pow, so across C
//   libraries an endpoint may differ in its last bits; with one build it never changes.
//
// Contract: pure functions of their arguments (the bootstrap's randomness comes only from its
// seed); thread-safe. Inputs must be finite; a NaN or infinite sample, or a side with too few
// samples, is answered with kInvalidArgument, never a meaningless number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace am::coord::stats {

// Median of the samples (mean of the middle two for an even count). NaN for no samples.
double median(std::span<const double> samples);

// The normal distribution's upper tail, P(Z > z).
double normal_sf(double z);

enum class Alternative {
  kTwoSided,
  kGreater,     // x tends to be larger than y (new slower than base when x = new)
  kLess,        // x tends to be smaller than y
};

struct MannWhitneyResult {
  double u_x = 0.0;          // U statistic of x: pairs (x_i, y_j) with x_i > y_j, ties count 1/2
  double u_y = 0.0;          // n_x * n_y - u_x
  double z = 0.0;            // standardised statistic of the alternative tested (0 when no spread)
  double p_value = 1.0;      // for the alternative asked for, in [0, 1]
  double tie_term = 0.0;     // sum over tie groups of t^3 - t
  std::size_t n_x = 0;
  std::size_t n_y = 0;
  // Probability of superiority P(X > Y) + P(X = Y)/2 = u_x / (n_x n_y): an effect size.
  double effect() const { return n_x && n_y ? u_x / (static_cast<double>(n_x) * static_cast<double>(n_y)) : 0.5; }
};

// Both sides need at least one sample (kInvalidArgument otherwise, or for a non-finite sample).
// When every sample of both sides is equal, the variance is 0: z = 0 and p = 1 (no evidence).
Result<MannWhitneyResult> mann_whitney_u(std::span<const double> x, std::span<const double> y,
                                         Alternative alternative = Alternative::kTwoSided);

// Holm–Bonferroni adjusted p-values, in the order given: sort ascending, multiply the i-th
// smallest (0-based) by (m - i), carry the running maximum, cap at 1. A p-value outside [0, 1]
// or NaN is kInvalidArgument.
Result<std::vector<double>> holm_adjust(std::span<const double> p_values);

struct BootstrapOptions {
  int resamples = 2000;
  double confidence = 0.95;  // two-sided: the (1-c)/2 and (1+c)/2 quantiles of the resampled ratios
  uint64_t seed = 0x5EEDC0DEu;
};

struct RatioInterval {
  double estimate = 0.0;     // median(new) / median(base) of the samples themselves
  double low = 0.0;
  double high = 0.0;
};

// Percentile bootstrap CI of median(new) / median(base). Each side needs at least 2 samples and
// a positive median in every resample (latencies are positive; a zero or negative sample is
// kInvalidArgument). resamples must be in [100, 100000] and confidence in (0, 1).
Result<RatioInterval> bootstrap_median_ratio(std::span<const double> base, std::span<const double> fresh,
                                             const BootstrapOptions& options = {});

}  // namespace am::coord::stats
