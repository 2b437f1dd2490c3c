// `accelmatrix compare`: two runs side by side, job by job, with a regression verdict that takes
// the spread of the raw latency samples into account (docs/REPORTS.md, "Compare").
//
// Contract:
// - Jobs are matched by (model, backend, hardware class, precision, batch, seq_len). When a run
//   holds several jobs with one key (e.g. placement "each-device" on identical devices), the k-th
//   of the base run is matched with the k-th of the new run, in job order. A job whose key
//   exists on one side only is a new or a missing job.
// - Latency of a matched pair is compared when both jobs stored at least
//   CompareOptions::min_samples raw samples (metrics.latency_ms.samples, positive and finite):
//   ratio = median(new samples) / median(base samples); a two-sided Mann–Whitney U test
//   (coordinator/stats.h) gives a p-value; the p-values of all compared pairs are adjusted
//   together with Holm's method; a pair is significantly slower (faster) when its adjusted p is
//   below alpha and new samples tend to be larger (smaller): P(new > base) > 1/2. A percentile
//   bootstrap confidence interval of the ratio is computed beside it.
// - A regression is a pair that is significantly slower and whose whole confidence interval lies
//   at or above 1 + threshold_pct / 100 (slower beyond the threshold with confidence, not only by
//   its point estimate), or
//   a job that was working (pass, degraded) in the base run and ended in a test failure (fail,
//   crash, timeout, oom, error) in the new one ("pass→fail"). New unsupported, new and missing jobs
//   are reported but are not regressions.
// - compare_runs() is pure: the same inputs give the same Comparison (the bootstrap is seeded).
//   The renderers are pure functions of a Comparison. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "coordinator/stats.h"
#include "coordinator/store.h"

namespace am::coord {

// Bumped only when a field of the JSON document is renamed or removed; fields may be added.
inline constexpr int kCompareJsonSchema = 1;

// The size from which a significant slowdown is called a regression when no gate names one:
// DECISIONS.md's gate for `compare` (at 0%, any significant drift between two runs of the same
// plan read "REGRESSION" while the exit code said none).
inline constexpr double kDefaultRegressionThresholdPct = 10.0;

struct CompareOptions {
  double alpha = 0.05;             // family-wise error rate over the compared pairs (Holm)
  double threshold_pct = kDefaultRegressionThresholdPct;   // a significant slowdown is a regression from this size on
  bool gate = false;               // --fail-on-regression given: the verdict sets the exit code
  std::size_t min_samples = 5;     // fewer raw samples on a side: latency not compared
  stats::BootstrapOptions bootstrap;
};

// What compare_runs() reads of a row's stored documents when the side carries spec texts (below):
// of the spec, the key's batch and seq_len; of the metrics, the raw latency samples, accuracy,
// process times and threads. Rows read with these keys compare exactly as whole rows do, in a
// fraction of the memory (a million-job run's metrics trees are gigabytes).
ReportDocumentKeys compare_document_keys();

// One run as compare sees it.
struct CompareSide {
  std::string db;                  // the database path as given
  RunRecord run;
  std::vector<ReportRow> rows;
  // Each row's stored spec as text (ReportRowTexts::spec_json), or empty: then spec changes are
  // found from rows[i].spec. With texts, a pair with equal texts has no changes and only pairs
  // whose texts differ are parsed (stored specs are canonical dumps: equal specs, equal texts).
  std::vector<std::string> spec_texts;
};

struct JobKey {
  std::string model, backend, hardware_class;
  // An external command's name and precision label ("llama-bench Q4_K_M"), "" for a model job:
  // two commands of one model label, backend and shape are different jobs (docs/PLANS.md: a
  // command's cell is its own), not a pair by job order.
  std::string command;
  jobs::Precision precision = jobs::Precision::kF32;
  int batch = 0;
  int seq_len = 0;
  bool operator<(const JobKey& o) const;
  bool operator==(const JobKey& o) const;
};

// What compare shows of one side of a pair.
struct ComparedSide {
  std::string job_id;
  JobState state = JobState::kQueued;
  std::optional<ResultStatus> status;
  std::string reason;
  std::vector<double> samples_ms;          // the stored raw samples that were usable
  std::optional<double> median_ms;         // of samples_ms
  std::optional<double> nmse, cosine, top1_agreement;
  // The job process's CPU time (user + system) and wall time, and the threads it ran: CPU time
  // well below wall × threads says the job waited for the cores (a busy host).
  std::optional<double> cpu_s, wall_s, threads;
  // The spec is not kept: spec changes are found from the rows (a copy per side was a third of a
  // large comparison's memory).
};

enum class LatencyVerdict {
  kNotCompared,   // see latency_note
  kSame,          // no significant difference
  kSlower,
  kFaster,
};

enum class StatusChange {
  kNone,            // same status on both sides
  kBroke,           // working (pass, degraded) -> test failure: a regression
  kFixed,           // test failure -> working
  kNewUnsupported,  // anything else -> unsupported
  kNowSupported,    // unsupported -> anything else
  kChanged,         // any other change of terminal status (pass -> degraded, -> lost, ...)
  kUnfinished,      // a side has no terminal status yet
  kNewJob,          // only in the new run
  kMissingJob,      // only in the base run
};

std::string_view to_string(LatencyVerdict v);
std::string_view to_string(StatusChange c);

struct SpecChange {
  std::string field;
  nlohmann::json base, fresh;
};

struct ComparedJob {
  JobKey key;
  int occurrence = 0;                      // k-th job with this key in its run (0-based)
  std::optional<ComparedSide> base, fresh;
  // Latency (set when verdict != kNotCompared).
  LatencyVerdict verdict = LatencyVerdict::kNotCompared;
  std::string latency_note;                // why not compared
  std::optional<double> ratio;             // median new / median base
  std::optional<stats::RatioInterval> ci;
  std::optional<double> p_value, p_holm;
  std::optional<double> effect;            // P(new > base) + P(equal)/2
  StatusChange status_change = StatusChange::kNone;
  bool regression = false;
  std::vector<SpecChange> spec_changes;    // settings that differ (threads, min_time_s, ...)
};

struct CompareSummary {
  int matched = 0;
  int compared = 0;                        // latency compared
  int slower = 0, faster = 0, same = 0;
  int slowdown_regressions = 0;            // significantly slower beyond the threshold
  int broke = 0, fixed = 0, new_unsupported = 0, now_supported = 0, changed = 0, unfinished = 0;
  int new_jobs = 0, missing_jobs = 0;
};

struct Comparison {
  std::string base_db, new_db;
  RunRecord base_run, new_run;
  int base_jobs = 0, new_jobs = 0;
  CompareOptions options;
  std::vector<ComparedJob> jobs;           // base job order, then jobs only in the new run
  CompareSummary summary;
  bool regression = false;                 // any job's regression flag
};

// kInvalidArgument for options out of range (alpha outside (0, 1), a negative or non-finite
// threshold, min_samples < 2).
Result<Comparison> compare_runs(const CompareSide& base, const CompareSide& fresh,
                                const CompareOptions& options);

std::string render_compare_markdown(const Comparison& c);
nlohmann::json render_compare_json(const Comparison& c);
// The same document as text without a tree of every job: the head laid out as dump(2) lays it
// out, then "jobs" last with one job per line. Parses equal to render_compare_json(c).
std::string render_compare_json_text(const Comparison& c);

}  // namespace am::coord
