// Speed-ups with confidence (issue 17 item 3): a cell earns a band only when the whole bootstrap
// interval of its speed-up lies inside it; otherwise it is "≈ noisy" with the interval. Perf jobs
// that ran on a busy host are warned about in every report. Results go through a real SQLite
// store, as in matrix_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "coordinator/dashboard_data.h"
#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_csv.h"
#include "coordinator/report_json.h"
#include "coordinator/report_markdown.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using nlohmann::json;
using testing::make_spec;
using testing::precision_named;

// n latencies around `median_ms`, spread log-normally by `spread` (sigma of the log), seeded.
std::vector<double> samples_around(double median_ms, double spread, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(median_ms), spread);
  std::vector<double> out(static_cast<std::size_t>(n));
  for (double& v : out) v = d(rng);
  return out;
}

std::vector<double> steady(double ms) { return testing::steady_samples(ms); }

json latency(const std::vector<double>& samples) {
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  return {{"latency_ms", {{"median", median}, {"count", samples.size()}, {"samples", samples}}}};
}

class SpeedupInterval : public testing::StoreFixture {
 protected:
  Matrix matrix() { return build_matrix(rows()); }
  const MatrixCell& cell(const Matrix& m, const char* precision) {
    const MatrixCell* c = find_cell(m, "bert-tiny", "cpu", precision_named(precision));
    EXPECT_NE(c, nullptr) << precision;
    static const MatrixCell kNone;
    return c ? *c : kNone;
  }
  void baseline(const std::vector<double>& samples, json extra = json::object()) {
    json m = latency(samples);
    m.update(extra);
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "", m);
  }
  void measured(const char* precision, const std::vector<double>& samples, json extra = json::object()) {
    json m = latency(samples);
    m.update(extra);
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", precision), "pass", "", m);
  }
};

TEST(Ratings, AnIntervalEarnsABandOnlyWhenBothEndsLieInIt) {
  EXPECT_EQ(rating_for_interval(2.1, 3.0), Rating::kExcellent);
  EXPECT_EQ(rating_for_interval(2.0, 2.0), Rating::kExcellent);
  EXPECT_EQ(rating_for_interval(1.2, 1.9999), Rating::kGood);
  EXPECT_EQ(rating_for_interval(1.9, 2.1), Rating::kNoisy);
  EXPECT_EQ(rating_for_interval(1.1, 1.3), Rating::kNoisy);
  EXPECT_EQ(rating_for_interval(0.5, 0.79), Rating::kPoor);
  EXPECT_EQ(rating_for_interval(0.5, 2.5), Rating::kNoisy);   // three bands
  EXPECT_EQ(rating_key(Rating::kNoisy), "noisy");
  SpeedupEstimate s;
  s.estimate = 1.37;
  s.low = 1.15;
  s.high = 1.62;
  EXPECT_EQ(speedup_rating_text(Rating::kNoisy, s), "≈ 1.15–1.62×");
  EXPECT_EQ(speedup_rating_text(Rating::kGood, s), "Good");
  s.low.reset();
  s.high.reset();
  EXPECT_EQ(speedup_rating_text(Rating::kNoisy, s), "≈ 1.37× (few samples)");
}

TEST_F(SpeedupInterval, ACellWhoseIntervalLiesInsideOneBandGetsThatBand) {
  // 2.5x with 2% spread on 40 samples a side: the interval is a few percent wide, all above 2.
  baseline(samples_around(10.0, 0.02, 40, 1));
  measured("q8_0", samples_around(4.0, 0.02, 40, 2));
  const Matrix m = matrix();
  const MatrixCell& c = cell(m, "q8_0");
  EXPECT_EQ(c.rating, Rating::kExcellent);
  ASSERT_TRUE(c.speedup_interval && c.speedup_interval->has_interval());
  const SpeedupEstimate& s = *c.speedup_interval;
  EXPECT_GT(*s.low, 2.0);
  EXPECT_LT(*s.low, s.estimate);
  EXPECT_GT(*s.high, s.estimate);
  EXPECT_LT(*s.high - *s.low, 0.3);
  EXPECT_NEAR(s.estimate, 2.5, 0.1);
  EXPECT_EQ(*c.speedup, s.estimate);
  EXPECT_EQ(s.cell_samples, 40u);
  EXPECT_EQ(s.baseline_samples, 40u);
}

TEST_F(SpeedupInterval, ACellStraddlingAThresholdIsNoisyAndShowsItsInterval) {
  // A true 1.2x with 25% spread: the estimate sits on the Good/Moderate threshold and the
  // interval reaches well to both sides of it. This is the case: q8_0 "Excellent" from
  // one noisy median.
  baseline(samples_around(12.0, 0.25, 30, 3));
  measured("q8_0", samples_around(10.0, 0.25, 30, 4));
  const Matrix m = matrix();
  const MatrixCell& c = cell(m, "q8_0");
  ASSERT_TRUE(c.speedup_interval && c.speedup_interval->has_interval());
  EXPECT_LT(*c.speedup_interval->low, kGoodMinSpeedup);
  EXPECT_GT(*c.speedup_interval->high, kGoodMinSpeedup);
  EXPECT_EQ(c.rating, Rating::kNoisy);

  const std::string md = render_markdown(run_record(), rows());
  const std::string label = speedup_rating_text(c.rating, c.speedup_interval);
  EXPECT_EQ(label.rfind("≈ ", 0), 0u) << label;
  EXPECT_NE(md.find("| " + label + " |"), std::string::npos) << md;
  EXPECT_NE(md.find("noisy: 95% interval crosses a threshold"), std::string::npos) << md;

  const json doc = render_json(run_record(), rows());
  const json* q8 = nullptr;
  for (const json& x : doc["matrix"]) {
    if (x["precision"] == "q8_0") q8 = &x;
  }
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ((*q8)["rating"], "noisy");
  EXPECT_EQ((*q8)["rating_label"], label);
  EXPECT_DOUBLE_EQ((*q8)["speedup_ci_low"].get<double>(), *c.speedup_interval->low);
  EXPECT_DOUBLE_EQ((*q8)["speedup_ci_high"].get<double>(), *c.speedup_interval->high);
  EXPECT_EQ((*q8)["speedup_samples"]["cell"], 30);
  EXPECT_EQ(doc["rating_rules"]["speedup_confidence"], kSpeedupConfidence);

  const std::string csv = render_csv(run_record(), rows());
  EXPECT_NE(csv.find(",noisy,"), std::string::npos) << csv;
}

TEST_F(SpeedupInterval, TheSameStoredResultsRenderTheSameRatingsEveryTime) {
  baseline(samples_around(12.0, 0.2, 25, 5));
  measured("q8_0", samples_around(9.0, 0.2, 25, 6));
  measured("q4_0", samples_around(5.0, 0.2, 25, 7));
  const Matrix a = matrix();
  const Matrix b = matrix();
  for (const char* p : {"q8_0", "q4_0"}) {
    const MatrixCell& x = cell(a, p);
    const MatrixCell& y = cell(b, p);
    ASSERT_TRUE(x.speedup_interval && x.speedup_interval->has_interval()) << p;
    EXPECT_EQ(*x.speedup_interval->low, *y.speedup_interval->low) << p;    // bit for bit
    EXPECT_EQ(*x.speedup_interval->high, *y.speedup_interval->high) << p;
    EXPECT_EQ(x.rating, y.rating) << p;
  }
  EXPECT_EQ(render_markdown(run_record(), rows()), render_markdown(run_record(), rows()));
  EXPECT_EQ(render_json(run_record(), rows()).dump(), render_json(run_record(), rows()).dump());
}

TEST_F(SpeedupInterval, FewerThanFiveSamplesOnASideIsNoisyWithThePointEstimate) {
  baseline(samples_around(10.0, 0.01, 20, 8));
  measured("q8_0", {4.0, 4.0, 4.0, 4.0});                 // 4 samples: too few for an interval
  measured("q4_0", {4.0, 4.0, 4.0, 4.0, 4.0});            // 5: enough
  const Matrix m = matrix();
  const MatrixCell& few = cell(m, "q8_0");
  EXPECT_EQ(few.rating, Rating::kNoisy);
  ASSERT_TRUE(few.speedup_interval.has_value());
  EXPECT_FALSE(few.speedup_interval->has_interval());
  EXPECT_EQ(few.speedup_interval->cell_samples, 4u);
  ASSERT_TRUE(few.speedup.has_value());
  EXPECT_NEAR(*few.speedup, 2.5, 0.05);                    // the point estimate is still shown
  EXPECT_EQ(speedup_rating_text(few.rating, few.speedup_interval).find("(few samples)") != std::string::npos, true);
  const MatrixCell& enough = cell(m, "q4_0");
  EXPECT_EQ(enough.rating, Rating::kExcellent);

  const std::string md = render_markdown(run_record(), rows());
  EXPECT_NE(md.find("too few samples for an interval (4 vs 20 baseline; 5 needed)"), std::string::npos) << md;
  const json doc = render_json(run_record(), rows());
  for (const json& x : doc["matrix"]) {
    if (x["precision"] != "q8_0") continue;
    EXPECT_EQ(x["rating"], "noisy");
    EXPECT_TRUE(x["speedup_ci_low"].is_null());
    EXPECT_TRUE(x["speedup"].is_number());
  }
}

TEST(Ratings, AHostIsBusyWhenOtherWorkOrStealTakesMoreThanItsShare) {
  HostLoad idle;
  idle.cpus = 4;
  idle.other_load = 0.2;
  idle.steal_fraction = 0.0;
  EXPECT_FALSE(host_busy(idle));
  HostLoad loaded = idle;
  loaded.other_load = 1.5;                                 // 37% of 4 CPUs
  EXPECT_TRUE(host_busy(loaded));
  HostLoad stolen = idle;
  stolen.steal_fraction = 0.08;
  EXPECT_TRUE(host_busy(stolen));
  EXPECT_FALSE(host_busy(HostLoad{}));                     // nothing recorded: no claim
}

TEST_F(SpeedupInterval, ABusyHostIsWarnedAboutInEveryReport) {
  const json quiet = {{"host", {{"load_start", 0.1}, {"load_end", 1.0}, {"cpus", 2}, {"other_load", 0.05},
                                {"steal_fraction", 0.0}}}};
  const json busy = {{"host", {{"load_start", 3.2}, {"load_end", 4.1}, {"cpus", 2}, {"other_load", 1.3},
                               {"steal_fraction", 0.01}}}};
  baseline(steady(10.0), quiet);
  measured("q8_0", steady(4.0), busy);
  measured("q4_0", steady(5.0), quiet);
  const Matrix m = matrix();
  EXPECT_EQ(cell(m, "q8_0").host_busy_jobs, 1);
  EXPECT_EQ(cell(m, "q4_0").host_busy_jobs, 0);
  EXPECT_FALSE(cell(m, "q4_0").baseline_host_busy);

  const std::string md = render_markdown(run_record(), rows());
  EXPECT_NE(md.find("⚠️ **Busy host:** 1 of 3 perf jobs"), std::string::npos) << md;
  EXPECT_NE(md.find("⚠️ busy host: 1 job, other load 65%, steal 1%"), std::string::npos) << md;

  const json doc = render_json(run_record(), rows());
  EXPECT_EQ(doc["summary"]["host_busy_jobs"], 1);
  EXPECT_EQ(doc["summary"]["host_measured_jobs"], 3);
  int busy_results = 0;
  for (const json& r : doc["results"]) busy_results += r["host_busy"] == true ? 1 : 0;
  EXPECT_EQ(busy_results, 1);

  const json d = dashboard_data(run_record(), rows(), {}, kT0);
  const auto& names = dashboard_job_columns();
  const auto col = std::find(names.begin(), names.end(), std::string_view("host_busy")) - names.begin();
  ASSERT_LT(static_cast<std::size_t>(col), names.size());
  int busy_jobs = 0;
  for (const json& v : d["jobs"]["host_busy"]) busy_jobs += v == 1 ? 1 : 0;
  EXPECT_EQ(busy_jobs, 1);
  const json& cells = d["cells"];  // by column (dashboard_data.h)
  for (std::size_t i = 0; i < d["cell_count"].get<std::size_t>(); ++i) {
    EXPECT_EQ(cells["host_busy"][i], cells["precision"][i] == "q8_0") << cells["precision"][i];
  }

  const std::string csv = render_csv(run_record(), rows());
  EXPECT_NE(csv.find(",host_busy,"), std::string::npos);
  EXPECT_NE(csv.find(",1.3,0.01,true,"), std::string::npos) << csv;   // other_load, steal, busy
}

TEST_F(SpeedupInterval, AQuietHostGetsNoWarning) {
  const json quiet = {{"host", {{"load_start", 0.1}, {"load_end", 0.9}, {"cpus", 8}, {"other_load", 0.3},
                                {"steal_fraction", 0.0}}}};
  baseline(steady(10.0), quiet);
  measured("q8_0", steady(4.0), quiet);
  const std::string md = render_markdown(run_record(), rows());
  EXPECT_EQ(md.find("Busy host"), std::string::npos) << md;
  EXPECT_EQ(md.find("busy host"), std::string::npos) << md;
}

// metrics.paired_baseline as job_runner.cpp writes it: the cpu f32 samples the job timed in
// blocks alternating with its own.
json paired(const std::vector<double>& baseline_samples) {
  json lat = latency(baseline_samples)["latency_ms"];
  return {{"paired_baseline", {{"backend", "cpu"}, {"precision", "f32"}, {"blocks", 12}, {"latency_ms", lat}}}};
}

TEST_F(SpeedupInterval, APairedBaselineIsTheOneACellIsRatedAgainst) {
  // The baseline cell ran while the host was slow (20 ms); the q8_0 job timed its own f32 runs
  // at 8 ms alongside its 4 ms: the rating is the paired 2x, not 5x.
  baseline(samples_around(20.0, 0.02, 40, 11));
  measured("q8_0", samples_around(4.0, 0.02, 40, 12), paired(samples_around(8.0, 0.02, 30, 13)));
  const Matrix m = matrix();
  const MatrixCell& c = cell(m, "q8_0");
  ASSERT_TRUE(c.speedup_interval && c.speedup_interval->has_interval());
  EXPECT_TRUE(c.speedup_paired);
  EXPECT_NEAR(c.speedup_interval->estimate, 2.0, 0.08);
  EXPECT_NEAR(*c.baseline_ms, 8.0, 0.3);
  EXPECT_EQ(c.speedup_interval->baseline_samples, 30u);
  ASSERT_EQ(c.shapes.size(), 1u);
  EXPECT_TRUE(c.shapes[0].paired);
  EXPECT_NEAR(*c.shapes[0].speedup, 2.0, 0.08);
  const json j = render_json(run_record(), rows());
  const json* q8 = nullptr;
  for (const json& x : j["matrix"]) {
    if (x["precision"] == "q8_0") q8 = &x;
  }
  ASSERT_NE(q8, nullptr);
  EXPECT_TRUE((*q8)["speedup_paired"].get<bool>());
  EXPECT_TRUE((*q8)["shapes"][0]["paired"].get<bool>());
  // Markdown names the baseline figure the speed-up used, not only the baseline row's 20 ms.
  const std::string md = render_markdown(run_record(), rows());
  EXPECT_NE(md.find("vs cpu f32 8."), std::string::npos) << md;
  EXPECT_NE(md.find(" ms timed alongside"), std::string::npos) << md;
}

TEST_F(SpeedupInterval, APairedBaselineRatesACellEvenWithoutABaselineCell) {
  measured("q4_0", samples_around(5.0, 0.02, 40, 14), paired(samples_around(15.0, 0.02, 40, 15)));
  const Matrix m = matrix();
  const MatrixCell& c = cell(m, "q4_0");
  EXPECT_EQ(c.rating, Rating::kExcellent);
  EXPECT_NEAR(*c.speedup, 3.0, 0.12);
}

TEST_F(SpeedupInterval, AShapeMixingPairedAndUnpairedJobsUsesTheBaselineCell) {
  // Dividing one job's paired samples by the pool of both would mix conditions: the shape falls
  // back to the baseline cell for all of it.
  baseline(samples_around(10.0, 0.02, 40, 16));
  measured("q8_0", samples_around(4.0, 0.02, 40, 17), paired(samples_around(6.0, 0.02, 40, 18)));
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 1, 32, /*seed=*/99), "pass", "",
          latency(samples_around(4.0, 0.02, 40, 19)));
  const Matrix m = matrix();
  const MatrixCell& c = cell(m, "q8_0");
  EXPECT_FALSE(c.speedup_paired);
  EXPECT_NEAR(*c.speedup, 2.5, 0.1);
  EXPECT_EQ(c.speedup_interval->baseline_samples, 40u);
  EXPECT_EQ(c.speedup_interval->cell_samples, 80u);
}

TEST_F(SpeedupInterval, AMalformedPairedBaselineIsIgnored) {
  baseline(samples_around(10.0, 0.02, 40, 20));
  json bad = paired(samples_around(6.0, 0.02, 40, 21));
  bad["paired_baseline"]["latency_ms"]["median"] = -1.0;
  measured("q8_0", samples_around(4.0, 0.02, 40, 22), bad);
  measured("q4_0", samples_around(4.0, 0.02, 40, 23), {{"paired_baseline", "text"}});
  const Matrix m = matrix();
  EXPECT_FALSE(cell(m, "q8_0").speedup_paired);
  EXPECT_NEAR(*cell(m, "q8_0").speedup, 2.5, 0.1);
  EXPECT_FALSE(cell(m, "q4_0").speedup_paired);
}

TEST(SpeedupText, KeepsTwoSignificantDigitsBelowATenthWhereTwoDecimalsShowedZero) {
  EXPECT_EQ(speedup_number(0.0046), "0.0046");
  EXPECT_EQ(speedup_number(0.25), "0.25");
  EXPECT_EQ(speedup_number(2.5), "2.50");
  EXPECT_EQ(speedup_number(19.99), "20.0");
  EXPECT_EQ(speedup_number(123.4), "123");
}

}  // namespace
}  // namespace am::coord
