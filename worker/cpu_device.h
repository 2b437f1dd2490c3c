// The cpu device entry of the capability record ("devices": [{"key": "cpu:0", ...}]).
#pragma once

#include <string>
#include <vector>
#include <string_view>

namespace am::worker {

// Precisions the inference core's cpu backend runs today, advertised for every cpu device. This
// is the one place to extend when kernels gain a format; the coordinator matches jobs against it.
// The precisions this build's cpu backend runs: every known precision for which the kernels have
// a weight format (for "mixed", a per-role policy). Derived from the core, so a capability record
// never claims what the core lacks nor hides what it has.
std::vector<std::string> cpu_precisions();

inline constexpr std::string_view kCpuDeviceKey = "cpu:0";

}  // namespace am::worker
