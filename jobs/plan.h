// Plan files (TOML) → expanded job list.
//
// Contract: load_plan() parses and validates a plan file against the model catalog and returns
// every job it expands to, in a deterministic order. Every error names the file, the line (and
// column where known) and what is wrong: "smoke.toml:7:14: unknown precision 'q5' (expected
// one of f32, f16, ...)". Nothing is run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "jobs/job_spec.h"

namespace am::jobs {

// A job of a plan, or one made from it for a placement target: `target` is "" for the plan's
// own job (the template of each-class / each-device jobs, or the job itself under `any`) and
// the class or device target (jobs/placement.h) for a job made for it; job_id is
// compute_job_id(run, spec, target).
struct PlannedJob {
  std::string job_id;
  JobSpec spec;
  std::string target;
  // The expansion's ordinal of the job's spec family (jobs/spec_family.h): jobs of one plan with
  // the same ordinal are of one family, so a reader can group them without comparing specs; -1
  // when not known (a job made outside the expansion).
  int32_t family = -1;
};

struct Plan {
  std::string name;               // [plan].name; the default run id
  std::string run_id;             // the run its job ids were hashed for: the loader's, or `name`
  std::string description;
  std::filesystem::path source;   // the file it was read from
  double time_budget_s = 0;       // 0 = none
  std::vector<PlannedJob> jobs;
};

// The plan's content hash, "v2:" and 16 hex digits: of its expanded jobs, in any order, so a
// comment, a reordering, a description or a time budget changes nothing, while any job added,
// removed or changed does (DECISIONS.md: "the hash of the expanded job specs, not of the file's
// bytes"). It hashes the sorted job ids: each id is already a 64-bit hash of the run id and the
// job's canonical spec (compute_job_id), so a changed spec is a changed id, and a million-job
// plan hashes 17 MB instead of its 450 MB of canonical specs again (1.4 s of a restart). Job ids
// include the run id (the plan's name by default), so a renamed plan is another plan. A run stores it and refuses a
// different plan under the same run id unless extended on purpose.
std::string plan_hash(const std::vector<PlannedJob>& jobs);
// The first definition (schema 3 to 2026-11-28), 16 hex digits: every "id canonical-spec" line,
// sorted, hashed in turn. Runs stored before v2 carry it; a submit that finds one compares the
// plan's v1 hash once and, when it matches, stores the v2 hash.
std::string plan_hash_v1(const std::vector<PlannedJob>& jobs);
// Whether a stored hash is of the first definition (16 hex digits, no version prefix).
bool is_plan_hash_v1(std::string_view stored);

// `catalog_dir` holds the model catalog (jobs/models/*.toml). When empty, find_catalog_dir()
// is used.
// `run_id`: the run the plan's jobs are for (a job's id hashes its run id, DECISIONS.md), so
// one plan run as two runs on one coordinator gives two sets of jobs; empty for the plan's own
// name (the default run id). Not checked here (callers check it with is_valid_identifier).
Result<Plan> load_plan(const std::filesystem::path& plan_file,
                       const std::filesystem::path& catalog_dir = {}, std::string_view run_id = {});

// A plan's TOML text that did not come from a file here (a plan sent to a live coordinator with
// `accelmatrix submit`): `display_name` (the client's file name) stands in for the file in
// messages and in Plan::source; `catalog_dir` must be given.
Result<Plan> load_plan_text(const std::string& text, const std::filesystem::path& display_name,
                            const std::filesystem::path& catalog_dir, std::string_view run_id = {});

// What a coordinator's restart needs of a plan besides its jobs (coordinator/server.h,
// Server::resume): the [plan] table, read without expanding the plan. An error wherever the full
// load would report one in that table (the caller then loads the plan, for the whole message).
struct PlanSummary {
  std::string name;
  std::string description;
  std::filesystem::path source;
  double time_budget_s = 0;
};
// A plan file's text, for load_plan_text() and the digest of what it expands from
// (jobs/plan_digest.h); errors as load_plan() reports them.
Result<std::string> read_plan_file(const std::filesystem::path& plan_file);
Result<PlanSummary> load_plan_summary_text(const std::string& text, const std::filesystem::path& display_name);

// The catalog directory: $ACCELMATRIX_CATALOG, else <plan dir>/../models, else the source
// tree's jobs/models (compiled in).
std::filesystem::path find_catalog_dir(const std::filesystem::path& plan_file);

// The plans directory of the source tree (compiled in), for `run` without --plan.
std::filesystem::path default_plans_dir();

}  // namespace am::jobs
