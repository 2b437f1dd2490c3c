// Shared measurement helpers for the benchmarks in bench/.
//
// Contract:
//   - last_level_cache_bytes(): the size of this CPU's last-level cache (sysfs, then sysconf,
//     then kFallbackLlcBytes when neither answers).
//   - measure_read_bandwidth(): a STREAM-like read kernel. Every thread of `pool` sums its own
//     contiguous slice of one buffer of max(kMinReadBufferBytes, kLlcMultiple x LLC) bytes (so
//     caches cannot hold it), first touched by the same threads; passes repeat until both
//     min_time_s and kMinBandwidthPasses are reached. Reports the best pass (STREAM's
//     convention) and the median, in bytes per second. Allocation failure throws
//     std::bad_alloc. Not thread-safe against other users of `pool`.
#pragma once

#include <cstddef>

#include "kernels/thread_pool.h"

namespace am::bench {

inline constexpr std::size_t kMinReadBufferBytes = std::size_t{512} << 20;  // 512 MiB
inline constexpr std::size_t kLlcMultiple = 8;
inline constexpr std::size_t kFallbackLlcBytes = std::size_t{32} << 20;
inline constexpr int kMinBandwidthPasses = 5;

std::size_t last_level_cache_bytes();

struct ReadBandwidth {
  double best_bytes_per_second = 0.0;
  double median_bytes_per_second = 0.0;
  std::size_t buffer_bytes = 0;
  int threads = 0;
  int passes = 0;
};

ReadBandwidth measure_read_bandwidth(kernels::ThreadPool& pool, double min_time_s);

}  // namespace am::bench
