// Spec families (jobs/spec_family.h): the coordinator keeps one spec per family and rebuilds each
// job's canonical JSON — the bytes its id hashes — by splicing precision, batch and sequence
// length into a pre-rendered template. A wrong splice would give a job another id, so every job of
// every shipped plan is checked against a real dump, through the template of another job of its
// family.
#include "jobs/spec_family.h"

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "jobs/plan.h"

namespace am::jobs {
namespace {

const std::filesystem::path kSourceDir(ACCELMATRIX_SOURCE_DIR);

TEST(SpecFamily, TemplatesOfEveryShippedPlanReproduceEachJobsCanonicalJson) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "jobs" / "plans")) {
    if (entry.path().extension() != ".toml") continue;
    auto plan = load_plan(entry.path(), kSourceDir / "jobs" / "models");
    ASSERT_TRUE(plan.ok()) << entry.path() << ": " << plan.status().to_string();
    // One template per family, made from the first job of the family met.
    std::vector<std::pair<JobSpec, SpecTemplate>> templates;
    for (const PlannedJob& job : plan->jobs) {
      const JobSpec family = family_of(job.spec);
      const SpecTemplate* t = nullptr;
      for (const auto& [f, tmpl] : templates) {
        if (f == family) t = &tmpl;
      }
      if (t == nullptr) {
        templates.emplace_back(family, SpecTemplate::of(job.spec));
        t = &templates.back().second;
        EXPECT_TRUE(t->exact()) << entry.path().filename() << " " << job.spec.model;
      }
      ASSERT_EQ(t->canonical(scalars_of(job.spec)), to_json(job.spec).dump()) << entry.path().filename();
      EXPECT_EQ(with_scalars(t->family(), scalars_of(job.spec)), job.spec);
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

// Ids are hashed through a per-(family, batch) state, then the rest of the canonical bytes: the
// same id as hashing the whole dump, for every job of every shipped plan and for run ids that
// change between calls (the states start from the run id).
TEST(SpecFamily, IdHashesThroughTheBatchStateAreTheIdsOfTheWholeDump) {
  int checked = 0;
  SpecTemplates templates;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "jobs" / "plans")) {
    if (entry.path().extension() != ".toml") continue;
    auto plan = load_plan(entry.path(), kSourceDir / "jobs" / "models");
    ASSERT_TRUE(plan.ok()) << entry.path() << ": " << plan.status().to_string();
    for (const PlannedJob& job : plan->jobs) {
      if (job.spec.command) continue;
      for (const char* run : {"run-a", "run-b"}) {
        const SpecTemplate& t = templates.of(job.spec);
        EXPECT_EQ(templates.id_hash(run, t, scalars_of(job.spec)), job_hash_of(run, to_json(job.spec).dump()))
            << entry.path().filename() << " " << job.spec.model;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

// The expansion's family ordinal (PlannedJob::family) groups a plan's jobs exactly as comparing
// their specs would: one ordinal per family, every job of an ordinal of its family.
TEST(SpecFamily, APlansFamilyOrdinalsAreItsFamilies) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "jobs" / "plans")) {
    if (entry.path().extension() != ".toml") continue;
    auto plan = load_plan(entry.path(), kSourceDir / "jobs" / "models");
    ASSERT_TRUE(plan.ok()) << entry.path() << ": " << plan.status().to_string();
    std::vector<JobSpec> first;   // a family per ordinal
    for (const PlannedJob& job : plan->jobs) {
      ASSERT_GE(job.family, 0) << entry.path().filename();
      const auto k = static_cast<std::size_t>(job.family);
      ASSERT_LE(k, first.size()) << "ordinals are handed out in order";
      if (k == first.size()) {
        for (const JobSpec& f : first) EXPECT_FALSE(same_family(job.spec, f)) << "a family has one ordinal";
        first.push_back(family_of(job.spec));
      }
      EXPECT_TRUE(same_family(job.spec, first[k])) << entry.path().filename() << " " << job.spec.model;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(SpecFamily, FamiliesDifferInAnythingButTheScalars) {
  JobSpec a;
  a.model = "bert-tiny";
  a.model_config = {{"layers", 2}, {"hidden", 128}};
  JobSpec b = a;
  b.precision = Precision::kQ4_0;
  b.batch = 8;
  b.seq_len = 128;
  EXPECT_NE(a, b);
  EXPECT_EQ(family_of(a), family_of(b));
  b.model_config["hidden"] = 256;   // a changed config is another family
  EXPECT_NE(family_of(a), family_of(b));
  b = a;
  b.required_tags["rack"] = "a";
  EXPECT_NE(family_of(a), family_of(b));
  b = a;
  b.command = CommandSpec{"probe", {"/bin/true"}};
  EXPECT_NE(family_of(a), family_of(b));
}

TEST(SpecFamily, SameFamilyAgreesWithComparingCopies) {
  JobSpec base;
  base.model = "bert-tiny";
  base.architecture = "encoder-only";
  base.model_config = {{"layers", 2}, {"hidden", 128}};
  const JobSpec family = family_of(base);
  // One change per field: each must make another family, except the three scalars.
  std::vector<std::pair<const char*, std::function<void(JobSpec&)>>> changes = {
      {"precision", [](JobSpec& s) { s.precision = Precision::kQ8_0; }},
      {"batch", [](JobSpec& s) { s.batch = 8; }},
      {"seq_len", [](JobSpec& s) { s.seq_len = 128; }},
      {"model", [](JobSpec& s) { s.model = "bert-base"; }},
      {"architecture", [](JobSpec& s) { s.architecture = "decoder-only"; }},
      {"model_config", [](JobSpec& s) { s.model_config["hidden"] = 256; }},
      {"scaled", [](JobSpec& s) { s.scaled = true; }},
      {"backend", [](JobSpec& s) { s.backend = "vulkan"; }},
      {"mode", [](JobSpec& s) { s.mode = kModePerf; }},
      {"seed", [](JobSpec& s) { s.seed = 7; }},
      {"warmup", [](JobSpec& s) { s.warmup = 3; }},
      {"min_reps", [](JobSpec& s) { s.min_reps = 9; }},
      {"max_reps", [](JobSpec& s) { s.max_reps = 99; }},
      {"min_time_s", [](JobSpec& s) { s.min_time_s = 0.25; }},
      {"timeout_s", [](JobSpec& s) { s.timeout_s = 60; }},
      {"memory_limit_mb", [](JobSpec& s) { s.memory_limit_mb = 512; }},
      {"threads", [](JobSpec& s) { s.threads = 1; }},
      {"required_tags", [](JobSpec& s) { s.required_tags["rack"] = "a"; }},
      {"command", [](JobSpec& s) { s.command = CommandSpec{"probe", {"/bin/true"}}; }},
      {"placement", [](JobSpec& s) { s.placement = Placement::kEachClass; }},
  };
  EXPECT_TRUE(same_family(base, family));
  for (const auto& [field, change] : changes) {
    JobSpec s = base;
    change(s);
    EXPECT_EQ(same_family(s, family), family_of(s) == family) << field;
    // A family argument that is not neutral is nobody's family.
    EXPECT_FALSE(same_family(base, s) && !(family_of(base) == s)) << field;
  }
}

TEST(SpecFamily, MarkerTextInsideACommandDoesNotFoolTheTemplate) {
  // The template finds the scalars by marker values; a command whose arguments and seed carry the
  // same digits must still splice the real fields only (of() verifies against real dumps).
  JobSpec s;
  s.model = "tool";
  s.command = CommandSpec{"tool", {"/bin/echo", "\"batch\":987654321", "987654323"}};
  s.seed = 987654321;
  const SpecTemplate t = SpecTemplate::of(s);
  EXPECT_EQ(t.canonical(scalars_of(s)), to_json(s).dump());
  JobScalars other{Precision::kQ8_0, 4, 64};
  EXPECT_EQ(t.canonical(other), to_json(with_scalars(s, other)).dump());
}

}  // namespace
}  // namespace am::jobs
