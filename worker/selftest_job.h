// Diagnostic jobs: the job process misbehaving on purpose, so that the executor and the whole
// system (worker -> coordinator -> store -> report) can be tested against real crashes, hangs
// and memory exhaustion without depending on the inference core.
//
// A job spec whose model is "selftest:<mode>" (architecture, backend, ... still valid) is run by
// run_job_mode() through run_selftest_job() instead of kernels::run_job(). Modes:
//   pass      writes a "pass" result with a small metrics document
//   fail      writes a "fail" result (reason names the selftest)
//   nan, inf  an output with NaN (or +/-Inf) values judged by the inference core's own output
//             check (compare_outputs + classify_accuracy): a "fail" result whose reason counts
//             the NaN/Inf values, as for a real model
//   noisy     prints kSelftestNoisyBytes of numbered lines to stdout and stderr, then passes;
//             the last line printed is kSelftestNoisyLastLine
//   fds       passes with metrics.open_fds = {"<fd>": "<target>"}: what the job inherited
//   segv      raises SIGSEGV            abort     calls std::abort() (SIGABRT)
//   sigkill   raises SIGKILL (what the kernel OOM killer does)
//   hang      sleeps forever (dies on SIGTERM)
//   stubborn  ignores SIGTERM and sleeps forever (only SIGKILL ends it)
//   exit3     exits with code 3         noresult  exits 0 without writing a result
//   alloc     allocates and touches memory until allocation fails (std::bad_alloc). Without a
//             memory limit it applies kSelftestAllocCapMb itself so it cannot take the machine
//             down.
// The list of modes with descriptions is jobs/selftest_models.h (plans may name them).
// Crashing modes disable core dumps first. These modes are a real code path of the shipped
// worker binary; they cost nothing unless a spec asks for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "jobs/job_spec.h"
#include "jobs/selftest_models.h"
#include "kernels/job_runner.h"

namespace am::worker {

inline constexpr std::string_view kSelftestModelPrefix = jobs::kSelftestModelPrefix;
inline constexpr std::size_t kSelftestNoisyBytes = 100u << 10;
inline constexpr std::string_view kSelftestNoisyLastLine = "selftest:noisy final line";
inline constexpr int64_t kSelftestAllocCapMb = 512;

bool is_selftest_model(std::string_view model);

// How a selftest ends when it returns at all: an outcome to write as the job's result, or an
// exit code to leave with and no result (exit3, noresult, unknown mode = 2).
struct SelftestEnd {
  std::optional<kernels::JobOutcome> outcome;
  int exit_code = 0;
};

// Runs the selftest named by spec.model. May not return (signals, hang) and may throw
// std::bad_alloc (alloc) — run_job_mode() maps that to kExitOutOfMemory like any job's.
SelftestEnd run_selftest_job(const jobs::JobSpec& spec, int64_t memory_limit_mb);

}  // namespace am::worker
