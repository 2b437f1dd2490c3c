// What probes read: the small /proc, /sys and /etc text files (through ProbeOptions::root, so
// tests and replays read a recorded machine's copies) and the answers of libraries and system
// calls (live, or from a recording). Both also feed a recorder when one is attached.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "worker/probe.h"

namespace am::worker {

// `root` joined with an absolute path ("/proc/meminfo" under "/tmp/rec" -> "/tmp/rec/proc/meminfo").
std::filesystem::path rooted(const std::filesystem::path& root, std::string_view absolute);

// The whole file (at most kMaxProbeFileBytes), or nullopt when it cannot be opened. Never throws.
inline constexpr std::size_t kMaxProbeFileBytes = 1u << 20;
std::optional<std::string> read_probe_file(const std::filesystem::path& path);

// The machine file at `absolute` under options.root; when options.recorder is set, a file that
// could be read is also copied into the recording (a missing file stays missing there too).
std::optional<std::string> read_machine_file(const ProbeOptions& options, std::string_view absolute);

// The answers of `source` ("cpu", "opencl", ...). Replaying: the recorded document, or not_found
// when the recording lacks it — `gather` is never called. Otherwise `gather` asks the live
// machine (it must encode failures inside the document, so that they replay too), and the answers
// are saved to options.recorder when one is attached.
Result<nlohmann::json> probe_answers(const ProbeOptions& options, std::string_view source,
                                     const std::function<nlohmann::json()>& gather);

}  // namespace am::worker
