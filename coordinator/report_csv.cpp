#include "coordinator/report_csv.h"

#include <optional>
#include <string>
#include <unordered_map>

#include "coordinator/matrix.h"
#include "coordinator/ratings.h"
#include "coordinator/report_common.h"
#include "coordinator/report_text.h"
#include "jobs/precision.h"

namespace am::coord {
namespace {

using nlohmann::json;

const json* spec_value(const json& spec, const char* key) {
  if (!spec.is_object()) return nullptr;
  auto it = spec.find(key);
  return it == spec.end() || it->is_null() ? nullptr : &*it;
}

std::string spec_number(const ReportRow& r, const char* key) { return json_number_text(spec_value(r.spec, key)); }

std::string spec_text(const ReportRow& r, const char* key) {
  const json* v = spec_value(r.spec, key);
  return v && v->is_string() ? report_text(v->get<std::string>()) : std::string();
}

std::string metric(const ReportRow& r, std::string_view group, std::string_view key) {
  return json_number_text(metric_value(r.metrics, group, key));
}

// The job's peak resident set as every format shows it (the Markdown memory table, the
// dashboard): the job's own reading, taken before a paired f32 baseline's graph exists, else the
// worker's view of the process (present for a job that crashed or ran out of memory).
std::string peak_rss(const ReportRow& r, const MatrixCell*) {
  if (const json* v = metric_value(r.metrics, "memory", "peak_rss_bytes")) return json_number_text(v);
  return metric(r, "process", "peak_rss_bytes");
}

std::string millis_or_empty(int64_t ms) { return ms == 0 ? std::string() : std::to_string(ms); }

std::string number_text(std::optional<double> v) {
  if (!v) return std::string();
  const json j = *v;
  return json_number_text(&j);
}

std::string host_field(const ReportRow& r, const char* key) { return metric(r, "host", key); }

std::string host_busy_text(const ReportRow& r) {
  auto host = host_load(r.metrics);
  if (!host) return std::string();
  return host_busy(*host) ? "true" : "false";
}

const SpeedupEstimate* interval_of(const MatrixCell* c) {
  return c && c->speedup_interval ? &*c->speedup_interval : nullptr;
}

// A text column's value: report_text() (valid UTF-8, no XML-forbidden characters), and a text
// that a spreadsheet would take for a formula (it starts with '=', '+', '-', '@', TAB or CR:
// "=cmd|' /C calc'!A0" in a model label) gets a leading apostrophe, which spreadsheets show as
// text and do not evaluate. Numeric columns are written as numbers and never start so.
std::string text_column(std::string_view raw) {
  std::string text = report_text(raw);
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) {
    text.insert(text.begin(), '\'');
  }
  return text;
}

struct Column {
  std::string_view name;
  std::string (*value)(const ReportRow&, const MatrixCell*);   // the job and its matrix cell
};

// Schema 1. Append only (see report_csv.h); docs/REPORTS.md describes each column.
const Column kColumns[] = {
    {"run_id", [](const ReportRow& r, const MatrixCell*) { return text_column(r.run_id); }},
    {"job_id", [](const ReportRow& r, const MatrixCell*) { return text_column(r.job_id); }},
    {"model", [](const ReportRow& r, const MatrixCell*) { return text_column(r.model); }},
    {"architecture", [](const ReportRow& r, const MatrixCell*) { return text_column(r.architecture); }},
    {"backend", [](const ReportRow& r, const MatrixCell*) { return text_column(r.backend); }},
    {"hardware_class", [](const ReportRow& r, const MatrixCell*) { return text_column(r.hardware_class); }},
    {"device", [](const ReportRow& r, const MatrixCell*) { return text_column(r.device); }},
    {"precision", [](const ReportRow& r, const MatrixCell*) { return std::string(jobs::to_string(r.precision)); }},
    {"batch", [](const ReportRow& r, const MatrixCell*) { return spec_number(r, "batch"); }},
    {"seq_len", [](const ReportRow& r, const MatrixCell*) { return spec_number(r, "seq_len"); }},
    {"mode", [](const ReportRow& r, const MatrixCell*) { return spec_text(r, "mode"); }},
    {"seed", [](const ReportRow& r, const MatrixCell*) { return spec_number(r, "seed"); }},
    {"scaled",
     [](const ReportRow& r, const MatrixCell*) {
       const json* v = spec_value(r.spec, "scaled");
       return std::string(v && v->is_boolean() && v->get<bool>() ? "true" : "false");
     }},
    {"state", [](const ReportRow& r, const MatrixCell*) { return std::string(to_string(r.state)); }},
    {"status", [](const ReportRow& r, const MatrixCell*) { return r.status ? std::string(to_string(*r.status)) : std::string(); }},
    {"reason", [](const ReportRow& r, const MatrixCell*) { return text_column(r.reason); }},
    {"attempt", [](const ReportRow& r, const MatrixCell*) { return r.attempt > 0 ? std::to_string(r.attempt) : std::string(); }},
    {"attempts", [](const ReportRow& r, const MatrixCell*) { return std::to_string(r.attempts); }},
    {"worker", [](const ReportRow& r, const MatrixCell*) { return text_column(r.worker_id); }},
    {"hostname", [](const ReportRow& r, const MatrixCell*) { return text_column(r.hostname); }},
    {"build", [](const ReportRow& r, const MatrixCell*) { return text_column(r.build); }},
    {"latency_median_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "median"); }},
    {"latency_p90_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "p90"); }},
    {"latency_min_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "min"); }},
    {"latency_max_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "max"); }},
    {"latency_mean_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "mean"); }},
    {"latency_stddev_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "stddev"); }},
    {"latency_count", [](const ReportRow& r, const MatrixCell*) { return metric(r, "latency_ms", "count"); }},
    {"samples_per_s", [](const ReportRow& r, const MatrixCell*) { return metric(r, "throughput", "samples_per_s"); }},
    {"tokens_per_s", [](const ReportRow& r, const MatrixCell*) { return metric(r, "throughput", "tokens_per_s"); }},
    {"ttft_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "generation", "time_to_first_token_ms_median"); }},
    {"prefill_ms", [](const ReportRow& r, const MatrixCell*) { return metric(r, "generation", "prefill_ms_median"); }},
    {"decode_tokens_per_s", [](const ReportRow& r, const MatrixCell*) { return metric(r, "generation", "decode_tokens_per_s"); }},
    {"nmse", [](const ReportRow& r, const MatrixCell*) { return metric(r, "accuracy", "nmse"); }},
    {"cosine", [](const ReportRow& r, const MatrixCell*) { return metric(r, "accuracy", "cosine"); }},
    {"top1_agreement", [](const ReportRow& r, const MatrixCell*) { return metric(r, "accuracy", "top1_agreement"); }},
    {"kl_divergence", [](const ReportRow& r, const MatrixCell*) { return metric(r, "accuracy", "kl_divergence"); }},
    {"max_abs_err", [](const ReportRow& r, const MatrixCell*) { return metric(r, "accuracy", "max_abs_err"); }},
    {"peak_rss_bytes", peak_rss},
    {"weights_bytes", [](const ReportRow& r, const MatrixCell*) { return metric(r, "memory", "weights_bytes"); }},
    {"wall_s", [](const ReportRow& r, const MatrixCell*) { return metric(r, "process", "wall_s"); }},
    {"started_at", [](const ReportRow& r, const MatrixCell*) { return format_utc(r.started_at_ms); }},
    {"finished_at", [](const ReportRow& r, const MatrixCell*) { return format_utc(r.finished_at_ms); }},
    {"started_at_ms", [](const ReportRow& r, const MatrixCell*) { return millis_or_empty(r.started_at_ms); }},
    {"finished_at_ms", [](const ReportRow& r, const MatrixCell*) { return millis_or_empty(r.finished_at_ms); }},
    {"host_load_start", [](const ReportRow& r, const MatrixCell*) { return host_field(r, "load_start"); }},
    {"host_load_end", [](const ReportRow& r, const MatrixCell*) { return host_field(r, "load_end"); }},
    {"host_cpus", [](const ReportRow& r, const MatrixCell*) { return host_field(r, "cpus"); }},
    {"host_other_load", [](const ReportRow& r, const MatrixCell*) { return host_field(r, "other_load"); }},
    {"host_steal_fraction", [](const ReportRow& r, const MatrixCell*) { return host_field(r, "steal_fraction"); }},
    {"host_busy", [](const ReportRow& r, const MatrixCell*) { return host_busy_text(r); }},
    {"cell_rating", [](const ReportRow&, const MatrixCell* c) { return c ? std::string(rating_key(c->rating)) : std::string(); }},
    {"cell_speedup", [](const ReportRow&, const MatrixCell* c) { return number_text(c ? c->speedup : std::nullopt); }},
    {"cell_speedup_ci_low",
     [](const ReportRow&, const MatrixCell* c) {
       const SpeedupEstimate* s = interval_of(c);
       return number_text(s ? s->low : std::nullopt);
     }},
    {"cell_speedup_ci_high",
     [](const ReportRow&, const MatrixCell* c) {
       const SpeedupEstimate* s = interval_of(c);
       return number_text(s ? s->high : std::nullopt);
     }},
    {"target", [](const ReportRow& r, const MatrixCell*) { return r.target; }},
    {"exclusive", [](const ReportRow& r, const MatrixCell*) { return std::string(r.exclusive ? "true" : "false"); }},
};

constexpr std::string_view kRecordEnd = "\r\n";

}  // namespace

std::vector<std::string_view> csv_columns() {
  std::vector<std::string_view> names;
  for (const Column& c : kColumns) names.push_back(c.name);
  return names;
}

std::string csv_field(std::string_view text) {
  bool quote = false;
  if (!text.empty()) {
    const char first = text.front();
    const char last = text.back();
    quote = first == ' ' || first == '\t' || last == ' ' || last == '\t' ||
            text.find_first_of("\",\r\n") != std::string_view::npos;
  }
  if (!quote) return std::string(text);
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

namespace {

// What the columns read of a row's documents (the projection each walk parses; report_common.h).
ReportDocumentKeys csv_keys() {
  static const std::vector<std::string_view> spec_keys{"batch", "seq_len", "mode", "seed", "scaled"};
  static const std::vector<std::string_view> metrics_keys{
      "latency_ms.median", "latency_ms.p90", "latency_ms.min", "latency_ms.max", "latency_ms.mean",
      "latency_ms.stddev", "latency_ms.count", "throughput.samples_per_s", "throughput.tokens_per_s",
      "generation.time_to_first_token_ms_median", "generation.prefill_ms_median", "generation.decode_tokens_per_s",
      "accuracy.nmse", "accuracy.cosine", "accuracy.top1_agreement", "accuracy.kl_divergence",
      "accuracy.max_abs_err", "process.peak_rss_bytes", "process.wall_s", "memory.peak_rss_bytes",
      "memory.weights_bytes", "host"};
  return ReportDocumentKeys{&spec_keys, &metrics_keys};
}

// Output is handed to the sink in pieces of about this size.
constexpr std::size_t kCsvFlushBytes = 1 << 20;

}  // namespace

Status write_csv_report(const RunRecord& /*run*/, const ReportRowSource& rows, const TextSink& out) {
  // Two walks: the first builds the matrix (each record carries its cell's rating), the second
  // writes the records as they are read.
  MatrixBuilder matrix_builder;
  const ReportDocumentKeys matrix_keys{&matrix_spec_keys(), &matrix_metrics_keys()};
  AM_RETURN_IF_ERROR(rows(matrix_keys, [&](const ReportRow& r, const ReportRowTexts&) {
    matrix_builder.add(r);
    return Status::Ok();
  }));
  const Matrix matrix = matrix_builder.finish();
  std::unordered_map<std::string_view, const MatrixCell*> cell_of_job;
  for (const MatrixCell& cell : matrix.cells) {
    for (const std::string& id : cell.job_ids) cell_of_job.emplace(id, &cell);
  }
  std::string buffer;
  bool first = true;
  for (const Column& c : kColumns) {
    if (!first) buffer += ',';
    first = false;
    buffer += c.name;
  }
  buffer += kRecordEnd;
  AM_RETURN_IF_ERROR(rows(csv_keys(), [&](const ReportRow& r, const ReportRowTexts&) {
    auto it = cell_of_job.find(r.job_id);
    const MatrixCell* cell = it != cell_of_job.end() ? it->second : nullptr;
    bool first_field = true;
    for (const Column& c : kColumns) {
      if (!first_field) buffer += ',';
      first_field = false;
      buffer += csv_field(c.value(r, cell));
    }
    buffer += kRecordEnd;
    if (buffer.size() < kCsvFlushBytes) return Status::Ok();
    Status st = out(buffer);
    buffer.clear();
    return st;
  }));
  return out(buffer);
}

std::string render_csv(const RunRecord& run, const std::vector<ReportRow>& rows) {
  return collect_text([&](const TextSink& sink) { return write_csv_report(run, rows_in_memory(rows), sink); });
}

}  // namespace am::coord
