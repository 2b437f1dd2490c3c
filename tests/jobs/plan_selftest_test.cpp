// Plans may name the diagnostic "selftest:<mode>" models (jobs/selftest_models.h): they expand
// like catalog models, an unknown mode is an error naming the known ones, and no shipped plan
// runs them.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "jobs/plan.h"
#include "jobs/selftest_models.h"
#include "temp_dir.h"

namespace am::jobs {
namespace {

using testing::TempDir;

class SelftestPlan : public ::testing::Test {
 protected:
  // An empty catalog: selftest models must not need one.
  void SetUp() override { dir_.write("models/.keep", ""); }
  Result<Plan> load(const std::string& text) {
    file_ = dir_.write("plans/diag.toml", text);
    return load_plan(file_, dir_.path() / "models");
  }
  TempDir dir_;
  std::filesystem::path file_;
};

TEST_F(SelftestPlan, DiagnosticModelsExpandLikeCatalogModelsWithoutACatalogFile) {
  auto plan = load(R"([plan]
name = "diag"
mode = "accuracy"
[defaults]
backends = ["cpu"]
precisions = ["f32", "q8_0"]
batch = [2]
timeout_s = 30
[[models]]
name = "selftest:nan"
[[models]]
name = "selftest:segv"
precisions = ["f32"]
)");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->jobs.size(), 3u);
  std::set<std::string> models;
  for (const PlannedJob& job : plan->jobs) {
    models.insert(job.spec.model);
    EXPECT_EQ(job.spec.architecture, kSelftestArchitecture);
    EXPECT_TRUE(job.spec.model_config.empty());
    EXPECT_EQ(job.spec.batch, 2);
    EXPECT_EQ(job.spec.mode, "accuracy");
    EXPECT_DOUBLE_EQ(job.spec.timeout_s, 30.0);
    EXPECT_EQ(job.job_id.size(), 16u);
  }
  EXPECT_EQ(models, (std::set<std::string>{"selftest:nan", "selftest:segv"}));
}

TEST_F(SelftestPlan, EveryKnownModeIsAccepted) {
  std::string text = "[plan]\nname = \"all\"\n";
  for (const SelftestMode& m : selftest_modes()) {
    text += "[[models]]\nname = \"selftest:" + std::string(m.name) + "\"\n";
    EXPECT_FALSE(m.description.empty()) << m.name;
  }
  auto plan = load(text);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_GE(plan->jobs.size(), selftest_modes().size());
}

TEST_F(SelftestPlan, UnknownModeIsAnErrorAtItsLineNamingTheKnownModes) {
  auto plan = load("[plan]\nname = \"x\"\n[[models]]\nname = \"selftest:foo\"\n");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = plan.status().message();
  EXPECT_NE(msg.find(file_.string() + ":4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown diagnostic model 'selftest:foo'"), std::string::npos) << msg;
  for (const char* mode : {"pass", "fail", "nan", "inf", "segv", "hang", "alloc"}) {
    EXPECT_NE(msg.find(mode), std::string::npos) << mode << " missing from: " << msg;
  }
}

TEST_F(SelftestPlan, OverridesOnADiagnosticModelAreAnError) {
  auto plan = load("[plan]\nname = \"x\"\n[[models]]\nname = \"selftest:pass\"\noverrides = { layers = 1 }\n");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("takes no overrides"), std::string::npos) << plan.status().message();
}

TEST(SelftestModels, StayOutOfTheShippedPlans) {
  for (const auto& entry : std::filesystem::directory_iterator(default_plans_dir())) {
    if (entry.path().extension() != ".toml") continue;
    auto plan = load_plan(entry.path());
    ASSERT_TRUE(plan.ok()) << entry.path() << ": " << plan.status().to_string();
    for (const PlannedJob& job : plan->jobs) {
      EXPECT_FALSE(is_selftest_model(job.spec.model)) << entry.path() << " runs " << job.spec.model;
    }
  }
}

TEST(SelftestModels, CheckNamesOnlyKnownModes) {
  EXPECT_TRUE(check_selftest_model("selftest:nan").ok());
  EXPECT_TRUE(check_selftest_model("selftest:inf").ok());
  EXPECT_EQ(check_selftest_model("selftest:").code(), StatusCode::kNotFound);
  EXPECT_EQ(check_selftest_model("selftest:NAN").code(), StatusCode::kNotFound);
  EXPECT_EQ(check_selftest_model("bert-tiny").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace am::jobs
