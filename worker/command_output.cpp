#include "worker/command_output.h"

#include <cmath>
#include <set>
#include <vector>

#include "kernels/measure.h"

namespace am::worker {
namespace {

using nlohmann::json;

// The statuses a command may report. The others are the coordinator's (skipped, lost,
// interrupted) or the worker's own verdict on a stop it caused (cancelled).
const std::set<ResultStatus> kCommandStatuses = {
    ResultStatus::kPass,    ResultStatus::kDegraded, ResultStatus::kFail,  ResultStatus::kCrash,
    ResultStatus::kTimeout, ResultStatus::kOom,      ResultStatus::kError, ResultStatus::kUnsupported};

// More samples than this is not a measurement a person meant to send.
constexpr std::size_t kMaxLatencySamples = 1'000'000;
constexpr std::size_t kMaxNotesBytes = 4096;
constexpr double kNsPerMs = 1e6;

Status bad(const std::string& where, const std::string& what) {
  return invalid_argument(where + ": " + what);
}

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

bool finite_number(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

Result<json> parse_json(std::string_view text, const std::string& what) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalid_argument(what + " is not valid JSON");
  return doc;
}

Status read_latency(const json& v, json& metrics) {
  if (!v.is_array()) return bad("latency_ms", "expected an array of milliseconds, got " + shown(v));
  if (v.empty()) return bad("latency_ms", "empty (leave it out when nothing was timed)");
  if (v.size() > kMaxLatencySamples) return bad("latency_ms", "more than 1000000 samples");
  std::vector<double> samples;
  samples.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!finite_number(v[i]) || !(v[i].get<double>() > 0)) {
      return bad("latency_ms[" + std::to_string(i) + "]", "expected a finite number > 0, got " + shown(v[i]));
    }
    samples.push_back(v[i].get<double>());
  }
  metrics["latency_ms"] = kernels::to_json(kernels::summarize_latency(std::move(samples)));
  return Status::Ok();
}

Status read_throughput(const json& v, json& metrics) {
  if (!v.is_object()) return bad("throughput", "expected {\"value\": N, \"unit\": \"tokens/s\" or \"items/s\"}, got " + shown(v));
  for (const auto& [k, x] : v.items()) {
    if (k != "value" && k != "unit") return bad("throughput." + k, "unknown key (allowed: value, unit)");
  }
  auto value = v.find("value");
  auto unit = v.find("unit");
  if (value == v.end() || !finite_number(*value) || !(value->get<double>() > 0)) {
    return bad("throughput.value", "expected a finite number > 0");
  }
  if (unit == v.end() || !unit->is_string()) return bad("throughput.unit", "expected \"tokens/s\" or \"items/s\"");
  const std::string u = unit->get<std::string>();
  if (u == "tokens/s") {
    metrics["throughput"]["tokens_per_s"] = value->get<double>();
  } else if (u == "items/s") {
    metrics["throughput"]["samples_per_s"] = value->get<double>();
  } else {
    return bad("throughput.unit", "expected \"tokens/s\" or \"items/s\", got " + shown(*unit));
  }
  return Status::Ok();
}

Status read_accuracy(const json& v, json& metrics) {
  if (!v.is_object()) return bad("accuracy", "expected {\"nmse\": N, \"cosine\": N}, got " + shown(v));
  if (v.empty()) return bad("accuracy", "empty (leave it out when nothing was compared)");
  for (const auto& [k, x] : v.items()) {
    if (k == "nmse") {
      if (!finite_number(x) || x.get<double>() < 0) return bad("accuracy.nmse", "expected a finite number >= 0, got " + shown(x));
    } else if (k == "cosine") {
      if (!finite_number(x) || x.get<double>() < -1 || x.get<double>() > 1) {
        return bad("accuracy.cosine", "expected a number in [-1, 1], got " + shown(x));
      }
    } else {
      return bad("accuracy." + k, "unknown key (allowed: nmse, cosine)");
    }
    metrics["accuracy"][k] = x.get<double>();
  }
  return Status::Ok();
}

}  // namespace

Result<CommandResult> read_result_document(std::string_view json_text) {
  AM_ASSIGN_OR_RETURN(json doc, parse_json(json_text, "the result document"));
  if (!doc.is_object()) return invalid_argument("the result document is not a JSON object");
  CommandResult out;
  bool has_status = false;
  for (const auto& [k, v] : doc.items()) {
    if (k == "schema") {
      if (!v.is_number_integer() || v.get<int64_t>() != 1) return bad("schema", "expected 1, got " + shown(v));
    } else if (k == "status") {
      std::optional<ResultStatus> s = v.is_string() ? parse_result_status(v.get<std::string>()) : std::nullopt;
      if (!s || !kCommandStatuses.count(*s)) {
        return bad("status", "expected one of pass, degraded, fail, crash, timeout, oom, error, unsupported, got " + shown(v));
      }
      out.status = *s;
      has_status = true;
    } else if (k == "reason") {
      if (!v.is_string()) return bad("reason", "expected a string, got " + shown(v));
      out.reason = v.get<std::string>();
    } else if (k == "latency_ms") {
      AM_RETURN_IF_ERROR(read_latency(v, out.metrics));
    } else if (k == "throughput") {
      AM_RETURN_IF_ERROR(read_throughput(v, out.metrics));
    } else if (k == "accuracy") {
      AM_RETURN_IF_ERROR(read_accuracy(v, out.metrics));
    } else if (k == "peak_memory_bytes") {
      if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
        return bad("peak_memory_bytes", "expected an integer >= 0, got " + shown(v));
      }
      out.metrics["memory"]["peak_bytes"] = v.get<int64_t>();
    } else if (k == "notes") {
      if (!v.is_string()) return bad("notes", "expected a string, got " + shown(v));
      if (v.get<std::string>().size() > kMaxNotesBytes) return bad("notes", "longer than 4096 bytes");
      out.metrics["notes"] = v;
    } else {
      return bad(k, "unknown key (allowed: schema, status, reason, latency_ms, throughput, accuracy, "
                    "peak_memory_bytes, notes)");
    }
  }
  if (!has_status) return invalid_argument("status: missing");
  return out;
}

Result<CommandResult> read_result_from_stdout(std::string_view text) {
  std::string_view last;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] == '{') last = line.substr(first);
    pos = end + 1;
  }
  if (last.empty()) {
    return invalid_argument("no result: the command wrote no $ACCELMATRIX_RESULT_FILE and no line of its stdout starts with '{'");
  }
  auto r = read_result_document(last);
  if (!r.ok()) return r.status().with_context("stdout's last '{' line");
  return r;
}

Result<CommandResult> read_llama_bench(std::string_view text) {
  AM_ASSIGN_OR_RETURN(json doc, parse_json(text, "llama-bench output (stdout)"));
  if (!doc.is_array()) return invalid_argument("llama-bench output: expected a JSON array of tests, got " + std::string(doc.type_name()));
  if (doc.empty()) return invalid_argument("llama-bench output: no tests");
  json tests = json::array();
  std::vector<double> first_samples;
  std::optional<double> first_ts;
  std::string model_type;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& t = doc[i];
    const std::string where = "llama-bench[" + std::to_string(i) + "]";
    if (!t.is_object()) return bad(where, "expected an object");
    auto integer = [&](const char* k, int64_t& out) -> Status {
      auto f = t.find(k);
      if (f == t.end() || !f->is_number_integer() || f->get<int64_t>() < 0) {
        return bad(where + "." + k, "missing or not an integer >= 0");
      }
      out = f->get<int64_t>();
      return Status::Ok();
    };
    int64_t n_prompt = 0, n_gen = 0;
    AM_RETURN_IF_ERROR(integer("n_prompt", n_prompt));
    AM_RETURN_IF_ERROR(integer("n_gen", n_gen));
    auto avg_ts = t.find("avg_ts");
    if (avg_ts == t.end() || !finite_number(*avg_ts) || !(avg_ts->get<double>() > 0)) {
      return bad(where + ".avg_ts", "missing or not a number > 0");
    }
    auto samples = t.find("samples_ns");
    if (samples == t.end() || !samples->is_array() || samples->empty()) {
      return bad(where + ".samples_ns", "missing or not a non-empty array");
    }
    std::vector<double> ms;
    for (std::size_t j = 0; j < samples->size(); ++j) {
      const json& x = (*samples)[j];
      if (!finite_number(x) || !(x.get<double>() > 0)) {
        return bad(where + ".samples_ns[" + std::to_string(j) + "]", "expected a number > 0, got " + shown(x));
      }
      ms.push_back(x.get<double>() / kNsPerMs);
    }
    json test = {{"n_prompt", n_prompt}, {"n_gen", n_gen}, {"avg_ts", avg_ts->get<double>()},
                 {"median_ms", kernels::summarize_latency(ms).median_ms}};
    if (auto sd = t.find("stddev_ts"); sd != t.end() && finite_number(*sd)) test["stddev_ts"] = sd->get<double>();
    for (const char* k : {"model_type", "backends", "build_commit", "n_threads", "n_gpu_layers"}) {
      if (auto f = t.find(k); f != t.end() && (f->is_string() || f->is_number_integer())) test[k] = *f;
    }
    if (i == 0) {
      first_samples = std::move(ms);
      first_ts = avg_ts->get<double>();
      if (auto f = t.find("model_type"); f != t.end() && f->is_string()) model_type = f->get<std::string>();
    }
    tests.push_back(std::move(test));
  }
  CommandResult out;
  out.status = ResultStatus::kPass;
  // The job's latency is one whole run of the first test (n_prompt + n_gen tokens), and its
  // throughput that test's tokens/s; every test is kept under metrics.llama_bench.
  out.metrics["latency_ms"] = kernels::to_json(kernels::summarize_latency(std::move(first_samples)));
  out.metrics["throughput"]["tokens_per_s"] = *first_ts;
  out.metrics["llama_bench"] = std::move(tests);
  std::string notes = "llama-bench: " + std::to_string(doc.size()) + " test(s)";
  if (!model_type.empty()) notes += ", model " + model_type;
  out.metrics["notes"] = notes;
  return out;
}

}  // namespace am::worker
