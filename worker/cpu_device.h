// The cpu device entry of the capability record ("devices": [{"key": "cpu:0", ...}]).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jobs/precision.h"

namespace am::worker {

// The precisions this build's cpu backend runs, as its own supports() answers them
// (kernels::supported_precisions), advertised for every cpu device. Derived from the backend, so a
// capability record never claims what the core lacks nor hides what it has.
std::vector<jobs::Precision> cpu_precisions();

inline constexpr std::string_view kCpuDeviceKey = "cpu:0";

}  // namespace am::worker
