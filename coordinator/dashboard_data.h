// The data behind the HTML dashboard (`report --format html`, coordinator/report_html.h).
//
// Contract: dashboard_data() is a pure function of one run, its report rows
// (Store::report_rows), the workers' capability records (Store::list_workers) and the time it
// is stamped with. Everything the page shows comes from here, so the page can only show what a
// stored result backs. Schema kDashboardSchema (2):
//   {"schema", "generated_at",
//    "run": {"run_id", "plan_name", "plan_path", "description", "created_at", "finished_at"},
//    "summary": {"total", "terminal", "by_status": {status: n}, "by_state": {state: n}},
//    "builds": [...], "rating_rules": {as in the JSON report},
//    "workers": [{"worker_id", "hostname", "build", "jobs", "hardware_classes"}],
//    "classes": [ one per hardware class that ran a job of the run, in order of appearance:
//       {"id", "label" (coordinator/hardware_label.h), "backend", "software", "jobs",
//        "workers": [...], "device": {...}, "cpu": {"model", "vendor", "arch", "isa_level",
//        "isa": [flags that are true]}, "topology": {...}, "host": {...}} ],
//    "precisions": [{"name", "group", "bits"}] (every precision of the table, table order, then
//       {"external", "external", null} when a command cell carries that label: bits may be null),
//    "overview": [ the JSON report's overview cells, plus "best_rating" (rating key of the
//       best-rated cell) and "hardware_classes" ],
//    "cell_count": n,
//    "cells": {field: [one value per cell, in matrix order]}: the JSON report's matrix cells by
//       column (same fields — the speed-up's interval, the noisy rating and the busy-host marks
//       included — less "job_ids"), plus "group", "bits", "peak_rss_max", "jobs": [indices
//       into "jobs"] },
//    "failures": [ {"architecture", "backend", "status", "reason", "count", "jobs": [...]} per
//       distinct (architecture, backend, status, reason) of failed/unsupported jobs ],
//    "strings": [...]  interned text: a column marked (s) below holds an index into it,
//    "job_count": n, "jobs": {column name: [one value per job, in job order]} }
// Job columns (dashboard_job_columns()): id, model(s), architecture(s), backend(s), precision(s), batch,
// seq_len, mode(s), status(s) (the state word while not terminal), reason(s), attempt, attempts,
// worker(s), hardware_class(s), device(s), build(s), seed (text: may exceed 2^53), scaled (0/1),
// start_s (seconds after the run was created), wall_s, latency ([count, min, q1, median, q3,
// max, p90] in ms, or null), histogram (counts of kHistogramBins equal bins over [min, max], or
// null), tokens_per_s, ttft_ms, decode_tokens_per_s, nmse, cosine, top1, kl,
// peak_rss_bytes, noisy (0/1), cell (index into "cells"), host ([load_start, load_end, cpus,
// other_load, steal_fraction] from metrics.host, or null), host_busy (0/1, ratings.h host_busy;
// null without metrics.host).
// Floats are rounded to kSignificantDigits; a missing number is null. Quantiles are computed
// from the stored raw samples (linear interpolation between order statistics) when present,
// else from the stored summary (q1/q3 null). A job is "noisy" when its interquartile range
// exceeds kNoisyRelativeIqr of its median. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/report_common.h"
#include "coordinator/store.h"

namespace am::coord {

inline constexpr int kDashboardSchema = 2;
// DECISIONS.md "Measurement": at most 32 bins per job; 16 resolve a latency distribution well
// enough to see two modes and keep 100k jobs small.
inline constexpr int kHistogramBins = 16;
inline constexpr int kSignificantDigits = 4;
// (q3 - q1) / median above this marks a measurement as noisy (dimensionless).
inline constexpr double kNoisyRelativeIqr = 0.10;

// The job columns, in order.
const std::vector<const char*>& dashboard_job_columns();

nlohmann::json dashboard_data(const RunRecord& run, const std::vector<ReportRow>& rows,
                              const std::vector<WorkerRecord>& workers, int64_t generated_at_ms);

// The same data built from rows given one at a time (a streaming report): the job table is kept
// as the JSON text the page carries, never as trees, so a million jobs cost their bytes.
// add() each row in job order (with documents projected to keys()), then finish() once: the
// document as JSON text (dashboard_data() is that parsed). `workers` must outlive the builder.
class DashboardBuilder {
 public:
  DashboardBuilder(const RunRecord& run, const std::vector<WorkerRecord>& workers);
  ~DashboardBuilder();
  DashboardBuilder(const DashboardBuilder&) = delete;
  DashboardBuilder& operator=(const DashboardBuilder&) = delete;

  // What the data reads of a row's spec and metrics documents.
  static const ReportDocumentKeys& keys();
  void add(const ReportRow& row);
  std::string finish(int64_t generated_at_ms);
  // The same text handed to `sink` a piece at a time (the job table a column at a time, each
  // freed once written). Stops at the sink's first error.
  Status finish(int64_t generated_at_ms, const TextSink& sink);

 private:
  struct State;   // holds pointers into the constructor's `workers`
  std::unique_ptr<State> state_;
};

}  // namespace am::coord
