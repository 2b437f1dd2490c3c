// What a simulated worker says about itself and its jobs: a capability record shaped like the
// real probe's (docs/PROTOCOL.md §6.1) and a RESULT metrics document of about 1 KiB shaped like a
// real job's summary without raw samples (§6.3; DECISIONS.md "Dispatch benchmark").
//
// Contract: pure functions, deterministic for their arguments. The records are made up — no
// probe runs — but every field the coordinator reads (devices[].key, backend, precisions,
// memory_bytes, host_cores, schedulable, hardware_class, host.host_id) is spelled and typed as
// the real worker spells it, so matching, placement and exclusivity treat a simulated box as a
// real one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace am::sim {

// The hardware class every simulated box shares unless told otherwise: identical boxes, so an
// each-class plan job runs once for the whole simulated fleet.
inline constexpr const char* kSimHardwareClass = "cpu-51a0000000000001";

// Device memory the simulated cpu device reports: large enough for any job of the catalog.
inline constexpr int64_t kSimDeviceMemoryBytes = int64_t{64} << 30;   // 64 GiB

// The capability record of simulated box `host_id` (schema 2): one schedulable cpu device
// "cpu:0" with every precision the cpu backend runs, host_cores true, and the given class.
nlohmann::json sim_capabilities(const std::string& hostname, const std::string& host_id,
                                const std::string& hardware_class = kSimHardwareClass);

// A metrics document like a finished perf+accuracy job's (latency summary with quantiles and a
// 32-bin histogram, throughput, accuracy, memory, process and host figures), varied by `seed`.
// Its MessagePack encoding is about kSimMetricsBytes.
nlohmann::json sim_metrics(uint64_t seed);
inline constexpr std::size_t kSimMetricsBytes = 1024;

}  // namespace am::sim
