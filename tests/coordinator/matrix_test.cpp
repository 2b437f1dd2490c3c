// Matrix assembly and rating rules, from results stored in a real SQLite file.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_markdown.h"
#include "coordinator/stored_json.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::precision_named;
using testing::status_named;
using testing::perf_metrics;

nlohmann::json latency_only(double median_ms) {
  return {{"latency_ms", {{"median", median_ms}, {"p90", median_ms * 1.25},
                          {"samples", testing::steady_samples(median_ms)}}}};
}

// A speed-up known exactly: its interval is the point.
SpeedupEstimate exact(double speedup) {
  SpeedupEstimate s;
  s.estimate = speedup;
  s.low = speedup;
  s.high = speedup;
  return s;
}

nlohmann::json accuracy_only(double nmse, double cosine, double top1) {
  return {{"accuracy", {{"nmse", nmse}, {"cosine", cosine}, {"top1_agreement", top1}}}};
}

class MatrixFromStore : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    std::mt19937 rng(4242);
    std::uniform_real_distribution<double> dist(2.0, 20.0);
    base_ms_ = dist(rng);
  }

  Matrix matrix() { return build_matrix(rows()); }

  double base_ms_ = 0;
};

TEST(Ratings, SpeedupThresholdsAreInclusiveLowerBounds) {
  EXPECT_EQ(rating_for_speedup(3.7), Rating::kExcellent);
  EXPECT_EQ(rating_for_speedup(2.0), Rating::kExcellent);
  EXPECT_EQ(rating_for_speedup(1.9999), Rating::kGood);
  EXPECT_EQ(rating_for_speedup(1.2), Rating::kGood);
  EXPECT_EQ(rating_for_speedup(1.1999), Rating::kModerate);
  EXPECT_EQ(rating_for_speedup(0.8), Rating::kModerate);
  EXPECT_EQ(rating_for_speedup(0.7999), Rating::kPoor);
  EXPECT_EQ(rating_for_speedup(0.01), Rating::kPoor);
}

TEST(Ratings, CellRatingFollowsStatusBeforeSpeed) {
  EXPECT_EQ(rate_cell(status_named("pass"), true, std::nullopt, false), Rating::kBaseline);
  EXPECT_EQ(rate_cell(status_named("degraded"), false, exact(2.5), true), Rating::kExcellent);
  EXPECT_EQ(rate_cell(status_named("pass"), false, std::nullopt, true), Rating::kNoBaseline);
  EXPECT_EQ(rate_cell(status_named("pass"), false, std::nullopt, false), Rating::kAccuracyOnly);
  for (const char* s : {"fail", "crash", "timeout", "oom", "error", "lost"}) {
    EXPECT_EQ(rate_cell(status_named(s), false, exact(3.0), true), Rating::kFailed) << s;
    EXPECT_EQ(rate_cell(status_named(s), true, std::nullopt, true), Rating::kFailed) << s;
  }
  EXPECT_EQ(rate_cell(status_named("unsupported"), false, std::nullopt, false), Rating::kUnsupported);
  EXPECT_EQ(rate_cell(status_named("skipped"), false, std::nullopt, false), Rating::kNotRun);
  EXPECT_EQ(rate_cell(status_named(""), false, std::nullopt, false), Rating::kNotRun);
  EXPECT_EQ(rating_label(Rating::kNoBaseline), "measured, no baseline");
  EXPECT_EQ(rating_label(Rating::kNotRun), "not run");
  EXPECT_EQ(rating_label(Rating::kFailed), "❌");
}

TEST(Ratings, SeverityOrdersCrashAboveFailAboveDegradedAbovePass) {
  EXPECT_GT(status_severity(status_named("crash")), status_severity(status_named("oom")));
  EXPECT_GT(status_severity(status_named("timeout")), status_severity(status_named("error")));
  EXPECT_GT(status_severity(status_named("lost")), status_severity(status_named("fail")));
  EXPECT_GT(status_severity(status_named("fail")), status_severity(status_named("unsupported")));
  EXPECT_GT(status_severity(status_named("unsupported")), status_severity(status_named("degraded")));
  EXPECT_GT(status_severity(status_named("degraded")), status_severity(status_named("pass")));
  EXPECT_GT(status_severity(status_named("pass")), status_severity(status_named("skipped")));
  EXPECT_GT(status_severity(status_named("skipped")), status_severity(status_named("")));
}

TEST_F(MatrixFromStore, CpuF32IsTheBaselineAndOthersAreRatedBySpeedup) {
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "",
          perf_metrics(base_ms_, base_ms_ * 1.1, 1000, 1e-12, 1.0, 1.0));
  const std::vector<std::pair<std::string, double>> factors = {
      {"f16", 2.5}, {"bf16", 1.5}, {"q8_0", 1.0}, {"q4_0", 0.5}};
  for (const auto& [precision, factor] : factors) {
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", precision), "pass", "",
            perf_metrics(base_ms_ / factor, base_ms_ / factor * 1.1, 1000, 1e-4, 0.999, 1.0));
  }
  const Matrix m = matrix();
  ASSERT_EQ(m.cells.size(), 5u);
  const MatrixCell* base = find_cell(m, "bert-tiny", "cpu", precision_named("f32"));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->rating, Rating::kBaseline);
  EXPECT_FALSE(base->speedup.has_value());
  EXPECT_DOUBLE_EQ(*base->median_ms, base_ms_);

  const std::vector<std::pair<std::string, Rating>> expected = {
      {"f16", Rating::kExcellent}, {"bf16", Rating::kGood}, {"q8_0", Rating::kModerate}, {"q4_0", Rating::kPoor}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const MatrixCell* cell = find_cell(m, "bert-tiny", "cpu", precision_named(expected[i].first));
    ASSERT_NE(cell, nullptr) << expected[i].first;
    EXPECT_EQ(cell->rating, expected[i].second) << expected[i].first;
    ASSERT_TRUE(cell->speedup.has_value());
    const double reference = base_ms_ / (base_ms_ / factors[i].second);
    EXPECT_NEAR(*cell->speedup, reference, 1e-12);
    EXPECT_DOUBLE_EQ(*cell->baseline_ms, base_ms_);
    EXPECT_EQ(cell->job_ids.size(), 1u);
  }
  // Plan order: f32 first, as the jobs were added.
  EXPECT_EQ(m.precisions, (std::vector<jobs::Precision>{jobs::Precision::kF32, jobs::Precision::kF16,
                                                        jobs::Precision::kBF16, jobs::Precision::kQ8_0,
                                                        jobs::Precision::kQ4_0}));
}

TEST_F(MatrixFromStore, FailedAndUnsupportedCellsAreCrossedWithTheirReason) {
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "", latency_only(base_ms_));
  const std::string unsupported = run_job(make_spec("bert-tiny", "encoder-only", "opencl", "q2_k"),
                                          "unsupported", "opencl lacks op matmul for format q2_k");
  run_job(make_spec("bert-tiny", "encoder-only", "opencl", "f16"), "crash", "killed by signal 11 (SIGSEGV)");
  run_job(make_spec("bert-tiny", "encoder-only", "vulkan", "f16"), "timeout", "exceeded 120 s");
  const Matrix m = matrix();
  const MatrixCell* u = find_cell(m, "bert-tiny", "opencl", precision_named("q2_k"));
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->rating, Rating::kUnsupported);
  EXPECT_EQ(u->status, *status_named("unsupported"));
  EXPECT_EQ(u->reason, "opencl lacks op matmul for format q2_k");
  EXPECT_EQ(u->job_ids, std::vector<std::string>{unsupported});
  const MatrixCell* c = find_cell(m, "bert-tiny", "opencl", precision_named("f16"));
  EXPECT_EQ(c->rating, Rating::kFailed);
  EXPECT_EQ(c->reason, "killed by signal 11 (SIGSEGV)");
  EXPECT_EQ(find_cell(m, "bert-tiny", "vulkan", precision_named("f16"))->rating, Rating::kFailed);
}

TEST_F(MatrixFromStore, NothingMeasuredIsNotRun) {
  add(make_spec("bert-tiny", "encoder-only", "vulkan", "f32"));   // still queued
  const std::string skipped = add(make_spec("bert-tiny", "encoder-only", "cuda", "f16"));
  ASSERT_TRUE(store_->set_job_terminal(kRun, skipped, *status_named("skipped"), "no eligible hardware", kT0).ok());
  const Matrix m = matrix();
  const MatrixCell* pending = find_cell(m, "bert-tiny", "vulkan", precision_named("f32"));
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->rating, Rating::kPending);   // queued: not run *yet*
  EXPECT_EQ(pending->status, std::nullopt);
  EXPECT_EQ(pending->reason, "pending");
  EXPECT_EQ(pending->pending, 1);
  const MatrixCell* sk = find_cell(m, "bert-tiny", "cuda", precision_named("f16"));
  EXPECT_EQ(sk->rating, Rating::kNotRun);
  EXPECT_EQ(sk->reason, "no eligible hardware");
  EXPECT_EQ(find_overview(m, "encoder-only", "cuda")->support, "not run");
  EXPECT_EQ(find_overview(m, "encoder-only", "vulkan")->support, "pending");
}

TEST_F(MatrixFromStore, WithoutAMeasuredBaselineNoSpeedupIsClaimed) {
  // whisper: cpu f32 ran in accuracy mode only (no latency); deit: cpu f32 failed.
  run_job(make_spec("whisper-tiny", "speech", "cpu", "f32"), "pass", "", accuracy_only(0, 1, 1));
  run_job(make_spec("whisper-tiny", "speech", "opencl", "f16"), "pass", "", latency_only(3.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "f32"), "fail", "NaN in output", latency_only(5.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "q8_0"), "pass", "", latency_only(2.0));
  run_job(make_spec("clap", "multimodal", "opencl", "f16"), "pass", "", latency_only(1.0));
  const Matrix m = matrix();
  const MatrixCell* whisper_base = find_cell(m, "whisper-tiny", "cpu", precision_named("f32"));
  EXPECT_EQ(whisper_base->rating, Rating::kBaseline);
  EXPECT_FALSE(whisper_base->median_ms.has_value());
  for (auto [model, backend, precision] : {std::tuple{"whisper-tiny", "opencl", "f16"},
                                           std::tuple{"deit-tiny", "cpu", "q8_0"},
                                           std::tuple{"clap", "opencl", "f16"}}) {
    const MatrixCell* cell = find_cell(m, model, backend, precision_named(precision));
    ASSERT_NE(cell, nullptr) << model;
    EXPECT_EQ(cell->rating, Rating::kNoBaseline) << model;
    EXPECT_FALSE(cell->speedup.has_value()) << model;
    EXPECT_TRUE(cell->median_ms.has_value()) << model;
  }
  EXPECT_EQ(find_cell(m, "deit-tiny", "cpu", precision_named("f32"))->rating, Rating::kFailed);
}

TEST_F(MatrixFromStore, CellStatusIsTheMostSevereOfItsJobs) {
  run_job(make_spec("deit-tiny", "vision", "cpu", "f32", 1, 16), "pass", "", latency_only(4.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "f32", 1, 32), "pass", "", latency_only(8.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "q4_0", 1, 16), "pass", "", latency_only(2.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "q4_0", 1, 32), "fail", "nmse 0.2 > 0.05", latency_only(3.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "f16", 1, 16), "pass", "", latency_only(2.0));
  run_job(make_spec("deit-tiny", "vision", "cpu", "f16", 1, 32), "degraded", "cosine 0.97", latency_only(4.0));
  const Matrix m = matrix();
  const MatrixCell* q4 = find_cell(m, "deit-tiny", "cpu", precision_named("q4_0"));
  EXPECT_EQ(q4->status, *status_named("fail"));
  EXPECT_EQ(q4->reason, "nmse 0.2 > 0.05");
  EXPECT_EQ(q4->status_counts.at(*status_named("pass")), 1);
  EXPECT_EQ(q4->status_counts.at(*status_named("fail")), 1);
  EXPECT_EQ(q4->rating, Rating::kFailed);
  const MatrixCell* f16 = find_cell(m, "deit-tiny", "cpu", precision_named("f16"));
  EXPECT_EQ(f16->status, *status_named("degraded"));
  EXPECT_EQ(f16->rating, Rating::kExcellent);   // 4.0 / 2.0 at the smallest shape
  EXPECT_DOUBLE_EQ(*f16->speedup, 2.0);
  ASSERT_EQ(f16->shapes.size(), 2u);
  EXPECT_DOUBLE_EQ(*f16->shapes[1].speedup, 2.0);
  const OverviewCell* o = find_overview(m, "vision", "cpu");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cells, 3);
  EXPECT_EQ(o->working, 2);
  EXPECT_EQ(o->degraded, 1);
  EXPECT_EQ(o->failed, 1);
  EXPECT_EQ(o->support, "partial");
  EXPECT_EQ(o->best_precision, jobs::Precision::kF16);
  EXPECT_DOUBLE_EQ(*o->best_speedup, 2.0);
}

TEST_F(MatrixFromStore, ACellWithJobsStillOutIsPendingNotRatedUnlessItFailedAlready) {
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 16), "pass", "", latency_only(base_ms_));
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 32), "pass", "", latency_only(2 * base_ms_));
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 1, 32), "pass", "", latency_only(base_ms_));
  lease(add(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 1, 16)), 1);   // the smaller shape, still out
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0", 1, 32), "fail", "nmse 0.2", latency_only(base_ms_));
  lease(add(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0", 1, 16)), 1);
  Matrix m = matrix();
  const MatrixCell* q8 = find_cell(m, "bert-tiny", "cpu", precision_named("q8_0"));
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ(q8->rating, Rating::kPending);
  EXPECT_EQ(q8->pending, 1);
  EXPECT_EQ(q8->status, *status_named("pass"));       // what finished, kept for the notes
  EXPECT_EQ(find_cell(m, "bert-tiny", "cpu", precision_named("q4_0"))->rating, Rating::kFailed);
  const OverviewCell* o = find_overview(m, "encoder-only", "cpu");
  EXPECT_EQ(o->pending, 1);
  EXPECT_EQ(o->working, 1);   // the baseline; the pending cell is not counted as working
  EXPECT_EQ(o->failed, 1);
  EXPECT_EQ(o->support, "partial");

  // Once the last job ends the cell is rated at its smallest shape.
  for (const auto& row : rows()) {
    if (row.status || row.spec.at("precision") != "q8_0") continue;
    store_one(result(row.job_id, 1, "pass", "", latency_only(base_ms_ / 4)));
  }
  m = matrix();
  q8 = find_cell(m, "bert-tiny", "cpu", precision_named("q8_0"));
  EXPECT_EQ(q8->rating, Rating::kExcellent);
  EXPECT_EQ(q8->rep_seq_len, 16);
  EXPECT_EQ(find_overview(m, "encoder-only", "cpu")->pending, 0);
}

TEST_F(MatrixFromStore, AnUnpairedCellWaitsForItsBaselinesJobsStillOut) {
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 32), "pass", "", latency_only(2 * base_ms_));
  lease(add(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 16)), 1);   // the smaller shape, still out
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 1, 16), "pass", "", latency_only(base_ms_ / 2));
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 1, 32), "pass", "", latency_only(base_ms_));
  const Matrix m = matrix();
  const MatrixCell* q8 = find_cell(m, "bert-tiny", "cpu", precision_named("q8_0"));
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ(q8->pending, 0);
  EXPECT_EQ(q8->rating, Rating::kPending);   // rated at s32 now, at s16 once the baseline's s16 ends
}

TEST_F(MatrixFromStore, SameShapeJobsCombineByMedianAndTheSmallestSharedShapeRepresents) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> dist(1.0, 9.0);
  const double a = dist(rng), b = dist(rng), c = dist(rng), big = dist(rng) * 4, q = dist(rng);
  run_job(make_spec("qwen2-0.5b", "decoder-only", "cpu", "f32", 1, 16, 1), "pass", "", latency_only(a));
  run_job(make_spec("qwen2-0.5b", "decoder-only", "cpu", "f32", 1, 16, 2), "pass", "", latency_only(b));
  run_job(make_spec("qwen2-0.5b", "decoder-only", "cpu", "f32", 1, 16, 3), "pass", "", latency_only(c));
  run_job(make_spec("qwen2-0.5b", "decoder-only", "cpu", "f32", 1, 64, 1), "pass", "", latency_only(big));
  // q8_0 measured only the long shape: that is where it is compared.
  run_job(make_spec("qwen2-0.5b", "decoder-only", "cpu", "q8_0", 1, 64, 1), "pass", "", latency_only(q));
  const Matrix m = matrix();
  const MatrixCell* base = find_cell(m, "qwen2-0.5b", "cpu", precision_named("f32"));
  ASSERT_EQ(base->shapes.size(), 2u);
  std::vector<double> three = {a, b, c};
  std::sort(three.begin(), three.end());
  EXPECT_DOUBLE_EQ(base->shapes[0].median_ms, three[1]);
  EXPECT_EQ(*base->rep_seq_len, 16);
  EXPECT_DOUBLE_EQ(*base->median_ms, three[1]);
  EXPECT_EQ(base->job_ids.size(), 4u);
  const MatrixCell* q8 = find_cell(m, "qwen2-0.5b", "cpu", precision_named("q8_0"));
  EXPECT_EQ(*q8->rep_batch, 1);
  EXPECT_EQ(*q8->rep_seq_len, 64);
  EXPECT_DOUBLE_EQ(*q8->median_ms, q);
  EXPECT_DOUBLE_EQ(*q8->baseline_ms, big);
  EXPECT_DOUBLE_EQ(*q8->speedup, big / q);
  EXPECT_EQ(q8->rating, rating_for_speedup(big / q));
}

TEST_F(MatrixFromStore, AccuracyIsTheWorstOverTheCell) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> nmse(1e-6, 1e-2);
  std::uniform_real_distribution<double> cosine(0.95, 1.0);
  double worst_nmse = 0, worst_cos = 1, worst_top1 = 1;
  for (int seq : {8, 16, 32, 64}) {
    const double n = nmse(rng), cs = cosine(rng), t = cosine(rng);
    worst_nmse = std::max(worst_nmse, n);
    worst_cos = std::min(worst_cos, cs);
    worst_top1 = std::min(worst_top1, t);
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q4_1", 1, seq), "pass", "", accuracy_only(n, cs, t));
  }
  const Matrix m = matrix();
  const MatrixCell* cell = find_cell(m, "bert-tiny", "cpu", precision_named("q4_1"));
  EXPECT_DOUBLE_EQ(*cell->nmse_max, worst_nmse);
  EXPECT_DOUBLE_EQ(*cell->cosine_min, worst_cos);
  EXPECT_DOUBLE_EQ(*cell->top1_min, worst_top1);
  EXPECT_EQ(cell->rating, Rating::kAccuracyOnly);
  EXPECT_EQ(find_overview(m, "encoder-only", "cpu")->support, "full");
}

TEST_F(MatrixFromStore, OverviewSaysNoneWhenNothingWorks) {
  run_job(make_spec("mamba-130m", "state-space", "opencl", "f32"), "unsupported", "opencl lacks op selective_scan");
  run_job(make_spec("mamba-130m", "state-space", "opencl", "f16"), "error", "exit code 3");
  const Matrix m = matrix();
  const OverviewCell* o = find_overview(m, "state-space", "opencl");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->support, "none");
  EXPECT_EQ(o->unsupported, 1);
  EXPECT_EQ(o->failed, 1);
  EXPECT_EQ(o->working, 0);
  EXPECT_TRUE(o->working_precisions.empty());
}

// Issue 11 item 3: the matrix's columns are hardware classes. Two boxes of different classes
// each get their own cells, and each cell's speed-up is taken against the cpu f32 cell of the
// host it ran on — a q8_0 cell on box B against B's f32, an OpenCL cell against its own box's CPU.
TEST_F(MatrixFromStore, ColumnsAreHardwareClassesAndBaselinesComeFromTheSameHost) {
  auto run_on = [&](const char* backend, const char* precision, const std::string& worker, const std::string& cls,
                    double ms) {
    const std::string id = add(make_spec("bert-tiny", "encoder-only", backend, precision, 1, 32, 1234 + static_cast<uint64_t>(ms * 10)));
    lease(id, 1, worker, cls);
    store_one(result(id, 1, "pass", "", latency_only(ms), worker));
  };
  run_on("cpu", "f32", "worker-a", "cpu-aaaa", 10.0);
  run_on("cpu", "f32", "worker-b", "cpu-bbbb", 20.0);
  run_on("cpu", "q8_0", "worker-b", "cpu-bbbb", 10.0);
  run_on("opencl", "f32", "worker-a", "opencl-pppp", 5.0);
  const Matrix m = matrix();
  ASSERT_EQ(m.columns.size(), 3u);
  EXPECT_EQ(m.columns[0], (MatrixColumn{"cpu", "cpu-aaaa"}));
  EXPECT_EQ(m.columns[1], (MatrixColumn{"cpu", "cpu-bbbb"}));
  EXPECT_EQ(m.columns[2], (MatrixColumn{"opencl", "opencl-pppp"}));
  const MatrixCell* a_f32 = find_cell(m, "bert-tiny", MatrixColumn{"cpu", "cpu-aaaa"}, precision_named("f32"));
  const MatrixCell* b_f32 = find_cell(m, "bert-tiny", MatrixColumn{"cpu", "cpu-bbbb"}, precision_named("f32"));
  const MatrixCell* b_q8 = find_cell(m, "bert-tiny", MatrixColumn{"cpu", "cpu-bbbb"}, precision_named("q8_0"));
  const MatrixCell* ocl = find_cell(m, "bert-tiny", MatrixColumn{"opencl", "opencl-pppp"}, precision_named("f32"));
  ASSERT_TRUE(a_f32 && b_f32 && b_q8 && ocl);
  EXPECT_EQ(a_f32->rating, Rating::kBaseline);
  EXPECT_EQ(b_f32->rating, Rating::kBaseline);
  ASSERT_TRUE(b_q8->speedup);
  EXPECT_DOUBLE_EQ(*b_q8->speedup, 2.0) << "against box B's f32 (20 ms), not box A's (10 ms)";
  EXPECT_EQ(b_q8->baseline_class, "cpu-bbbb");
  ASSERT_TRUE(ocl->speedup);
  EXPECT_DOUBLE_EQ(*ocl->speedup, 2.0) << "against the CPU of the box it ran on";
  EXPECT_EQ(ocl->baseline_class, "cpu-aaaa");
  // The overview has a cell per architecture × column.
  EXPECT_TRUE(find_overview(m, "encoder-only", MatrixColumn{"cpu", "cpu-bbbb"}));
  EXPECT_TRUE(find_overview(m, "encoder-only", MatrixColumn{"opencl", "opencl-pppp"}));
  EXPECT_EQ(m.overview.size(), 3u);
}

// Hand-edited rows (anyone who can write the database file): samples of a few denormal
// milliseconds overflowed the speed-up to infinity, and the NaN interval fell through to "Poor".
TEST_F(MatrixFromStore, ASpeedUpThatOverflowsBacksNoBand) {
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "", latency_only(base_ms_));
  const double tiny = 5e-324;
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"), "pass", "",
          {{"latency_ms", {{"median", tiny}, {"samples", std::vector<double>(8, tiny)}}}});
  const Matrix m = matrix();
  const MatrixCell* cell = find_cell(m, "bert-tiny", "cpu", precision_named("q8_0"));
  ASSERT_NE(cell, nullptr);
  EXPECT_EQ(cell->rating, Rating::kNoBaseline);
  EXPECT_FALSE(cell->speedup.has_value());
  EXPECT_FALSE(cell->speedup_interval.has_value());
  // The baseline was there: the report says the ratio is unusable, not that it is missing.
  EXPECT_TRUE(cell->baseline_ms.has_value());
  const std::string md = render_markdown(run_record(), rows());
  EXPECT_NE(md.find("the speed-up over the cpu f32 latency is no finite number"), std::string::npos) << md;
  EXPECT_EQ(md.find("no cpu f32 latency for this shape"), std::string::npos) << md;
  // And the interval alone non-finite (finite medians): no band either.
  SpeedupEstimate nan_interval = exact(1.5);
  nan_interval.low = std::nan("");
  EXPECT_EQ(rating_for_interval(*nan_interval.low, *nan_interval.high), Rating::kNoisy);
}

// A paired-baseline record is the cpu f32 baseline only when it says so: one claiming another
// backend or precision backed a "vs cpu f32 … timed alongside" speed-up.
TEST_F(MatrixFromStore, APairedRecordOfAnotherBackendOrPrecisionIsNoBaseline) {
  // One model per record (no cpu f32 cell of any of them: only the record could back a speed-up).
  const std::vector<std::tuple<std::string, std::string, std::string, bool>> cases = {
      {"bert-a", "vulkan", "f32", false}, {"bert-b", "cpu", "q2_k", false}, {"bert-c", "cpu", "f32", true}};
  for (const auto& [model, backend, precision, backs] : cases) {
    nlohmann::json m = latency_only(base_ms_ / 2);
    m["paired_baseline"] = {{"backend", backend}, {"precision", precision}, {"blocks", 4},
                            {"latency_ms", {{"median", base_ms_}, {"samples", testing::steady_samples(base_ms_)}}}};
    run_job(make_spec(model, "encoder-only", "cpu", "q8_0"), "pass", "", m);
  }
  const Matrix m = matrix();
  for (const auto& [model, backend, precision, backs] : cases) {
    const MatrixCell* cell = find_cell(m, model, "cpu", precision_named("q8_0"));
    ASSERT_NE(cell, nullptr) << model;
    EXPECT_EQ(cell->speedup_paired, backs) << backend << " " << precision;
    EXPECT_EQ(cell->rating, backs ? Rating::kExcellent : Rating::kNoBaseline) << backend << " " << precision;
  }
}

// Metrics that are JSON but not an object, or that hold an array far longer than any the
// coordinator stores, are reported as corrupt (a warning and the job's reason), not dropped in
// silence or decoded into gigabytes.
TEST_F(MatrixFromStore, MetricsThatAreNoObjectOrHoldAHugeArrayAreNamedCorrupt) {
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "", nlohmann::json::array({1, 2, 3}));
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"), "pass", "",
          {{"latency_ms", {{"median", 1.0}, {"samples", std::vector<double>(kMaxStoredArrayElements + 1, 1.0)}}}});
  const std::vector<ReportRow> got = rows();
  ASSERT_EQ(got.size(), 2u);
  for (const ReportRow& r : got) {
    EXPECT_NE(r.reason.find("corrupt metrics"), std::string::npos) << r.reason;
    EXPECT_TRUE(r.metrics.is_object() && r.metrics.empty()) << r.metrics.dump().substr(0, 200);
  }
  const bool array_named = got[0].reason.find("a JSON array, not an object") != std::string::npos ||
                           got[1].reason.find("a JSON array, not an object") != std::string::npos;
  EXPECT_TRUE(array_named) << got[0].reason << " / " << got[1].reason;
  const bool size_named = got[0].reason.find("an array of 65537 elements") != std::string::npos ||
                          got[1].reason.find("an array of 65537 elements") != std::string::npos;
  EXPECT_TRUE(size_named) << got[0].reason << " / " << got[1].reason;
}

}  // namespace
}  // namespace am::coord
