// The plan's `placement` key (issue 11, docs/PLANS.md "Placement"): default, per model, in
// [defaults] and [[commands]], round trip through the job spec, and errors naming where.
#include <gtest/gtest.h>

#include "jobs/placement.h"
#include "jobs/plan.h"
#include "temp_dir.h"

namespace am::jobs {
namespace {

using testing::TempDir;

constexpr const char* kModel = R"([model]
name = "tiny-a"
architecture = "encoder-only"
family = "bert"
source = "example/tiny-a"

[config]
layers = 2
hidden = 64
heads = 4
intermediate = 256
vocab = 1000
max_positions = 128
type_vocab = 2
activation = "gelu"
norm_eps = 1e-5
)";

class PlacementPlan : public ::testing::Test {
 protected:
  void SetUp() override { dir_.write("models/tiny-a.toml", kModel); }
  Result<Plan> load(const std::string& body) {
    file_ = dir_.write("plans/p.toml", "[plan]\nname = \"p\"\n\n" + body);
    return load_plan(file_, dir_.path() / "models");
  }
  TempDir dir_;
  std::filesystem::path file_;
};

TEST_F(PlacementPlan, DefaultIsEachClassAndModelsAndDefaultsChooseTheirOwn) {
  auto plan = load(R"([defaults]
precisions = ["f32"]

[[models]]
name = "tiny-a"
seq_len = 16

[[models]]
name = "tiny-a"
seq_len = 32
placement = "each-device"

[[models]]
name = "tiny-a"
seq_len = 64
placement = "any"
)");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->jobs.size(), 3u);
  EXPECT_EQ(plan->jobs[0].spec.placement, Placement::kEachClass);
  EXPECT_EQ(plan->jobs[1].spec.placement, Placement::kEachDevice);
  EXPECT_EQ(plan->jobs[2].spec.placement, Placement::kAny);
  for (const PlannedJob& j : plan->jobs) {
    EXPECT_TRUE(j.target.empty());
    EXPECT_EQ(j.job_id, compute_job_id("p", j.spec));
    // The placement travels in the spec (ASSIGN, SQLite) and comes back the same.
    auto back = job_spec_from_json(to_json(j.spec));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(back->placement, j.spec.placement);
    EXPECT_EQ(to_json(j.spec).contains("placement"), j.spec.placement != Placement::kAny);
  }
  auto all_any = load("[defaults]\nplacement = \"any\"\n\n[[models]]\nname = \"tiny-a\"\n");
  ASSERT_TRUE(all_any.ok()) << all_any.status().to_string();
  EXPECT_EQ(all_any->jobs.front().spec.placement, Placement::kAny);
}

TEST_F(PlacementPlan, ChangingOnlyThePlacementChangesThePlanHash) {
  auto a = load("[[models]]\nname = \"tiny-a\"\n");
  auto b = load("[[models]]\nname = \"tiny-a\"\nplacement = \"each-device\"\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(plan_hash(a->jobs), plan_hash(b->jobs));
  EXPECT_NE(a->jobs[0].job_id, b->jobs[0].job_id);
}

TEST_F(PlacementPlan, UnknownPlacementIsAnErrorNamingLineAndChoices) {
  auto plan = load("[[models]]\nname = \"tiny-a\"\nplacement = \"everywhere\"\n");
  ASSERT_FALSE(plan.ok());
  const std::string msg = plan.status().message();
  EXPECT_NE(msg.find(file_.string() + ":6:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown placement 'everywhere'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("each-class, each-device, any"), std::string::npos) << msg;
  auto typed = load("[defaults]\nplacement = 3\n\n[[models]]\nname = \"tiny-a\"\n");
  ASSERT_FALSE(typed.ok());
  EXPECT_NE(typed.status().message().find("defaults.placement: expected a string"), std::string::npos)
      << typed.status().message();
}

TEST_F(PlacementPlan, CommandsTakeTheDefaultOrTheirOwnPlacement) {
  auto plan = load(R"([defaults]
placement = "each-device"

[[commands]]
name = "a"
argv = ["true"]
backend = "cpu"

[[commands]]
name = "b"
argv = ["true"]
backend = "cpu"
placement = "any"
)");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->jobs.size(), 2u);
  EXPECT_EQ(plan->jobs[0].spec.placement, Placement::kEachDevice);
  EXPECT_EQ(plan->jobs[1].spec.placement, Placement::kAny);
  auto bad = load("[[commands]]\nname = \"a\"\nargv = [\"true\"]\nbackend = \"cpu\"\nplacement = \"some\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("commands[0].placement: unknown placement 'some'"), std::string::npos)
      << bad.status().message();
}

TEST(PlacementVocabulary, TargetsRoundTripAndMalformedOnesAreRefused) {
  for (Placement p : {Placement::kEachClass, Placement::kEachDevice, Placement::kAny}) {
    EXPECT_EQ(parse_placement(to_string(p)), p);
  }
  EXPECT_FALSE(parse_placement("Each-Class"));
  auto cls = parse_target(class_target("cpu-0123"));
  ASSERT_TRUE(cls);
  EXPECT_EQ(cls->placement, Placement::kEachClass);
  EXPECT_EQ(cls->hardware_class, "cpu-0123");
  // Worker ids may hold '/'; device keys never do, so the last '/' separates them.
  auto dev = parse_target(device_target("rack/b2", "opencl:1"));
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->placement, Placement::kEachDevice);
  EXPECT_EQ(dev->worker_id, "rack/b2");
  EXPECT_EQ(dev->device_key, "opencl:1");
  auto any = parse_target("");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->placement, Placement::kAny);
  for (const char* bad : {"class:", "device:w", "device:/cpu:0", "device:w/", "gpu:7"}) {
    EXPECT_FALSE(parse_target(bad)) << bad;
  }
}

TEST(PlacementSpec, AnUnknownPlacementInASpecIsRefused) {
  JobSpec spec;
  spec.model = "m";
  spec.architecture = "encoder-only";
  nlohmann::json doc = to_json(spec);
  doc["placement"] = "sideways";
  auto back = job_spec_from_json(doc);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("spec.placement"), std::string::npos) << back.status().message();
}

}  // namespace
}  // namespace am::jobs
