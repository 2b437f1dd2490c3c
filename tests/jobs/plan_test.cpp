#include "jobs/plan.h"

#include <stdlib.h>

#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "jobs/catalog.h"
#include "temp_dir.h"

namespace am::jobs {
namespace {

using nlohmann::json;
using testing::TempDir;

const std::filesystem::path kSourceDir(ACCELMATRIX_SOURCE_DIR);

constexpr const char* kTinyA = R"([model]
name = "tiny-a"
architecture = "encoder-only"
family = "bert"
source = "example/tiny-a"

[config]
layers = 4
hidden = 64
heads = 4
intermediate = 256
vocab = 1000
max_positions = 128
type_vocab = 2
activation = "gelu"
norm_eps = 1e-5
)";

constexpr const char* kTinyB = R"([model]
name = "tiny-b"
architecture = "decoder-only"
family = "llama"
source = "example/tiny-b"

[config]
layers = 2
hidden = 32
heads = 2
kv_heads = 1
intermediate = 96
vocab = 500
max_positions = 256
activation = "silu"
norm_eps = 1e-6
)";

// Plan texts below start with a newline after R"( for readability; it is dropped so that the
// first visible line is line 1.
std::string text(const char* raw) {
  std::string s(raw);
  if (!s.empty() && s.front() == '\n') s.erase(0, 1);
  return s;
}

class PlanLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("models/tiny-a.toml", kTinyA);
    dir_.write("models/tiny-b.toml", kTinyB);
  }

  std::filesystem::path catalog() const { return dir_.path() / "models"; }

  Result<Plan> load(const char* raw) {
    file_ = dir_.write("plans/test.toml", text(raw));
    return load_plan(file_, catalog());
  }

  Plan load_ok(const char* raw) {
    auto plan = load(raw);
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    return plan.ok() ? std::move(plan).value() : Plan{};
  }

  // The error must have a line "<file>:<line>:..." that mentions `phrase`.
  void expect_error_at(const char* raw, int line, const std::string& phrase) {
    auto plan = load(raw);
    ASSERT_FALSE(plan.ok()) << "expected an error mentioning: " << phrase;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << plan.status().to_string();
    const std::string prefix = file_.string() + ":" + std::to_string(line) + ":";
    std::istringstream lines(plan.status().message());
    bool found = false;
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind(prefix, 0) == 0 && l.find(phrase) != std::string::npos) found = true;
    }
    EXPECT_TRUE(found) << "wanted " << prefix << " ... " << phrase << "\ngot:\n"
                       << plan.status().message();
  }

  TempDir dir_;
  std::filesystem::path file_;
};

constexpr const char* kTwoModelPlan = R"(
[plan]
name = "matrix"
description = "two models"
mode = "perf"
seed = 7
time_budget_s = 90.5

[defaults]
backends = ["cpu", "vulkan"]
precisions = ["f32", "q8_0"]
batch = [1, 4]
seq_len = [16, 32, 64]
warmup = 3
min_reps = 7
max_reps = 70
min_time_s = 0.25
timeout_s = 45
memory_limit_mb = 2048
threads = 2

[[models]]
name = "tiny-a"

[[models]]
name = "tiny-b"
precisions = ["q4_0"]
min_time_s = 1
)";

TEST_F(PlanLoader, ExpandsModelsBackendsPrecisionsBatchesAndLengthsInOrder) {
  const Plan plan = load_ok(kTwoModelPlan);
  using Row = std::tuple<std::string, std::string, std::string, int, int>;
  std::vector<Row> expected;
  for (const std::string model : {"tiny-a", "tiny-b"}) {
    const std::vector<std::string> precisions =
        model == "tiny-a" ? std::vector<std::string>{"f32", "q8_0"} : std::vector<std::string>{"q4_0"};
    for (const std::string backend : {"cpu", "vulkan"}) {
      for (const std::string& precision : precisions) {
        for (int batch : {1, 4}) {
          for (int seq_len : {16, 32, 64}) expected.emplace_back(model, backend, precision, batch, seq_len);
        }
      }
    }
  }
  ASSERT_EQ(plan.jobs.size(), expected.size());
  ASSERT_EQ(plan.jobs.size(), 2u * 2 * 2 * 3 + 2u * 1 * 2 * 3);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const JobSpec& s = plan.jobs[i].spec;
    EXPECT_EQ(Row(s.model, s.backend, std::string(to_string(s.precision)), s.batch, s.seq_len), expected[i])
        << "job " << i;
  }
}

TEST_F(PlanLoader, CarriesPlanAndSettingsIntoEverySpec) {
  const Plan plan = load_ok(kTwoModelPlan);
  EXPECT_EQ(plan.name, "matrix");
  EXPECT_EQ(plan.description, "two models");
  EXPECT_EQ(plan.time_budget_s, 90.5);
  EXPECT_EQ(plan.source, file_);
  ASSERT_FALSE(plan.jobs.empty());
  for (const PlannedJob& job : plan.jobs) {
    const JobSpec& s = job.spec;
    EXPECT_EQ(s.mode, "perf");
    EXPECT_EQ(s.warmup, 3);
    EXPECT_EQ(s.min_reps, 7);
    EXPECT_EQ(s.max_reps, 70);
    EXPECT_EQ(s.timeout_s, 45.0);
    EXPECT_EQ(s.memory_limit_mb, 2048);
    EXPECT_EQ(s.threads, 2);
    EXPECT_FALSE(s.scaled);
    EXPECT_EQ(s.min_time_s, s.model == "tiny-b" ? 1.0 : 0.25);
    EXPECT_EQ(s.architecture, s.model == "tiny-a" ? "encoder-only" : "decoder-only");
  }
  EXPECT_EQ(plan.jobs.front().spec.model_config["vocab"], 1000);
  EXPECT_EQ(plan.jobs.back().spec.model_config["kv_heads"], 1);
}

TEST_F(PlanLoader, JobIdsHashThePlanNameAndSpecAndAreUnique) {
  const Plan plan = load_ok(kTwoModelPlan);
  std::set<std::string> ids;
  for (const PlannedJob& job : plan.jobs) {
    EXPECT_EQ(job.job_id, compute_job_id("matrix", job.spec));
    ids.insert(job.job_id);
  }
  EXPECT_EQ(ids.size(), plan.jobs.size());
}

TEST_F(PlanLoader, JobIdsHashTheRunIdTheyAreLoadedForSoTwoRunsOfOnePlanShareNoId) {
  const Plan own = load_ok(kTwoModelPlan);
  EXPECT_EQ(own.run_id, "matrix");
  file_ = dir_.write("plans/test.toml", text(kTwoModelPlan));
  auto other = load_plan(file_, catalog(), "nightly-7");
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_EQ(other->name, "matrix");
  EXPECT_EQ(other->run_id, "nightly-7");
  ASSERT_EQ(other->jobs.size(), own.jobs.size());
  std::set<std::string> own_ids;
  for (const PlannedJob& job : own.jobs) own_ids.insert(job.job_id);
  for (std::size_t i = 0; i < own.jobs.size(); ++i) {
    EXPECT_EQ(other->jobs[i].job_id, compute_job_id("nightly-7", other->jobs[i].spec));
    EXPECT_EQ(own_ids.count(other->jobs[i].job_id), 0u) << "shared id " << other->jobs[i].job_id;
    EXPECT_EQ(other->jobs[i].spec.seed, own.jobs[i].spec.seed) << "the run id changes ids, not what is measured";
  }
  auto named = load_plan_text(text(kTwoModelPlan), "t.toml", catalog(), "matrix");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->jobs.front().job_id, own.jobs.front().job_id) << "the plan's own name is the default run id";
}

TEST_F(PlanLoader, ExpandingTwiceGivesIdenticalIdsAndSeeds) {
  const Plan first = load_ok(kTwoModelPlan);
  const Plan second = load_ok(kTwoModelPlan);
  ASSERT_EQ(first.jobs.size(), second.jobs.size());
  for (std::size_t i = 0; i < first.jobs.size(); ++i) {
    EXPECT_EQ(first.jobs[i].job_id, second.jobs[i].job_id);
    EXPECT_EQ(first.jobs[i].spec.seed, second.jobs[i].spec.seed);
  }
}

TEST_F(PlanLoader, SeedIsSharedWithinAModelAndDiffersAcrossModelsAndPlanSeeds) {
  const Plan plan = load_ok(kTwoModelPlan);
  std::map<std::string, std::set<uint64_t>> seeds;
  for (const PlannedJob& job : plan.jobs) {
    seeds[job.spec.model].insert(job.spec.seed);
    EXPECT_LT(job.spec.seed, uint64_t{1} << 53);
  }
  ASSERT_EQ(seeds["tiny-a"].size(), 1u);  // every backend/precision/shape sees the same numbers
  ASSERT_EQ(seeds["tiny-b"].size(), 1u);
  EXPECT_NE(*seeds["tiny-a"].begin(), *seeds["tiny-b"].begin());
  EXPECT_NE(*seeds["tiny-a"].begin(), 0u);

  std::string reseeded = kTwoModelPlan;
  reseeded.replace(reseeded.find("seed = 7"), 8, "seed = 8");
  const Plan other = load_ok(reseeded.c_str());
  ASSERT_EQ(other.jobs.size(), plan.jobs.size());
  EXPECT_NE(other.jobs[0].spec.seed, plan.jobs[0].spec.seed);
  EXPECT_NE(other.jobs[0].job_id, plan.jobs[0].job_id);
}

TEST_F(PlanLoader, JobSeedDoesNotMoveWhenOtherListsChange) {
  const Plan plan = load_ok(kTwoModelPlan);
  const Plan smaller = load_ok(R"(
[plan]
name = "matrix"
mode = "perf"
seed = 7
[defaults]
precisions = ["q8_0"]
[[models]]
name = "tiny-a"
)");
  ASSERT_EQ(smaller.jobs.size(), 1u);
  EXPECT_EQ(smaller.jobs[0].spec.seed, plan.jobs[0].spec.seed);
}

TEST_F(PlanLoader, DuplicateJobsCollapseToOne) {
  const Plan plan = load_ok(R"(
[plan]
name = "dups"
[defaults]
batch = [1, 1, 2]
[[models]]
name = "tiny-a"
[[models]]
name = "tiny-a"
batch = [2]
)");
  ASSERT_EQ(plan.jobs.size(), 2u);
  EXPECT_EQ(plan.jobs[0].spec.batch, 1);
  EXPECT_EQ(plan.jobs[1].spec.batch, 2);
}

TEST_F(PlanLoader, MaxJobsCapsTheExpansionAndNamesTheKey) {
  // 2 batches x 3 lengths = 6 jobs: max_jobs = 6 takes them, 5 refuses naming the key.
  const Plan plan = load_ok(R"(
[plan]
name = "capped"
max_jobs = 6
[defaults]
batch = [1, 2]
seq_len = [16, 32, 64]
[[models]]
name = "tiny-a"
)");
  EXPECT_EQ(plan.jobs.size(), 6u);
  auto refused = load(R"(
[plan]
name = "capped"
max_jobs = 5
[defaults]
batch = [1, 2]
seq_len = [16, 32, 64]
[[models]]
name = "tiny-a"
)");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("more than 5 jobs (plan.max_jobs)"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("raise [plan] max_jobs"), std::string::npos);
  // Refused from the lists' lengths, before a job is made: 1000 batches × 1000 lengths × 9
  // precisions × 7 backends is 63 million jobs, which expanded first took gigabytes to refuse.
  std::string huge = "[plan]\nname = \"huge\"\n[defaults]\nbackends = [\"cpu\", \"opencl\", \"vulkan\", \"cuda\", "
                     "\"rocm\", \"openvino\", \"qnn\"]\nprecisions = [\"f32\", \"f16\", \"bf16\", \"q8_0\", \"q4_0\", "
                     "\"q4_1\", \"q3_k\", \"q2_k\", \"mixed\"]\nbatch = [";
  for (int i = 1; i <= 1000; ++i) huge += std::to_string(i) + (i < 1000 ? ", " : "]\nseq_len = [");
  for (int i = 1; i <= 1000; ++i) huge += std::to_string(i) + (i < 1000 ? ", " : "]\n[[models]]\nname = \"tiny-a\"\n");
  auto too_big = load(huge.c_str());
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("plan expands to at least 63000000 jobs"), std::string::npos)
      << too_big.status().message();
  EXPECT_NE(too_big.status().message().find("more than 1000000 jobs (plan.max_jobs, the default)"), std::string::npos)
      << too_big.status().message();
  // Within the cap once duplicates run once: a repeated value, or two entries of one model
  // that overlap, are not counted twice.
  EXPECT_EQ(load_ok(R"(
[plan]
name = "dups"
max_jobs = 2
[defaults]
batch = [1, 1]
seq_len = [32, 32]
[[models]]
name = "tiny-a"
)").jobs.size(), 1u);
  EXPECT_EQ(load_ok(R"(
[plan]
name = "overlap"
max_jobs = 4
[defaults]
precisions = ["f32", "q8_0"]
seq_len = [32, 128]
[[models]]
name = "tiny-a"
[[models]]
name = "tiny-a"
seq_len = [32]
)").jobs.size(), 4u);
  // Many copies of a value, or of an entry, make few jobs: the values are walked once each, and
  // entries that overlap past 4 x the cap are refused before they are walked.
  std::string copies = "[plan]\nname = \"copies\"\n[defaults]\nbatch = [";
  for (int i = 0; i < 3000; ++i) copies += std::string(i ? ", " : "") + "1";
  copies += "]\nseq_len = [";
  for (int i = 0; i < 3000; ++i) copies += std::string(i ? ", " : "") + "32";
  copies += "]\n[[models]]\nname = \"tiny-a\"\n";
  EXPECT_EQ(load_ok(copies.c_str()).jobs.size(), 1u);
  std::string entries = "[plan]\nname = \"entries\"\nmax_jobs = 10\n[defaults]\nbatch = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  for (int i = 0; i < 5; ++i) entries += "[[models]]\nname = \"tiny-a\"\n";
  auto overlapping = load(entries.c_str());
  ASSERT_FALSE(overlapping.ok());
  EXPECT_NE(overlapping.status().message().find("plan's entries list 50 combinations in all"), std::string::npos)
      << overlapping.status().message();
  expect_error_at(R"(
[plan]
name = "capped"
max_jobs = 0
[[models]]
name = "tiny-a"
)", 3, "plan.max_jobs");
}

TEST_F(PlanLoader, BuiltInDefaultsFillAMinimalPlan) {
  const Plan plan = load_ok(R"(
[plan]
name = "minimal"
[[models]]
name = "tiny-b"
)");
  ASSERT_EQ(plan.jobs.size(), 1u);
  const JobSpec& s = plan.jobs[0].spec;
  const JobSpec d;
  EXPECT_EQ(s.backend, "cpu");
  EXPECT_EQ(s.precision, Precision::kF32);
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.seq_len, d.seq_len);
  EXPECT_EQ(s.mode, "both");
  EXPECT_EQ(s.min_reps, d.min_reps);
  EXPECT_EQ(plan.time_budget_s, 0.0);
}

TEST_F(PlanLoader, ListKeysAcceptASingleValue) {
  const Plan plan = load_ok(R"(
[plan]
name = "single"
[defaults]
backends = "opencl"
precisions = "q4_1"
batch = 8
seq_len = 64
[[models]]
name = "tiny-a"
)");
  ASSERT_EQ(plan.jobs.size(), 1u);
  EXPECT_EQ(plan.jobs[0].spec.backend, "opencl");
  EXPECT_EQ(plan.jobs[0].spec.precision, Precision::kQ4_1);
  EXPECT_EQ(plan.jobs[0].spec.batch, 8);
  EXPECT_EQ(plan.jobs[0].spec.seq_len, 64);
}

TEST_F(PlanLoader, ShrinkingOverrideMarksJobScaledAndChangesConfig) {
  const Plan plan = load_ok(R"(
[plan]
name = "scaled"
[[models]]
name = "tiny-a"
[models.overrides]
layers = 1
norm_eps = 1
)");
  ASSERT_EQ(plan.jobs.size(), 1u);
  const JobSpec& s = plan.jobs[0].spec;
  EXPECT_TRUE(s.scaled);
  EXPECT_EQ(s.model_config["layers"], 1);
  EXPECT_EQ(s.model_config["hidden"], 64);
  EXPECT_TRUE(s.model_config["norm_eps"].is_number_float());  // stays a float like the catalog's
  EXPECT_EQ(s.model_config["norm_eps"].get<double>(), 1.0);
}

TEST_F(PlanLoader, OverridesThatDoNotShrinkLeaveJobUnscaled) {
  const Plan plan = load_ok(R"(
[plan]
name = "unscaled"
[[models]]
name = "tiny-a"
overrides = { layers = 8, activation = "relu", max_positions = 128 }
)");
  ASSERT_EQ(plan.jobs.size(), 1u);
  EXPECT_FALSE(plan.jobs[0].spec.scaled);
  EXPECT_EQ(plan.jobs[0].spec.model_config["layers"], 8);
  EXPECT_EQ(plan.jobs[0].spec.model_config["activation"], "relu");
}

TEST_F(PlanLoader, OverrideChangesSeedAndIdOfTheModel) {
  const Plan plain = load_ok(R"(
[plan]
name = "p"
[[models]]
name = "tiny-a"
)");
  const Plan shrunk = load_ok(R"(
[plan]
name = "p"
[[models]]
name = "tiny-a"
overrides = { layers = 2 }
)");
  ASSERT_EQ(plain.jobs.size(), 1u);
  ASSERT_EQ(shrunk.jobs.size(), 1u);
  EXPECT_NE(plain.jobs[0].spec.seed, shrunk.jobs[0].spec.seed);
  EXPECT_NE(plain.jobs[0].job_id, shrunk.jobs[0].job_id);
}

TEST_F(PlanLoader, WeightsPathOverrideNamesACheckpointForAnyModel) {
  const Plan plan = load_ok(R"(
[plan]
name = "ckpt"
[[models]]
name = "tiny-a"
overrides = { weights_path = "/models/tiny-a" }
)");
  ASSERT_EQ(plan.jobs.size(), 1u);
  EXPECT_EQ(plan.jobs[0].spec.model_config[kWeightsPathKey], "/models/tiny-a");
  EXPECT_FALSE(plan.jobs[0].spec.scaled);
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[models.overrides]
weights_path = 7
)", 6, "override 'weights_path': expected a non-empty path string");
}

// --- errors: each names the file and the line of the offending text ------------------------

TEST_F(PlanLoader, TagsBecomeRequiredTagsAndOnlyTaggedJobsChangeTheirIds) {
  const Plan plain = load_ok(R"(
[plan]
name = "t"
[[models]]
name = "tiny-a"
)");
  const Plan tagged = load_ok(R"(
[plan]
name = "t"
[defaults]
tags = { gpu = "rtx4090", rack = "b2" }
[[models]]
name = "tiny-a"
[[models]]
name = "tiny-b"
tags = { gpu = "a100" }
)");
  ASSERT_EQ(plain.jobs.size(), 1u);
  ASSERT_EQ(tagged.jobs.size(), 2u);
  EXPECT_TRUE(plain.jobs[0].spec.required_tags.empty());
  EXPECT_EQ(tagged.jobs[0].spec.required_tags,
            (std::map<std::string, std::string>{{"gpu", "rtx4090"}, {"rack", "b2"}}));
  EXPECT_EQ(tagged.jobs[1].spec.required_tags, (std::map<std::string, std::string>{{"gpu", "a100"}}));
  EXPECT_NE(plain.jobs[0].job_id, tagged.jobs[0].job_id);
  // Tags survive the trip through the job document workers receive.
  auto back = job_spec_from_json(to_json(tagged.jobs[0].spec));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->required_tags, tagged.jobs[0].spec.required_tags);
  EXPECT_FALSE(to_json(plain.jobs[0].spec).contains("required_tags"));
}

TEST_F(PlanLoader, ReportsLineOfABadTag) {
  expect_error_at(R"(
[plan]
name = "t"
[defaults]
tags = { gpu = 4090 }
[[models]]
name = "tiny-a"
)", 4, "defaults.tags.gpu");
  expect_error_at(R"(
[plan]
name = "t"
[defaults]
tags = "gpu"
[[models]]
name = "tiny-a"
)", 4, "expected a table");
}

TEST_F(PlanLoader, ReportsLineOfSyntaxError) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
seq_len = [32 64]
[[models]]
name = "tiny-a"
)", 4, "");
}

TEST_F(PlanLoader, ReportsLineAndSuggestionForMisspeltDefaultsKey) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
batch = [1]
precision = ["f32"]
[[models]]
name = "tiny-a"
)", 5, "unknown key 'precision' in [defaults] (did you mean 'precisions'?)");
}

TEST_F(PlanLoader, ReportsLineOfUnknownKeysInEveryTable) {
  expect_error_at(R"(
[plan]
name = "x"
seeed = 3
[[models]]
name = "tiny-a"
)", 3, "unknown key 'seeed' in [plan] (did you mean 'seed'?)");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
backend = "cpu"
)", 5, "unknown key 'backend' in [[models]] (did you mean 'backends'?)");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[default]
batch = [1]
)", 5, "unknown key 'default' in the plan (did you mean 'defaults'?)");
}

TEST_F(PlanLoader, ReportsLineOfWrongTypes) {
  expect_error_at(R"(
[plan]
name = "x"
seed = "seven"
[[models]]
name = "tiny-a"
)", 3, "plan.seed: expected an integer, got string");
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
batch = [1, "8"]
[[models]]
name = "tiny-a"
)", 4, "defaults.batch: expected an integer, got string");
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
min_time_s = "fast"
[[models]]
name = "tiny-a"
)", 4, "defaults.min_time_s: expected a number, got string");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = ["tiny-a"]
)", 4, "models[0].name: expected a string, got array");
}

TEST_F(PlanLoader, ReportsLineAndCloseNamesOfUnknownModel) {
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[[models]]
name = "tiny-c"
)", 6, "unknown model 'tiny-c' (did you mean 'tiny-a' or 'tiny-b'?)");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "resnet"
)", 4, "unknown model 'resnet' (catalog models: tiny-a, tiny-b)");
}

TEST_F(PlanLoader, ReportsLineAndColumnOfUnknownPrecisionBackendAndMode) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
precisions = ["f32", "q5"]
[[models]]
name = "tiny-a"
)", 4, "4:22: unknown precision 'q5' (expected one of f32, f16, bf16, q8_0");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
backends = ["cpu", "tpu"]
)", 5, "unknown backend 'tpu' (expected one of cpu, opencl, vulkan");
  expect_error_at(R"(
[plan]
name = "x"
mode = "speed"
[[models]]
name = "tiny-a"
)", 3, "unknown mode 'speed' (expected one of accuracy, perf, both)");
}

TEST_F(PlanLoader, ReportsLineOfEmptyLists) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
precisions = []
[[models]]
name = "tiny-a"
)", 4, "defaults.precisions: empty list");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
seq_len = []
)", 5, "models[0].seq_len: empty list");
}

TEST_F(PlanLoader, ReportsLineOfNonPositiveSizes) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
batch = [1, 0]
[[models]]
name = "tiny-a"
)", 4, "4:13: defaults.batch: must be at least 1, got 0");
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
seq_len = -16
[[models]]
name = "tiny-a"
)", 4, "defaults.seq_len: must be at least 1, got -16");
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
timeout_s = 0
[[models]]
name = "tiny-a"
)", 4, "defaults.timeout_s: must be greater than 0, got 0");
}

TEST_F(PlanLoader, ReportsLineOfSeqLenBeyondModelPositions) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
seq_len = [64, 200]
[[models]]
name = "tiny-b"
[[models]]
name = "tiny-a"
)", 4, "seq_len 200 exceeds max_positions 128 of model 'tiny-a'");
}

TEST_F(PlanLoader, SeqLenLimitFollowsOverriddenMaxPositions) {
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-b"
seq_len = [64]
overrides = { max_positions = 32 }
)", 5, "seq_len 64 exceeds max_positions 32 of model 'tiny-b'");
}

// The built-in default seq_len has no line: the error points at the overrides that set the
// limit it passes (it had no line at all).
TEST_F(PlanLoader, ADefaultSeqLenBeyondAnOverriddenLimitIsSaidAtTheOverrides) {
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-b"
[models.overrides]
max_positions = 16
)", 5, "seq_len 32 exceeds max_positions 16 of model 'tiny-b'");
}

// A refused override and a cross-key rule broken by the accepted ones: both at once (the second
// was said only after the first was fixed).
TEST_F(PlanLoader, ARefusedOverrideAndABrokenCrossKeyRuleAreReportedTogether) {
  const char* raw = R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
overrides = { vocab = 0, heads = 3 }
)";
  expect_error_at(raw, 5, "override 'vocab': a size must be a positive integer, got 0");
  expect_error_at(raw, 5, "hidden (64) is not divisible by heads (3)");
  // A refused value is not judged by the catalog's value it replaces: heads = "3" (a string)
  // is one error, not also "hidden (65) is not divisible by heads (4)".
  auto plan = load(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
overrides = { hidden = 65, heads = "3" }
)");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("override 'heads': expected an integer"), std::string::npos)
      << plan.status().message();
  EXPECT_EQ(plan.status().message().find("not divisible"), std::string::npos) << plan.status().message();
}

TEST_F(PlanLoader, ReportsLineOfOverrideKeyMissingFromCatalog) {
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[models.overrides]
layer = 1
)", 6, "override 'layer' is not a config key of model 'tiny-a' (did you mean 'layers'?)");
}

// The shipped LLaVA entries name image token 32000: a plan that scales the vocabulary below it
// must move the token too, and is told so at load time (not by every job failing at run time).
TEST_F(PlanLoader, AVocabScaledBelowTheImageTokenIsRefusedNamingBothKeys) {
  dir_.write("models/tiny-llava.toml", R"([model]
name = "tiny-llava"
architecture = "multimodal"
family = "llava"
source = "example/tiny-llava"

[config]
layers = 2
hidden = 32
heads = 2
intermediate = 96
vocab = 40000
image_token_index = 32000
)");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-llava"
[models.overrides]
vocab = 2048
)", 5, "image_token_index (32000) is outside the vocabulary (vocab 2048)");
  auto ok = load(R"(
[plan]
name = "x"
[[models]]
name = "tiny-llava"
[models.overrides]
vocab = 2048
image_token_index = 2047
)");
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
  auto negative = load(R"(
[plan]
name = "x"
[[models]]
name = "tiny-llava"
[models.overrides]
vocab = 2048
image_token_index = -1
)");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("image_token_index (-1) is outside the vocabulary (vocab 2048): it must be 0..2047"),
            std::string::npos)
      << negative.status().message();
  EXPECT_EQ(negative.status().message().find("below it too"), std::string::npos) << negative.status().message();
}

TEST_F(PlanLoader, ReportsLineOfBadOverrideValues) {
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[models.overrides]
layers = "one"
)", 6, "override 'layers': expected an integer like the catalog's 4, got string");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[models.overrides]
hidden = 0
)", 6, "override 'hidden': a size must be a positive integer, got 0");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
[models.overrides]
heads = 3
)", 5, "hidden (64) is not divisible by heads (3)");
}

TEST_F(PlanLoader, ReportsLineOfMaxRepsBelowMinReps) {
  expect_error_at(R"(
[plan]
name = "x"
[defaults]
min_reps = 10
[[models]]
name = "tiny-a"
max_reps = 5
)", 7, "max_reps (5) is below min_reps (10)");
}

TEST_F(PlanLoader, ReportsLineOfInvalidPlanName) {
  expect_error_at(R"(
[plan]
name = "my run"
[[models]]
name = "tiny-a"
)", 2, "plan.name: 'my run' is not a valid run name");
}

TEST_F(PlanLoader, ReportsEveryProblemNotJustTheFirst) {
  auto plan = load(R"(
[plan]
name = "x"
[defaults]
precisions = ["f33"]
batch = [0]
[[models]]
name = "tiny-z"
)");
  ASSERT_FALSE(plan.ok());
  const std::string& msg = plan.status().message();
  EXPECT_NE(msg.find(file_.string() + ":4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find(file_.string() + ":5:"), std::string::npos) << msg;
  EXPECT_NE(msg.find(file_.string() + ":7:"), std::string::npos) << msg;
}

TEST_F(PlanLoader, AnEntrysOverrideAndSettingProblemsAreReportedTogether) {
  // A refused override used to end the entry's checks: its seq_len and the reps showed up only
  // once the override was fixed.
  auto plan = load(R"(
[plan]
name = "x"
[defaults]
seq_len = [600]
min_reps = 10
max_reps = 5
[[models]]
name = "tiny-a"
[models.overrides]
layer = 1
)");
  ASSERT_FALSE(plan.ok());
  const std::string& msg = plan.status().message();
  EXPECT_NE(msg.find(":4:12: seq_len 600 exceeds max_positions 128"), std::string::npos) << msg;
  EXPECT_NE(msg.find(":6:12: max_reps (5) is below min_reps (10)"), std::string::npos) << msg;
  EXPECT_NE(msg.find(":10:1: override 'layer' is not a config key"), std::string::npos) << msg;

  // An entry whose own settings are wrong still has its name and overrides checked; a refused
  // max_positions override is not replaced by the catalog's limit in the seq_len check.
  auto broken = load(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
batch = [0]
[models.overrides]
layer = 1
[[models]]
name = "tiny-b"
seq_len = [1000]
[models.overrides]
max_positions = "many"
)");
  ASSERT_FALSE(broken.ok());
  const std::string& b = broken.status().message();
  EXPECT_NE(b.find(":5:10: models[0].batch: must be at least 1"), std::string::npos) << b;
  EXPECT_NE(b.find(":7:1: override 'layer' is not a config key"), std::string::npos) << b;
  EXPECT_NE(b.find("override 'max_positions': expected"), std::string::npos) << b;
  EXPECT_EQ(b.find("exceeds max_positions"), std::string::npos) << b;
}

// What every job of a model would fail at run time is refused when the plan is read: heads that
// kv_heads does not divide, a normalisation epsilon of 0.
TEST_F(PlanLoader, OverridesThatEveryJobWouldFailOnAreRefusedWhenThePlanIsRead) {
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-b"
overrides = { kv_heads = 3, heads = 4, hidden = 32 }
)", 5, "heads (4) is not divisible by kv_heads (3)");
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
name = "tiny-a"
overrides = { norm_eps = 0.0 }
)", 5, "norm_eps: must be a number above 0 and at most 1, got 0.0");
}

TEST_F(PlanLoader, ReportsMissingPlanTableAndModels) {
  auto no_plan = load(R"(
[[models]]
name = "tiny-a"
)");
  ASSERT_FALSE(no_plan.ok());
  EXPECT_NE(no_plan.status().message().find(file_.string() + ": missing [plan] table"),
            std::string::npos) << no_plan.status().message();
  auto no_models = load(R"(
[plan]
name = "x"
)");
  ASSERT_FALSE(no_models.ok());
  EXPECT_NE(no_models.status().message().find("no [[models]] or [[commands]] entries"), std::string::npos);
  expect_error_at(R"(
[plan]
name = "x"
[[models]]
backends = ["cpu"]
)", 3, "[[models]] entry is missing 'name'");
}

TEST_F(PlanLoader, MissingFileIsNotFound) {
  auto plan = load_plan(dir_.path() / "nope.toml", catalog());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  EXPECT_NE(plan.status().message().find("nope.toml"), std::string::npos);
}

TEST_F(PlanLoader, BinaryGarbageIsAnErrorNotACrash) {
  std::string junk;
  uint32_t x = 0x9e3779b9u;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1664525u + 1013904223u;
    junk.push_back(static_cast<char>(x >> 24));
  }
  const auto file = dir_.write("plans/junk.toml", junk);
  auto plan = load_plan(file, catalog());
  EXPECT_FALSE(plan.ok());
}

TEST_F(PlanLoader, MissingCatalogDirectoryIsReported) {
  file_ = dir_.write("plans/p.toml", "[plan]\nname = \"x\"\n[[models]]\nname = \"tiny-a\"\n");
  auto plan = load_plan(file_, dir_.path() / "no-such-catalog");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("no-such-catalog"), std::string::npos);
}

// --- catalog discovery and the shipped plans ------------------------------------------------

TEST_F(PlanLoader, FindsCatalogBesideThePlansFolder) {
  file_ = dir_.write("plans/p.toml", "[plan]\nname = \"x\"\n[[models]]\nname = \"tiny-b\"\n");
  unsetenv("ACCELMATRIX_CATALOG");
  EXPECT_EQ(find_catalog_dir(file_), catalog().lexically_normal());
  auto plan = load_plan(file_);  // no catalog argument: found beside plans/
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->jobs.size(), 1u);
}

TEST_F(PlanLoader, EnvironmentVariableChoosesTheCatalog) {
  TempDir elsewhere;
  elsewhere.write("plan.toml", "[plan]\nname = \"x\"\n[[models]]\nname = \"tiny-a\"\n");
  setenv("ACCELMATRIX_CATALOG", catalog().c_str(), 1);
  EXPECT_EQ(find_catalog_dir(elsewhere.path() / "plan.toml"), catalog());
  auto plan = load_plan(elsewhere.path() / "plan.toml");
  unsetenv("ACCELMATRIX_CATALOG");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->jobs[0].spec.model, "tiny-a");
}

TEST(ShippedPlans, FallBackToTheSourceTreeCatalog) {
  TempDir elsewhere;
  unsetenv("ACCELMATRIX_CATALOG");
  EXPECT_EQ(find_catalog_dir(elsewhere.path() / "plan.toml"), kSourceDir / "jobs" / "models");
  EXPECT_EQ(default_plans_dir(), kSourceDir / "jobs" / "plans");
}

TEST(ShippedPlans, SmokePlanLoadsAsFourSmallCpuJobs) {
  auto plan = load_plan(default_plans_dir() / "smoke.toml");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->name, "smoke");
  ASSERT_EQ(plan->jobs.size(), 4u);
  std::set<std::pair<std::string, int>> cells;
  for (const PlannedJob& job : plan->jobs) {
    EXPECT_EQ(job.spec.model, "bert-tiny");
    EXPECT_EQ(job.spec.backend, "cpu");
    EXPECT_EQ(job.spec.batch, 1);
    EXPECT_EQ(job.spec.mode, "both");
    EXPECT_FALSE(job.spec.scaled);
    EXPECT_LE(job.spec.min_time_s, 0.25);
    EXPECT_EQ(job.spec.model_config["hidden"], 128);
    cells.emplace(std::string(to_string(job.spec.precision)), job.spec.seq_len);
  }
  EXPECT_EQ(cells, (std::set<std::pair<std::string, int>>{
                       {"f32", 32}, {"f32", 128}, {"q8_0", 32}, {"q8_0", 128}}));
}

TEST(ShippedPlans, DefaultPlanCoversTwoFamiliesEveryLocalBackendAndThreePrecisions) {
  auto plan = load_plan(default_plans_dir() / "default.toml");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->name, "default");
  // cpu and opencl: bert-tiny 3 precisions x 2 batches x 2 lengths, TinyLlama batch 1 only;
  // vulkan: both models at b1 s32 only.
  EXPECT_EQ(plan->jobs.size(), 2u * 3 * 2 * 2 + 2u * 3 * 1 * 2 + 2u * 3);
  for (const PlannedJob& job : plan->jobs) {
    if (job.spec.backend != "vulkan") continue;
    EXPECT_EQ(job.spec.batch, 1) << job.spec.model;
    EXPECT_EQ(job.spec.seq_len, 32) << job.spec.model;
    // The same scaled TinyLlama as on the other backends, so its ratings compare.
    if (job.spec.model != "bert-tiny") {
      EXPECT_EQ(job.spec.model_config["hidden"], 256);
    }
  }
  std::set<std::string> backends, precisions, architectures;
  std::set<int> lengths;
  for (const PlannedJob& job : plan->jobs) {
    backends.insert(job.spec.backend);
    precisions.insert(std::string(to_string(job.spec.precision)));
    architectures.insert(job.spec.architecture);
    lengths.insert(job.spec.seq_len);
    EXPECT_EQ(job.spec.scaled, job.spec.model != "bert-tiny") << job.spec.model;
  }
  EXPECT_EQ(backends, (std::set<std::string>{"cpu", "opencl", "vulkan"}));
  EXPECT_EQ(precisions, (std::set<std::string>{"f32", "q8_0", "q4_0"}));
  EXPECT_EQ(architectures, (std::set<std::string>{"encoder-only", "decoder-only"}));
  EXPECT_EQ(lengths, (std::set<int>{32, 128}));
}

TEST(ShippedPlans, AllBackendsPlanIsTheArchitecturesPlanOnEveryBackend) {
  // architectures-all-backends.toml runs architectures.toml's models (same overrides, batches,
  // shapes) on cpu, opencl and vulkan at f32, q8_0 and q4_0: the two model lists must not drift.
  auto base = load_plan(default_plans_dir() / "architectures.toml");
  auto all = load_plan(default_plans_dir() / "architectures-all-backends.toml");
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  using Key = std::tuple<std::string, std::string, std::string, int, int>;
  const std::set<std::string> precisions = {"f32", "q8_0", "q4_0"};
  std::set<Key> expected, got;
  for (const PlannedJob& job : base->jobs) {
    const std::string p(to_string(job.spec.precision));
    if (precisions.count(p) == 0) continue;
    for (const char* backend : {"cpu", "opencl", "vulkan"}) {
      expected.emplace(backend + std::string("/") + job.spec.model, job.spec.model_config.dump(), p, job.spec.batch,
                       job.spec.seq_len);
    }
  }
  for (const PlannedJob& job : all->jobs) {
    got.emplace(job.spec.backend + "/" + job.spec.model, job.spec.model_config.dump(),
                std::string(to_string(job.spec.precision)), job.spec.batch, job.spec.seq_len);
  }
  EXPECT_EQ(all->jobs.size(), expected.size());
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace am::jobs
