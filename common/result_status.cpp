#include "common/result_status.h"

#include <array>
#include <ostream>

#include "common/check.h"

namespace am {
namespace {

struct StatusName {
  ResultStatus status;
  std::string_view name;
};

constexpr std::array<StatusName, 12> kStatuses = {{
    {ResultStatus::kPass, "pass"},
    {ResultStatus::kDegraded, "degraded"},
    {ResultStatus::kFail, "fail"},
    {ResultStatus::kCrash, "crash"},
    {ResultStatus::kTimeout, "timeout"},
    {ResultStatus::kOom, "oom"},
    {ResultStatus::kError, "error"},
    {ResultStatus::kUnsupported, "unsupported"},
    {ResultStatus::kSkipped, "skipped"},
    {ResultStatus::kLost, "lost"},
    {ResultStatus::kCancelled, "cancelled"},
    {ResultStatus::kInterrupted, "interrupted"},
}};

constexpr std::array<ResultStatus, 12> kAll = {
    ResultStatus::kPass,    ResultStatus::kDegraded,    ResultStatus::kFail,
    ResultStatus::kCrash,   ResultStatus::kTimeout,     ResultStatus::kOom,
    ResultStatus::kError,   ResultStatus::kUnsupported, ResultStatus::kSkipped,
    ResultStatus::kLost,    ResultStatus::kCancelled,   ResultStatus::kInterrupted};

}  // namespace

std::span<const ResultStatus> all_result_statuses() { return kAll; }

std::string_view to_string(ResultStatus s) {
  for (const StatusName& n : kStatuses) {
    if (n.status == s) return n.name;
  }
  AM_CHECK(false, "result status enum value outside the table");
  return "";
}

std::optional<ResultStatus> parse_result_status(std::string_view name) {
  for (const StatusName& n : kStatuses) {
    if (n.name == name) return n.status;
  }
  return std::nullopt;
}

std::string result_status_names() {
  std::string out;
  for (const StatusName& n : kStatuses) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

std::ostream& operator<<(std::ostream& out, ResultStatus s) { return out << to_string(s); }

bool is_working(ResultStatus s) {
  return s == ResultStatus::kPass || s == ResultStatus::kDegraded;
}

bool is_test_failure(ResultStatus s) {
  switch (s) {
    case ResultStatus::kFail:
    case ResultStatus::kCrash:
    case ResultStatus::kTimeout:
    case ResultStatus::kOom:
    case ResultStatus::kError:
      return true;
    default:
      return false;
  }
}

bool is_infrastructure(ResultStatus s) {
  return s == ResultStatus::kLost || s == ResultStatus::kInterrupted;
}

bool is_worker_reported(ResultStatus s) {
  return s != ResultStatus::kSkipped && s != ResultStatus::kLost && s != ResultStatus::kInterrupted;
}

}  // namespace am
