// Diagnostic "selftest:<mode>" models: jobs whose process misbehaves on purpose (crash, hang,
// exhaust memory, produce NaN/Inf, ...) so that the executor, the coordinator, the store and
// the reports can be checked end to end against real failures — by tests, health checks and
// users. The worker runs them (worker/selftest_job.h); this is the one list of their names.
//
// Contract: plans may name "selftest:<mode>" for any mode listed here (docs/PLANS.md
// "Diagnostic models"); they are not catalog files and stay out of the shipped plans. A
// selftest job takes every plan setting like any model, has no model_config, and carries
// architecture kSelftestArchitecture only because every job names one — it never builds a graph.
// Thread-safe: static data.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace am::jobs {

inline constexpr std::string_view kSelftestModelPrefix = "selftest:";
inline constexpr std::string_view kSelftestArchitecture = "encoder-only";
// What plans, reports and matrices show as a selftest job's architecture: it belongs to no family,
// and under kSelftestArchitecture a crashing diagnostic would read as an encoder-only finding.
inline constexpr std::string_view kSelftestShownArchitecture = "selftest";

struct SelftestMode {
  std::string_view name;         // "segv" for the model "selftest:segv"
  std::string_view description;  // what the job process does, for docs and errors
};

// Every mode, in the order docs and errors list them.
std::span<const SelftestMode> selftest_modes();

bool is_selftest_model(std::string_view model);   // starts with "selftest:"
// The architecture to show for a job of `model`: kSelftestShownArchitecture for a selftest
// model, else `architecture`.
std::string_view shown_architecture(std::string_view model, std::string_view architecture);
// "pass, fail, noisy, ..." — the known modes, for error messages.
std::string selftest_mode_names();
// OK for a known "selftest:<mode>"; NotFound naming the known modes otherwise (also for a
// name without the prefix).
Status check_selftest_model(std::string_view model);

}  // namespace am::jobs
