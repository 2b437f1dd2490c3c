#include "coordinator/report_json.h"

#include <optional>
#include <string>

#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_common.h"

namespace am::coord {
namespace {

using nlohmann::json;

json number_or_null(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

// A spec field copied as stored, or `fallback` when the spec lacks it.
json spec_field(const json& spec, const char* key, json fallback) {
  if (!spec.is_object()) return fallback;
  auto it = spec.find(key);
  return it != spec.end() ? *it : fallback;
}

json strings(const std::vector<std::string>& values) {
  json out = json::array();
  for (const std::string& v : values) out.push_back(repair_utf8(v));
  return out;
}

json precisions(const std::vector<jobs::Precision>& values) {
  json out = json::array();
  for (jobs::Precision p : values) out.push_back(std::string(jobs::to_string(p)));
  return out;
}

// The report's one spelling of a status: its name, or "" while the job is not terminal.
std::string status_name(std::optional<ResultStatus> status) {
  return status ? std::string(to_string(*status)) : std::string();
}

json run_json(const RunRecord& run, const RunSummary& summary) {
  json workers = json::array();
  for (const WorkerSummary& w : summary.workers) {
    workers.push_back({{"worker_id", repair_utf8(w.worker_id)},
                       {"hostname", repair_utf8(w.hostname)},
                       {"build", repair_utf8(w.build)},
                       {"hardware_classes", strings(w.hardware_classes)},
                       {"devices", strings(w.devices)},
                       {"jobs", w.jobs}});
  }
  return {{"run_id", repair_utf8(run.run_id)},
          {"plan_name", repair_utf8(run.plan_name)},
          {"plan_path", repair_utf8(run.plan_path)},
          {"description", repair_utf8(run.description)},
          {"created_at_ms", run.created_at_ms},
          {"finished_at_ms", run.finished_at_ms},
          {"created_at", format_utc(run.created_at_ms)},
          {"finished_at", format_utc(run.finished_at_ms)},
          {"workers", std::move(workers)},
          {"hardware_classes", strings(summary.hardware_classes)},
          {"builds", strings(summary.builds)}};
}

json result_json(const ReportRow& r) {
  return {{"job_id", repair_utf8(r.job_id)},
          {"model", repair_utf8(r.model)},
          {"architecture", repair_utf8(r.architecture)},
          {"backend", repair_utf8(r.backend)},
          {"precision", std::string(jobs::to_string(r.precision))},
          {"batch", spec_field(r.spec, "batch", nullptr)},
          {"seq_len", spec_field(r.spec, "seq_len", nullptr)},
          {"mode", spec_field(r.spec, "mode", "")},
          {"seed", spec_field(r.spec, "seed", nullptr)},
          {"scaled", spec_field(r.spec, "scaled", false)},
          {"state", std::string(to_string(r.state))},
          {"status", status_name(r.status)},
          {"reason", repair_utf8(r.reason)},
          {"attempt", r.attempt},
          {"attempts", r.attempts},
          {"worker", repair_utf8(r.worker_id)},
          {"hostname", repair_utf8(r.hostname)},
          {"hardware_class", repair_utf8(r.hardware_class)},
          {"device", repair_utf8(r.device)},
          {"build", repair_utf8(r.build)},
          {"started_at_ms", r.started_at_ms},
          {"finished_at_ms", r.finished_at_ms},
          {"metrics", r.metrics.is_object() ? r.metrics : json::object()},
          {"log_tail", utf8_tail(r.log_tail, kJsonLogTailBytes, kUtf8Ellipsis)},
          {"spec", r.spec.is_object() ? r.spec : json::object()},
          {"target", repair_utf8(r.target)},
          {"exclusive", r.exclusive}};
}

}  // namespace

json matrix_cell_json(const MatrixCell& c) {
  json shapes = json::array();
  for (const ShapeLatency& s : c.shapes) {
    shapes.push_back({{"batch", s.batch},
                      {"seq_len", s.seq_len},
                      {"median_ms", s.median_ms},
                      {"p90_ms", number_or_null(s.p90_ms)},
                      {"tokens_per_s", number_or_null(s.tokens_per_s)},
                      {"baseline_ms", number_or_null(s.baseline_ms)},
                      {"speedup", number_or_null(s.speedup)},
                      {"paired", s.paired}});
  }
  json counts = json::object();
  for (const auto& [status, n] : c.status_counts) counts[std::string(to_string(status))] = n;
  if (c.pending > 0) counts["pending"] = c.pending;
  json shape = nullptr;
  if (c.rep_batch) shape = {{"batch", *c.rep_batch}, {"seq_len", c.rep_seq_len.value_or(0)}};
  return {{"model", repair_utf8(c.model)},
          {"architecture", repair_utf8(c.architecture)},
          {"backend", repair_utf8(c.backend)},
          {"precision", std::string(jobs::to_string(c.precision))},
          {"command", c.command.empty() ? json(nullptr) : json(repair_utf8(c.command))},
          {"scaled", c.scaled},
          {"status", status_name(c.status)},
          {"status_counts", std::move(counts)},
          {"rating", std::string(rating_key(c.rating))},
          {"rating_label", speedup_rating_text(c.rating, c.speedup_interval)},
          {"reason", repair_utf8(c.reason)},
          {"representative_shape", std::move(shape)},
          {"median_ms", number_or_null(c.median_ms)},
          {"baseline_ms", number_or_null(c.baseline_ms)},
          {"speedup", number_or_null(c.speedup)},
          {"speedup_ci_low", number_or_null(c.speedup_interval ? c.speedup_interval->low : std::nullopt)},
          {"speedup_ci_high", number_or_null(c.speedup_interval ? c.speedup_interval->high : std::nullopt)},
          {"speedup_paired", c.speedup_paired},
          {"speedup_samples", c.speedup_interval ? json{{"cell", c.speedup_interval->cell_samples},
                                                        {"baseline", c.speedup_interval->baseline_samples}}
                                                  : json(nullptr)},
          {"host_busy", c.host_busy_jobs > 0},
          {"host_busy_jobs", c.host_busy_jobs},
          {"baseline_host_busy", c.baseline_host_busy},
          {"nmse_max", number_or_null(c.nmse_max)},
          {"cosine_min", number_or_null(c.cosine_min)},
          {"top1_min", number_or_null(c.top1_min)},
          {"shapes", std::move(shapes)},
          {"job_ids", strings(c.job_ids)},
          {"hardware_classes", strings(c.hardware_classes)},
          {"hardware_class", repair_utf8(c.hardware_class)},
          {"baseline_class", repair_utf8(c.baseline_class)}};
}

json overview_cell_json(const OverviewCell& o) {
  return {{"architecture", repair_utf8(o.architecture)},
          {"backend", repair_utf8(o.backend)},
          {"hardware_class", repair_utf8(o.hardware_class)},
          {"support", o.support},
          {"cells", o.cells},
          {"working", o.working},
          {"degraded", o.degraded},
          {"failed", o.failed},
          {"unsupported", o.unsupported},
          {"not_run", o.not_run},
          {"working_precisions", precisions(o.working_precisions)},
          {"best_speedup", number_or_null(o.best_speedup)},
          {"best_precision", o.best_precision ? std::string(jobs::to_string(*o.best_precision)) : ""},
          {"best_model", repair_utf8(o.best_model)}};
}

json rating_rules_json() {
  return {{"baseline_backend", std::string(kBaselineBackend)},
          {"baseline_precision", std::string(jobs::to_string(kBaselinePrecision))},
          {"excellent_min_speedup", kExcellentMinSpeedup},
          {"good_min_speedup", kGoodMinSpeedup},
          {"moderate_min_speedup", kModerateMinSpeedup},
          {"speedup_confidence", kSpeedupConfidence},
          {"speedup_resamples", kSpeedupResamples},
          {"min_interval_samples", kMinIntervalSamples},
          {"busy_other_load_per_cpu", kBusyOtherLoadPerCpu},
          {"busy_steal_fraction", kBusyStealFraction}};
}

json render_json(const RunRecord& run, const std::vector<ReportRow>& rows, const std::vector<WorkerRecord>& workers) {
  const RunSummary summary = summarize_run(rows);
  const Matrix matrix = build_matrix(rows);
  const auto classes = hardware_class_info(workers);
  json columns = json::array();
  for (const MatrixColumn& c : matrix.columns) {
    auto info = classes.find(c.hardware_class);
    columns.push_back({{"backend", repair_utf8(c.backend)},
                       {"hardware_class", repair_utf8(c.hardware_class)},
                       {"label", repair_utf8(column_heading(c.backend, c.hardware_class, classes))},
                       {"software", info != classes.end() && info->second.software}});
  }

  json by_status = json::object();
  for (const auto& [status, n] : summary.by_status) by_status[std::string(to_string(status))] = n;
  for (const auto& [state, n] : summary.by_state) by_status[std::string(to_string(state))] = n;
  json results = json::array();
  int host_measured = 0;
  int host_busy_jobs = 0;
  for (const ReportRow& r : rows) {
    results.push_back(result_json(r));
    if (auto host = host_load(r.metrics)) {
      ++host_measured;
      const bool busy = host_busy(*host);
      if (busy) ++host_busy_jobs;
      results.back()["host_busy"] = busy;
    } else {
      results.back()["host_busy"] = nullptr;
    }
  }
  json cells = json::array();
  for (const MatrixCell& c : matrix.cells) cells.push_back(matrix_cell_json(c));
  json overview = json::array();
  for (const OverviewCell& o : matrix.overview) overview.push_back(overview_cell_json(o));

  return {{"schema", kReportJsonSchema},
          {"run", run_json(run, summary)},
          {"summary", {{"total", summary.total},
            {"terminal", summary.terminal},
            {"by_status", std::move(by_status)},
            {"host_measured_jobs", host_measured},
            {"host_busy_jobs", host_busy_jobs}}},
          {"rating_rules", rating_rules_json()},
          {"results", std::move(results)},
          {"columns", std::move(columns)},
          {"matrix", std::move(cells)},
          {"overview", std::move(overview)}};
}

}  // namespace am::coord
