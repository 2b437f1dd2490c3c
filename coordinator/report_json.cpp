#include "coordinator/report_json.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/json_text.h"
#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_common.h"

namespace am::coord {

// matrix_cell_json(), with or without the cell's shapes and job ids (the streaming writer splices
// those in itself).
nlohmann::json matrix_cell_json(const MatrixCell& c, bool with_lists);

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

// The members of the stored documents a row is read with: what the matrix reads, and the spec
// fields a result shows besides its texts.
ReportDocumentKeys row_keys() {
  static const std::vector<std::string_view> spec_keys = [] {
    std::vector<std::string_view> keys = matrix_spec_keys();
    for (std::string_view k : {"batch", "seq_len", "mode", "seed", "scaled"}) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    return keys;
  }();
  return ReportDocumentKeys{&spec_keys, &matrix_metrics_keys()};   // the matrix reads metrics.host too
}

void add_key(std::string& out, std::string_view key, bool first = false) {
  if (!first) out += ',';
  out += '"';
  out += key;   // our own keys: plain ASCII
  out += "\":";
}

void add_string(std::string& out, std::string_view key, const std::string& text) {
  add_key(out, key);
  append_json_string(out, repair_utf8(text));
}

// One element of "results" on one line, members in the order nlohmann's objects keep (sorted),
// the stored metrics and spec spliced in as stored (texts.*: valid JSON objects).
void append_result(std::string& out, const ReportRow& r, const ReportRowTexts& texts,
                   const std::optional<HostLoad>& host) {
  out += '{';
  add_key(out, "architecture", true);
  append_json_string(out, repair_utf8(r.architecture));
  add_key(out, "attempt");
  out += std::to_string(r.attempt);
  add_key(out, "attempts");
  out += std::to_string(r.attempts);
  add_string(out, "backend", r.backend);
  add_key(out, "batch");
  append_json(out, spec_field(r.spec, "batch", nullptr));
  add_string(out, "build", r.build);
  add_string(out, "device", r.device);
  add_key(out, "exclusive");
  out += r.exclusive ? "true" : "false";
  add_key(out, "finished_at_ms");
  out += std::to_string(r.finished_at_ms);
  add_string(out, "hardware_class", r.hardware_class);
  add_key(out, "host_busy");
  if (host) {
    out += host_busy(*host) ? "true" : "false";
  } else {
    out += "null";
  }
  add_string(out, "hostname", r.hostname);
  add_string(out, "job_id", r.job_id);
  add_key(out, "log_tail");
  append_json_string(out, utf8_tail(r.log_tail, kJsonLogTailBytes, kUtf8Ellipsis));
  add_key(out, "metrics");
  out += texts.metrics_json;
  add_key(out, "mode");
  append_json(out, spec_field(r.spec, "mode", ""));
  add_string(out, "model", r.model);
  add_key(out, "precision");
  append_json_string(out, jobs::to_string(r.precision));
  add_string(out, "reason", r.reason);
  add_key(out, "scaled");
  append_json(out, spec_field(r.spec, "scaled", false));
  add_key(out, "seed");
  append_json(out, spec_field(r.spec, "seed", nullptr));
  add_key(out, "seq_len");
  append_json(out, spec_field(r.spec, "seq_len", nullptr));
  add_key(out, "spec");
  out += texts.spec_json;
  add_key(out, "started_at_ms");
  out += std::to_string(r.started_at_ms);
  add_key(out, "state");
  append_json_string(out, to_string(r.state));
  add_key(out, "status");
  append_json_string(out, status_name(r.status));
  add_string(out, "target", r.target);
  add_string(out, "worker", r.worker_id);
  out += '}';
}

// `value` pretty-printed as dump(2) does, each line after the first indented by `indent` more
// (dump() escapes newlines inside strings: every newline in its text is layout).
void append_indented(std::string& out, const json& value, std::string_view indent) {
  const std::string text = value.dump(2, ' ', false, json::error_handler_t::replace);
  out.reserve(out.size() + text.size() + text.size() / 16);
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
}

// A member of the top-level object: `"key": <value pretty-printed at the second level>`.
std::string member(std::string_view key, const json& value, bool last = false) {
  std::string out = "  \"" + std::string(key) + "\": ";
  append_indented(out, value, "  ");
  out += last ? "\n" : ",\n";
  return out;
}

void add_number(std::string& out, std::optional<double> v) {
  if (v) {
    append_json_double(out, *v);
  } else {
    out += "null";
  }
}

// One element of a cell's "shapes" on one line, members sorted as nlohmann keeps them.
void append_shape(std::string& out, const ShapeLatency& s) {
  out += "{\"baseline_ms\":";
  add_number(out, s.baseline_ms);
  out += ",\"batch\":" + std::to_string(s.batch) + ",\"median_ms\":";
  add_number(out, s.median_ms);
  out += ",\"p90_ms\":";
  add_number(out, s.p90_ms);
  out += s.paired ? ",\"paired\":true" : ",\"paired\":false";
  out += ",\"seq_len\":" + std::to_string(s.seq_len) + ",\"speedup\":";
  add_number(out, s.speedup);
  out += ",\"tokens_per_s\":";
  add_number(out, s.tokens_per_s);
  out += '}';
}

// Replaces `"<key>": []` (the placeholder a cell was dumped with) by the list written by
// `append_element` for each of `n` elements, one per line at `indent`. The placeholder cannot
// occur elsewhere: quotes inside strings are escaped.
template <typename AppendElement>
void splice_list(std::string& cell, std::string_view key, std::size_t n, const std::string& indent,
                 AppendElement append_element) {
  const std::string placeholder = "\"" + std::string(key) + "\": []";
  const std::size_t at = cell.find(placeholder);
  if (at == std::string::npos || n == 0) return;
  std::string list = "\"" + std::string(key) + "\": [";
  for (std::size_t i = 0; i < n; ++i) {
    list += i == 0 ? "\n" : ",\n";
    list += indent;
    list += "  ";
    append_element(list, i);
  }
  list += "\n" + indent + "]";
  cell.replace(at, placeholder.size(), list);
}

// "matrix": the cells as dump(2) lays them out, except that each shape is on one line; cells are
// written one at a time (a million-job run has a million job ids and shapes among its cells).
Status write_matrix_member(const Matrix& matrix, const TextSink& out) {
  if (matrix.cells.empty()) return out("  \"matrix\": [],\n");
  AM_RETURN_IF_ERROR(out("  \"matrix\": [\n"));
  for (std::size_t i = 0; i < matrix.cells.size(); ++i) {
    const MatrixCell& c = matrix.cells[i];
    std::string cell = "    ";
    append_indented(cell, matrix_cell_json(c, false), "    ");
    splice_list(cell, "job_ids", c.job_ids.size(), "      ",
                [&](std::string& list, std::size_t k) { append_json_string(list, repair_utf8(c.job_ids[k])); });
    splice_list(cell, "shapes", c.shapes.size(), "      ",
                [&](std::string& list, std::size_t k) { append_shape(list, c.shapes[k]); });
    cell += i + 1 < matrix.cells.size() ? ",\n" : "\n";
    AM_RETURN_IF_ERROR(out(cell));
  }
  return out("  ],\n");
}

// Results are flushed to the sink in pieces of about this size.
constexpr std::size_t kJsonFlushBytes = 1 << 20;

}  // namespace

json matrix_cell_json(const MatrixCell& c) { return matrix_cell_json(c, true); }

json matrix_cell_json(const MatrixCell& c, bool with_lists) {
  json shapes = json::array();
  for (const ShapeLatency& s : c.shapes) {
    if (!with_lists) break;
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
  json out = {{"model", repair_utf8(c.model)},
          {"architecture", repair_utf8(c.architecture)},
          {"backend", repair_utf8(c.backend)},
          {"precision", std::string(jobs::to_string(c.precision))},
          {"command", c.command.empty() ? json(nullptr) : json(repair_utf8(c.command))},
          {"command_precision_label",
           c.command_precision_label.empty() ? json(nullptr) : json(repair_utf8(c.command_precision_label))},
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
          {"job_ids", with_lists ? strings(c.job_ids) : json::array()},
          {"hardware_classes", strings(c.hardware_classes)},
          {"hardware_class", repair_utf8(c.hardware_class)},
          {"baseline_class", repair_utf8(c.baseline_class)}};
  if (c.baseline_configs > 1) out["baseline_configs"] = c.baseline_configs;   // no single baseline
  return out;
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
          {"pending", o.pending},
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

Status write_json_report(const RunRecord& run, const std::vector<WorkerRecord>& workers,
                         const ReportRowSource& rows, const TextSink& out) {
  // One walk over the rows: each result is written as it is read, and what the matrix and the
  // summary need is gathered on the way and written after the results.
  std::string buffer = "{\n" + member("schema", kReportJsonSchema) + member("rating_rules", rating_rules_json()) +
                       "  \"results\": [";
  RunSummaryBuilder summary_builder;
  MatrixBuilder matrix_builder;
  int host_measured = 0;
  int host_busy_jobs = 0;
  bool first = true;
  AM_RETURN_IF_ERROR(rows(row_keys(), [&](const ReportRow& r, const ReportRowTexts& texts) {
    summary_builder.add(r);
    matrix_builder.add(r);
    const std::optional<HostLoad> host = host_load(r.metrics);
    if (host) {
      ++host_measured;
      if (host_busy(*host)) ++host_busy_jobs;
    }
    buffer += first ? "\n    " : ",\n    ";
    first = false;
    append_result(buffer, r, texts, host);
    if (buffer.size() < kJsonFlushBytes) return Status::Ok();
    Status st = out(buffer);
    buffer.clear();
    return st;
  }));
  buffer += first ? "],\n" : "\n  ],\n";

  const RunSummary summary = summary_builder.finish();
  const Matrix matrix = matrix_builder.finish();
  json by_status = json::object();
  for (const auto& [status, n] : summary.by_status) by_status[std::string(to_string(status))] = n;
  for (const auto& [state, n] : summary.by_state) by_status[std::string(to_string(state))] = n;
  buffer += member("run", run_json(run, summary));
  buffer += member("summary", {{"total", summary.total},
                               {"terminal", summary.terminal},
                               {"by_status", std::move(by_status)},
                               {"host_measured_jobs", host_measured},
                               {"host_busy_jobs", host_busy_jobs}});
  const auto classes = hardware_class_info(workers);
  json columns = json::array();
  for (const MatrixColumn& c : matrix.columns) {
    auto info = classes.find(c.hardware_class);
    columns.push_back({{"backend", repair_utf8(c.backend)},
                       {"hardware_class", repair_utf8(c.hardware_class)},
                       {"label", repair_utf8(column_heading(c.backend, c.hardware_class, classes))},
                       {"software", info != classes.end() && info->second.software}});
  }
  buffer += member("columns", columns);
  AM_RETURN_IF_ERROR(out(buffer));
  AM_RETURN_IF_ERROR(write_matrix_member(matrix, out));
  json overview = json::array();
  for (const OverviewCell& o : matrix.overview) overview.push_back(overview_cell_json(o));
  return out(member("overview", overview, /*last=*/true) + "}\n");
}

json render_json(const RunRecord& run, const std::vector<ReportRow>& rows, const std::vector<WorkerRecord>& workers) {
  return json::parse(
      collect_text([&](const TextSink& sink) { return write_json_report(run, workers, rows_in_memory(rows), sink); }));
}

}  // namespace am::coord
