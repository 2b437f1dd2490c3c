// What the whole-system benchmarks (bench_dispatch, bench_scale) read about processes and the
// host: CPU time and memory of a process from /proc, the load average, and a check that a
// directory is on a real disk (their SQLite files must never sit on tmpfs: DECISIONS.md
// "Measurement", "Durable").
//
// Contract: Linux /proc only; a value that cannot be read is 0 (the tables then show 0, never a
// made-up figure). Thread-safe (no state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <sys/types.h>

#include "common/status.h"

namespace am::bench {

struct ProcessSample {
  double cpu_s = 0;            // user + system CPU seconds so far
  int64_t rss_bytes = 0;       // resident now (VmRSS)
  int64_t peak_rss_bytes = 0;  // high-water mark (VmHWM)
};

ProcessSample sample_process(pid_t pid);
// This process (RUSAGE_SELF CPU, /proc/self for memory).
ProcessSample sample_self();
// The 1-minute load average (0 when /proc/loadavg is unreadable).
double load_average_1m();
// The CPU model as /proc/cpuinfo names it ("unknown CPU" where it does not): printed with every
// table, since a figure means nothing without the machine it was measured on.
std::string cpu_model_name();
// OK when `dir` is on a disk-backed file system; kFailedPrecondition naming the file system when
// it is tmpfs or ramfs (a WAL fsync there costs nothing, so a "durable" rate would be a lie).
Status require_disk_backed(const std::filesystem::path& dir);

}  // namespace am::bench
