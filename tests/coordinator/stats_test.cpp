// The statistics behind `compare`: checked against scipy's documented example, values worked
// out by hand, brute-force definitions, and the bootstrap's coverage on known distributions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "coordinator/stats.h"

namespace am::coord::stats {
namespace {

// U of x by its definition: pairs with x_i > y_j, ties counting one half.
double brute_u(const std::vector<double>& x, const std::vector<double>& y) {
  double u = 0.0;
  for (double a : x) {
    for (double b : y) u += a > b ? 1.0 : (a == b ? 0.5 : 0.0);
  }
  return u;
}

TEST(MannWhitneyU, MatchesScipysDocumentedAsymptoticExample) {
  // scipy.stats.mannwhitneyu docs (Conover's example): males vs females, method="asymptotic"
  // gives statistic=17.0, pvalue=0.11134688653314041.
  const std::vector<double> males = {19, 22, 16, 29, 24};
  const std::vector<double> females = {20, 11, 17, 12};
  auto r = mann_whitney_u(males, females);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(r->u_x, 17.0);
  EXPECT_DOUBLE_EQ(r->u_y, 3.0);
  EXPECT_EQ(r->tie_term, 0.0);
  EXPECT_NEAR(r->p_value, 0.11134688653314041, 1e-12);
  // By hand: mu = 10, sigma = sqrt(5*4*10/12), z = (17 - 10 - 0.5) / sigma.
  EXPECT_NEAR(r->z, 6.5 / std::sqrt(200.0 / 12.0), 1e-12);
}

TEST(MannWhitneyU, TieCorrectionMatchesHandComputation) {
  // Ties: 2 appears 3 times, 3 four times, 4, 6 twice: sum(t^3 - t) = 24 + 60 + 6 + 6 = 96.
  // n = 15, mu = 28, var = 56/12 * (16 - 96/210) = 72.5333..., U_x = 12.5 (brute force).
  const std::vector<double> x = {1, 2, 2, 3, 3, 3, 7};
  const std::vector<double> y = {2, 3, 4, 4, 5, 6, 6, 8};
  const double sigma = std::sqrt(56.0 / 12.0 * (16.0 - 96.0 / 210.0));

  auto two = mann_whitney_u(x, y, Alternative::kTwoSided);
  ASSERT_TRUE(two.ok());
  EXPECT_DOUBLE_EQ(two->u_x, brute_u(x, y));
  EXPECT_DOUBLE_EQ(two->u_x, 12.5);
  EXPECT_DOUBLE_EQ(two->tie_term, 96.0);
  EXPECT_NEAR(two->z, (43.5 - 28.0 - 0.5) / sigma, 1e-12);
  EXPECT_NEAR(two->p_value, 0.07819511429228168, 1e-12);

  auto less = mann_whitney_u(x, y, Alternative::kLess);
  ASSERT_TRUE(less.ok());
  EXPECT_NEAR(less->p_value, 0.03909755714614084, 1e-12);   // x tends to be smaller: evidence

  auto greater = mann_whitney_u(x, y, Alternative::kGreater);
  ASSERT_TRUE(greater.ok());
  EXPECT_NEAR(greater->z, (12.5 - 28.0 - 0.5) / sigma, 1e-12);
  EXPECT_NEAR(greater->p_value, 0.9698554130046989, 1e-12);  // no evidence the other way
}

TEST(MannWhitneyU, WithoutTieCorrectionTheAnswerWouldDiffer) {
  // Guards against dropping the tie term: heavy ties shrink the variance noticeably.
  const std::vector<double> x = {1, 1, 1, 1, 2, 2, 2, 2};
  const std::vector<double> y = {1, 2, 2, 2, 2, 2, 2, 2};
  auto r = mann_whitney_u(x, y, Alternative::kLess);
  ASSERT_TRUE(r.ok());
  const double nx = 8, ny = 8, n = 16;
  const double tie_term = (5.0 * 5 * 5 - 5) + (11.0 * 11 * 11 - 11);
  EXPECT_DOUBLE_EQ(r->tie_term, tie_term);
  const double sigma_ties = std::sqrt(nx * ny / 12.0 * ((n + 1) - tie_term / (n * (n - 1))));
  const double sigma_plain = std::sqrt(nx * ny * (n + 1) / 12.0);
  EXPECT_NEAR(r->z, (r->u_y - 32.0 - 0.5) / sigma_ties, 1e-12);
  EXPECT_GT(std::abs(r->z - (r->u_y - 32.0 - 0.5) / sigma_plain), 0.25);   // 0.294 here
}

TEST(MannWhitneyU, SymmetricUnderSwappingSides) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> d(0.0, 0.3);
  std::vector<double> a(40), b(55);
  for (double& v : a) v = d(rng);
  for (double& v : b) v = 1.1 * d(rng);
  auto ab = mann_whitney_u(a, b, Alternative::kGreater);
  auto ba = mann_whitney_u(b, a, Alternative::kLess);
  auto two_ab = mann_whitney_u(a, b);
  auto two_ba = mann_whitney_u(b, a);
  ASSERT_TRUE(ab.ok() && ba.ok() && two_ab.ok() && two_ba.ok());
  EXPECT_DOUBLE_EQ(ab->p_value, ba->p_value);
  EXPECT_DOUBLE_EQ(two_ab->p_value, two_ba->p_value);
  EXPECT_DOUBLE_EQ(ab->u_x, brute_u(a, b));
}

TEST(MannWhitneyU, ClearShiftIsSignificantAndSameDistributionIsNot) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> d(std::log(10.0), 0.05);
  std::vector<double> base(200), slower(200), same(200);
  for (double& v : base) v = d(rng);
  for (double& v : slower) v = 1.3 * d(rng);
  for (double& v : same) v = d(rng);
  auto r = mann_whitney_u(slower, base, Alternative::kGreater);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->p_value, 1e-30);
  EXPECT_GT(r->effect(), 0.99);
  auto s = mann_whitney_u(same, base);
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->p_value, 0.01);   // seed fixed: 0.01 would fail 1 time in 100 at random
}

TEST(MannWhitneyU, AllEqualSamplesGiveNoEvidence) {
  const std::vector<double> x = {5, 5, 5};
  const std::vector<double> y = {5, 5};
  auto r = mann_whitney_u(x, y);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->p_value, 1.0);
  EXPECT_EQ(r->z, 0.0);
}

TEST(MannWhitneyU, RefusesEmptyAndNonFiniteInput) {
  const std::vector<double> ok = {1, 2};
  const std::vector<double> empty;
  const std::vector<double> nan = {1, std::numeric_limits<double>::quiet_NaN()};
  const std::vector<double> inf = {1, std::numeric_limits<double>::infinity()};
  EXPECT_EQ(mann_whitney_u(ok, empty).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mann_whitney_u(empty, ok).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mann_whitney_u(ok, nan).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mann_whitney_u(inf, ok).status().code(), StatusCode::kInvalidArgument);
}

TEST(HolmAdjust, MatchesHandComputationInInputOrder) {
  // Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max so far 0.06.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  auto adj = holm_adjust(p);
  ASSERT_TRUE(adj.ok());
  ASSERT_EQ(adj->size(), 4u);
  EXPECT_NEAR((*adj)[0], 0.03, 1e-15);
  EXPECT_NEAR((*adj)[1], 0.06, 1e-15);
  EXPECT_NEAR((*adj)[2], 0.06, 1e-15);
  EXPECT_NEAR((*adj)[3], 0.02, 1e-15);
}

TEST(HolmAdjust, CapsAtOneAndKeepsASingleValue) {
  auto adj = holm_adjust(std::vector<double>{0.4, 0.5, 0.9});
  ASSERT_TRUE(adj.ok());
  EXPECT_EQ(*adj, (std::vector<double>{1.0, 1.0, 1.0}));
  auto one = holm_adjust(std::vector<double>{0.03});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<double>{0.03});
  auto none = holm_adjust(std::vector<double>{});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(holm_adjust(std::vector<double>{0.1, 1.5}).ok());
  EXPECT_FALSE(holm_adjust(std::vector<double>{std::numeric_limits<double>::quiet_NaN()}).ok());
}

TEST(HolmAdjust, IsMonotoneInTheRawPValues) {
  const std::vector<double> p = {0.2, 0.001, 0.049, 0.0125, 0.7, 0.0125};
  auto adj = holm_adjust(p);
  ASSERT_TRUE(adj.ok());
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_GE((*adj)[i], p[i]);
    for (std::size_t j = 0; j < p.size(); ++j) {
      if (p[i] <= p[j]) EXPECT_LE((*adj)[i], (*adj)[j]) << i << " " << j;
    }
  }
  EXPECT_NEAR((*adj)[1], 0.006, 1e-15);     // 0.001 * 6
  EXPECT_NEAR((*adj)[3], 0.0625, 1e-15);    // 0.0125 * 5
  EXPECT_NEAR((*adj)[5], 0.0625, 1e-15);    // max(0.0625, 0.0125 * 4)
}

TEST(Median, OddEvenAndEmpty) {
  EXPECT_EQ(median(std::vector<double>{3, 1, 2}), 2.0);
  EXPECT_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median(std::vector<double>{})));
}

TEST(BootstrapMedianRatio, IsDeterministicForASeedAndBracketsTheEstimate) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> d(std::log(2.0), 0.2);
  std::vector<double> base(60), fresh(60);
  for (double& v : base) v = d(rng);
  for (double& v : fresh) v = 1.5 * d(rng);
  auto a = bootstrap_median_ratio(base, fresh);
  auto b = bootstrap_median_ratio(base, fresh);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string();
  EXPECT_EQ(a->low, b->low);
  EXPECT_EQ(a->high, b->high);
  EXPECT_DOUBLE_EQ(a->estimate, median(fresh) / median(base));
  EXPECT_LT(a->low, a->estimate);
  EXPECT_GT(a->high, a->estimate);
  EXPECT_GT(a->low, 1.0);        // a 1.5x slowdown at 20% spread, 60 samples a side: clearly > 1
  EXPECT_LT(a->low, 1.5);
  EXPECT_GT(a->high, 1.5);
  BootstrapOptions other;
  other.seed = 99;
  auto c = bootstrap_median_ratio(base, fresh, other);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->low, c->low);     // the seed is used
}

TEST(BootstrapMedianRatio, CoversTheTrueRatioAboutAsOftenAsItClaims) {
  // 200 experiments, true median ratio 1.2: a 95% interval should miss about 10 times. Allow
  // 2..25 (binomial 200 x 0.05 has sd ~3.1; the percentile bootstrap of a median is a little
  // conservative or liberal at n = 40, never by this much when correct).
  std::mt19937_64 rng(1234);
  std::lognormal_distribution<double> d(0.0, 0.25);   // median exactly 1
  BootstrapOptions opt;
  opt.resamples = 1000;
  int misses = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> base(40), fresh(40);
    for (double& v : base) v = d(rng);
    for (double& v : fresh) v = 1.2 * d(rng);
    opt.seed = static_cast<uint64_t>(trial) + 1;
    auto ci = bootstrap_median_ratio(base, fresh, opt);
    ASSERT_TRUE(ci.ok());
    if (!(ci->low <= 1.2 && 1.2 <= ci->high)) ++misses;
  }
  EXPECT_GE(misses, 2);
  EXPECT_LE(misses, 25);
}

TEST(BootstrapMedianRatio, RefusesBadInput) {
  const std::vector<double> ok = {1, 2, 3};
  EXPECT_FALSE(bootstrap_median_ratio(std::vector<double>{1}, ok).ok());
  EXPECT_FALSE(bootstrap_median_ratio(ok, std::vector<double>{0, 1}).ok());
  EXPECT_FALSE(bootstrap_median_ratio(ok, std::vector<double>{-1, 1}).ok());
  EXPECT_FALSE(bootstrap_median_ratio(ok, std::vector<double>{1, std::numeric_limits<double>::infinity()}).ok());
  BootstrapOptions bad;
  bad.confidence = 1.0;
  EXPECT_FALSE(bootstrap_median_ratio(ok, ok, bad).ok());
  bad = {};
  bad.resamples = 10;
  EXPECT_FALSE(bootstrap_median_ratio(ok, ok, bad).ok());
}

}  // namespace
}  // namespace am::coord::stats
