// Internal to accelmatrix_jobs: a plan's [[commands]] array (external command jobs) → JobSpecs.
//
// Contract: read_command_tables() validates every entry (keys, types, ranges, a unique name, a
// known backend and reader, a non-empty argv) and reports each problem at its own position as
// "commands[I].KEY: what"; it returns one JobSpec per valid entry, in file order. The keys and
// their meaning are documented in docs/PLANS.md, "External commands".
#pragma once

#include <string>
#include <vector>

#include "jobs/job_spec.h"
#include "jobs/plan_settings.h"
#include "jobs/toml_support.h"

namespace am::jobs::detail {

// `mode` is the plan's; `defaults` gives timeout_s and memory_limit_mb when an entry sets none.
std::vector<JobSpec> read_command_tables(const toml::array& commands, const std::string& mode,
                                         const PlanSettings& defaults, ErrorList& errors);

}  // namespace am::jobs::detail
