// The coordinator: a ROUTER server that registers workers, leases jobs to them against their
// credits, stores every result in SQLite before acknowledging it, and reclaims the jobs of dead
// workers and expired leases.
//
// Contract:
// - create() opens (or migrates) the store and binds the endpoint; errors name which.
// - submit() records a run and its jobs (idempotent: a plan submitted twice adds nothing) and
//   loads every job of the run that is not terminal into the queue. A job leased before a
//   restart keeps its lease until it expires; its worker may still deliver the result.
// - serve() runs the loop on the calling thread until `stop` becomes true, or — with
//   exit_when_done — until every submitted job is terminal, after which workers are sent DRAIN.
//   It never throws and never crashes on what a peer sends; bad messages are logged and counted.
// - Not thread-safe, except `stop`, which any thread may set.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/reliability.h"
#include "common/result_status.h"
#include "common/status.h"
#include "common/transport.h"
#include "jobs/plan.h"

namespace am::coord {

struct ServerOptions {
  std::string bind = "tcp://*:7450";
  std::filesystem::path db_path = "accelmatrix.db";
  int64_t heartbeat_interval_ms = reliability::kHeartbeatIntervalMs;
  int heartbeat_liveness = reliability::kHeartbeatLiveness;
  int64_t lease_grace_ms = reliability::kLeaseGraceMs;
  int max_infra_attempts = reliability::kMaxInfraAttempts;
  // Jobs that no registered device can run are settled (skipped/unsupported) once this many
  // workers have registered. 0 = never settle them; they wait for a capable worker.
  int expect_workers = 1;
  bool exit_when_done = false;
  // CURVE encryption with a ZAP allow-list of worker keys; absent = plain TCP.
  std::optional<CurveServerConfig> curve;
};

// A snapshot for progress displays.
struct Progress {
  int total = 0;
  int done = 0;
  int leased = 0;
  int queued = 0;
  int workers = 0;
  std::map<ResultStatus, int> by_status;  // jobs with a terminal status
  std::string last_event;                 // human-readable line for the latest terminal job
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> create(const ServerOptions& options);
  ~Server();

  Status submit(const jobs::Plan& plan, const std::string& run_id);
  std::string endpoint() const;   // resolved bind endpoint, e.g. tcp://127.0.0.1:40123

  // Called on the loop thread whenever a job becomes terminal or a worker comes or goes.
  void on_progress(std::function<void(const Progress&)> callback);

  Status serve(const std::atomic<bool>& stop);

  Progress progress() const;
  bool all_done() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace am::coord
