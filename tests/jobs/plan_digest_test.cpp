// jobs/plan_digest.h: the digest of what a plan expands from, which lets a restart skip the
// expansion (Server::resume). Every input that can change the expansion changes it; what the
// expansion never reads does not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "jobs/plan.h"
#include "jobs/plan_digest.h"
#include "tests/jobs/temp_dir.h"

namespace am::jobs {
namespace {

using testing::TempDir;

constexpr const char* kPlan = "[plan]\nname = \"digest\"\n\n[[models]]\nname = \"tiny\"\n";
constexpr const char* kModel = "name = \"tiny\"\narchitecture = \"encoder-only\"\n[config]\nlayers = 2\n";

std::string digest_of(std::string_view plan, const std::filesystem::path& catalog, std::string_view build = "b1") {
  auto d = plan_inputs_digest(plan, catalog, build);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : std::string();
}

TEST(PlanDigest, TheSameInputsGiveTheSameDigestOfThirtyTwoHexDigits) {
  TempDir dir;
  dir.write("models/tiny.toml", kModel);
  const std::string d = digest_of(kPlan, dir.path() / "models");
  EXPECT_EQ(d.size(), 3u + 32u);
  EXPECT_TRUE(d.starts_with("d1:"));
  EXPECT_EQ(d.find_first_not_of("0123456789abcdef", 3), std::string::npos) << d;
  EXPECT_EQ(digest_of(kPlan, dir.path() / "models"), d);
}

TEST(PlanDigest, AnyByteOfThePlanACatalogFileOrTheBuildChangesIt) {
  TempDir dir;
  const auto models = dir.path() / "models";
  dir.write("models/tiny.toml", kModel);
  const std::string base = digest_of(kPlan, models);
  EXPECT_NE(digest_of(std::string(kPlan) + "\n", models), base);                 // a plan byte
  EXPECT_NE(digest_of(kPlan, models, "b2"), base);                               // another build
  dir.write("models/tiny.toml", std::string(kModel) + "# a comment\n");         // a catalog byte
  const std::string edited = digest_of(kPlan, models);
  EXPECT_NE(edited, base);
  dir.write("models/other.toml", kModel);                                        // a file added
  const std::string added = digest_of(kPlan, models);
  EXPECT_NE(added, edited);
  std::filesystem::rename(models / "other.toml", models / "renamed.toml");      // renamed
  EXPECT_NE(digest_of(kPlan, models), added);
  std::filesystem::remove(models / "renamed.toml");                              // removed
  EXPECT_EQ(digest_of(kPlan, models), edited);
  // What the expansion never reads: a file that is no model of the catalog.
  dir.write("models/README.md", "notes");
  EXPECT_EQ(digest_of(kPlan, models), edited);
}

TEST(PlanDigest, PartsDoNotRunIntoEachOther) {
  // The same bytes split differently between the plan and the build id are other inputs.
  TempDir dir;
  EXPECT_NE(digest_of("ab", dir.path() / "none", "x"), digest_of("b", dir.path() / "none", "xa"));
}

TEST(PlanDigest, NoBuildIdMeansNoDigestAndAMissingCatalogCountsAsEmpty) {
  TempDir dir;
  auto none = plan_inputs_digest(kPlan, dir.path(), "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("build id"), std::string::npos);
  const std::string missing = digest_of(kPlan, dir.path() / "no-such-dir");
  std::filesystem::create_directories(dir.path() / "empty");
  EXPECT_NE(digest_of(kPlan, dir.path() / "empty"), missing);   // created later: another digest
}

TEST(PlanSummary, ReadsThePlanTableWithoutExpandingAndRefusesWhatTheLoadRefuses) {
  auto s = load_plan_summary_text(
      "[plan]\nname = \"nightly\"\ndescription = \"all of it\"\ntime_budget_s = 90\n\n[[models]]\nname = \"nope\"\n",
      "n.toml");
  ASSERT_TRUE(s.ok()) << s.status().message();   // the unknown model is the expansion's business
  EXPECT_EQ(s->name, "nightly");
  EXPECT_EQ(s->description, "all of it");
  EXPECT_EQ(s->time_budget_s, 90);
  EXPECT_EQ(s->source, "n.toml");
  EXPECT_FALSE(load_plan_summary_text("[plan]\nname = \"bad name!\"\n", "b.toml").ok());
  EXPECT_FALSE(load_plan_summary_text("[defaults]\n", "b.toml").ok());
  EXPECT_FALSE(load_plan_summary_text("[plan\n", "b.toml").ok());
}

}  // namespace
}  // namespace am::jobs
