// Compatibility matrices derived from stored results — never typed in.
//
// Contract: build_matrix() is a pure function of the report rows of one run (Store::report_rows):
//   - columns: one per backend × hardware class that has a job (docs/PLANS.md "Placement": a
//     job made for a class, or the class its attempt ran on). Jobs that never reached hardware —
//     not leased yet, or settled for want of hardware — form the backend's column with an
//     empty class;
//   - cells: one per model × column × precision that has at least one job, with the cell's
//     status and rating (rules in coordinator/ratings.h), latency, accuracy, and the ids of the
//     jobs behind it;
//   - overview: one per architecture × column that has at least one job.
// Latency comes from jobs that ran (pass or degraded) and reported latency_ms.median. Jobs of
// the same shape (batch, seq_len) are combined by the median of their medians. A cell's
// speed-up is taken at its representative shape: the smallest (batch, then seq_len) shape for
// which both the cell and the cpu f32 cell of the same model have a latency; without such a
// shape, the cell's smallest measured shape is shown with no speed-up. The cell's speed-up and
// its interval come from the raw samples of that shape's jobs, pooled per side
// (estimate_speedup, ratings.h); the per-shape speed-ups in `shapes` are ratios of medians.
// Paired baselines: a perf job other than cpu f32 times the cpu f32 graph of its own model and
// shape in blocks alternating with its own runs (kernels/measure.h measure_paired_latency) and
// stores those samples as metrics.paired_baseline. Where every measured job of a shape carries
// one, that shape's baseline is the paired one — the same host at the same moments, so drift of
// the host between jobs cancels — and the shape counts as having a baseline even where no
// baseline cell was measured. Otherwise the baseline is the baseline cell, as follows.
// The baseline of a cell is the cpu f32 cell of the same model on the cpu class of the host the
// cell's jobs ran on: the cell's own class for a cpu column; for another backend's column the
// cpu class of the workers that ran it (the most common one, when they differ), or the run's only
// cpu class. A cell without such a baseline shows its latency and no speed-up.
// Host load: jobs whose metrics.host says the host was busy (host_busy, ratings.h) are counted
// per cell, and for the baseline's jobs at the representative shape. Accuracy is the worst
// over every terminal job of the cell that reported it (largest NMSE, smallest cosine and
// top-1 agreement). Orders (models, backends, precisions, architectures) follow the first
// appearance in the rows, i.e. plan order. Thread-safe (no shared state).
// Command jobs (spec.command) form cells of their own (see MatrixCell::command).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/ratings.h"
#include "coordinator/store.h"

namespace am::coord {

struct ShapeLatency {
  int batch = 0;
  int seq_len = 0;
  double median_ms = 0;                  // median over the cell's jobs of this shape
  std::optional<double> p90_ms;
  std::optional<double> tokens_per_s;
  std::optional<double> baseline_ms;     // the cpu f32 median for the same shape (see `paired`)
  std::optional<double> speedup;         // baseline_ms / median_ms
  // The jobs of this shape timed their own cpu f32 baseline alongside (metrics.paired_baseline):
  // baseline_ms is the median of those, not the baseline cell's.
  bool paired = false;
};

// A column of the matrix: a backend on one hardware class.
struct MatrixColumn {
  std::string backend;
  std::string hardware_class;            // "" for jobs that reached no hardware
  bool operator==(const MatrixColumn&) const = default;
};

struct MatrixCell {
  std::string model;
  std::string architecture;
  std::string backend;
  std::string hardware_class;            // the cell's column (MatrixColumn)
  jobs::Precision precision = jobs::Precision::kF32;
  bool scaled = false;                   // any job of the cell ran a scaled-down model
  // The external command behind the cell ([[commands]] name), empty for our own jobs. A command
  // cell is never a baseline and never merges with a built-in job's cell; its speed-up is taken
  // against the built-in cpu f32 cell of the same model label and shape when that exists.
  std::string command;
  std::string command_precision_label;   // the command's precision_label, "" when it gives none
  // What keys a command's cell beside model, backend, class and precision: name and label.
  std::string command_key() const {
    return command_precision_label.empty() ? command : command + " " + command_precision_label;
  }
  std::optional<ResultStatus> status;    // most severe terminal status; nullopt when none is
  std::map<ResultStatus, int> status_counts;   // per terminal job status
  int pending = 0;                       // jobs not terminal yet
  Rating rating = Rating::kNotRun;
  std::string reason;                    // reason of the job that set the status (❌, skipped)
  std::vector<ShapeLatency> shapes;      // ordered by (batch, seq_len)
  std::optional<int> rep_batch;          // the representative shape, when any latency exists
  std::optional<int> rep_seq_len;
  std::optional<double> median_ms;       // at the representative shape
  std::optional<double> baseline_ms;
  std::optional<double> speedup;          // the estimate of speedup_interval, when there is one
  std::optional<SpeedupEstimate> speedup_interval;
  bool speedup_paired = false;            // from paired baselines (ShapeLatency::paired)
  int host_busy_jobs = 0;                 // the cell's jobs that ran on a busy host
  std::optional<double> busy_other_load_per_cpu;   // the largest over those jobs
  std::optional<double> busy_steal_fraction;       // the largest over those jobs
  bool baseline_host_busy = false;        // a baseline job at the representative shape did
  std::optional<double> nmse_max;
  std::optional<double> cosine_min;
  std::optional<double> top1_min;
  std::vector<std::string> job_ids;      // the result rows behind the cell, in job order
  std::vector<std::string> hardware_classes;   // {hardware_class}, or empty (kept for readers)
  std::string baseline_class;            // the cpu class whose f32 cell is the baseline; "" = none
  // A command cell whose model label names this many configs of the model in the run (> 1):
  // there is no single cpu f32 cell to rate it against, and none is taken.
  int baseline_configs = 0;
};

// How well an architecture runs on a backend, over all its cells.
struct OverviewCell {
  std::string architecture;
  std::string backend;
  std::string hardware_class;
  int cells = 0;
  int working = 0;          // cells that ran (pass/degraded)
  int degraded = 0;         // of which degraded
  int failed = 0;           // ❌ failures
  int unsupported = 0;      // ❌ unsupported
  int not_run = 0;
  int pending = 0;          // cells with jobs still out and no failure yet (Rating::kPending)
  // "full": every cell that finished works; "partial": some work, some ❌; "none": all ❌;
  // "pending": nothing finished yet, jobs still out; "not run": nothing finished or out.
  std::string support;
  std::vector<jobs::Precision> working_precisions;
  std::optional<double> best_speedup;    // over the cells' speed-ups
  std::optional<jobs::Precision> best_precision;
  std::string best_model;
};

struct Matrix {
  std::vector<std::string> architectures;
  std::vector<std::string> models;
  std::vector<std::string> backends;
  std::vector<MatrixColumn> columns;     // grouped by backend (in backend order), then first appearance
  std::vector<jobs::Precision> precisions;
  std::vector<MatrixCell> cells;         // ordered by column, model, precision
  std::vector<OverviewCell> overview;    // ordered by architecture, column
};

Matrix build_matrix(const std::vector<ReportRow>& rows);

// build_matrix() with the rows given one at a time, for reports that stream them
// (Store::for_each_report_row): it keeps per cell what the matrix shows (job ids, latency
// samples), not the rows. finish() returns the matrix of every row added and starts afresh.
class MatrixBuilder {
 public:
  MatrixBuilder();
  ~MatrixBuilder();
  MatrixBuilder(MatrixBuilder&&) noexcept;
  MatrixBuilder& operator=(MatrixBuilder&&) noexcept;
  void add(const ReportRow& row);
  Matrix finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The members of the stored spec and metrics the matrix reads, as StoredJsonReader projections
// ("group.member"): rows whose documents hold only these (ReportDocumentKeys) give the same
// matrix as whole ones.
const std::vector<std::string_view>& matrix_spec_keys();
const std::vector<std::string_view>& matrix_metrics_keys();

// The first cell of (model, backend, precision) in any column; and the one of a given column.
const MatrixCell* find_cell(const Matrix& matrix, std::string_view model, std::string_view backend,
                            jobs::Precision precision);
const MatrixCell* find_cell(const Matrix& matrix, std::string_view model, const MatrixColumn& column,
                            jobs::Precision precision);
// The overview cell of (architecture, backend) in the first column of that backend; and of a column.
const OverviewCell* find_overview(const Matrix& matrix, std::string_view architecture,
                                  std::string_view backend);
const OverviewCell* find_overview(const Matrix& matrix, std::string_view architecture,
                                  const MatrixColumn& column);

// metrics.host of a perf job (worker/host_load.h); nullopt when the job recorded none.
std::optional<HostLoad> host_load(const nlohmann::json& metrics);

// metrics[group][key] when it is a number, e.g. metric_number(m, "latency_ms", "median").
std::optional<double> metric_number(const nlohmann::json& metrics, std::string_view group,
                                    std::string_view key);

}  // namespace am::coord
