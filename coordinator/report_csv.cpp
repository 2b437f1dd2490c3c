#include "coordinator/report_csv.h"

#include <string>

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

// The job process's peak resident set: the executor's rusage of the child (present for every
// status the worker reports, oom included), else the job's own reading.
std::string peak_rss(const ReportRow& r) {
  if (const json* v = metric_value(r.metrics, "process", "peak_rss_bytes")) return json_number_text(v);
  return metric(r, "memory", "peak_rss_bytes");
}

std::string millis_or_empty(int64_t ms) { return ms == 0 ? std::string() : std::to_string(ms); }

struct Column {
  std::string_view name;
  std::string (*value)(const ReportRow&);
};

// Schema 1. Append only (see report_csv.h); docs/REPORTS.md describes each column.
const Column kColumns[] = {
    {"run_id", [](const ReportRow& r) { return report_text(r.run_id); }},
    {"job_id", [](const ReportRow& r) { return report_text(r.job_id); }},
    {"model", [](const ReportRow& r) { return report_text(r.model); }},
    {"architecture", [](const ReportRow& r) { return report_text(r.architecture); }},
    {"backend", [](const ReportRow& r) { return report_text(r.backend); }},
    {"hardware_class", [](const ReportRow& r) { return report_text(r.hardware_class); }},
    {"device", [](const ReportRow& r) { return report_text(r.device); }},
    {"precision", [](const ReportRow& r) { return std::string(jobs::to_string(r.precision)); }},
    {"batch", [](const ReportRow& r) { return spec_number(r, "batch"); }},
    {"seq_len", [](const ReportRow& r) { return spec_number(r, "seq_len"); }},
    {"mode", [](const ReportRow& r) { return spec_text(r, "mode"); }},
    {"seed", [](const ReportRow& r) { return spec_number(r, "seed"); }},
    {"scaled",
     [](const ReportRow& r) {
       const json* v = spec_value(r.spec, "scaled");
       return std::string(v && v->is_boolean() && v->get<bool>() ? "true" : "false");
     }},
    {"state", [](const ReportRow& r) { return std::string(to_string(r.state)); }},
    {"status", [](const ReportRow& r) { return r.status ? std::string(to_string(*r.status)) : std::string(); }},
    {"reason", [](const ReportRow& r) { return report_text(r.reason); }},
    {"attempt", [](const ReportRow& r) { return r.attempt > 0 ? std::to_string(r.attempt) : std::string(); }},
    {"attempts", [](const ReportRow& r) { return std::to_string(r.attempts); }},
    {"worker", [](const ReportRow& r) { return report_text(r.worker_id); }},
    {"hostname", [](const ReportRow& r) { return report_text(r.hostname); }},
    {"build", [](const ReportRow& r) { return report_text(r.build); }},
    {"latency_median_ms", [](const ReportRow& r) { return metric(r, "latency_ms", "median"); }},
    {"latency_p90_ms", [](const ReportRow& r) { return metric(r, "latency_ms", "p90"); }},
    {"latency_min_ms", [](const ReportRow& r) { return metric(r, "latency_ms", "min"); }},
    {"latency_max_ms", [](const ReportRow& r) { return metric(r, "latency_ms", "max"); }},
    {"latency_mean_ms", [](const ReportRow& r) { return metric(r, "latency_ms", "mean"); }},
    {"latency_stddev_ms", [](const ReportRow& r) { return metric(r, "latency_ms", "stddev"); }},
    {"latency_count", [](const ReportRow& r) { return metric(r, "latency_ms", "count"); }},
    {"samples_per_s", [](const ReportRow& r) { return metric(r, "throughput", "samples_per_s"); }},
    {"tokens_per_s", [](const ReportRow& r) { return metric(r, "throughput", "tokens_per_s"); }},
    {"ttft_ms", [](const ReportRow& r) { return metric(r, "generation", "time_to_first_token_ms_median"); }},
    {"prefill_ms", [](const ReportRow& r) { return metric(r, "generation", "prefill_ms_median"); }},
    {"decode_tokens_per_s", [](const ReportRow& r) { return metric(r, "generation", "decode_tokens_per_s"); }},
    {"nmse", [](const ReportRow& r) { return metric(r, "accuracy", "nmse"); }},
    {"cosine", [](const ReportRow& r) { return metric(r, "accuracy", "cosine"); }},
    {"top1_agreement", [](const ReportRow& r) { return metric(r, "accuracy", "top1_agreement"); }},
    {"kl_divergence", [](const ReportRow& r) { return metric(r, "accuracy", "kl_divergence"); }},
    {"max_abs_err", [](const ReportRow& r) { return metric(r, "accuracy", "max_abs_err"); }},
    {"peak_rss_bytes", peak_rss},
    {"weights_bytes", [](const ReportRow& r) { return metric(r, "memory", "weights_bytes"); }},
    {"wall_s", [](const ReportRow& r) { return metric(r, "process", "wall_s"); }},
    {"started_at", [](const ReportRow& r) { return format_utc(r.started_at_ms); }},
    {"finished_at", [](const ReportRow& r) { return format_utc(r.finished_at_ms); }},
    {"started_at_ms", [](const ReportRow& r) { return millis_or_empty(r.started_at_ms); }},
    {"finished_at_ms", [](const ReportRow& r) { return millis_or_empty(r.finished_at_ms); }},
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

std::string render_csv(const RunRecord& /*run*/, const std::vector<ReportRow>& rows) {
  std::string out;
  bool first = true;
  for (const Column& c : kColumns) {
    if (!first) out += ',';
    first = false;
    out += c.name;
  }
  out += kRecordEnd;
  for (const ReportRow& r : rows) {
    first = true;
    for (const Column& c : kColumns) {
      if (!first) out += ',';
      first = false;
      out += csv_field(c.value(r));
    }
    out += kRecordEnd;
  }
  return out;
}

}  // namespace am::coord
