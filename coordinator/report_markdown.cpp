#include "coordinator/report_markdown.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <string_view>

#include <fmt/format.h>

#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_common.h"
#include "coordinator/report_text.h"

namespace am::coord {
namespace {

// Reasons can be whole error messages; a table cell shows the start, the JSON export has all.
constexpr std::size_t kMaxCellTextChars = 160;
constexpr std::string_view kMissing = "—";
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// Valid UTF-8, one line, no unescaped '|', bounded length.
std::string cell_text(std::string_view raw) { return markdown_cell(raw, kMaxCellTextChars); }

std::string code(std::string_view raw) {
  if (raw.empty()) return std::string(kMissing);
  return markdown_code(raw, kMaxCellTextChars);
}

std::string fixed(std::optional<double> v, int decimals) {
  if (!v) return std::string(kMissing);
  return fmt::format("{:.{}f}", *v, decimals);
}

std::string scientific(std::optional<double> v) {
  if (!v) return std::string(kMissing);
  return fmt::format("{:.2e}", *v);
}

// Sub-millisecond latencies need more decimals than multi-second ones to stay readable.
std::string millis(std::optional<double> v) {
  if (!v) return std::string(kMissing);
  const double ms = *v;
  return fixed(v, ms < 10 ? 3 : ms < 100 ? 2 : 1);
}

std::string speedup_text(std::optional<double> v) {
  if (!v) return std::string(kMissing);
  return speedup_number(*v) + "×";
}

// A terminal status with its emoji, or a job that is not terminal yet under `waiting` (its state,
// or "pending" for a cell).
std::string status_text(std::optional<ResultStatus> status, std::string_view waiting) {
  if (!status) return std::string(status_emoji(std::nullopt)) + " " + std::string(waiting);
  return std::string(status_emoji(status)) + " " + std::string(to_string(*status));
}

std::string status_name(std::optional<ResultStatus> status) {
  return status ? std::string(to_string(*status)) : std::string("pending");
}

std::string precision_text(jobs::Precision p) { return cell_text(std::string(jobs::to_string(p))); }

std::string rating_text(const MatrixCell& cell) {
  if (cell.rating == Rating::kFailed || cell.rating == Rating::kUnsupported) {
    return "❌ " + cell_text(status_name(cell.status));
  }
  return speedup_rating_text(cell.rating, cell.speedup_interval);
}

// "1.37× [1.15–1.62]": the estimate and its interval, when there is one.
std::string speedup_with_interval(const MatrixCell& cell) {
  if (cell.rating == Rating::kBaseline) return "baseline";
  std::string text = speedup_text(cell.speedup);
  const auto& s = cell.speedup_interval;
  if (s && s->has_interval()) text += " [" + speedup_number(*s->low) + "–" + speedup_number(*s->high) + "]";
  return text;
}

using ClassLabels = std::map<std::string, ClassInfo>;

std::string heading(const MatrixColumn& c, const ClassLabels& classes) {
  return cell_text(column_heading(c.backend, c.hardware_class, classes));
}

std::string percent(double fraction) { return fmt::format("{:.0f}%", fraction * 100.0); }

std::string notes(const MatrixCell& cell) {
  std::vector<std::string> parts;
  if (!cell.command.empty()) parts.push_back("command " + cell.command_key());   // [[commands]] name and label
  if (cell.scaled) parts.push_back("scaled");
  if (cell.rating == Rating::kFailed || cell.rating == Rating::kUnsupported ||
      cell.status == ResultStatus::kSkipped) {
    parts.push_back(status_name(cell.status) + (cell.reason.empty() ? "" : ": " + cell.reason));
  }
  if (cell.status == ResultStatus::kDegraded) {
    parts.push_back("degraded accuracy" + (cell.reason.empty() ? "" : ": " + cell.reason));
  }
  if (cell.rating == Rating::kNoBaseline) {
    // A baseline that was there but gave no finite, positive ratio is not a missing one.
    parts.push_back(cell.baseline_configs > 1
                        ? fmt::format("no single baseline: '{}' names {} configs of the model in this run (set the "
                                      "command's model to one of their labels)",
                                      cell.model, cell.baseline_configs)
                    : cell.baseline_ms.has_value()
                        ? "the speed-up over the cpu f32 latency is no finite number (a latency too small or too large)"
                        : "no cpu f32 latency for this shape");
  }
  if (cell.rating == Rating::kNoisy && cell.speedup_interval) {
    const SpeedupEstimate& s = *cell.speedup_interval;
    if (s.has_interval()) {
      parts.push_back(fmt::format("noisy: {:.0f}% interval crosses a threshold", kSpeedupConfidence * 100));
    } else {
      parts.push_back(fmt::format("noisy: too few samples for an interval ({} vs {} baseline; {} needed)",
                                  s.cell_samples, s.baseline_samples, kMinIntervalSamples));
    }
  }
  if (cell.host_busy_jobs > 0) {
    std::string busy = fmt::format("⚠️ busy host: {} job{}", cell.host_busy_jobs, cell.host_busy_jobs == 1 ? "" : "s");
    if (cell.busy_other_load_per_cpu) busy += ", other load " + percent(*cell.busy_other_load_per_cpu);
    if (cell.busy_steal_fraction) busy += ", steal " + percent(*cell.busy_steal_fraction);
    parts.push_back(busy);
  }
  if (cell.baseline_host_busy && cell.host_busy_jobs == 0) parts.push_back("⚠️ baseline on a busy host");
  if (cell.rep_batch) {
    parts.push_back(fmt::format("batch {}, seq {}", *cell.rep_batch, *cell.rep_seq_len));
  }
  // The Median ms column of the baseline row is its own jobs'; a paired speed-up divides by the
  // f32 runs each job timed alongside, so say which figure it used.
  if (cell.speedup_paired && cell.baseline_ms) {
    parts.push_back(fmt::format("vs {} {} {} ms timed alongside", kBaselineBackend,
                                jobs::to_string(kBaselinePrecision), millis(cell.baseline_ms)));
  }
  const int jobs = static_cast<int>(cell.job_ids.size());
  if (cell.status_counts.size() + (cell.pending > 0 ? 1 : 0) > 1 || jobs > 1) {
    std::string counts;
    for (const auto& [status, n] : cell.status_counts) {
      if (!counts.empty()) counts += ", ";
      counts += fmt::format("{} {}", n, to_string(status));
    }
    if (cell.pending > 0) counts += fmt::format("{}{} pending", counts.empty() ? "" : ", ", cell.pending);
    parts.push_back(fmt::format("{} jobs: {}", jobs, counts));
  }
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out.empty() ? "" : cell_text(out);
}

std::string overview_text(const OverviewCell& o) {
  if (o.support == "not run") return "not run";
  std::string emoji = o.support == "full"      ? (o.degraded > 0 ? "⚠️" : "✅")
                      : o.support == "partial" ? "⚠️"
                      : o.support == "pending" ? "⏳"
                                               : "❌";
  std::string text = fmt::format("{} {}/{}", emoji, o.working, o.cells);
  if (o.best_speedup) {
    text += " · best " + (o.best_precision ? precision_text(*o.best_precision) : std::string(kMissing)) +
            " " + speedup_text(o.best_speedup);
  }
  if (o.unsupported > 0) text += fmt::format(" · {} unsupported", o.unsupported);
  if (o.failed > 0) text += fmt::format(" · {} failed", o.failed);
  if (o.not_run > 0) text += fmt::format(" · {} not run", o.not_run);
  if (o.pending > 0) text += fmt::format(" · {} pending", o.pending);
  return text;
}

void write_provenance(std::ostringstream& out, const RunRecord& run, const RunSummary& summary) {
  out << "| Run | " << code(run.run_id) << " |\n|---|---|\n";
  std::string plan = code(run.plan_name);
  if (!run.plan_path.empty()) plan += " (" + code(run.plan_path) + ")";
  out << "| Plan | " << plan << " |\n";
  if (!run.description.empty()) out << "| Description | " << cell_text(run.description) << " |\n";
  out << "| Created | " << (run.created_at_ms ? format_utc(run.created_at_ms) : std::string(kMissing))
      << " |\n";
  out << "| Finished | " << (run.finished_at_ms ? format_utc(run.finished_at_ms) : "still running")
      << " |\n";
  out << "| Jobs | " << summary.total << " (" << summary.terminal << " finished) |\n";
  std::string workers;
  for (const WorkerSummary& w : summary.workers) {
    if (!workers.empty()) workers += "<br>";
    workers += code(w.worker_id);
    if (!w.hostname.empty()) workers += " on " + cell_text(w.hostname);
    if (!w.hardware_classes.empty()) {
      workers += " (";
      for (std::size_t i = 0; i < w.hardware_classes.size(); ++i) {
        workers += (i ? ", " : "") + code(w.hardware_classes[i]);
      }
      workers += ")";
    }
    workers += fmt::format(", {} job{}", w.jobs, w.jobs == 1 ? "" : "s");
  }
  out << "| Workers | " << (workers.empty() ? std::string(kMissing) : workers) << " |\n";
  std::string classes;
  for (const std::string& c : summary.hardware_classes) classes += (classes.empty() ? "" : ", ") + code(c);
  out << "| Hardware classes | " << (classes.empty() ? std::string(kMissing) : classes) << " |\n";
  std::string builds;
  for (const std::string& b : summary.builds) builds += (builds.empty() ? "" : "<br>") + cell_text(b);
  out << "| Builds | " << (builds.empty() ? std::string(kMissing) : builds) << " |\n\n";
}

void write_summary(std::ostringstream& out, const RunSummary& summary) {
  out << "## Summary\n\n| Status | Jobs |\n|---|---:|\n";
  for (const auto& [status, n] : summary.by_status) {
    out << "| " << status_text(status, "") << " | " << n << " |\n";
  }
  for (const auto& [state, n] : summary.by_state) {
    out << "| " << status_text(std::nullopt, to_string(state)) << " | " << n << " |\n";
  }
  out << "| **total** | **" << summary.total << "** |\n\n";
}

// One warning above the tables when any perf job ran on a busy host (ratings.h host_busy); the
// counts are gathered as the rows pass.
struct HostLoadCounts {
  int measured = 0;
  int busy = 0;
  void add(const ReportRow& r) {
    auto host = host_load(r.metrics);
    if (!host) return;
    ++measured;
    if (host_busy(*host)) ++busy;
  }
};

void write_host_warning(std::ostringstream& out, const HostLoadCounts& counts) {
  if (counts.busy == 0) return;
  out << fmt::format(
      "> ⚠️ **Busy host:** {} of {} perf jobs ran while other work used more than {:.0f}% of the "
      "host's CPUs or more than {:.0f}% of CPU time was stolen by the hypervisor. Their latencies, "
      "and the speed-ups taken from them, may be off; the cells are marked in the notes.\n\n",
      counts.busy, counts.measured, kBusyOtherLoadPerCpu * 100, kBusyStealFraction * 100);
}

void write_overview(std::ostringstream& out, const Matrix& m, const ClassLabels& classes) {
  out << "## Overview: architecture × hardware\n\n";
  if (m.overview.empty()) {
    out << "No jobs.\n\n";
    return;
  }
  out << "| Architecture |";
  for (const MatrixColumn& c : m.columns) out << " " << heading(c, classes) << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < m.columns.size(); ++i) out << "---|";
  out << "\n";
  for (const std::string& a : m.architectures) {
    out << "| " << cell_text(a) << " |";
    for (const MatrixColumn& c : m.columns) {
      const OverviewCell* o = find_overview(m, a, c);
      out << " " << (o ? overview_text(*o) : std::string(kMissing)) << " |";
    }
    out << "\n";
  }
  out << fmt::format(
      "\nA cell counts the model × precision combinations that work out of those planned. "
      "Ratings: **Baseline** = {0} {1}; speed-up = median latency of {0} {1} ÷ median latency, "
      "same model and shape: **Excellent** ≥ {2:.1f}×, **Good** ≥ {3:.1f}×, **Moderate** ≥ "
      "{4:.1f}×, **Poor** < {4:.1f}×, each only when the whole {5:.0f}% bootstrap interval of the "
      "speed-up (shown in brackets) lies in the band; **≈ LOW–HIGH×** (noisy) when the interval "
      "crosses a threshold or a side has fewer than {6} raw samples; ❌ failed or unsupported "
      "(reason in the notes); *⏳ pending* while some of a cell's jobs are still out; *not run* where "
      "nothing was measured. A row's median and speed-up are at the shape its notes name (its "
      "smallest with a baseline); its NMSE and cosine are the worst over all its jobs. A column is a backend on one "
      "hardware class; a cell's baseline is the {0} {1} run of the same model and shape timed by "
      "each job in blocks alternating with its own runs (paired), or else the {0} {1} cell on "
      "the CPU of the host it ran on.\n\n",
      kBaselineBackend, jobs::to_string(kBaselinePrecision), kExcellentMinSpeedup, kGoodMinSpeedup,
      kModerateMinSpeedup, kSpeedupConfidence * 100, kMinIntervalSamples);
}

void write_column_tables(std::ostringstream& out, const Matrix& m, const ClassLabels& classes) {
  for (const MatrixColumn& column : m.columns) {
    out << "## " << heading(column, classes);
    // The class id beside its readable name (a heading without a record already is the id).
    if (classes.count(column.hardware_class)) out << " (" << code(column.hardware_class) << ")";
    out << "\n\n";
    out << "| Model | Architecture | Precision | Status | Rating | Median ms | Speed-up | NMSE | "
           "Cosine | Notes |\n";
    out << "|---|---|---|---|---|---:|---:|---:|---:|---|\n";
    for (const MatrixCell& cell : m.cells) {
      if (cell.backend != column.backend || cell.hardware_class != column.hardware_class) continue;
      const std::string speedup = speedup_with_interval(cell);
      out << "| " << cell_text(cell.model) << " | " << cell_text(cell.architecture) << " | "
          << precision_text(cell.precision) << " | "
          << status_text(cell.rating == Rating::kPending ? std::nullopt : cell.status, "pending") << " | "
          << rating_text(cell) << " | " << millis(cell.median_ms) << " | " << speedup << " | "
          << scientific(cell.nmse_max) << " | " << fixed(cell.cosine_min, 6) << " | "
          << notes(cell) << " |\n";
    }
    out << "\n";
  }
}

// Measured memory, not estimates: the largest peak RSS of the job processes of each model ×
// precision on each class (metrics.memory.peak_rss_bytes, or the worker's view of the process),
// gathered as the rows pass.
struct MemoryPeaks {
  using Key = std::tuple<std::string, jobs::Precision, std::string, std::string>;   // model, precision, backend, class
  std::map<Key, double> peak;
  std::map<Key, double> weights;
  std::vector<std::pair<std::string, jobs::Precision>> lines;   // first appearance
  std::set<std::pair<std::string, jobs::Precision>> seen_lines;

  void add(const ReportRow& r) {
    if (!r.status || r.hardware_class.empty()) return;
    std::optional<double> bytes = metric_number(r.metrics, "memory", "peak_rss_bytes");
    if (!bytes) bytes = metric_number(r.metrics, "process", "peak_rss_bytes");
    if (!bytes || *bytes <= 0) return;
    // An external command's line names it: two commands of one model label are two lines.
    const std::string command = command_key(r.spec);
    const std::string label = command.empty() ? (r.model_label.empty() ? r.model : r.model_label) : r.model + " · " + command;
    const Key key{label, r.precision, r.backend, r.hardware_class};
    double& slot = peak[key];
    slot = std::max(slot, *bytes);
    if (auto w = metric_number(r.metrics, "memory", "weights_bytes"); w && *w > 0) {
      weights[key] = std::max(weights[key], *w);
    }
    if (seen_lines.emplace(label, r.precision).second) lines.emplace_back(label, r.precision);
  }
};

void write_memory(std::ostringstream& out, const MemoryPeaks& memory, const Matrix& m, const ClassLabels& classes) {
  using Key = MemoryPeaks::Key;
  const auto& peak = memory.peak;
  const auto& weights = memory.weights;
  const auto& lines = memory.lines;
  if (peak.empty()) return;
  std::vector<MatrixColumn> columns;
  for (const MatrixColumn& c : m.columns) {
    for (const auto& [key, bytes] : peak) {
      if (std::get<2>(key) == c.backend && std::get<3>(key) == c.hardware_class) {
        columns.push_back(c);
        break;
      }
    }
  }
  out << "## Memory: measured peak RSS / weights (MiB)\n\n| Model | Precision |";
  for (const MatrixColumn& c : columns) out << " " << heading(c, classes) << " |";
  out << "\n|---|---|";
  for (std::size_t i = 0; i < columns.size(); ++i) out << "---:|";
  out << "\n";
  for (const auto& [model, precision] : lines) {
    out << "| " << cell_text(model) << " | " << precision_text(precision) << " |";
    for (const MatrixColumn& c : columns) {
      const Key key{model, precision, c.backend, c.hardware_class};
      auto it = peak.find(key);
      std::string text(kMissing);
      if (it != peak.end()) {
        text = fmt::format("{:.1f}", it->second / kBytesPerMiB);
        if (auto w = weights.find(key); w != weights.end()) text += fmt::format(" / {:.1f}", w->second / kBytesPerMiB);
      }
      out << " " << text << " |";
    }
    out << "\n";
  }
  out << "\nThe largest peak resident set of the job processes (the whole process: weights, "
         "activations, the f32 reference of an accuracy check, runtime; device memory of a GPU is not "
         "in it), and the bytes of the weights at the job's precision.\n\n";
}

void write_jobs_heading(std::ostringstream& out) {
  out << "## Jobs\n\n";
  out << "| Job | Model | Backend | Precision | Batch | Seq len | Status | Attempt | Worker | "
         "Median ms | p90 ms | Tokens/s | NMSE | Cosine | Top-1 |\n";
  out << "|---|---|---|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
}

void write_job(std::ostringstream& out, const ReportRow& r) {
  const auto batch = r.spec.find("batch");
  const auto seq_len = r.spec.find("seq_len");
  auto number = [](const nlohmann::json& doc, nlohmann::json::const_iterator it) {
    return it != doc.end() && it->is_number() ? it->dump() : std::string(kMissing);
  };
  std::string status = status_text(r.status, to_string(r.state));
  if (r.status && *r.status != ResultStatus::kPass && !r.reason.empty()) status += ": " + r.reason;
  out << "| " << code(r.job_id) << " | " << cell_text(r.model) << " | " << cell_text(r.backend)
      << " | " << precision_text(r.precision) << " | " << number(r.spec, batch) << " | "
      << number(r.spec, seq_len) << " | " << cell_text(status) << " | "
      << (r.attempt > 0 ? fmt::to_string(r.attempt) : std::string(kMissing)) << " | "
      << (r.worker_id.empty() ? std::string(kMissing) : cell_text(r.worker_id)) << " | "
      << millis(metric_number(r.metrics, "latency_ms", "median")) << " | "
      << millis(metric_number(r.metrics, "latency_ms", "p90")) << " | "
      << fixed(metric_number(r.metrics, "throughput", "tokens_per_s"), 1) << " | "
      << scientific(metric_number(r.metrics, "accuracy", "nmse")) << " | "
      << fixed(metric_number(r.metrics, "accuracy", "cosine"), 6) << " | "
      << fixed(metric_number(r.metrics, "accuracy", "top1_agreement"), 3) << " |\n";
}

// What each walk parses of a row's documents (report_common.h: projections).
ReportDocumentKeys aggregate_keys() {
  static const std::vector<std::string_view> metrics = [] {
    std::vector<std::string_view> keys = matrix_metrics_keys();
    for (std::string_view k : {"memory.peak_rss_bytes", "memory.weights_bytes", "process.peak_rss_bytes", "host"}) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    return keys;
  }();
  return ReportDocumentKeys{&matrix_spec_keys(), &metrics};
}

ReportDocumentKeys job_table_keys() {
  static const std::vector<std::string_view> spec{"batch", "seq_len"};
  static const std::vector<std::string_view> metrics{"latency_ms.median", "latency_ms.p90", "throughput.tokens_per_s",
                                                     "accuracy.nmse", "accuracy.cosine", "accuracy.top1_agreement"};
  return ReportDocumentKeys{&spec, &metrics};
}

// The per-job table is handed to the sink in pieces of about this size.
constexpr std::streamoff kMarkdownFlushBytes = 1 << 20;

Status flush(std::ostringstream& out, const TextSink& sink) {
  Status st = sink(out.view());
  out.str(std::string());
  return st;
}

}  // namespace

Status write_markdown_report(const RunRecord& run, const std::vector<WorkerRecord>& workers,
                             const ReportRowSource& rows, const TextSink& sink) {
  // Two walks: the first gathers everything above the per-job table, the second writes that
  // table as the rows are read. The matrix and the rest are gone before the second.
  std::ostringstream out;
  {
    RunSummaryBuilder summary_builder;
    MatrixBuilder matrix_builder;
    HostLoadCounts host_counts;
    MemoryPeaks memory;
    AM_RETURN_IF_ERROR(rows(aggregate_keys(), [&](const ReportRow& r, const ReportRowTexts&) {
      summary_builder.add(r);
      matrix_builder.add(r);
      host_counts.add(r);
      memory.add(r);
      return Status::Ok();
    }));
    const RunSummary summary = summary_builder.finish();
    const Matrix matrix = matrix_builder.finish();
    const ClassLabels classes = hardware_class_info(workers);
    out << "# accelmatrix report: " << cell_text(run.plan_name.empty() ? run.run_id : run.plan_name)
        << "\n\n";
    write_provenance(out, run, summary);
    write_summary(out, summary);
    write_host_warning(out, host_counts);
    write_overview(out, matrix, classes);
    write_column_tables(out, matrix, classes);
    write_memory(out, memory, matrix, classes);
    write_jobs_heading(out);
    AM_RETURN_IF_ERROR(flush(out, sink));
  }
  AM_RETURN_IF_ERROR(rows(job_table_keys(), [&](const ReportRow& r, const ReportRowTexts&) {
    write_job(out, r);
    return out.tellp() < kMarkdownFlushBytes ? Status::Ok() : flush(out, sink);
  }));
  out << "\n";
  return flush(out, sink);
}

std::string render_markdown(const RunRecord& run, const std::vector<ReportRow>& rows,
                            const std::vector<WorkerRecord>& workers) {
  return collect_text(
      [&](const TextSink& sink) { return write_markdown_report(run, workers, rows_in_memory(rows), sink); });
}

}  // namespace am::coord
