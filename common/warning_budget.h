// A budget of log lines per time window, for warnings that peers can trigger at will: within a
// window the first `per_window` are admitted, the rest are held back (the caller logs them at
// debug) and counted, and the count is handed to the next line admitted.
#pragma once

#include <cstdint>

namespace am {

class WarningBudget {
 public:
  WarningBudget(int per_window, int64_t window_ms) : per_window_(per_window), window_ms_(window_ms) {}

  // True when a warning may be logged now.
  bool admit(int64_t now_ms) {
    if (now_ms - window_start_ms_ >= window_ms_) {
      window_start_ms_ = now_ms;
      used_ = 0;
    }
    if (used_ < per_window_) {
      ++used_;
      return true;
    }
    ++held_back_;
    return false;
  }

  // Warnings held back since the last call (which resets the count).
  uint64_t take_held_back() {
    const uint64_t n = held_back_;
    held_back_ = 0;
    return n;
  }

 private:
  int per_window_;
  int64_t window_ms_;
  int64_t window_start_ms_ = INT64_MIN / 2;
  int used_ = 0;
  uint64_t held_back_ = 0;
};

}  // namespace am
