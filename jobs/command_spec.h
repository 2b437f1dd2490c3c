// External command jobs: a plan's [[commands]] entry, as it travels inside a JobSpec.
//
// Contract: a CommandSpec names a program and its arguments (argv, no shell) that a worker
// started with --allow-commands runs as a job, and the reader that turns its output into a
// result (docs/PLANS.md, "External commands"). command_to_json()/command_from_json() round-trip
// exactly; command_from_json() validates every field and names the offending one
// ("spec.command.argv[1]: expected a string"). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::jobs {

// Output readers. "accelmatrix-json": the command prints our result document (docs/PLANS.md).
// "llama-bench": the command is llama.cpp's `llama-bench -o json` (or prints what it prints).
inline constexpr std::string_view kOutputAccelmatrixJson = "accelmatrix-json";
inline constexpr std::string_view kOutputLlamaBench = "llama-bench";
std::span<const std::string_view> known_output_readers();
bool is_known_output_reader(std::string_view name);

// The architecture and precision labels a command job carries when it names none of ours:
// a command runs no graph of ours, so it claims no family, and a tool's own precision name
// ("Q4_K_M") is not one of our formats.
inline constexpr std::string_view kExternalArchitecture = "external";

// Bounds that keep a spec far below the wire limits (64 KiB per string, 4096 entries).
inline constexpr std::size_t kMaxCommandArgs = 1024;
inline constexpr std::size_t kMaxCommandArgBytes = 16 * 1024;
inline constexpr std::size_t kMaxCommandLabelBytes = 256;

struct CommandSpec {
  std::string name;                 // the plan's identity of the command (unique in the plan)
  std::vector<std::string> argv;    // argv[0] is the program (PATH is searched), no shell
  std::string output = std::string(kOutputAccelmatrixJson);
  // The plan's `precision` text when it is not one of ours (the job's precision is then
  // "external"); empty otherwise.
  std::string precision_label;
  bool operator==(const CommandSpec&) const = default;
};

nlohmann::json command_to_json(const CommandSpec& c);
Result<CommandSpec> command_from_json(const nlohmann::json& doc);

}  // namespace am::jobs
