// Reliability constants, with units, in one place. Every interval here can be overridden by a
// command-line flag of the binary that uses it; these are the defaults.
#pragma once

#include <cstdint>

namespace am::reliability {

// Heartbeats flow both ways every interval; a peer silent for `liveness` intervals is dead.
// Any traffic from a peer counts as a sign of life.
inline constexpr int64_t kHeartbeatIntervalMs = 1000;
inline constexpr int kHeartbeatLiveness = 5;

// Worker reconnect backoff: starts at the initial delay, doubles per failed attempt, capped.
inline constexpr int64_t kReconnectInitialMs = 250;
inline constexpr int64_t kReconnectMaxMs = 8000;

// A lease lasts the job's own time limit plus this grace (spawn, reference run, reporting).
inline constexpr int64_t kLeaseGraceMs = 30'000;

// Infrastructure failures (worker lost, lease expired) are retried on another worker; a job is
// stored as `lost` once they happened on this many distinct workers (silent peers excepted,
// see below).
inline constexpr int kMaxInfraAttempts = 3;

// Silent peers (PROTOCOL §5.5): a lease that ends with no PROGRESS or RESULT from its peer for
// that attempt costs the peer, not the job. After this many such leases in a row the peer's
// worker id gets no new leases for a quarantine that starts at the initial length and doubles
// with every further quarantine, up to the cap. Any PROGRESS or RESULT ends the streak.
inline constexpr int kSilentLeasesBeforeQuarantine = 2;
inline constexpr int64_t kQuarantineInitialMs = 30'000;
inline constexpr int64_t kQuarantineMaxMs = 600'000;

// Device health (fleet operations; docs/PROTOCOL.md §5.11). Every device runs a known-answer
// health job when its worker registers and then every kHealthIntervalMs; until the first one
// passes it gets no run jobs. A device is quarantined when a health job fails, or after this many
// crash/timeout outcomes in a row on different models (OOM neither counts nor breaks the
// streak: a model too large for a device is a matrix finding). A quarantine lasts the initial
// backoff, doubling with each quarantine of the device and each failed re-check (capped); then
// a health job runs again and lifts it if it passes.
inline constexpr int64_t kHealthIntervalMs = 3'600'000;
inline constexpr int kCrashesBeforeDeviceQuarantine = 3;
inline constexpr int64_t kDeviceQuarantineInitialMs = 300'000;
inline constexpr int64_t kDeviceQuarantineMaxMs = 3'600'000;
// The health job's own time limit: a tiny model, so anything near this is a sick device.
inline constexpr double kHealthJobTimeoutS = 60.0;

// Without CURVE, a worker id that has not yet returned a result holds at most this many leases
// per device (a peer that takes jobs and never answers can then hold few of them).
inline constexpr int kUnprovenLeasesPerDevice = 1;

// A job whose leases keep ending with answers (its workers die while running it) is stored as
// `lost` after failing on kMaxInfraAttempts distinct workers, or after this many such failures
// in total when fewer workers could run it.
inline constexpr int kMaxInfraFailuresFactor = 2;   // × max_infra_attempts

// A job's default time limit when the plan sets none.
inline constexpr int64_t kDefaultJobTimeoutMs = 120'000;

// The coordinator and worker wake at least this often to run timers.
inline constexpr int64_t kPollTickMs = 50;

// While jobs wait, the coordinator's scheduler walks every worker at least this often; between
// such passes it walks only workers whose own state changed (a credit, a result). Bounds how long
// a worker that became able to take work without an event of its own (a peer quarantine
// running out) waits.
inline constexpr int64_t kFullSchedulingPassMs = 100;

// Results are written to SQLite in batches: at most this many per transaction, and a batch is
// flushed (and ACKed) no later than this after its first result arrived.
inline constexpr int kStoreBatchMax = 64;
inline constexpr int64_t kStoreBatchMaxDelayMs = 20;

// How long a worker leaving (BYE after a drain or a stop) lets ZeroMQ try to put its last
// messages on the wire before the process exits anyway.
inline constexpr int64_t kLastMessagesFlushMs = 2000;

// Bytes of a job process's output kept as its log tail.
inline constexpr std::size_t kLogTailBytes = 16u << 10;

// Warnings about what peers send (refused HELLOs, forged RESULTs, unknown devices, ...): at most
// this many per window, the rest logged at debug and counted in the next warning let through, so
// a peer cannot grow the log without bound (PROTOCOL §1: bad input is logged rate-limited).
inline constexpr int kPeerWarningsPerWindow = 20;
inline constexpr int64_t kPeerWarningWindowMs = 1000;

}  // namespace am::reliability
