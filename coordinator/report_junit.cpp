#include "coordinator/report_junit.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "common/utf8.h"
#include "coordinator/chunked_text.h"
#include "coordinator/report_common.h"
#include "coordinator/report_text.h"
#include "jobs/precision.h"

namespace am::coord {
namespace {

using nlohmann::json;

constexpr std::string_view kNoHardwareClass = "unplaced";   // as the matrix columns say (report_common.h)
constexpr std::string_view kSuiteSeparator = " \xC2\xB7 ";   // " · "
constexpr int kTimeDecimals = 6;                            // seconds, to the microsecond

enum class Outcome { kPassed, kFailure, kError, kSkipped };

struct Case {
  const ReportRow* row = nullptr;
  Outcome outcome = Outcome::kPassed;
  double time_s = 0;
};

// A suite's totals, gathered in a first walk over the rows; its cases are written in another.
struct Suite {
  std::string backend;
  std::string hardware_class;   // "" when unplaced
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time_s = 0;
  int64_t first_started_ms = 0;
};

// The one place a status becomes a JUnit outcome (DECISIONS "Statuses and exit codes").
Outcome outcome_of(const ReportRow& r) {
  if (!r.status) return Outcome::kSkipped;   // not run yet
  switch (*r.status) {
    case ResultStatus::kPass:
    case ResultStatus::kDegraded:
      return Outcome::kPassed;
    case ResultStatus::kFail:
    case ResultStatus::kCrash:
    case ResultStatus::kTimeout:
    case ResultStatus::kOom:
    case ResultStatus::kError:
      return Outcome::kFailure;
    case ResultStatus::kLost:
    case ResultStatus::kInterrupted:
      return Outcome::kError;
    case ResultStatus::kUnsupported:
    case ResultStatus::kSkipped:
    case ResultStatus::kCancelled:
      return Outcome::kSkipped;
  }
  return Outcome::kError;   // unreachable: every enumerator is handled above
}

std::optional<double> number_at(const json& metrics, std::string_view group, std::string_view key) {
  const json* v = metric_value(metrics, group, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

// Median latency when the job measured one, else the job process's wall time, else 0.
double case_time_s(const ReportRow& r) {
  if (auto median = number_at(r.metrics, "latency_ms", "median"); median && *median >= 0) return *median / 1000.0;
  if (auto wall = number_at(r.metrics, "process", "wall_s"); wall && *wall >= 0) return *wall;
  return 0;
}

std::string seconds(double s) { return format_fixed(s, kTimeDecimals); }

// JUnit timestamps have no zone suffix; ours are UTC.
std::string junit_timestamp(int64_t epoch_ms) {
  std::string utc = format_utc(epoch_ms);
  return utc.size() >= 19 ? utc.substr(0, 19) : utc;
}

std::string spec_int(const json& spec, const char* key) {
  if (!spec.is_object()) return "?";
  auto it = spec.find(key);
  if (it == spec.end() || !it->is_number_integer()) return "?";
  return std::to_string(it->get<int64_t>());
}

std::string attr(std::string_view text) { return xml_escape_attribute(report_text(text)); }

std::string suite_name(const Suite& s) {
  return s.backend + std::string(kSuiteSeparator) +
         (s.hardware_class.empty() ? std::string(kNoHardwareClass) : s.hardware_class);
}

void property(std::string& out, std::string_view indent, std::string_view name, std::string_view value) {
  out += indent;
  out += "<property name=\"";
  out += attr(name);
  out += "\" value=\"";
  out += attr(value);
  out += "\"/>\n";
}

// "<status>: <reason>", or the status alone when there is no reason.
std::string with_reason(std::string_view word, const std::string& reason) {
  std::string out(word);
  if (!reason.empty()) out += ": " + reason;
  return out;
}

void write_case(std::string& out, const Case& c) {
  const ReportRow& r = *c.row;
  const std::string status = r.status ? std::string(to_string(*r.status)) : std::string(to_string(r.state));
  out += "    <testcase classname=\"" + attr(r.model) + "\" name=\"" +
         attr(std::string(jobs::to_string(r.precision)) + " b" + spec_int(r.spec, "batch") + " s" +
              spec_int(r.spec, "seq_len") + " [" + r.job_id + "]") +
         "\" time=\"" + seconds(c.time_s) + "\">\n";

  out += "      <properties>\n";
  constexpr std::string_view kIndent = "        ";
  property(out, kIndent, "job_id", r.job_id);
  property(out, kIndent, "status", status);
  property(out, kIndent, "architecture", r.architecture);
  property(out, kIndent, "hardware_class", r.hardware_class);
  property(out, kIndent, "device", r.device);
  property(out, kIndent, "worker", r.worker_id);
  property(out, kIndent, "attempt", std::to_string(r.attempt));
  if (const json* v = metric_value(r.metrics, "latency_ms", "median")) {
    property(out, kIndent, "median_latency_ms", json_number_text(v));
  }
  if (const json* v = metric_value(r.metrics, "accuracy", "nmse")) property(out, kIndent, "nmse", json_number_text(v));
  out += "      </properties>\n";

  const std::string log_tail = report_text(utf8_tail(r.log_tail, kJunitLogTailBytes, kUtf8Ellipsis));
  auto with_log = [&](const char* element) {
    out += "      <" + std::string(element) + " type=\"" + attr(status) + "\" message=\"" +
           attr(r.reason.empty() ? status : r.reason) + "\">";
    out += xml_escape_text(log_tail);
    out += "</" + std::string(element) + ">\n";
  };
  switch (c.outcome) {
    case Outcome::kPassed:
      if (r.status == ResultStatus::kDegraded) {
        out += "      <system-out>" +
               xml_escape_text(report_text(with_reason(
                   "degraded (accuracy outside the pass tolerance, inside the degraded one)", r.reason))) +
               "</system-out>\n";
      }
      break;
    case Outcome::kFailure:
      with_log("failure");
      break;
    case Outcome::kError:
      with_log("error");
      break;
    case Outcome::kSkipped:
      out += "      <skipped message=\"" +
             attr(r.status ? with_reason(status, r.reason) : "not run yet (" + status + ")") + "\"/>\n";
      break;
  }
  out += "    </testcase>\n";
}

}  // namespace

namespace {

// What the cases read of a row's documents (report_common.h: projections).
ReportDocumentKeys junit_keys() {
  static const std::vector<std::string_view> spec{"batch", "seq_len"};
  static const std::vector<std::string_view> metrics{"latency_ms.median", "process.wall_s", "accuracy.nmse"};
  return ReportDocumentKeys{&spec, &metrics};
}

// Cases are handed to the sink in pieces of about this size.
constexpr std::size_t kJunitFlushBytes = 1 << 20;

bool in_suite(const ReportRow& r, const Suite& s) {
  return s.backend == r.backend && s.hardware_class == r.hardware_class;
}

}  // namespace

Status write_junit_report(const RunRecord& run, const ReportRowSource& rows, const TextSink& sink) {
  // The suites' totals head the document, so a first walk gathers them. A second writes the
  // cases: the first suite's straight to the sink, the others' kept as text until their suite's
  // turn (a run of one suite holds nothing; each suite's cases stay in job order).
  std::vector<Suite> suites;
  std::size_t last = 0;
  AM_RETURN_IF_ERROR(rows(junit_keys(), [&](const ReportRow& r, const ReportRowTexts&) {
    if (last >= suites.size() || !in_suite(r, suites[last])) {
      auto it = std::find_if(suites.begin(), suites.end(), [&](const Suite& s) { return in_suite(r, s); });
      if (it == suites.end()) it = suites.insert(suites.end(), Suite{r.backend, r.hardware_class, 0, 0, 0, 0, 0, 0});
      last = static_cast<std::size_t>(it - suites.begin());
    }
    Suite& suite = suites[last];
    ++suite.tests;
    switch (outcome_of(r)) {
      case Outcome::kPassed: break;
      case Outcome::kFailure: ++suite.failures; break;
      case Outcome::kError: ++suite.errors; break;
      case Outcome::kSkipped: ++suite.skipped; break;
    }
    suite.time_s += case_time_s(r);
    if (r.started_at_ms > 0 && (suite.first_started_ms == 0 || r.started_at_ms < suite.first_started_ms)) {
      suite.first_started_ms = r.started_at_ms;
    }
    return Status::Ok();
  }));

  int64_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double time_s = 0;
  for (const Suite& s : suites) {
    tests += s.tests;
    failures += s.failures;
    errors += s.errors;
    skipped += s.skipped;
    time_s += s.time_s;
  }

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"" + attr("accelmatrix " + run.run_id) + "\" tests=\"" + std::to_string(tests) +
         "\" failures=\"" + std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
         "\" skipped=\"" + std::to_string(skipped) + "\" time=\"" + seconds(time_s) + "\"";
  if (run.created_at_ms > 0) out += " timestamp=\"" + junit_timestamp(run.created_at_ms) + "\"";
  out += ">\n";
  std::vector<ChunkedText> held(suites.size());
  const auto suite_open = [&](std::string& text, std::size_t index) {
    const Suite& s = suites[index];
    text += "  <testsuite name=\"" + attr(suite_name(s)) + "\" id=\"" + std::to_string(index) + "\" package=\"" +
            attr(s.backend) + "\" tests=\"" + std::to_string(s.tests) + "\" failures=\"" +
            std::to_string(s.failures) + "\" errors=\"" + std::to_string(s.errors) + "\" skipped=\"" +
            std::to_string(s.skipped) + "\" time=\"" + seconds(s.time_s) + "\"";
    const int64_t stamp = s.first_started_ms > 0 ? s.first_started_ms : run.created_at_ms;
    if (stamp > 0) text += " timestamp=\"" + junit_timestamp(stamp) + "\"";
    text += ">\n";
    text += "    <properties>\n";
    constexpr std::string_view kIndent = "      ";
    property(text, kIndent, "run_id", run.run_id);
    property(text, kIndent, "plan", run.plan_name);
    property(text, kIndent, "backend", s.backend);
    property(text, kIndent, "hardware_class", s.hardware_class);
    text += "    </properties>\n";
  };
  if (!suites.empty()) {
    suite_open(out, 0);
    last = 0;
    AM_RETURN_IF_ERROR(rows(junit_keys(), [&](const ReportRow& r, const ReportRowTexts&) {
      if (!in_suite(r, suites[last])) {
        last = static_cast<std::size_t>(
            std::find_if(suites.begin(), suites.end(), [&](const Suite& s) { return in_suite(r, s); }) - suites.begin());
        // Every row found its suite in the first walk; the snapshot gives the same rows again.
        if (last == suites.size()) return internal_error("junit: a row of no suite in the second walk");
      }
      if (last > 0) {
        write_case(held[last].tail(), Case{&r, outcome_of(r), case_time_s(r)});
        return Status::Ok();
      }
      write_case(out, Case{&r, outcome_of(r), case_time_s(r)});
      if (out.size() < kJunitFlushBytes) return Status::Ok();
      Status st = sink(out);
      out.clear();
      return st;
    }));
    out += "  </testsuite>\n";
    for (std::size_t i = 1; i < suites.size(); ++i) {
      suite_open(out, i);
      AM_RETURN_IF_ERROR(sink(out));
      out.clear();
      AM_RETURN_IF_ERROR(held[i].write_to(sink));
      held[i].clear();
      out += "  </testsuite>\n";
    }
  }
  out += "</testsuites>\n";
  return sink(out);
}

std::string render_junit(const RunRecord& run, const std::vector<ReportRow>& rows) {
  return collect_text([&](const TextSink& sink) { return write_junit_report(run, rows_in_memory(rows), sink); });
}

}  // namespace am::coord
