// jobs::plan_hash: what makes two plans the same plan (issue 13 item 4; DECISIONS.md: the hash of
// the expanded job specs, not of the file's bytes).
#include <algorithm>

#include <gtest/gtest.h>

#include "common/hash.h"
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

TEST(PlanHash, IsVersionedSixteenHexDigitsAndStable) {
  const std::string h = plan_hash({job("p", 16), job("p", 32)});
  ASSERT_EQ(h.size(), 19u) << h;
  EXPECT_EQ(h.substr(0, 3), "v2:");
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef", 3), std::string::npos) << h;
  EXPECT_EQ(plan_hash({job("p", 16), job("p", 32)}), h);
  EXPECT_FALSE(is_plan_hash_v1(h));
  EXPECT_TRUE(is_plan_hash_v1(plan_hash_v1({job("p", 16), job("p", 32)})));
  EXPECT_FALSE(is_plan_hash_v1(""));
  EXPECT_FALSE(is_plan_hash_v1("0123456789ABCDEF"));
}

// v2 hashes the sorted ids: the same as hashing them as strings (the first definition's order).
TEST(PlanHash, HashesTheSortedIdsWhateverTheyLookLike) {
  std::vector<PlannedJob> hex;
  for (int len : {16, 32, 48, 64}) hex.push_back(job("p", len));
  std::vector<std::string> ids;
  for (const PlannedJob& j : hex) ids.push_back(j.job_id);
  std::sort(ids.begin(), ids.end());
  uint64_t h = fnv1a64("accelmatrix plan v2\n");
  for (const std::string& id : ids) h = fnv1a64("\n", fnv1a64(id, h));
  EXPECT_EQ(plan_hash(hex), "v2:" + hex64(h));
  std::vector<PlannedJob> mixed = hex;   // an id that is not 16 lowercase hex digits: string order
  mixed[0].job_id = "A123456789abcdef";
  ids.clear();
  for (const PlannedJob& j : mixed) ids.push_back(j.job_id);
  std::sort(ids.begin(), ids.end());
  h = fnv1a64("accelmatrix plan v2\n");
  for (const std::string& id : ids) h = fnv1a64("\n", fnv1a64(id, h));
  EXPECT_EQ(plan_hash(mixed), "v2:" + hex64(h));
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

// The hash as first defined (schema 3): every "id spec" line made by dumping the spec, the lines
// sorted, hashed in turn. Runs stored before v2 carry hashes made this way, so plan_hash_v1()
// must not drift from it however it is computed.
std::string reference_plan_hash(const std::vector<PlannedJob>& jobs) {
  std::vector<std::string> lines;
  for (const PlannedJob& j : jobs) lines.push_back(j.job_id + " " + to_json(j.spec).dump());
  std::sort(lines.begin(), lines.end());
  uint64_t h = fnv1a64("accelmatrix plan v1\n");
  for (const std::string& line : lines) {
    h = fnv1a64(line, h);
    h = fnv1a64("\n", h);
  }
  return hex64(h);
}

TEST(PlanHash, EqualsTheFirstDefinitionOnEveryShippedPlan) {
  const std::filesystem::path source(ACCELMATRIX_SOURCE_DIR);
  int plans = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source / "jobs" / "plans")) {
    if (entry.path().extension() != ".toml") continue;
    auto plan = load_plan(entry.path(), source / "jobs" / "models");
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_EQ(plan_hash_v1(plan->jobs), reference_plan_hash(plan->jobs)) << entry.path().filename();
    ++plans;
  }
  EXPECT_GE(plans, 5);
}

// Plans make 16-lowercase-hex ids, which plan_hash_v1 sorts as numbers; any other id (upper case,
// another length, a duplicate with another spec) takes the string order, and both agree with the
// first definition. Upper-case digits sort before lower-case ones as strings but not as numbers.
TEST(PlanHash, EqualsTheFirstDefinitionWhateverTheIdsLookLike) {
  std::vector<PlannedJob> hex;
  for (int len : {16, 32, 48, 64, 96, 128}) hex.push_back(job("p", len));
  EXPECT_EQ(plan_hash_v1(hex), reference_plan_hash(hex));
  std::vector<PlannedJob> mixed = hex;
  mixed[0].job_id = "A123456789abcdef";
  mixed[1].job_id = "0123456789abcdef";
  mixed[2].job_id = "fedcba98";
  mixed[3].job_id = "0123456789abcdef";   // a duplicate id: the specs break the tie
  EXPECT_EQ(plan_hash_v1(mixed), reference_plan_hash(mixed));
  std::vector<PlannedJob> dup = hex;
  dup[4].job_id = dup[5].job_id;
  EXPECT_EQ(plan_hash_v1(dup), reference_plan_hash(dup));
  std::reverse(dup.begin(), dup.end());
  EXPECT_EQ(plan_hash_v1(dup), reference_plan_hash(dup));
}

}  // namespace
}  // namespace am::jobs
