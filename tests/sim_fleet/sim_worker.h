// One simulated worker: a DEALER client that speaks the real protocol (docs/PROTOCOL.md) the way
// worker/client.cpp does, but finishes every job itself instead of running it in a child process.
//
// Contract:
// - Message for message it behaves as the real client: HELLO (capability record, secret,
//   host id, slots, `held`) after every (re)connect; after WELCOME it re-sends every RESULT not
//   yet ACKed and states its credit window (worker::CreditWindow); on ASSIGN it sends PROGRESS
//   `started` (optional), then after `job_ms` the RESULT (status pass, a ~1 KiB metrics summary)
//   and a READY; it keeps every RESULT until its ACK and answers each ACK with a READY; it sends
//   HEARTBEAT (and a READY if its window changed) every interval, declares the coordinator dead
//   after `liveness` silent intervals and reconnects with a fresh socket after a doubling
//   backoff; REJECT retry=true gets one HELLO per connection; CANCEL ends a running job with a
//   `cancelled` RESULT; on DRAIN it finishes, waits for its ACKs and says BYE.
// - Health jobs (ids starting `health-`) pass like any job and are counted apart.
// - Not thread-safe: one driver thread owns it (SimFleet). Counters it updates are atomics shared
//   with the fleet.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/protocol.h"
#include "common/reliability.h"
#include "common/status.h"
#include "common/transport.h"
#include "worker/credit_window.h"

namespace am::sim {

// What the simulated workers of one fleet did, summed. Monotonic.
struct SimCounters {
  std::atomic<uint64_t> hellos{0};
  std::atomic<uint64_t> welcomes{0};
  std::atomic<uint64_t> rejects_retry{0};
  std::atomic<uint64_t> rejects_final{0};
  std::atomic<uint64_t> assigns{0};            // run jobs (not health jobs)
  std::atomic<uint64_t> health_assigns{0};
  std::atomic<uint64_t> assigns_ignored{0};    // duplicates, no free slot, draining
  std::atomic<uint64_t> results{0};            // RESULTs sent the first time
  std::atomic<uint64_t> results_resent{0};     // RESULTs sent again after a WELCOME
  std::atomic<uint64_t> acks{0};               // ACKs of run jobs that released a held RESULT
  std::atomic<uint64_t> acks_duplicate{0};     // ACKs for nothing held (already ACKed)
  std::atomic<uint64_t> cancels{0};
  std::atomic<uint64_t> heartbeats_sent{0};
  std::atomic<uint64_t> heartbeats_received{0};
  std::atomic<uint64_t> reconnects{0};         // fresh sockets after the first connect
  std::atomic<uint64_t> send_failures{0};
  std::atomic<uint64_t> byes{0};
  std::atomic<int64_t> first_assign_ms{0};     // steady ms of the first run-job ASSIGN (0: none)
  std::atomic<int64_t> last_ack_ms{0};         // steady ms of the latest run-job ACK
};

struct SimWorkerOptions {
  std::string endpoint;                        // the coordinator, e.g. tcp://127.0.0.1:7450
  std::string worker_id;
  std::string host_id;                         // a distinct box per worker unless shared on purpose
  std::string secret;                          // 32..128 printable chars (PROTOCOL §5.8); "" = none
  int slots = 1;                               // jobs at once: the credit window on cpu:0
  nlohmann::json capabilities;                 // sim_capabilities() unless given
  nlohmann::json metrics;                      // the RESULT payload (sim_metrics())
  std::string log_tail = "simulated job: finished at once\n";
  bool send_progress = true;                   // PROGRESS `started` per ASSIGN, as the real client
  int64_t job_ms = 0;                          // how long a job "runs" before its RESULT
  int64_t heartbeat_interval_ms = reliability::kHeartbeatIntervalMs;   // until WELCOME says otherwise
  int heartbeat_liveness = reliability::kHeartbeatLiveness;
  int64_t reconnect_initial_ms = reliability::kReconnectInitialMs;
  int64_t reconnect_max_ms = reliability::kReconnectMaxMs;
  int64_t drain_wait_ms = 10'000;
  bool record_latencies = true;                // ASSIGN -> ACK per run job, in microseconds
  // Called with every ASSIGN of a run job this worker takes, on the thread driving it (a test
  // checking what the coordinator sends); may be empty.
  std::function<void(const proto::Assign&)> on_assign;
};

class SimWorker {
 public:
  SimWorker(SimWorkerOptions options, SimCounters* counters);
  SimWorker(const SimWorker&) = delete;
  SimWorker& operator=(const SimWorker&) = delete;

  // Connects (now, or after the backoff when a reconnect is scheduled) and says HELLO.
  void connect(int64_t now_ms);
  // The socket to poll for input; nullptr while disconnected.
  void* pollable() const;
  // Handles every message waiting on the socket.
  void on_readable(int64_t now_ms);
  // Timers: jobs due, heartbeats, liveness, reconnects, drain. Returns the steady ms by which it
  // wants to be called again.
  int64_t tick(int64_t now_ms);
  // Drops the connection and says HELLO on a fresh socket at once, as after a coordinator the
  // worker took for dead (the reconnect flood of bench_dispatch).
  void reconnect_now(int64_t now_ms);

  bool registered() const { return registered_; }
  bool finished() const { return finished_; }        // said BYE, or refused for good
  const std::string& worker_id() const { return opt_.worker_id; }
  std::size_t held_results() const { return outbox_.size(); }
  std::size_t running_jobs() const { return running_.size(); }
  // Latencies recorded since the last call (microseconds), moved out.
  std::vector<int64_t> take_latencies();
  // Bumped whenever the socket changes, so a poller rebuilds its list.
  uint64_t socket_generation() const { return socket_generation_; }

 private:
  struct Running {
    int64_t due_ms = 0;
    bool health = false;
  };
  void send(proto::Body body);
  void send_hello();
  void send_ready(bool force);
  void schedule_reconnect(int64_t now_ms);
  void handle(const proto::Message& msg, int64_t now_ms);
  void on_assign(const proto::Assign& a, int64_t now_ms);
  void finish(const std::string& key, const std::string& job_id, int attempt, ResultStatus status,
              const std::string& reason, int64_t now_ms);
  int free_slots() const { return opt_.slots - static_cast<int>(running_.size()); }

  SimWorkerOptions opt_;
  SimCounters* counters_;
  worker::CreditWindow credit_window_;
  std::optional<DealerEndpoint> endpoint_;
  bool registered_ = false;
  bool awaiting_welcome_ = false;
  bool draining_ = false;
  bool finished_ = false;
  bool ever_connected_ = false;
  int64_t interval_ms_;
  int liveness_;
  int64_t backoff_ms_;
  int64_t next_connect_ms_ = 0;
  int64_t last_heard_ms_ = 0;
  int64_t last_beat_ms_ = 0;
  int64_t drain_started_ms_ = 0;
  uint64_t socket_generation_ = 0;
  std::map<std::string, Running> running_;                  // attempt key -> job in flight
  std::map<std::string, proto::JobResult> outbox_;          // attempt key -> RESULT awaiting ACK
  std::map<std::string, int64_t> assigned_at_;              // attempt key -> steady ms of ASSIGN
  std::vector<int64_t> latencies_us_;
  std::mutex latencies_mu_;
};

}  // namespace am::sim
