// Readers that turn an external command's output into a job result (docs/PLANS.md, "External
// commands": the accelmatrix-json result schema and the llama-bench reader).
//
// Contract: pure functions of the text they are given, no I/O, thread-safe, never throw. Each
// validates strictly: a document that is not exactly what the schema allows is an error whose
// message names what was wrong ("latency_ms[2]: expected a finite number > 0, got \"x\""), and
// the caller stores the job as `error` with that message. On success they return the status the
// command reported, its reason, and metrics in the shape of docs/PROTOCOL.md §6.3 (latency_ms
// summarized with kernels::summarize_latency, throughput, accuracy, memory, notes).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result_status.h"
#include "common/status.h"

namespace am::worker {

struct CommandResult {
  ResultStatus status = ResultStatus::kError;
  std::string reason;
  nlohmann::json metrics = nlohmann::json::object();
};

// The accelmatrix-json schema, from one JSON text (the result file's whole content, or the
// object on stdout).
Result<CommandResult> read_result_document(std::string_view json_text);

// The accelmatrix-json reader over a command's stdout: the last line that starts with '{'
// (leading blanks ignored) is the result document. Used when the command wrote no result file.
Result<CommandResult> read_result_from_stdout(std::string_view stdout_text);

// llama.cpp's `llama-bench -o json`: stdout is one JSON array of test objects.
Result<CommandResult> read_llama_bench(std::string_view stdout_text);

}  // namespace am::worker
