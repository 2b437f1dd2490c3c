// The JSON export of one run, with a stable schema (version kReportJsonSchema).
//
// Contract: render_json() is a pure function of the run and its report rows
// (Store::report_rows); write_json_report() writes the same document from rows it walks once.
// Members are listed below by meaning; the file has them in the order write_json_report()
// says. Schema 3 (schema 2 lacked "columns", the cells' and overview's
// hardware_class, the cells' baseline_class and the results' target and exclusive: its matrix
// was by backend, not by hardware class; schema 1 lacked summary.host_*, the rating_rules after
// moderate_min_speedup, results' host_busy and the cells' speedup_ci_*, speedup_samples and
// *host_busy* fields, and had no "noisy" rating):
//   {
//     "schema": 3,
//     "run": {"run_id", "plan_name", "plan_path", "description", "created_at_ms",
//             "finished_at_ms" (0 while running), "created_at", "finished_at" (UTC ISO 8601 or
//             ""), "workers": [{"worker_id", "hostname", "build", "hardware_classes": [...],
//             "devices": [...], "jobs"}], "hardware_classes": [...], "builds": [...]},
//     "summary": {"total", "terminal", "by_status": {status-or-state: count},
//                 "host_measured_jobs" (jobs with metrics.host), "host_busy_jobs" (of which
//                 ran on a busy host, ratings.h host_busy)},
//     "rating_rules": {"baseline_backend", "baseline_precision", "excellent_min_speedup",
//                      "good_min_speedup", "moderate_min_speedup", "speedup_confidence",
//                      "speedup_resamples", "min_interval_samples", "busy_other_load_per_cpu",
//                      "busy_steal_fraction"},
//     "results": [ one per job, in job order:
//       {"job_id", "model", "architecture", "backend", "precision", "batch", "seq_len", "mode",
//        "seed", "scaled", "state", "status" ("" while not terminal), "reason", "attempt",
//        "attempts", "worker", "hostname", "hardware_class", "device", "build",
//        "started_at_ms", "finished_at_ms", "metrics": {...} (the stored document),
//        "log_tail" (at most kJsonLogTailBytes, tail end), "spec": {...},
//        "host_busy": true | false | null (no metrics.host), "target" (the placement target the
//        job was made for, "" for an `any` job, docs/PLANS.md "Placement"), "exclusive" (its
//        attempt held its hardware alone)} ],
//     "matrix": [ one per model × column × precision cell:
//       {"model", "architecture", "backend", "precision", "scaled", "status", "status_counts",
//        "rating" (machine key, see ratings.h rating_key; "noisy" when the speed-up's interval
//        straddles a threshold or a side had too few samples), "rating_label" ("≈ 1.15–1.62×"
//        for a noisy cell), "reason",
//        "representative_shape": {"batch", "seq_len"} | null, "median_ms", "baseline_ms",
//        "speedup" (median of the baseline's raw samples ÷ median of the cell's),
//        "speedup_ci_low", "speedup_ci_high" (its bootstrap interval; null without one),
//        "speedup_samples": {"cell", "baseline"} (raw samples pooled per side) | null,
//        "host_busy" (a job of the cell ran on a busy host), "host_busy_jobs",
//        "baseline_host_busy" (a baseline job at the representative shape did),
//        "nmse_max", "cosine_min", "top1_min" (number | null),
//        "shapes": [{"batch", "seq_len", "median_ms", "p90_ms", "tokens_per_s", "baseline_ms",
//                    "speedup"}], "job_ids": [...], "hardware_classes": [...],
//        "hardware_class" (the cell's column), "baseline_class" (the cpu class of its baseline,
//        "" without one)} ],
//     "columns": [ one per backend × hardware class (matrix.h), in report order:
//       {"backend", "hardware_class" ("" = jobs that reached no hardware), "label" (readable:
//        "cpu · AMD EPYC · 2 cores · AVX2", from the capability records), "software"} ],
//     "overview": [ one per architecture × column:
//       {"architecture", "backend", "hardware_class", "support" (full|partial|none|not run), "cells", "working",
//        "degraded", "failed", "unsupported", "not_run", "working_precisions": [...],
//        "best_speedup" | null, "best_precision", "best_model"} ]
//   }
// Fields are only ever added in later schema versions, never renamed or removed. All strings
// are valid UTF-8, so dump() never throws. Thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/matrix.h"
#include "coordinator/report_common.h"
#include "coordinator/store.h"

namespace am::coord {

inline constexpr int kReportJsonSchema = 3;   // 2 added the speed-up interval and host load fields;
                                              // 3 the hardware-class columns, targets, exclusive
// Log tails are for diagnosing a failure; the end of the output is what says why.
inline constexpr std::size_t kJsonLogTailBytes = 4096;

// `workers` (Store::list_workers) name the hardware classes in "columns"; without them a column's
// label is its class id.
nlohmann::json render_json(const RunRecord& run, const std::vector<ReportRow>& rows,
                           const std::vector<WorkerRecord>& workers = {});

// The same document written to `out` a piece at a time from one walk over the rows, which are
// never held: memory does not grow with the run beyond the matrix (job ids and latency samples
// per cell). Members in this order: "schema", "rating_rules", "results" (written as the rows
// are read), "run", "summary", "columns", "matrix", "overview" (gathered on the way). Laid out
// as dump(2) would, except that each element of "results" and of a cell's "shapes" is on one
// line, and a result's "metrics" and "spec" are the stored text (ReportRowTexts). Stops at the
// first error of the source or the sink.
Status write_json_report(const RunRecord& run, const std::vector<WorkerRecord>& workers,
                         const ReportRowSource& rows, const TextSink& out);

// The pieces of the document above, for exporters that carry the same objects (the dashboard).
nlohmann::json matrix_cell_json(const MatrixCell& cell);       // an element of "matrix"
nlohmann::json overview_cell_json(const OverviewCell& cell);   // an element of "overview"
nlohmann::json rating_rules_json();                           // "rating_rules"

}  // namespace am::coord
