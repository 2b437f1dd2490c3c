// The worker's client loop: registers with the coordinator, pulls jobs with credits, runs each
// in a child process, and delivers every result at least once.
//
// Contract:
// - run() returns when `stop` becomes true, after a DRAIN once idle and with every result
//   acknowledged (or after drain_wait_ms), or with an error when the coordinator rejects this
//   worker for good (e.g. protocol version). It never throws.
// - Results are kept until ACKed and re-sent after every (re)registration: a coordinator that
//   restarts on the same database receives them again and stores each once.
// - The coordinator is presumed dead after heartbeat_liveness silent intervals; the worker then
//   reconnects with a fresh socket, backing off exponentially (initial → max). Running jobs carry
//   on meanwhile.
// - Not thread-safe except `stop`.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/reliability.h"
#include "common/status.h"
#include "common/transport.h"

namespace am::worker {

struct ClientOptions {
  std::string coordinator;                  // e.g. tcp://127.0.0.1:7450
  std::string worker_id;                    // stable id (see load_or_create_worker_id)
  // Registration secret sent in HELLO (see load_or_create_worker_secret); empty = none.
  std::string secret;
  int slots = 1;                            // jobs run at once on the cpu device
  std::map<std::string, std::string> tags;
  nlohmann::json capabilities;              // from probe_capabilities()
  std::filesystem::path worker_binary;      // this binary, re-executed in job mode
  std::filesystem::path scratch_dir;        // spec/result files of running jobs
  // Used until WELCOME states the coordinator's values.
  int64_t heartbeat_interval_ms = reliability::kHeartbeatIntervalMs;
  int heartbeat_liveness = reliability::kHeartbeatLiveness;
  int64_t reconnect_initial_ms = reliability::kReconnectInitialMs;
  int64_t reconnect_max_ms = reliability::kReconnectMaxMs;
  int64_t drain_wait_ms = 10'000;           // after DRAIN, how long to wait for ACKs when idle
  std::optional<CurveClientConfig> curve;   // CURVE keys; absent = plain TCP
  // --allow-commands: run external command jobs (code from the plan). Announced in HELLO
  // (`commands`, protocol 1.4); such a worker also takes jobs on devices that are probed but
  // not schedulable by our own backends (a CUDA GPU), since only command jobs go there.
  bool allow_commands = false;
};

// Reads `<state_dir>/worker-id`, creating it with a fresh random id when absent.
Result<std::string> load_or_create_worker_id(const std::filesystem::path& state_dir);

// Reads `<state_dir>/secret-<worker_id>` (mode 0600), creating it with 64 random hex
// characters when absent. Without CURVE the coordinator binds the worker id to this secret at
// its first registration and refuses a later HELLO for the id without it (PROTOCOL §5.8): keep
// the state dir, or register under a new id.
Result<std::string> load_or_create_worker_secret(const std::filesystem::path& state_dir,
                                                 const std::string& worker_id);

class WorkerClient {
 public:
  explicit WorkerClient(ClientOptions options);
  ~WorkerClient();
  Status run(const std::atomic<bool>& stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace am::worker
