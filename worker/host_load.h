// How loaded the host was while a perf job ran: metrics.host (DECISIONS.md "Measurement": host
// load and steal time are recorded once per perf job, in one field).
//
// Contract:
//   - read_host_sample() reads the 1-minute load average (/proc/loadavg) and the aggregate CPU
//     time counters (/proc/stat, the "cpu" line and the count of "cpuN" lines) under
//     `proc_root`. nullopt when either is missing or unreadable (any non-Linux system): the
//     field is then omitted, never guessed.
//   - host_metrics() turns the samples taken at the start and the end of a job, and the job
//     process's own CPU time (wait4 rusage, user + system, seconds) over `wall_s` seconds, into
//     {"load_start", "load_end" (load averages), "cpus" (online CPUs),
//      "steal_fraction" (stolen ÷ all CPU time between the samples, 0..1),
//      "other_load" (CPUs busy with anything but the job, on average: host non-idle CPU time
//                    minus the job's, ÷ wall_s, clamped to [0, cpus])}.
//     steal_fraction and other_load are omitted when the counters did not advance (wall time
//     below the counters' resolution, 1/USER_HZ).
//   The coordinator decides what "busy" means (coordinator/ratings.h host_busy).
// Pure functions of their inputs and the files read; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

namespace am::worker {

struct HostSample {
  double load_1m = 0.0;
  int cpus = 0;
  uint64_t busy_ticks = 0;     // user + nice + system + irq + softirq, USER_HZ ticks
  uint64_t steal_ticks = 0;
  uint64_t total_ticks = 0;    // busy + idle + iowait + steal
};

std::optional<HostSample> read_host_sample(const std::filesystem::path& proc_root = "/proc");

// ticks_per_s: USER_HZ (sysconf(_SC_CLK_TCK)).
nlohmann::json host_metrics(const HostSample& start, const HostSample& end, double job_cpu_s, double wall_s,
                            double ticks_per_s);

}  // namespace am::worker
