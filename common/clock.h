// Clocks: wall time for provenance (epoch ms) and monotonic time for intervals and deadlines.
// Every elapsed-time measurement in the project (phase timings, sample latencies, build times)
// goes through ms_since / seconds_since, so each is a steady-clock difference.
// Thread-safety: all functions are thread-safe.
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

// Milliseconds (fractional) elapsed on the steady clock since `start`.
inline double ms_since(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

// Seconds (fractional) elapsed on the steady clock since `start`.
inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace am
