// Clocks: wall time for provenance (epoch ms) and monotonic time for intervals and deadlines.
#pragma once

#include <chrono>
#include <cstdint>

namespace am {

using SteadyClock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

inline int64_t now_epoch_ms() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline int64_t steady_ms() {
  return std::chrono::duration_cast<Millis>(SteadyClock::now().time_since_epoch()).count();
}

}  // namespace am
