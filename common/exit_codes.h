// Process exit codes of `accelmatrix` and `accelmatrix-worker`: one table (DECISIONS.md,
// "Statuses and exit codes"), and the rule that turns a run's job statuses into one of them.
//
//   0  kExitOk              every job ended in an accepted status (pass, degraded, unsupported,
//                           skipped, cancelled — anything not in the --fail-on set); or a
//                           command other than run/serve succeeded
//   1  kExitJobsFailed      some job ended in a status of the --fail-on set (default: fail,
//                           crash, timeout, oom, error — is_test_failure())
//   2  kExitUsage           usage or input error: unknown subcommand or flag, bad value, malformed
//                           endpoint, invalid plan, missing file, another plan under an
//                           existing run id (without --extend); CLI11's own codes map here
//   3  kExitInterrupted     stopped (Ctrl-C, SIGTERM) before every job was terminal
//   4  kExitInfrastructure  a job ended lost, or an infrastructure fault: the database (cannot
//                           open or write, in use by another coordinator), the network (cannot
//                           bind), local workers that cannot start
//
// When several apply, the first in the order 2, 3, 4, 1 wins: a usage error runs nothing; an
// interrupted run has no verdict yet; a lost job means the run's answer is incomplete, which a CI
// job should retry rather than report as a test failure.
//
// The worker's job-mode child exit codes (worker/executor.h, worker/job_mode.cpp) are a private
// protocol between the worker and its child and are not part of this table.
//
// Contract: pure functions, thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "common/result_status.h"
#include "common/status.h"

namespace am {

inline constexpr int kExitOk = 0;
inline constexpr int kExitJobsFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 3;
inline constexpr int kExitInfrastructure = 4;

// Text for `--help` footers and the README: one line per code.
std::string exit_code_help();

// The statuses that make a finished run exit kExitJobsFailed.
using FailOnSet = std::set<ResultStatus>;

// The default --fail-on set: every status for which is_test_failure() holds.
FailOnSet default_fail_on();

// Parses "fail,crash,timeout" (comma-separated, spaces around names ignored). Each name must be
// a job's final status (result_status.h) and not an infrastructure status (lost always exits 4;
// interrupted is never final); an empty list is refused. Errors are kInvalidArgument naming the
// word and the accepted names.
Result<FailOnSet> parse_fail_on(std::string_view text);

// The exit code of a run whose jobs are all terminal, from the count of jobs per status:
// kExitInfrastructure when any is lost (or any other is_infrastructure status), else
// kExitJobsFailed when any is in `fail_on`, else kExitOk.
int exit_code_for_statuses(const std::map<ResultStatus, int>& by_status, const FailOnSet& fail_on);

// The exit code for an error that stopped a command before or outside its jobs: input errors
// (kInvalidArgument, kNotFound, kAlreadyExists, kFailedPrecondition, kUnsupported) are kExitUsage; everything
// else (I/O, unavailable, timeout, internal) is kExitInfrastructure.
int exit_code_for_error(const Status& status);

}  // namespace am
