// jobs::plan_hash: what makes two plans the same plan (issue 13 item 4; DECISIONS.md: the hash of
// the expanded job specs, not of the file's bytes).
#include <gtest/gtest.h>

#include "jobs/plan.h"

namespace am::jobs {
namespace {

PlannedJob job(const std::string& plan_name, int seq_len, Precision precision = Precision::kF32) {
  JobSpec spec;
  spec.model = "bert-tiny";
  spec.architecture = "encoder-only";
  spec.backend = "cpu";
  spec.precision = precision;
  spec.batch = 1;
  spec.seq_len = seq_len;
  spec.model_config = {{"layers", 2}, {"hidden", 128}};
  return {compute_job_id(plan_name, spec), spec, std::string()};
}

TEST(PlanHash, IsSixteenHexDigitsAndStable) {
  const std::string h = plan_hash({job("p", 16), job("p", 32)});
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
  EXPECT_EQ(plan_hash({job("p", 16), job("p", 32)}), h);
}

TEST(PlanHash, TheOrderOfTheJobsDoesNotMatter) {
  EXPECT_EQ(plan_hash({job("p", 16), job("p", 32)}), plan_hash({job("p", 32), job("p", 16)}));
}

TEST(PlanHash, AnyJobAddedRemovedOrChangedChangesIt) {
  const std::string base = plan_hash({job("p", 16), job("p", 32)});
  EXPECT_NE(plan_hash({job("p", 16)}), base);
  EXPECT_NE(plan_hash({job("p", 16), job("p", 32), job("p", 64)}), base);
  EXPECT_NE(plan_hash({job("p", 16), job("p", 32, Precision::kQ8_0)}), base);
  EXPECT_NE(plan_hash({}), base);
}

TEST(PlanHash, ARenamedPlanIsAnotherPlanBecauseItsJobIdsChange) {
  EXPECT_NE(plan_hash({job("p", 16)}), plan_hash({job("q", 16)}));
}

}  // namespace
}  // namespace am::jobs
