// Reading the small /proc, /sys and /etc text files probes consult, through ProbeOptions::root so
// that tests can replay a recorded machine's files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace am::worker {

// `root` joined with an absolute path ("/proc/meminfo" under "/tmp/rec" -> "/tmp/rec/proc/meminfo").
std::filesystem::path rooted(const std::filesystem::path& root, std::string_view absolute);

// The whole file (at most kMaxProbeFileBytes), or nullopt when it cannot be opened. Never throws.
inline constexpr std::size_t kMaxProbeFileBytes = 1u << 20;
std::optional<std::string> read_probe_file(const std::filesystem::path& path);

}  // namespace am::worker
