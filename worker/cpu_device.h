// The cpu device entry of the capability record ("devices": [{"key": "cpu:0", ...}]).
#pragma once

#include <array>
#include <string_view>

namespace am::worker {

// Precisions the inference core's cpu backend runs today, advertised for every cpu device. This
// is the one place to extend when kernels gain a format; the coordinator matches jobs against it.
inline constexpr std::array<std::string_view, 2> kCpuPrecisions = {"f32", "q8_0"};

inline constexpr std::string_view kCpuDeviceKey = "cpu:0";

}  // namespace am::worker
