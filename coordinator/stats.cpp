#include "coordinator/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>

namespace am::coord::stats {
namespace {

Status require_finite(std::span<const double> v, const char* what) {
  for (double x : v) {
    if (!std::isfinite(x)) return invalid_argument(std::string(what) + ": a sample is not a finite number");
  }
  return Status::Ok();
}

// Median of `v` in place (reorders it). v must not be empty.
double median_in_place(std::vector<double>& v) {
  const std::size_t n = v.size();
  const std::size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2.0;
}

// A uniform index in [0, n) from 64 random bits (Lemire's multiply-shift; the bias is below
// n / 2^64, far under anything a bootstrap of at most 2^20 samples could see). Written out rather
// than std::uniform_int_distribution, whose algorithm differs between standard libraries, so
// the interval is the same under libstdc++ and libc++.
std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) {
  const unsigned __int128 product = static_cast<unsigned __int128>(rng()) * n;
  return static_cast<std::size_t>(product >> 64);
}

// Linear interpolation between order statistics (numpy's default "linear" quantile) of sorted v.
double quantile_sorted(const std::vector<double>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const double floor_pos = std::floor(pos);
  const auto i = static_cast<std::size_t>(floor_pos);
  if (i + 1 >= v.size()) return v.back();
  const double frac = pos - floor_pos;
  return v[i] + (v[i + 1] - v[i]) * frac;
}

}  // namespace

double median(std::span<const double> samples) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> copy(samples.begin(), samples.end());
  return median_in_place(copy);
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

Result<MannWhitneyResult> mann_whitney_u(std::span<const double> x, std::span<const double> y,
                                         Alternative alternative) {
  if (x.empty() || y.empty()) return invalid_argument("Mann-Whitney U needs at least one sample on each side");
  AM_RETURN_IF_ERROR(require_finite(x, "Mann-Whitney U"));
  AM_RETURN_IF_ERROR(require_finite(y, "Mann-Whitney U"));

  struct Tagged {
    double value;
    bool from_x;
  };
  std::vector<Tagged> all;
  all.reserve(x.size() + y.size());
  for (double v : x) all.push_back({v, true});
  for (double v : y) all.push_back({v, false});
  std::sort(all.begin(), all.end(), [](const Tagged& a, const Tagged& b) { return a.value < b.value; });

  // Ranks 1..n; a group of t equal values shares the mean of its ranks.
  double rank_sum_x = 0.0;
  double tie_term = 0.0;
  const std::size_t n = all.size();
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && all[j].value == all[i].value) ++j;
    const double t = static_cast<double>(j - i);
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) {
      if (all[k].from_x) rank_sum_x += mean_rank;
    }
    tie_term += t * t * t - t;
    i = j;
  }

  MannWhitneyResult r;
  r.n_x = x.size();
  r.n_y = y.size();
  r.tie_term = tie_term;
  const double nx = static_cast<double>(r.n_x);
  const double ny = static_cast<double>(r.n_y);
  const double nn = nx + ny;
  r.u_x = rank_sum_x - nx * (nx + 1.0) / 2.0;
  r.u_y = nx * ny - r.u_x;

  const double mu = nx * ny / 2.0;
  const double variance = nx * ny / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
  if (!(variance > 0.0)) {
    // Every sample equal: no ordering information at all.
    r.z = 0.0;
    r.p_value = 1.0;
    return r;
  }
  double u = r.u_x;
  if (alternative == Alternative::kTwoSided) u = std::max(r.u_x, r.u_y);
  if (alternative == Alternative::kLess) u = r.u_y;
  // Continuity correction: U moves in steps of 1/2 at most; the normal curve is continuous.
  r.z = (u - mu - 0.5) / std::sqrt(variance);
  double p = normal_sf(r.z);
  if (alternative == Alternative::kTwoSided) p *= 2.0;
  r.p_value = std::clamp(p, 0.0, 1.0);
  return r;
}

Result<std::vector<double>> holm_adjust(std::span<const double> p_values) {
  const std::size_t m = p_values.size();
  for (double p : p_values) {
    if (!(p >= 0.0 && p <= 1.0)) return invalid_argument("Holm adjustment: a p-value is outside [0, 1]");
  }
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Stable, so equal p-values keep their input order and the result does not depend on sort internals.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(m, 1.0);
  double running = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    const double scaled = std::min(1.0, static_cast<double>(m - i) * p_values[order[i]]);
    running = std::max(running, scaled);
    adjusted[order[i]] = running;
  }
  return adjusted;
}

Result<RatioInterval> bootstrap_median_ratio(std::span<const double> base, std::span<const double> fresh,
                                             const BootstrapOptions& options) {
  if (base.size() < 2 || fresh.size() < 2) {
    return invalid_argument("bootstrap of a median ratio needs at least 2 samples on each side");
  }
  if (options.resamples < 100 || options.resamples > 100000) {
    return invalid_argument("bootstrap: resamples must be in [100, 100000]");
  }
  if (!(options.confidence > 0.0 && options.confidence < 1.0)) {
    return invalid_argument("bootstrap: confidence must be in (0, 1)");
  }
  AM_RETURN_IF_ERROR(require_finite(base, "bootstrap"));
  AM_RETURN_IF_ERROR(require_finite(fresh, "bootstrap"));
  for (std::span<const double> side : {base, fresh}) {
    for (double v : side) {
      if (!(v > 0.0)) return invalid_argument("bootstrap of a latency ratio: a sample is not positive");
    }
  }

  RatioInterval out;
  out.estimate = median(fresh) / median(base);

  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(options.resamples));
  std::vector<double> resampled_base(base.size());
  std::vector<double> resampled_new(fresh.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (double& v : resampled_base) v = base[uniform_index(rng, base.size())];
    for (double& v : resampled_new) v = fresh[uniform_index(rng, fresh.size())];
    ratios.push_back(median_in_place(resampled_new) / median_in_place(resampled_base));
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1.0 - options.confidence) / 2.0;
  out.low = quantile_sorted(ratios, tail);
  out.high = quantile_sorted(ratios, 1.0 - tail);
  return out;
}

}  // namespace am::coord::stats
