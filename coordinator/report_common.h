// What the exporters (Markdown, JSON) share: the run's provenance gathered from its result rows,
// timestamps and text made safe for any output.
//
// Contract: pure functions of their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/utf8.h"
#include "coordinator/store.h"

namespace am::coord {

struct WorkerSummary {
  std::string worker_id;
  std::string hostname;
  std::string build;
  std::vector<std::string> hardware_classes;
  std::vector<std::string> devices;
  int jobs = 0;                          // rows whose shown attempt ran on this worker
};

struct RunSummary {
  int total = 0;                         // jobs of the run
  int terminal = 0;                      // jobs with a terminal status
  std::map<ResultStatus, int> by_status;  // jobs with a terminal status
  std::map<JobState, int> by_state;       // jobs not terminal yet, under their state
  std::vector<WorkerSummary> workers;    // in order of first appearance
  std::vector<std::string> hardware_classes;
  std::vector<std::string> builds;
};

RunSummary summarize_run(const std::vector<ReportRow>& rows);

// Rows for a streaming report: visits every row of one run in job order (Store::
// for_each_report_row) with documents projected to `keys`. A report may walk them more than
// once, so every walk must give the same rows (the store's: inside Store::in_read_snapshot).
using ReportRowSource = std::function<Status(const ReportDocumentKeys& keys, const ReportRowVisitor& visit)>;
// A source over rows in memory; their texts are the JSON of their trees. `rows` must outlive it.
ReportRowSource rows_in_memory(const std::vector<ReportRow>& rows);

// Where a report goes, a piece at a time (a file being written, standard output, a string).
using TextSink = std::function<Status(std::string_view)>;

// The text `write` hands its sink, collected into one string, for writers whose source cannot
// fail (rows in memory): an error from `write` is a bug and aborts (AM_CHECK).
std::string collect_text(const std::function<Status(const TextSink&)>& write);

// summarize_run() with the rows given one at a time (streaming reports). finish() returns the
// summary of every row added and starts afresh.
class RunSummaryBuilder {
 public:
  void add(const ReportRow& row);
  RunSummary finish();

 private:
  RunSummary summary_;
  std::unordered_map<std::string, std::size_t> worker_index_;   // into summary_.workers
};

// What the reports show of a hardware class: its readable label (coordinator/hardware_label.h)
// and whether it is a software device (PoCL, lavapipe: the host CPU, not a GPU).
struct ClassInfo {
  std::string label;
  bool software = false;
};
// Every class the workers' stored capability records name (the first record naming it wins;
// records come from peers, so anything malformed is skipped).
std::map<std::string, ClassInfo> hardware_class_info(const std::vector<WorkerRecord>& workers);

// A matrix column's heading: "<backend> · <label>" (the class id when no record names it),
// "· software" for a software device; "<backend> · unplaced" for jobs that reached no hardware.
std::string column_heading(const std::string& backend, const std::string& hardware_class,
                           const std::map<std::string, ClassInfo>& classes);

// "2024-05-01T12:34:56.789Z" (UTC); "" for 0.
std::string format_utc(int64_t epoch_ms);

// An external command job's identity in reports: its spec's command name and precision_label
// (docs/PLANS.md); both empty for a model job. Two commands of one model label and backend are
// different cells, memory lines and compare pairs when either differs.
struct CommandIdentity {
  std::string name;    // "?" for a command spec without a name
  std::string label;   // precision_label, "" when the command gives none
};
std::optional<CommandIdentity> command_identity(const nlohmann::json& spec);
// "NAME LABEL" (or "NAME"), "" for a model job.
std::string command_key(const nlohmann::json& spec);

// Text from workers (log tails, reasons) goes through common/utf8.h (repair_utf8, utf8_tail)
// before it is written into JSON and Markdown.

}  // namespace am::coord
