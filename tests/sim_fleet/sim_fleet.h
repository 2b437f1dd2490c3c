// A simulated fleet: N SimWorkers (sim_worker.h) in this process, driven by a few threads that
// each wait on their workers' sockets with one zmq_poll — a thousand workers need no thousand
// threads. Used by bench/bench_dispatch (dispatch rate, idle load, reconnect floods against the
// real coordinator) and by tests that need many real-protocol peers (tests/sim_fleet/README.md).
//
// Contract:
// - start() connects every worker at once (each says HELLO) and returns; the drivers run until
//   stop() or destruction. Workers are "sim-<prefix>-<index>" on box "simhost-<prefix>-<index>"
//   (a host of their own: exclusive perf jobs do not serialise the fleet), with a registration
//   secret each and the shared hardware class of FleetOptions.
// - stats() may be called from any thread at any time (atomic counters).
// - reconnect_all() makes every worker drop its connection and say HELLO on a fresh socket within
//   one poll tick of its driver (all within the same few milliseconds).
// - take_latencies() moves out the ASSIGN -> ACK latencies (microseconds) recorded so far.
// - Not copyable; the public methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/protocol.h"
#include "tests/sim_fleet/sim_records.h"
#include "tests/sim_fleet/sim_worker.h"

namespace am::sim {

struct FleetOptions {
  std::string endpoint;                        // the coordinator
  int workers = 8;
  int slots = 1;                               // credit window per worker
  int threads = 1;                             // driver threads (each polls workers/threads sockets)
  std::string prefix = "0";                    // worker ids sim-<prefix>-<index>
  std::string hardware_class = kSimHardwareClass;
  bool send_progress = true;
  int64_t job_ms = 0;
  int64_t heartbeat_interval_ms = reliability::kHeartbeatIntervalMs;   // until WELCOME
  bool record_latencies = true;
  // SimWorkerOptions::on_assign for every worker (called from the driver threads at once).
  std::function<void(const proto::Assign&)> on_assign;
};

struct FleetStats {
  uint64_t hellos = 0, welcomes = 0, rejects_retry = 0, rejects_final = 0;
  uint64_t assigns = 0, health_assigns = 0, assigns_ignored = 0;
  uint64_t results = 0, results_resent = 0, acks = 0, acks_duplicate = 0, cancels = 0;
  uint64_t heartbeats_sent = 0, heartbeats_received = 0, reconnects = 0, send_failures = 0, byes = 0;
  int64_t first_assign_ms = 0;                 // steady ms (0: none yet)
  int64_t last_ack_ms = 0;
};

class SimFleet {
 public:
  static Result<std::unique_ptr<SimFleet>> start(const FleetOptions& options);
  ~SimFleet();
  SimFleet(const SimFleet&) = delete;
  SimFleet& operator=(const SimFleet&) = delete;

  void stop();
  FleetStats stats() const;
  void reconnect_all();
  std::vector<int64_t> take_latencies();
  // The ids of the workers, in index order.
  std::vector<std::string> worker_ids() const;
  // Polls `pred` every 5 ms until it holds or `timeout` passes; returns whether it held.
  static bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

 private:
  struct Driver;
  explicit SimFleet(const FleetOptions& options);
  void run_driver(Driver& d);

  FleetOptions opt_;
  SimCounters counters_;
  std::vector<std::unique_ptr<SimWorker>> workers_;
  std::vector<std::unique_ptr<Driver>> drivers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reconnect_epoch_{0};
};

// p-th percentile (0..100) of `values` by nearest rank; 0 for an empty set. Sorts `values`.
int64_t percentile(std::vector<int64_t>& values, double p);

}  // namespace am::sim
