// compare: matching, the regression verdict (significance + threshold + pass→fail), status
// changes and the rendered documents, on hand-made report rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "coordinator/report_compare.h"
#include "jobs/job_spec.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::status_named;

// Samples with a fixed seed: a lognormal spread of 5% around `median_ms`.
std::vector<double> samples(double median_ms, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(median_ms), 0.05);
  std::vector<double> out(static_cast<std::size_t>(n));
  for (double& v : out) v = d(rng);
  return out;
}

ReportRow row(const std::string& job_id, const std::string& model, const std::string& precision,
              const std::string& status, std::vector<double> latency, int seq_len = 32,
              const std::string& hardware_class = "hc-1", int threads = 0) {
  jobs::JobSpec spec = make_spec(model, "encoder-only", "cpu", precision, 1, seq_len);
  spec.threads = threads;
  ReportRow r;
  r.run_id = "r";
  r.job_id = job_id;
  r.spec = jobs::to_json(spec);
  r.model = model;
  r.architecture = "encoder-only";
  r.backend = "cpu";
  r.precision = spec.precision;
  r.status = status_named(status);
  r.state = r.status ? JobState::kDone : JobState::kQueued;
  r.hardware_class = hardware_class;
  if (!latency.empty()) {
    r.metrics["latency_ms"] = {{"median", 0}, {"samples", latency}};
  }
  r.metrics["accuracy"] = {{"nmse", 1e-6}, {"cosine", 0.9999}};
  r.metrics["process"] = {{"cpu_user_s", 1.5}, {"cpu_sys_s", 0.25}, {"wall_s", 2.0}};
  r.metrics["threads"] = threads > 0 ? threads : 2;
  return r;
}

CompareSide side(const std::string& run_id, std::vector<ReportRow> rows) {
  CompareSide s;
  s.db = run_id + ".db";
  s.run.run_id = run_id;
  s.run.plan_name = "p";
  s.run.created_at_ms = 1'700'000'000'000;
  s.rows = std::move(rows);
  return s;
}

const ComparedJob& find(const Comparison& c, const std::string& model, const std::string& precision) {
  for (const ComparedJob& j : c.jobs) {
    if (j.key.model == model && jobs::to_string(j.key.precision) == precision) return j;
  }
  ADD_FAILURE() << "no job " << model << " " << precision;
  static ComparedJob none;
  return none;
}

CompareOptions gate(double pct) {
  CompareOptions o;
  o.gate = true;
  o.threshold_pct = pct;
  return o;
}

TEST(Compare, SameDistributionsAreNotARegression) {
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 60, 1)),
                         row("2", "m", "q8_0", "pass", samples(4, 60, 2))});
  auto fresh = side("b", {row("3", "m", "f32", "pass", samples(10, 60, 3)),
                          row("4", "m", "q8_0", "pass", samples(4, 60, 4))});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->regression);
  EXPECT_EQ(c->summary.matched, 2);
  EXPECT_EQ(c->summary.compared, 2);
  EXPECT_EQ(c->summary.slower, 0);
  for (const ComparedJob& j : c->jobs) {
    EXPECT_EQ(j.verdict, LatencyVerdict::kSame);
    ASSERT_TRUE(j.ratio && j.ci && j.p_value && j.p_holm);
    EXPECT_NEAR(*j.ratio, 1.0, 0.05);
    EXPECT_LE(j.ci->low, 1.0);
    EXPECT_GE(j.ci->high, 1.0);
    EXPECT_GE(*j.p_holm, *j.p_value);
  }
}

// A hand-edited base of denormal samples made the ratio infinite and its interval NaN: the job
// read "slower" with an inf× ratio and no verdict could stand on it. It is not compared, and
// says why.
TEST(Compare, ARatioThatOverflowsIsNotComparedAndSaysWhy) {
  auto base = side("a", {row("1", "m", "f32", "pass", std::vector<double>(60, 5e-324))});
  auto fresh = side("b", {row("2", "m", "f32", "pass", samples(10, 60, 2))});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  const ComparedJob& j = find(*c, "m", "f32");
  EXPECT_EQ(j.verdict, LatencyVerdict::kNotCompared);
  EXPECT_FALSE(j.ratio.has_value());
  EXPECT_NE(j.latency_note.find("give no finite ratio"), std::string::npos) << j.latency_note;
  EXPECT_EQ(c->summary.slower, 0);
}

TEST(Compare, SignificantSlowdownBeyondThresholdIsARegression) {
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 60, 1)),
                         row("2", "m", "q8_0", "pass", samples(4, 60, 2))});
  auto fresh = side("b", {row("3", "m", "f32", "pass", samples(13, 60, 3)),    // 1.3x slower
                          row("4", "m", "q8_0", "pass", samples(4, 60, 4))});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->regression);
  const ComparedJob& slow = find(*c, "m", "f32");
  EXPECT_EQ(slow.verdict, LatencyVerdict::kSlower);
  EXPECT_TRUE(slow.regression);
  EXPECT_NEAR(*slow.ratio, 1.3, 0.05);
  EXPECT_GT(slow.ci->low, 1.1);
  EXPECT_LT(*slow.p_holm, 1e-10);
  EXPECT_FALSE(find(*c, "m", "q8_0").regression);
  EXPECT_EQ(c->summary.slowdown_regressions, 1);

  // The same slowdown below a 50% threshold is reported as slower, but gates nothing.
  auto loose = compare_runs(base, fresh, gate(50));
  ASSERT_TRUE(loose.ok());
  EXPECT_FALSE(loose->regression);
  EXPECT_EQ(find(*loose, "m", "f32").verdict, LatencyVerdict::kSlower);
  EXPECT_EQ(loose->summary.slower, 1);
  EXPECT_EQ(loose->summary.slowdown_regressions, 0);
}

TEST(Compare, ASignificantSlowdownWhoseIntervalReachesBelowTheThresholdIsNotARegression) {
  // 30 samples a side with 10% spread, new 1.12x: clearly slower, but the 95% interval of the
  // ratio reaches below 1.10, so "slower by at least 10%" is not established.
  auto spread = [](double median_ms, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> d(std::log(median_ms), 0.10);
    std::vector<double> out(30);
    for (double& v : out) v = d(rng);
    return out;
  };
  auto c = compare_runs(side("a", {row("1", "m", "f32", "pass", spread(10, 1))}),
                        side("b", {row("2", "m", "f32", "pass", spread(11.2, 2))}), gate(10));
  ASSERT_TRUE(c.ok());
  const ComparedJob& j = c->jobs.at(0);
  ASSERT_TRUE(j.ci && j.p_holm);
  EXPECT_EQ(j.verdict, LatencyVerdict::kSlower);
  EXPECT_LT(j.ci->low, 1.10);
  EXPECT_GT(*j.ratio, 1.10);      // the point estimate alone would have gated
  EXPECT_FALSE(j.regression);
  EXPECT_FALSE(c->regression);
  // At 0% the interval (all above 1) clears the limit.
  auto zero = compare_runs(side("a", {row("1", "m", "f32", "pass", spread(10, 1))}),
                           side("b", {row("2", "m", "f32", "pass", spread(11.2, 2))}), gate(0));
  ASSERT_TRUE(zero.ok());
  EXPECT_GT(zero->jobs.at(0).ci->low, 1.0);
  EXPECT_TRUE(zero->regression);
}

TEST(Compare, WithoutAGateTheVerdictIsTakenAtTheDefaultThresholdNotAtZero) {
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 60, 1)),
                         row("2", "m", "q8_0", "pass", samples(4, 60, 2))});
  auto drift = side("b", {row("3", "m", "f32", "pass", samples(10.5, 60, 3)),   // 5% slower
                          row("4", "m", "q8_0", "pass", samples(4, 60, 4))});
  const CompareOptions plain;   // what `compare` without --fail-on-regression uses
  EXPECT_FALSE(plain.gate);
  EXPECT_EQ(plain.threshold_pct, kDefaultRegressionThresholdPct);
  auto c = compare_runs(base, drift, plain);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(find(*c, "m", "f32").verdict, LatencyVerdict::kSlower);   // reported
  EXPECT_FALSE(c->regression);                                         // not a regression
  auto slow = side("c", {row("5", "m", "f32", "pass", samples(13, 60, 5)),
                         row("6", "m", "q8_0", "pass", samples(4, 60, 6))});
  auto r = compare_runs(base, slow, plain);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->regression);
}

// Two external commands of one label, backend and shape differ by their precision label: they
// pair by it, not by job order (a swapped order hid a 10x slowdown of one of them).
TEST(Compare, ExternalCommandsPairByTheirNameAndPrecisionLabelNotByOrder) {
  const auto command_row = [](const std::string& id, const std::string& label, double ms, uint64_t seed) {
    ReportRow r = row(id, "llama", "f32", "pass", samples(ms, 60, seed));
    r.precision = jobs::Precision::kExternal;
    r.spec["precision"] = "external";
    r.spec["command"] = {{"name", "llama-bench"}, {"argv", {"llama-bench"}}, {"output", "llama-bench"},
                         {"precision_label", label}};
    return r;
  };
  auto base = side("a", {command_row("1", "Q4_K_M", 1.0, 1), command_row("2", "int8-trt", 10.0, 2)});
  auto fresh = side("b", {command_row("3", "int8-trt", 10.0, 3), command_row("4", "Q4_K_M", 10.0, 4)});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->regression);
  EXPECT_EQ(c->summary.matched, 2);
  for (const ComparedJob& j : c->jobs) {
    ASSERT_TRUE(j.ratio.has_value());
    if (j.key.command == "llama-bench Q4_K_M") EXPECT_NEAR(*j.ratio, 10.0, 0.5);
    if (j.key.command == "llama-bench int8-trt") EXPECT_NEAR(*j.ratio, 1.0, 0.05);
  }
  EXPECT_NE(render_compare_markdown(*c).find("external (llama-bench Q4_K_M)"), std::string::npos);
}

TEST(Compare, ALargeRatioWithoutSignificanceIsNotARegression) {
  // Five wildly spread samples a side: the median ratio is 1.5 but the test cannot tell.
  auto base = side("a", {row("1", "m", "f32", "pass", {10, 30, 5, 20, 2})});
  auto fresh = side("b", {row("2", "m", "f32", "pass", {15, 4, 40, 30, 3})});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  const ComparedJob& j = c->jobs.at(0);
  EXPECT_NEAR(*j.ratio, 1.5, 1e-12);
  EXPECT_EQ(j.verdict, LatencyVerdict::kSame);
  EXPECT_FALSE(c->regression);
}

TEST(Compare, HolmCorrectionRemovesAFindingThatOneTestAloneWouldMake) {
  // One job moderately slower (p between 0.05/20 and 0.05) among 20 compared jobs.
  std::vector<ReportRow> b, n;
  for (int i = 0; i < 20; ++i) {
    const std::string model = "m" + std::to_string(i);
    b.push_back(row("b" + std::to_string(i), model, "f32", "pass", samples(10, 12, 100 + i)));
    n.push_back(row("n" + std::to_string(i), model, "f32", "pass", samples(10, 12, 200 + i)));
  }
  // Interleaved by construction: 12 base samples 1..12, new samples shifted so that U is moderate.
  std::vector<double> base_s, new_s;
  for (int i = 0; i < 12; ++i) base_s.push_back(10.0 + i);
  for (int i = 0; i < 12; ++i) new_s.push_back(13.5 + i);
  b[0] = row("b0", "m0", "f32", "pass", base_s);
  n[0] = row("n0", "m0", "f32", "pass", new_s);
  auto c = compare_runs(side("a", b), side("b", n), gate(0));
  ASSERT_TRUE(c.ok());
  const ComparedJob& j = find(*c, "m0", "f32");
  ASSERT_TRUE(j.p_value && j.p_holm);
  EXPECT_LT(*j.p_value, 0.05);      // alone, it would be significant
  EXPECT_GT(*j.p_holm, 0.05);       // among 20, it is not
  EXPECT_EQ(j.verdict, LatencyVerdict::kSame);
  EXPECT_FALSE(j.regression);
}

TEST(Compare, PassToFailIsARegressionWithoutAnyLatency) {
  auto base = side("a", {row("1", "m", "f32", "pass", {}), row("2", "m", "q8_0", "fail", {}),
                         row("3", "m", "q4_0", "pass", {}), row("4", "m", "q2_k", "pass", {})});
  auto fresh = side("b", {row("5", "m", "f32", "crash", {}), row("6", "m", "q8_0", "pass", {}),
                          row("7", "m", "q4_0", "unsupported", {}), row("8", "m", "q2_k", "degraded", {})});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->regression);
  EXPECT_EQ(find(*c, "m", "f32").status_change, StatusChange::kBroke);
  EXPECT_TRUE(find(*c, "m", "f32").regression);
  EXPECT_EQ(find(*c, "m", "q8_0").status_change, StatusChange::kFixed);
  EXPECT_EQ(find(*c, "m", "q4_0").status_change, StatusChange::kNewUnsupported);
  EXPECT_FALSE(find(*c, "m", "q4_0").regression);
  EXPECT_EQ(find(*c, "m", "q2_k").status_change, StatusChange::kChanged);
  EXPECT_EQ(find(*c, "m", "f32").verdict, LatencyVerdict::kNotCompared);
  EXPECT_EQ(c->summary.broke, 1);
  EXPECT_EQ(c->summary.fixed, 1);
  EXPECT_EQ(c->summary.new_unsupported, 1);

  // Only the unsupported change: not a regression.
  auto only_unsupported = compare_runs(side("a", {row("3", "m", "q4_0", "pass", {})}),
                                       side("b", {row("7", "m", "q4_0", "unsupported", {})}), gate(10));
  ASSERT_TRUE(only_unsupported.ok());
  EXPECT_FALSE(only_unsupported->regression);
}

TEST(Compare, MatchesByKeyNotByJobIdAndReportsNewAndMissingJobs) {
  // New run in another order, with a different thread count (not part of the key), one job
  // dropped, one added, and another hardware class that matches nothing.
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 30, 1), 32),
                         row("2", "m", "f32", "pass", samples(20, 30, 2), 128),
                         row("3", "m", "q8_0", "pass", samples(5, 30, 3), 32)});
  auto fresh = side("b", {row("x", "m", "f32", "pass", samples(20, 30, 4), 128, "hc-1", 1),
                          row("y", "m", "f32", "pass", samples(10, 30, 5), 32, "hc-1", 1),
                          row("z", "m", "q4_0", "pass", samples(5, 30, 6), 32),
                          row("w", "m", "q8_0", "pass", samples(5, 30, 7), 32, "hc-2")});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->summary.matched, 2);
  EXPECT_EQ(c->summary.missing_jobs, 1);
  EXPECT_EQ(c->summary.new_jobs, 2);
  ASSERT_EQ(c->jobs.size(), 5u);
  EXPECT_EQ(c->jobs[0].base->job_id, "1");
  EXPECT_EQ(c->jobs[0].fresh->job_id, "y");
  EXPECT_EQ(c->jobs[1].base->job_id, "2");
  EXPECT_EQ(c->jobs[1].fresh->job_id, "x");
  ASSERT_EQ(c->jobs[0].spec_changes.size(), 1u);
  EXPECT_EQ(c->jobs[0].spec_changes[0].field, "threads");
  EXPECT_EQ(c->jobs[0].spec_changes[0].base, 0);
  EXPECT_EQ(c->jobs[0].spec_changes[0].fresh, 1);
  EXPECT_EQ(c->jobs[2].status_change, StatusChange::kMissingJob);
  EXPECT_EQ(c->jobs[3].status_change, StatusChange::kNewJob);
  EXPECT_EQ(c->jobs[4].status_change, StatusChange::kNewJob);
  EXPECT_EQ(c->jobs[4].key.hardware_class, "hc-2");
  EXPECT_FALSE(c->regression);   // new and missing jobs are findings, not regressions
}

TEST(Compare, DuplicateKeysPairInJobOrder) {
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 30, 1)),
                         row("2", "m", "f32", "pass", samples(20, 30, 2))});
  auto fresh = side("b", {row("3", "m", "f32", "pass", samples(10, 30, 3)),
                          row("4", "m", "f32", "pass", samples(20, 30, 4))});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->jobs.size(), 2u);
  EXPECT_EQ(c->jobs[1].occurrence, 1);
  EXPECT_EQ(c->jobs[1].fresh->job_id, "4");
  EXPECT_FALSE(c->regression);
}

TEST(Compare, TooFewOrUnusableSamplesAreNotCompared) {
  auto base = side("a", {row("1", "m", "f32", "pass", {10, 11, 12}),
                         row("2", "m", "q8_0", "pass", samples(5, 30, 1))});
  ReportRow bad = row("4", "m", "q8_0", "pass", {});
  bad.metrics["latency_ms"] = {{"samples", {5.0, "x", 6.0}}};
  auto fresh = side("b", {row("3", "m", "f32", "pass", {30, 31, 32}), bad});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  const ComparedJob& few = find(*c, "m", "f32");
  EXPECT_EQ(few.verdict, LatencyVerdict::kNotCompared);
  EXPECT_NE(few.latency_note.find("too few samples"), std::string::npos) << few.latency_note;
  ASSERT_TRUE(few.ratio);
  EXPECT_NEAR(*few.ratio, 31.0 / 11.0, 1e-12);   // shown, but not a verdict
  const ComparedJob& junk = find(*c, "m", "q8_0");
  EXPECT_EQ(junk.verdict, LatencyVerdict::kNotCompared);
  EXPECT_NE(junk.latency_note.find("not a number"), std::string::npos) << junk.latency_note;
  EXPECT_FALSE(c->regression);
  EXPECT_EQ(c->summary.compared, 0);
}

TEST(Compare, AnEditedSpecDoesNotThrowOrOverflow) {
  ReportRow b = row("1", "m", "f32", "pass", samples(10, 30, 1));
  ReportRow n = row("2", "m", "f32", "pass", samples(10, 30, 2));
  b.spec["batch"] = "eight";
  n.spec["batch"] = 1e300;
  b.spec["seq_len"] = int64_t{1} << 40;
  n.spec = nlohmann::json::array();
  auto c = compare_runs(side("a", {b}), side("b", {n}), gate(10));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->jobs.at(0).key.batch, 0);
  EXPECT_EQ(c->jobs.at(0).key.seq_len, 0);
  EXPECT_EQ(c->summary.matched, 1);   // both keys read as batch 0, seq_len 0
  EXPECT_TRUE(c->jobs.at(0).spec_changes.empty());   // a spec that is not an object is not diffed
}

TEST(Compare, RefusesBadOptions) {
  auto s = side("a", {});
  CompareOptions o;
  o.alpha = 0;
  EXPECT_EQ(compare_runs(s, s, o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.threshold_pct = -1;
  EXPECT_EQ(compare_runs(s, s, o).status().code(), StatusCode::kInvalidArgument);
  o.threshold_pct = std::nan("");
  EXPECT_EQ(compare_runs(s, s, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(Compare, JsonAndMarkdownCarryTheVerdict) {
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 60, 1)),
                         row("2", "m|x", "q8_0", "pass", {})});
  auto fresh = side("b", {row("3", "m", "f32", "pass", samples(13, 60, 3)),
                          row("4", "m|x", "q8_0", "fail", {})});
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  const nlohmann::json doc = render_compare_json(*c);
  EXPECT_EQ(doc["schema"], kCompareJsonSchema);
  EXPECT_EQ(doc["regression"], true);
  EXPECT_EQ(doc["gate"]["fail_on_regression_pct"], 10.0);
  EXPECT_EQ(doc["summary"]["slowdown_regressions"], 1);
  EXPECT_EQ(doc["summary"]["broke"], 1);
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][0]["latency"]["verdict"], "slower");
  EXPECT_EQ(doc["jobs"][0]["regression"], true);
  EXPECT_GT(doc["jobs"][0]["latency"]["ratio"].get<double>(), 1.2);
  EXPECT_EQ(doc["jobs"][0]["base"]["latency_samples"], 60);
  EXPECT_DOUBLE_EQ(doc["jobs"][0]["base"]["process_cpu_s"].get<double>(), 1.75);
  EXPECT_DOUBLE_EQ(doc["jobs"][0]["base"]["process_wall_s"].get<double>(), 2.0);
  EXPECT_EQ(doc["jobs"][0]["base"]["threads"], 2);
  EXPECT_EQ(doc["jobs"][1]["status_change"], "broke");
  EXPECT_TRUE(doc["jobs"][1]["latency"]["p_value"].is_null());

  const std::string md = render_compare_markdown(*c);
  EXPECT_NE(md.find("**Verdict: REGRESSION**"), std::string::npos) << md;
  EXPECT_NE(md.find("**slower: REGRESSION**"), std::string::npos);
  EXPECT_NE(md.find("**pass→fail: REGRESSION**"), std::string::npos);
  EXPECT_NE(md.find("m\\|x"), std::string::npos);   // a '|' in a name cannot break the table
  EXPECT_EQ(md.find("| m|x |"), std::string::npos);

  auto clean = compare_runs(base, base, gate(10));
  ASSERT_TRUE(clean.ok());
  EXPECT_NE(render_compare_markdown(*clean).find("**Verdict: no regression**"), std::string::npos);
}

// The text `compare --format json` writes (jobs one per line, no tree of every job) parses to
// render_compare_json's document, with jobs, without jobs, and with text that is not UTF-8.
TEST(Compare, TheJsonTextIsTheJsonDocument) {
  auto base = side("a", {row("1", "m", "f32", "pass", samples(10, 60, 1)),
                         row("2", "m|x", "q8_0", "pass", {}), row("5", "gone", "f16", "pass", {})});
  auto fresh = side("b", {row("3", "m", "f32", "pass", samples(13, 60, 3)),
                          row("4", "m|x", "q8_0", "fail", {}), row("6", "new\xff", "bf16", "pass", {})});
  fresh.rows[1].reason = "bad \xfe byte";
  auto c = compare_runs(base, fresh, gate(10));
  ASSERT_TRUE(c.ok());
  const std::string text = render_compare_json_text(*c);
  EXPECT_EQ(nlohmann::json::parse(text),
            nlohmann::json::parse(render_compare_json(*c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(nlohmann::json::parse(text)["jobs"].size(), 4u);   // matched 2, missing 1, new 1
  CompareSide empty_a = side("a", {});
  auto none = compare_runs(empty_a, empty_a, gate(10));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(nlohmann::json::parse(render_compare_json_text(*none)), render_compare_json(*none));
}

}  // namespace
}  // namespace am::coord
