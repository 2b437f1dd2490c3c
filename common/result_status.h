// The statuses a job's attempt can end in: one enum, one table, one string per value.
//
//   pass         ran; accuracy within the precision's tolerance
//   degraded     ran; accuracy outside "pass" but inside "degraded" tolerance
//   fail         ran; accuracy outside tolerance, or NaN/Inf in the output
//   crash        the job process died on a signal
//   timeout      the job process exceeded its time limit and was killed
//   oom          the job process exceeded its memory limit
//   error        the job process exited non-zero / could not start / reported an error
//   unsupported  the backend lacks an op or format the job needs (the reason names it)
//   skipped      not run: no eligible hardware, or the run's time budget ran out
//   lost         infrastructure retries exhausted (set by the coordinator)
//   cancelled    stopped on request
//   interrupted  an attempt cut by a clean stop; the job is retried, so it is never a job's
//                final status
//
// Contract: to_string() and parse_result_status() are the only conversions; they agree with the
// table exactly and parse returns nullopt for any other text. The classification predicates
// below are the one definition the scheduler, the exit codes and the reports use. Pure,
// thread-safe.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace am {

enum class ResultStatus : uint8_t {
  kPass,
  kDegraded,
  kFail,
  kCrash,
  kTimeout,
  kOom,
  kError,
  kUnsupported,
  kSkipped,
  kLost,
  kCancelled,
  kInterrupted,
};

std::span<const ResultStatus> all_result_statuses();   // in the order above

std::string_view to_string(ResultStatus s);
std::optional<ResultStatus> parse_result_status(std::string_view name);
std::string result_status_names();                      // "pass, degraded, ..." for messages
std::ostream& operator<<(std::ostream& out, ResultStatus s);   // its name

// The job ran and its output is usable, so its measurements count (pass, degraded).
bool is_working(ResultStatus s);

// The job's own process failed: fail, crash, timeout, oom, error. A test outcome: stored, never
// retried.
bool is_test_failure(ResultStatus s);

// An attempt ended for reasons outside the job (the attempt is retried, or the job is lost).
bool is_infrastructure(ResultStatus s);   // lost, interrupted

// A status a worker may report in a RESULT (PROTOCOL §5.6): all but the coordinator's own
// skipped, lost and interrupted.
bool is_worker_reported(ResultStatus s);

}  // namespace am
