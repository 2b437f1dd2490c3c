// Plans of many small jobs for the simulated fleet: bert-tiny on cpu at all nine precisions, with
// lists of batch sizes and sequence lengths long enough to expand to at least the jobs asked for.
//
// Contract: deterministic; the TOML is a valid plan for the shipped catalog (jobs/models) and
// expands to exactly SimPlan::jobs jobs (9 x batches x seq_lens; seq_len stays within bert-tiny's
// 512 positions).
#pragma once

#include <cstdint>
#include <string>

namespace am::sim {

struct SimPlan {
  std::string toml;
  int64_t jobs = 0;
};

// `mode` "accuracy" lets a worker's slots run jobs side by side; "perf" or "both" would make
// every job exclusive on its box (docs/PLANS.md "Placement"). `placement` is the plan default.
SimPlan many_jobs_plan(const std::string& name, int64_t min_jobs, const std::string& mode = "accuracy",
                       const std::string& placement = "each-class");

}  // namespace am::sim
