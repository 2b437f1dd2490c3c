// selftest:nan and selftest:inf: a job whose output holds NaN or Inf values is judged by the
// inference core's own output check and ends as "fail" naming NaN/Inf (DESIGN §7: NaN/Inf
// anywhere fails the job).
#include <gtest/gtest.h>

#include "jobs/selftest_models.h"
#include "worker/selftest_job.h"

namespace am::worker {
namespace {

jobs::JobSpec spec(const std::string& model, const std::string& precision, int batch) {
  jobs::JobSpec s;
  s.model = model;
  s.architecture = std::string(jobs::kSelftestArchitecture);
  s.precision = *jobs::parse_precision(precision);
  s.batch = batch;
  return s;
}

TEST(SelftestNonfinite, NanOutputFailsThroughTheAccuracyCheck) {
  const SelftestEnd end = run_selftest_job(spec("selftest:nan", "f32", 3), 0);
  ASSERT_TRUE(end.outcome.has_value());
  EXPECT_EQ(end.outcome->status, ResultStatus::kFail);
  EXPECT_EQ(end.outcome->reason, "6 NaN/Inf values in the output");
  EXPECT_EQ(end.outcome->metrics.at("accuracy").at("nonfinite"), 6);
  EXPECT_EQ(end.outcome->metrics.at("selftest"), "selftest:nan");
}

TEST(SelftestNonfinite, InfOutputFailsAtEveryPrecision) {
  for (const char* precision : {"f32", "q8_0", "q4_0", "mixed"}) {
    const SelftestEnd end = run_selftest_job(spec("selftest:inf", precision, 1), 0);
    ASSERT_TRUE(end.outcome.has_value()) << precision;
    EXPECT_EQ(end.outcome->status, ResultStatus::kFail) << precision;
    EXPECT_NE(end.outcome->reason.find("NaN/Inf"), std::string::npos) << end.outcome->reason;
    EXPECT_EQ(end.outcome->metrics.at("accuracy").at("nonfinite"), 2) << precision;
  }
}

TEST(SelftestNonfinite, UnknownModeExitsWithCode2AndNoResult) {
  const SelftestEnd end = run_selftest_job(spec("selftest:foo", "f32", 1), 0);
  EXPECT_FALSE(end.outcome.has_value());
  EXPECT_EQ(end.exit_code, 2);
}

}  // namespace
}  // namespace am::worker
