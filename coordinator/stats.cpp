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

// Linear interpolation between order statistics (numpy's default "linear" quantile) of sorted v.
double quantile_sorted(const std::vector<double>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const double floor_pos = std::floor(pos);
  const auto i = static_cast<std::size_t>(floor_pos);
  if (i + 1 >= v.size()) return v.back();
  const double frac = pos - floor_pos;
  return v[i] + (v[i + 1] - v[i]) * frac;
}

// A uniform double in [0, 1) from the top 53 of 64 random bits (the same on every standard
// library, unlike std::uniform_real_distribution).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Numerical Recipes' continued fraction of the incomplete beta function (modified Lentz).
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 100000;
  constexpr double kEpsilon = 1e-15;
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0;
  double d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < kEpsilon) break;
  }
  return h;
}

// P(Binomial(n, p) >= k) for 1 <= k <= n: the regularized incomplete beta I_p(k, n - k + 1).
// log_norm = log(Γ(n+1) / (Γ(k) Γ(n-k+1))), which depends on n and k only (the caller keeps it).
double binomial_upper_tail(std::size_t n, std::size_t k, double p, double log_norm) {
  if (p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  const double a = static_cast<double>(k);
  const double b = static_cast<double>(n - k + 1);
  const double front = std::exp(log_norm + a * std::log(p) + b * std::log1p(-p));
  if (p < (a + 1.0) / (a + b + 2.0)) return std::clamp(front * beta_continued_fraction(a, b, p) / a, 0.0, 1.0);
  return std::clamp(1.0 - front * beta_continued_fraction(b, a, 1.0 - p) / b, 0.0, 1.0);
}

// P(Binomial(n, p) = k); log_choose = log C(n, k).
double binomial_pmf(std::size_t n, std::size_t k, double p, double log_choose) {
  if (p >= 1.0) return k == n ? 1.0 : 0.0;
  const double nn = static_cast<double>(n), kk = static_cast<double>(k);
  return std::exp(log_choose + kk * std::log(p) + (nn - kk) * std::log1p(-p));
}

// One side of the bootstrap. A resample is n draws with replacement from the n samples; its
// median is the sorted samples' element at the order position of the resample's middle draw(s).
// That position has a known distribution — the k-th smallest of n draws lies at or below rank j
// exactly when at least k draws land on ranks 0..j, P = P(Binomial(n, (j+1)/n) >= k) — so it is
// drawn directly, by inverting that distribution, instead of drawing n values and selecting.
// For an even n the upper middle draw follows from the lower one: it shares its rank unless
// exactly k draws fell at or below it, and otherwise is the smallest of the n - k draws above.
// Same distribution as resampling the values (checked against that implementation: the same
// interval endpoints at 100k resamples), in O(log n) per resample instead of O(n). Measured on
// bench_dashboard's 100k-job run (3200 rated cells, ~600 samples a side, 1000 resamples): the
// intervals cost about 1.5 s this way, 31 s by resampling the values.
class MedianResampler {
 public:
  explicit MedianResampler(std::span<const double> values) : sorted_(values.begin(), values.end()) {
    std::sort(sorted_.begin(), sorted_.end());
    const std::size_t n = sorted_.size();
    k_ = n % 2 == 1 ? (n + 1) / 2 : n / 2;   // 1-based: the (lower) middle draw
    const double nn = static_cast<double>(n);
    const double kk = static_cast<double>(k_);
    const double log_norm = std::lgamma(nn + 1.0) - std::lgamma(kk) - std::lgamma(nn - kk + 1.0);
    const double log_choose = std::lgamma(nn + 1.0) - std::lgamma(kk + 1.0) - std::lgamma(nn - kk + 1.0);
    // More than 7 standard deviations from the middle the distribution is within 1e-11 of 0 or
    // 1; the tail functions are only evaluated inside.
    const double spread = 7.0 * std::sqrt(nn) / 2.0 + 2.0;
    cdf_.resize(n);
    for (std::size_t j = 0; j < n; ++j) {
      const double expected = static_cast<double>(j + 1);   // mean of draws at ranks 0..j
      if (expected < static_cast<double>(k_) - spread) {
        cdf_[j] = 0.0;
      } else if (expected > static_cast<double>(k_) + spread || j + 1 == n) {
        cdf_[j] = 1.0;
      } else {
        cdf_[j] = binomial_upper_tail(n, k_, static_cast<double>(j + 1) / nn, log_norm);
      }
    }
    for (std::size_t j = 1; j < n; ++j) cdf_[j] = std::max(cdf_[j], cdf_[j - 1]);   // monotone
    if (n % 2 == 0) {
      same_rank_.assign(n, 1.0);
      for (std::size_t j = 0; j + 1 < n; ++j) {
        const double p_lower_here = cdf_[j] - (j ? cdf_[j - 1] : 0.0);
        if (!(p_lower_here > 0.0)) continue;
        // P(lower at j and upper above j) = P(N(j) = k) * P(one of those k draws sits at j).
        const double jj = static_cast<double>(j);
        const double split = binomial_pmf(n, k_, (jj + 1.0) / nn, log_choose) *
                             (1.0 - std::pow(jj / (jj + 1.0), static_cast<double>(k_)));
        same_rank_[j] = std::clamp(1.0 - split / p_lower_here, 0.0, 1.0);
      }
    }
  }

  double resampled_median(std::mt19937_64& rng) const {
    const std::size_t n = sorted_.size();
    const double u = uniform01(rng);
    const std::size_t lower =
        std::min<std::size_t>(static_cast<std::size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin()), n - 1);
    if (n % 2 == 1) return sorted_[lower];
    std::size_t upper = lower;
    if (uniform01(rng) >= same_rank_[lower]) {
      // The smallest of r = n - k uniform draws over the m ranks above `lower`:
      // P(offset >= t) = (1 - t/m)^r, inverted.
      const std::size_t m = n - 1 - lower;
      const double r = static_cast<double>(n - k_);
      const double w = uniform01(rng);
      const auto offset = static_cast<std::size_t>(static_cast<double>(m) * (1.0 - std::pow(1.0 - w, 1.0 / r)));
      upper = lower + 1 + std::min(offset, m - 1);
    }
    const double lo = sorted_[lower];
    return lo + (sorted_[upper] - lo) / 2.0;
  }

 private:
  std::vector<double> sorted_;
  std::size_t k_ = 1;
  std::vector<double> cdf_;          // P(the (lower) middle draw lies at rank <= j)
  std::vector<double> same_rank_;    // even n: P(upper middle draw at the same rank | lower at j)
};

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
  const MedianResampler resample_base(base);
  const MedianResampler resample_new(fresh);
  for (int r = 0; r < options.resamples; ++r) {
    const double median_base = resample_base.resampled_median(rng);
    const double median_new = resample_new.resampled_median(rng);
    ratios.push_back(median_new / median_base);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1.0 - options.confidence) / 2.0;
  out.low = quantile_sorted(ratios, tail);
  out.high = quantile_sorted(ratios, 1.0 - tail);
  return out;
}

}  // namespace am::coord::stats
