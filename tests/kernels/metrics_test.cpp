#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "tests/kernels/named_formats.h"
#include "jobs/names.h"
#include "kernels/accuracy.h"
#include "kernels/measure.h"
#include "kernels/tolerances.h"

namespace am::kernels {
namespace {

TEST(Accuracy, ComputesHandCheckedMetrics) {
  // Two rows of three: y differs from r in one entry by 1.
  const std::vector<float> y = {1, 2, 3, 5, 0, 1};
  const std::vector<float> r = {1, 2, 4, 5, 0, 1};
  const AccuracyMetrics m = compare_outputs(y.data(), r.data(), 2, 3);
  const double ref2 = 1 + 4 + 16 + 25 + 0 + 1;  // 47
  const double y2 = 1 + 4 + 9 + 25 + 0 + 1;     // 40
  const double dot = 1 + 4 + 12 + 25 + 0 + 1;   // 43
  EXPECT_DOUBLE_EQ(m.nmse, 1.0 / ref2);
  EXPECT_NEAR(m.cosine, dot / std::sqrt(ref2 * y2), 1e-12);
  EXPECT_DOUBLE_EQ(m.max_abs_err, 1.0);
  EXPECT_DOUBLE_EQ(m.top1_agreement, 1.0);  // argmax 2 and 0 in both
  EXPECT_EQ(m.nonfinite, 0);
}

TEST(Accuracy, Top1CountsRowsWhoseArgmaxMoved) {
  const std::vector<float> y = {0, 1, 5, 0, 9, 1, 3, 0};
  const std::vector<float> r = {1, 0, 5, 0, 9, 1, 0, 3};
  const AccuracyMetrics m = compare_outputs(y.data(), r.data(), 4, 2);
  EXPECT_DOUBLE_EQ(m.top1_agreement, 0.5);  // rows 0 and 3 disagree
}

TEST(Accuracy, IdenticalOutputsAndZeroReference) {
  const std::vector<float> y = {0.5f, -2.0f};
  AccuracyMetrics m = compare_outputs(y.data(), y.data(), 1, 2);
  EXPECT_EQ(m.nmse, 0.0);
  EXPECT_DOUBLE_EQ(m.cosine, 1.0);
  const std::vector<float> zeros = {0, 0};
  m = compare_outputs(y.data(), zeros.data(), 1, 2);
  EXPECT_TRUE(std::isinf(m.nmse));
  EXPECT_TRUE(to_json(m).at("nmse").is_null());
}

TEST(Accuracy, CountsNanAndInf) {
  const std::vector<float> y = {1, std::numeric_limits<float>::quiet_NaN(), INFINITY, 2};
  const std::vector<float> r = {1, 2, 3, 2};
  const AccuracyMetrics m = compare_outputs(y.data(), r.data(), 2, 2);
  EXPECT_EQ(m.nonfinite, 2);
  EXPECT_EQ(count_nonfinite(y.data(), 4), 2);
  // The finite pairs agree exactly; that must not read as the output's accuracy.
  EXPECT_TRUE(std::isnan(m.nmse));
  EXPECT_TRUE(std::isnan(m.cosine));
  EXPECT_TRUE(to_json(m).at("nmse").is_null());
  EXPECT_TRUE(to_json(m).at("cosine").is_null());
  EXPECT_EQ(to_json(m).at("nonfinite"), 2);
  const AccuracyMetrics bad_ref = compare_outputs(r.data(), y.data(), 2, 2);
  EXPECT_TRUE(std::isnan(bad_ref.nmse));
}

// Every precision a job can name has a tolerance, and the bounds grow in the order in which the
// formats lose accuracy (docs/FORMATS.md, "Accuracy").
TEST(Tolerances, ExistForEveryPrecisionInAccuracyOrder) {
  for (const jobs::PrecisionInfo& p : jobs::all_precisions()) {
    EXPECT_EQ(tolerance_for(p.precision).precision, p.precision) << p.name;
    EXPECT_LT(tolerance_for(p.precision).pass_nmse, tolerance_for(p.precision).degraded_nmse) << p.name;
  }
  const char* order[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q3_k", "q2_k"};
  for (std::size_t i = 1; i < std::size(order); ++i) {
    EXPECT_LT(tolerance_named(order[i - 1])->pass_nmse, tolerance_named(order[i])->pass_nmse) << order[i];
  }
}

TEST(Tolerances, ClassifyPassDegradedFail) {
  const Tolerance tol = *tolerance_named("q8_0");
  AccuracyMetrics m;
  m.nmse = tol.pass_nmse / 2;
  EXPECT_EQ(classify_accuracy(m, tol).status, ResultStatus::kPass);
  EXPECT_EQ(classify_accuracy(m, tol).reason, "");
  m.nmse = tol.pass_nmse * 2;
  Verdict v = classify_accuracy(m, tol);
  EXPECT_EQ(v.status, ResultStatus::kDegraded);
  EXPECT_NE(v.reason.find("q8_0"), std::string::npos);
  m.nmse = tol.degraded_nmse * 2;
  EXPECT_EQ(classify_accuracy(m, tol).status, ResultStatus::kFail);
  m.nmse = std::numeric_limits<double>::infinity();
  EXPECT_EQ(classify_accuracy(m, tol).status, ResultStatus::kFail);
}

TEST(Tolerances, AnyNanOrInfFails) {
  AccuracyMetrics m;
  m.nmse = 0.0;
  m.nonfinite = 1;
  const Verdict v = classify_accuracy(m, *tolerance_named("f32"));
  EXPECT_EQ(v.status, ResultStatus::kFail);
  EXPECT_NE(v.reason.find("NaN/Inf"), std::string::npos);
  m.nonfinite = 0;
  m.nonfinite_reference = 3;
  EXPECT_EQ(classify_accuracy(m, *tolerance_named("f32")).status, ResultStatus::kFail);
}

TEST(Latency, SummarizesSamples) {
  const LatencyStats s = summarize_latency({5, 1, 4, 2, 3, 10, 6, 7, 8, 9});
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.p90_ms, 9);  // nearest rank: 9th of 10
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 10);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  EXPECT_NEAR(s.stddev_ms, std::sqrt(82.5 / 9), 1e-12);
  EXPECT_EQ(s.samples_ms.size(), 10u);
  EXPECT_EQ(s.samples_ms.front(), 5);  // raw order kept
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j.at("count"), 10);
  EXPECT_EQ(j.at("samples").size(), 10u);
}

// A command may report any finite latency > 0: samples near the largest double overflowed the
// median's and the mean's sums to infinity, stored as "not measured".
TEST(Latency, SamplesNearTheLargestDoubleKeepFiniteMedianMeanAndSpread) {
  const double big = 1.7e308;
  const LatencyStats same = summarize_latency(std::vector<double>(6, big));
  EXPECT_DOUBLE_EQ(same.median_ms, big);
  EXPECT_DOUBLE_EQ(same.mean_ms, big);
  EXPECT_DOUBLE_EQ(same.stddev_ms, 0.0);
  const LatencyStats spread = summarize_latency({big, 0.5 * big, big, 0.5 * big});
  EXPECT_DOUBLE_EQ(spread.median_ms, 0.75 * big);
  EXPECT_DOUBLE_EQ(spread.mean_ms, 0.75 * big);
  // Sample stddev of {1, .5, 1, .5} is sqrt(1/12), scaled by big.
  EXPECT_NEAR(spread.stddev_ms / big, std::sqrt(1.0 / 12.0), 1e-12);
  EXPECT_TRUE(std::isfinite(spread.stddev_ms));
}

TEST(Latency, RunsWarmupThenUntilMinRepsAndMinTime) {
  int calls = 0;
  MeasureOptions o;
  o.warmup = 3;
  o.min_reps = 4;
  o.max_reps = 100;
  o.min_time_s = 0.0;
  Result<LatencyStats> s = measure_latency(
      [&] {
        ++calls;
        return Status::Ok();
      },
      o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->samples_ms.size(), 4u);
  EXPECT_EQ(calls, 7);

  // min_time_s keeps it going past min_reps... (0.2 s of 2 ms runs: even at 40 ms a sleep on a
  // loaded machine, min_reps alone could not cover it)
  o.warmup = 0;
  o.min_time_s = 0.2;
  o.max_reps = 1000;
  calls = 0;
  s = measure_latency(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return Status::Ok();
      },
      o);
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->samples_ms.size(), 4u);
  double total = 0;
  for (double v : s->samples_ms) total += v;
  EXPECT_GE(total, 200.0);
  // ...but max_reps caps it.
  o.min_time_s = 10.0;
  o.max_reps = 6;
  s = measure_latency([&] { return Status::Ok(); }, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->samples_ms.size(), 6u);
}

TEST(Latency, StopsAtTheFirstFailingRun) {
  int calls = 0;
  MeasureOptions o;
  o.warmup = 1;
  const Result<LatencyStats> s =
      measure_latency([&] { return ++calls == 3 ? internal_error("boom") : Status::Ok(); }, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "boom");
  EXPECT_EQ(calls, 3);
}

TEST(PairedLatency, WarmsBothSidesThenAlternatesBlocksOfTheSameWallTime) {
  // The call sequence: 'W'/'w' candidate/baseline warm-ups, 'B' the before-baseline hook,
  // 'c'/'b' timed candidate/baseline runs.
  std::string calls;
  MeasureOptions o;
  o.warmup = 2;
  o.min_reps = 3;
  o.max_reps = 1000;
  o.min_time_s = 0.3;
  int candidate_calls = 0;
  auto candidate = [&] {
    calls += candidate_calls++ < o.warmup ? 'W' : 'c';
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return Status::Ok();
  };
  int baseline_calls = 0;
  auto baseline = [&] {
    calls += baseline_calls++ < o.warmup ? 'w' : 'b';
    std::this_thread::sleep_for(std::chrono::milliseconds(20));   // 4x slower than the candidate
    return Status::Ok();
  };
  Result<PairedLatency> r = measure_paired_latency(candidate, [&] { calls += 'B'; return Status::Ok(); },
                                                   baseline, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_GE(calls.size(), 5u);
  EXPECT_EQ(calls.substr(0, 5), "WWBww");
  // Blocks alternate, starting with the candidate and ending with the baseline.
  const std::string timed = calls.substr(5);
  int switches = 0;
  for (std::size_t i = 1; i < timed.size(); ++i) switches += timed[i] != timed[i - 1];
  EXPECT_EQ(timed.front(), 'c');
  EXPECT_EQ(timed.back(), 'b');
  EXPECT_EQ(switches + 1, r->blocks);
  EXPECT_GE(r->blocks, 6);   // 0.3 s of candidate time in 0.05 s blocks
  EXPECT_EQ(r->blocks % 2, 0);
  // The candidate alone met min_time_s; each side got about the same wall time (block ends
  // overshoot by at most one run).
  double candidate_total = 0, baseline_total = 0;
  for (double v : r->candidate.samples_ms) candidate_total += v;
  for (double v : r->baseline.samples_ms) baseline_total += v;
  EXPECT_GE(candidate_total, 300.0);
  EXPECT_GT(baseline_total, 0.6 * candidate_total);
  EXPECT_LT(baseline_total, 1.8 * candidate_total);
  EXPECT_GT(r->candidate.samples_ms.size(), 2 * r->baseline.samples_ms.size());
  EXPECT_EQ(static_cast<std::size_t>(std::count(timed.begin(), timed.end(), 'c')), r->candidate.samples_ms.size());
  EXPECT_EQ(static_cast<std::size_t>(std::count(timed.begin(), timed.end(), 'b')), r->baseline.samples_ms.size());
}

TEST(PairedLatency, MaxRepsCapsEitherSideAndMinRepsHoldsForBoth) {
  MeasureOptions o;
  o.warmup = 0;
  o.min_reps = 4;
  o.max_reps = 7;
  o.min_time_s = 10.0;   // never met: max_reps ends it
  Result<PairedLatency> r = measure_paired_latency(
      [] { return Status::Ok(); }, nullptr,
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return Status::Ok();
      },
      o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->candidate.samples_ms.size(), 7u);   // a block of instant runs reaches the cap at once
  EXPECT_EQ(r->baseline.samples_ms.size(), 7u);    // its block of 1 ms runs reaches it before 50 ms

  // min_reps for the baseline even when the candidate's time is long met.
  o.min_time_s = 0.0;
  o.max_reps = 1000;
  Result<PairedLatency> r2 = measure_paired_latency(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));   // one run fills a block
        return Status::Ok();
      },
      nullptr,
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        return Status::Ok();
      },
      o);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->candidate.samples_ms.size(), 4u);
  EXPECT_EQ(r2->baseline.samples_ms.size(), 4u);
  EXPECT_EQ(r2->blocks, 8);
}

TEST(PairedLatency, ASlowCandidateGetsItsMinRepsWhenAFastBaselineReachesMaxReps) {
  // A device job next to a tiny cpu f32 graph: one candidate run fills a block, the baseline's
  // first block reaches max_reps. The candidate still gets min_reps (found by the Vulkan job test).
  MeasureOptions o;
  o.warmup = 0;
  o.min_reps = 3;
  o.max_reps = 10;
  o.min_time_s = 0.01;
  Result<PairedLatency> r = measure_paired_latency(
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        return Status::Ok();
      },
      nullptr, [] { return Status::Ok(); }, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->candidate.samples_ms.size(), 3u);
  EXPECT_EQ(r->baseline.samples_ms.size(), 10u);

  // And the other way round: a fast candidate at max_reps leaves a slow baseline its min_reps.
  o.max_reps = 4;
  r = measure_paired_latency([] { return Status::Ok(); }, nullptr,
                             [] {
                               std::this_thread::sleep_for(std::chrono::milliseconds(60));
                               return Status::Ok();
                             },
                             o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->candidate.samples_ms.size(), 4u);
  EXPECT_EQ(r->baseline.samples_ms.size(), 3u);
}

TEST(PairedLatency, StopsAtTheFirstFailureOnEitherSide) {
  MeasureOptions o;
  o.warmup = 1;
  int calls = 0;
  Result<PairedLatency> r = measure_paired_latency(
      [&] { return Status::Ok(); }, [&] { return unsupported("no f32 graph"); },
      [&] { ++calls; return Status::Ok(); }, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no f32 graph");
  EXPECT_EQ(calls, 0);
  r = measure_paired_latency([&] { return Status::Ok(); }, nullptr,
                             [&] { return ++calls == 4 ? internal_error("boom") : Status::Ok(); }, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "boom");
}

TEST(Latency, PeakRssIsPositive) { EXPECT_GT(peak_rss_bytes(), 1 << 20); }

}  // namespace
}  // namespace am::kernels

namespace am::kernels {
namespace {

TEST(Latency, ReportsAllSamplesUpToTheCapThenAnEvenSubsetWithTheTrueCount) {
  std::vector<double> few = {3.0, 1.0, 2.0};
  auto doc = to_json(summarize_latency(few));
  EXPECT_EQ(doc["count"], 3);
  EXPECT_EQ(doc["samples"].get<std::vector<double>>(), few);   // run order kept
  EXPECT_FALSE(doc.contains("samples_stride"));

  std::vector<double> many(10'000);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  auto big = to_json(summarize_latency(many));
  EXPECT_EQ(big["count"], 10'000);
  const auto kept = big["samples"].get<std::vector<double>>();
  ASSERT_EQ(kept.size(), kMaxReportedSamples);
  EXPECT_EQ(kept.front(), 0.0);
  EXPECT_EQ(kept.back(), 9999.0);
  for (std::size_t i = 1; i < kept.size(); ++i) EXPECT_GT(kept[i], kept[i - 1]);
  EXPECT_NEAR(big["median"].get<double>(), 4999.5, 1e-9);     // over all samples, not the subset
}

}  // namespace
}  // namespace am::kernels

namespace am::kernels {
namespace {

TEST(Accuracy, KlDivergenceMatchesAHandComputedValue) {
  // p = softmax(0, 0) = (1/2, 1/2); q = softmax(ln 3, 0) = (3/4, 1/4).
  // KL(p || q) = 1/2 ln(2/3) + 1/2 ln 2 = 0.1438410362...
  const float ref[] = {0.0f, 0.0f, 5.0f, -1.0f};
  const float y[] = {std::log(3.0f), 0.0f, 5.0f, -1.0f};   // second row identical: KL 0
  EXPECT_NEAR(mean_kl_divergence(y, ref, 1, 2), 0.1438410362, 1e-6);
  EXPECT_NEAR(mean_kl_divergence(y, ref, 2, 2), 0.1438410362 / 2, 1e-6);
  // Shift invariance: adding a constant to a row's logits changes nothing.
  const float shifted[] = {std::log(3.0f) + 100.0f, 100.0f};
  EXPECT_NEAR(mean_kl_divergence(shifted, ref, 1, 2), 0.1438410362, 1e-5);
}

}  // namespace
}  // namespace am::kernels
