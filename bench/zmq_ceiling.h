// The raw ZeroMQ round-trip ceiling of bench_dispatch: a bare ROUTER/DEALER loop with the same
// peers, credit, frames and message sizes as the coordinator's ASSIGN and RESULT, and nothing
// else — no decoding, no scheduling, no storage. What the real coordinator reaches is reported
// as a fraction of it, measured in the same run.
//
// Contract:
// - serve_ceiling_router() is the server half, run in a process of its own (bench_dispatch
//   --raw-router, like the coordinator is a process of its own): it binds a ROUTER on loopback,
//   writes the bound endpoint to `endpoint_file` (atomically) and serves until SIGTERM/SIGINT.
//   A peer says HELLO with its credit (ASCII digits) and gets that many ASSIGN-sized messages;
//   every RESULT-sized answer gets the next one. Returns the process exit code.
// - run_ceiling_dealers() is the client half in the calling process: `peers` DEALER sockets,
//   polled by `threads` threads as the simulated fleet polls its workers; each answers every
//   message at once. It counts round trips after `warmup_s` for `seconds` and returns the rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "common/status.h"

namespace am::bench {

struct CeilingOptions {
  std::string endpoint;
  int peers = 8;
  int credit = 1;
  int threads = 1;
  std::size_t result_bytes = 1024;   // DEALER -> ROUTER body
  double warmup_s = 0.5;
  double seconds = 2.0;
};

struct CeilingResult {
  uint64_t round_trips = 0;          // in the measured window
  double seconds = 0;
  double round_trips_per_s = 0;
  double client_cpu_s = 0;           // this process's CPU in the window (the DEALER half)
};

int serve_ceiling_router(const std::filesystem::path& endpoint_file, std::size_t assign_bytes);
Result<CeilingResult> run_ceiling_dealers(const CeilingOptions& options);

}  // namespace am::bench
