#include "common/exit_codes.h"

#include <algorithm>

namespace am {
namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// The names --fail-on accepts: final statuses that are not infrastructure.
std::string fail_on_names() {
  std::string out;
  for (ResultStatus s : all_result_statuses()) {
    if (is_infrastructure(s)) continue;
    if (!out.empty()) out += ", ";
    out += to_string(s);
  }
  return out;
}

}  // namespace

std::string exit_code_help() {
  return "Exit codes (run, serve --exit-when-done):\n"
         "  0  every job ended in an accepted status (pass, degraded, unsupported, skipped, ...)\n"
         "  1  a job ended in a --fail-on status (default: fail, crash, timeout, oom, error)\n"
         "  2  usage or input error (unknown subcommand or flag, bad value or endpoint, invalid plan,\n"
         "     another plan under an existing run id without --extend)\n"
         "  3  interrupted (Ctrl-C, SIGTERM) before every job finished; the same command resumes\n"
         "  4  a job was lost, or an infrastructure fault (database unusable or in use, cannot bind)";
}

FailOnSet default_fail_on() {
  FailOnSet out;
  for (ResultStatus s : all_result_statuses()) {
    if (is_test_failure(s)) out.insert(s);
  }
  return out;
}

Result<FailOnSet> parse_fail_on(std::string_view text) {
  FailOnSet out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string word = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (word.empty()) {
      if (comma == text.size() && !out.empty()) break;   // a trailing comma is harmless
      return invalid_argument("--fail-on: empty status name in '" + std::string(text) +
                              "' (expected a comma-separated list of: " + fail_on_names() + ")");
    }
    const std::optional<ResultStatus> s = parse_result_status(word);
    if (!s) {
      return invalid_argument("--fail-on: unknown status '" + word + "' (expected a comma-separated list of: " +
                              fail_on_names() + ")");
    }
    if (is_infrastructure(*s)) {
      return invalid_argument("--fail-on: '" + word + "' cannot be chosen: " +
                              (*s == ResultStatus::kLost ? std::string("a lost job always exits 4")
                                                         : std::string("it is never a job's final status")) +
                              " (expected: " + fail_on_names() + ")");
    }
    out.insert(*s);
  }
  return out;
}

int exit_code_for_statuses(const std::map<ResultStatus, int>& by_status, const FailOnSet& fail_on) {
  bool failed = false;
  for (const auto& [status, count] : by_status) {
    if (count <= 0) continue;
    if (is_infrastructure(status)) return kExitInfrastructure;
    if (fail_on.count(status)) failed = true;
  }
  return failed ? kExitJobsFailed : kExitOk;
}

int exit_code_for_error(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnsupported:
      return kExitUsage;
    default:
      return kExitInfrastructure;
  }
}

}  // namespace am
