#include "worker/client.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "jobs/job_spec.h"
#include "worker/credit_window.h"
#include "worker/deliverable_result.h"
#include "worker/device_selection.h"
#include "worker/executor.h"

namespace am::worker {
namespace {

std::shared_ptr<spdlog::logger> logger() {
  static auto l = get_logger("worker/client");
  return l;
}

std::string attempt_key(const std::string& job_id, int attempt) {
  return job_id + "#" + std::to_string(attempt);
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

namespace {

Result<std::string> read_worker_id(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return io_error("cannot read " + path.string() + ": not a regular file (the state dir is unusable)");
  }
  std::ifstream in(path);
  if (!in) return io_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::string id;
  std::getline(in, id);
  const bool well_formed =
      !id.empty() && id.size() <= proto::kMaxIdBytes &&
      std::all_of(id.begin(), id.end(), [](unsigned char c) { return c > 32 && c < 127; });
  if (!well_formed) return invalid_argument(path.string() + ": malformed worker id");
  return id;
}

}  // namespace

Result<std::string> load_or_create_worker_id(const std::filesystem::path& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return io_error("cannot create state dir " + state_dir.string() + ": " + ec.message());
  const auto path = state_dir / "worker-id";
  // A file there that cannot be read (another user's, a dangling link) is an error, never
  // replaced: the id is the worker's identity.
  if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
    return read_worker_id(path);
  }
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::string id = "w-" + hex64(r);
  // Two workers starting on one new state dir at once must end with one id (and the second is
  // then refused by the id's lock, worker_id_lock.h): the id is written to a file of this
  // process's own and linked into place, which fails when another got there first.
  const auto mine = state_dir / ("worker-id.tmp." + hex64(r));
  AM_RETURN_IF_ERROR(write_file_atomically(mine, id + "\n"));
  const int linked = ::link(mine.c_str(), path.c_str());
  const int err = errno;
  std::filesystem::remove(mine, ec);
  if (linked == 0) return id;
  if (err != EEXIST) return io_error("cannot create " + path.string() + ": " + std::strerror(err));
  return read_worker_id(path);   // another worker's, written whole before its link
}

Result<std::string> load_or_create_worker_secret(const std::filesystem::path& state_dir,
                                                 const std::string& worker_id) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return io_error("cannot create state dir " + state_dir.string() + ": " + ec.message());
  const auto path = state_dir / ("secret-" + worker_id);
  if (std::ifstream in(path); in) {
    std::string secret;
    std::getline(in, secret);
    const bool well_formed =
        secret.size() >= proto::kMinSecretBytes && secret.size() <= proto::kMaxIdBytes &&
        std::all_of(secret.begin(), secret.end(), [](unsigned char c) { return c > 32 && c < 127; });
    if (!well_formed) return invalid_argument(path.string() + ": malformed worker secret");
    return secret;
  }
  // std::random_device reads the kernel's CSPRNG on Linux (glibc/libstdc++).
  std::random_device rd;
  std::string secret;
  for (int i = 0; i < 4; ++i) secret += hex64((static_cast<uint64_t>(rd()) << 32) ^ rd());
  // Created 0600: the secret proves this worker's identity (PROTOCOL §5.8).
  AM_RETURN_IF_ERROR(write_file_atomically(path, secret + "\n", kSecretFileMode));
  return secret;
}

struct RunningJob {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> cancel;
};

struct Finished {
  std::string job_id;
  int attempt = 0;
  ExecOutcome outcome;
};

// How long a job process's death by SIGTERM/SIGINT waits for this worker's own stop signal to
// arrive before it is reported as the job's crash (both come from one kill of the group; the
// worker's handler runs within microseconds, so this is slack for a loaded machine).
constexpr int64_t kStopSignalGraceMs = 500;

struct WorkerClient::Impl {
  ClientOptions opt;
  const std::atomic<bool>* stop_flag = nullptr;   // run()'s, for stopped_with_us()
  std::string worker_fault;   // why this worker cannot run jobs: it stops (run()), exit 4
  std::vector<std::string> device_keys;
  std::map<std::string, std::vector<std::string>> device_env;   // device key -> job process env
  CreditWindow credit_window{{}};                    // our window as the coordinator knows it
  std::optional<DealerEndpoint> endpoint;
  bool registered = false;
  bool awaiting_welcome = false;   // a HELLO is out on this connection
  int64_t interval_ms;
  int liveness;
  int64_t backoff_ms;
  int64_t next_connect_ms = 0;
  int64_t last_heard_ms = 0;
  int64_t last_beat_ms = 0;
  bool draining = false;
  // When the draining worker last had a job running: the wait for its last ACKs (drain_wait_ms)
  // counts from there, not from the DRAIN (a job that ran longer than the wait left at once).
  int64_t drain_idle_since_ms = 0;
  bool warned_unanswered = false;   // the "no session" diagnosis is logged once per connection

  std::map<std::string, RunningJob> running;         // attempt key -> job thread
  std::map<std::string, proto::JobResult> outbox;    // attempt key -> result awaiting ACK
  std::mutex finished_mu;
  std::vector<Finished> finished;                    // filled by job threads

  explicit Impl(ClientOptions o)
      : opt(std::move(o)),
        interval_ms(opt.heartbeat_interval_ms),
        liveness(opt.heartbeat_liveness),
        backoff_ms(opt.reconnect_initial_ms) {
    // Every device the probes found schedulable takes jobs.
    if (opt.capabilities.contains("devices") && opt.capabilities["devices"].is_array()) {
      for (const auto& d : opt.capabilities["devices"]) {
        if (!d.is_object() || !d.contains("key") || !d["key"].is_string()) continue;
        const bool schedulable = !(d.contains("schedulable") && d["schedulable"].is_boolean() && !d["schedulable"].get<bool>());
        // A probed-only device (CUDA, ROCm) can run a command that brings its own runtime.
        if (!schedulable && !opt.allow_commands) continue;
        device_keys.push_back(d["key"].get<std::string>());
        device_env[d["key"].get<std::string>()] = device_selection_env(d);
      }
    }
    credit_window = CreditWindow(device_keys);
  }

  ~Impl() {
    for (auto& [key, job] : running) {
      job.cancel->store(true);
      if (job.thread.joinable()) job.thread.join();
    }
  }

  // Returns whether the message was queued for sending.
  bool send(proto::Body body) {
    if (!endpoint) return false;
    Status st = endpoint->send(proto::Message{std::move(body)});
    if (st.ok()) return true;
    // Without a session the DEALER queue fills because nothing is connected at the other end:
    // say that, rather than blaming the queue (a refused CURVE handshake looks exactly so).
    if (st.code() == StatusCode::kUnavailable && !registered) {
      if (!warned_unanswered) {
        warned_unanswered = true;
        logger()->warn("no answer from {} to HELLO; messages are not being delivered: the "
                       "coordinator is unreachable{}",
                       opt.coordinator,
                       opt.curve ? " or refused the CURVE handshake (is this worker's public key "
                                   "on its allow-list, and --curve-server its key?)"
                                 : "");
      }
      return false;
    }
    logger()->warn("send failed: {}", st.to_string());
    return false;
  }

  void connect() {
    auto ep = DealerEndpoint::connect(opt.coordinator, opt.curve ? &*opt.curve : nullptr);
    if (!ep.ok()) {
      logger()->error("cannot connect to {}: {}", opt.coordinator, ep.status().to_string());
      schedule_reconnect();
      return;
    }
    endpoint.emplace(std::move(ep).value());
    registered = false;
    awaiting_welcome = false;
    warned_unanswered = false;
    last_heard_ms = steady_ms();
    send_hello();
  }

  void send_hello() {
    proto::Hello h;
    h.worker_id = opt.worker_id;
    h.hostname = local_hostname();
    h.build = build_string();
    h.capabilities = opt.capabilities;
    h.tags = opt.tags;
    h.slots = opt.slots;
    h.commands = opt.allow_commands;
    h.draining = draining;   // a restarted coordinator must not undo a drain (PROTOCOL §5.7)
    h.secret = opt.secret;
    if (const auto host = opt.capabilities.find("host"); host != opt.capabilities.end() && host->is_object()) {
      h.host_id = host->value("host_id", std::string());
    }
    // Parse the attempt keys back: both running jobs and un-ACKed results are held.
    auto hold = [&](const std::string& key) {
      const auto hash = key.rfind('#');
      h.held[key.substr(0, hash)] = std::max(h.held[key.substr(0, hash)], std::stoi(key.substr(hash + 1)));
    };
    for (const auto& [key, job] : running) hold(key);
    for (const auto& [key, result] : outbox) hold(key);
    awaiting_welcome = true;
    send(std::move(h));
  }

  // The coordinator went silent: drop the socket (and with it any queued messages) and try a
  // fresh connection after a backoff that doubles up to the cap.
  void schedule_reconnect() {
    endpoint.reset();
    registered = false;
    awaiting_welcome = false;
    next_connect_ms = steady_ms() + backoff_ms;
    logger()->warn("coordinator unreachable; reconnecting in {} ms", backoff_ms);
    backoff_ms = std::min(backoff_ms * 2, opt.reconnect_max_ms);
  }

  int free_slots() const { return opt.slots - static_cast<int>(running.size()); }

  // States the credit window (free slots on every device, and the ASSIGNs seen) when it
  // changed, or always with `force`. Windows are absolute, so a repeated READY is harmless; the
  // coordinator works out what it may still send (PROTOCOL §5.2).
  // PROTOCOL §5.3: a coordinator HEARTBEAT is answered at once when this worker's last one is
  // half an interval old or more, so a fleet's heartbeats reach the coordinator in one burst
  // after its own instead of one at a time all second long. The timer below still sends one
  // every interval when the coordinator's go missing.
  void answer_heartbeat() {
    const int64_t t = steady_ms();
    if (!registered || t - last_beat_ms < interval_ms / 2) return;
    last_beat_ms = t;
    send(proto::Heartbeat{});
  }

  void send_ready(bool force) {
    if (!registered || draining) return;
    if (auto ready = credit_window.ready(free_slots(), force)) {
      if (!send(std::move(*ready))) credit_window.forget_last_sent();   // state it again later
    }
  }

  // False for a WELCOME of another major version: PROTOCOL §4, the worker disconnects and says
  // so (as for a REJECT without retry: waiting would never make them speak the same protocol).
  bool on_welcome(const proto::Welcome& w) {
    if (!proto::version_compatible(w.version_major)) return false;
    registered = true;
    awaiting_welcome = false;
    backoff_ms = opt.reconnect_initial_ms;
    if (w.heartbeat_interval_ms > 0) interval_ms = w.heartbeat_interval_ms;
    if (w.heartbeat_liveness > 0) liveness = w.heartbeat_liveness;
    logger()->info("registered with {} as {}", opt.coordinator, opt.worker_id);
    // A new session: results not yet ACKed are delivered again, and the window is stated
    // afresh. The order does not matter: the coordinator recomputes what it may assign
    // whenever a lease ends, so a window it cannot use yet is not lost.
    credit_window.on_welcome();
    for (const auto& [key, result] : outbox) send(result);
    send_ready(true);
    return true;
  }

  void on_assign(const proto::Assign& a) {
    const std::string key = attempt_key(a.job_id, a.attempt);
    credit_window.on_assign();   // every ASSIGN of the session counts, even one ignored here
    if (running.count(key) || outbox.count(key)) return;  // a duplicate delivery
    const bool our_device = std::find(device_keys.begin(), device_keys.end(), a.device) != device_keys.end();
    if (draining) {
      // Leaving: the lease runs out and the job goes to another worker (PROTOCOL §5.7).
      logger()->warn("ignoring ASSIGN of {} while draining", key);
      return;
    }
    if (!our_device || free_slots() <= 0) {
      // PROTOCOL §5.2: answered at once, so the attempt closes instead of waiting for its lease.
      const std::string why = !our_device ? "device '" + a.device.substr(0, 64) + "' is not one of this worker's"
                                          : "no free slot (the coordinator assigned more than the window)";
      logger()->warn("refusing ASSIGN of {}: {}", key, why);
      return refuse(a, why);
    }
    if (a.spec.is_object() && a.spec.contains("command") && !opt.allow_commands) {
      // A coordinator should never send this (HELLO said no); refuse it as a result, so the
      // attempt closes at once instead of waiting for its lease.
      logger()->warn("refusing command job {}: this worker runs no commands (--allow-commands)", key);
      return refuse(a, "this worker does not run command jobs (start it with --allow-commands)");
    }
    // The spec is read here, with the job process's own rules, before anything is spawned: a
    // field of the wrong type or out of range (a NaN time limit) is the coordinator's error,
    // answered at once with the reason, never a process started on it (nor a worker aborted
    // by reading it).
    Result<jobs::JobSpec> spec = jobs::job_spec_from_json(a.spec);
    if (!spec.ok()) {
      logger()->warn("refusing {}: invalid job spec: {}", key, spec.status().message());
      return refuse(a, "invalid job spec: " + spec.status().message());
    }
    ExecRequest req;
    req.device = a.device;
    req.job_id = a.job_id;
    req.attempt = a.attempt;
    req.spec = a.spec;
    req.timeout_s = spec->timeout_s;
    req.memory_limit_mb = spec->memory_limit_mb;
    req.worker_binary = opt.worker_binary;
    req.scratch_dir = opt.scratch_dir;
    // The job opens the device it was leased for, not its backend's default choice.
    if (auto env = device_env.find(a.device); env != device_env.end()) req.env = env->second;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    RunningJob job;
    job.cancel = cancel;
    job.thread = std::thread([this, req = std::move(req), cancel] {
      ExecOutcome outcome = execute_job(req, cancel.get());
      std::lock_guard lock(finished_mu);
      finished.push_back({req.job_id, req.attempt, std::move(outcome)});
    });
    running.emplace(key, std::move(job));
    send(proto::Progress{a.job_id, a.attempt, "started"});
    logger()->info("running {} ({} {} {})", key, spec->model, spec->backend, jobs::to_string(spec->precision));
  }

  // An attempt answered with an `error` result and `reason` without running anything.
  void refuse(const proto::Assign& a, std::string reason) {
    ExecOutcome refused;
    refused.status = ResultStatus::kError;
    refused.reason = std::move(reason);
    refused.started_at_ms = refused.finished_at_ms = now_epoch_ms();
    std::lock_guard lock(finished_mu);
    finished.push_back({a.job_id, a.attempt, std::move(refused)});
  }

  // A job process that died of SIGTERM or SIGINT that this worker did not send (its own timeout
  // and cancel outcomes are `timeout` and `cancelled`, not `crash`) was most likely hit by the
  // signal that is stopping the whole process group. Waits up to kStopSignalGraceMs for this
  // worker's own stop flag to confirm it.
  bool stopped_with_us(const ExecOutcome& outcome) const {
    if (stop_flag == nullptr || outcome.status != ResultStatus::kCrash ||
        (outcome.signal != SIGTERM && outcome.signal != SIGINT)) {
      return false;
    }
    const int64_t until = steady_ms() + kStopSignalGraceMs;
    while (!stop_flag->load()) {
      if (steady_ms() >= until) return false;
      std::this_thread::sleep_for(Millis(10));
    }
    return true;
  }

  void collect_finished() {
    std::vector<Finished> done;
    {
      std::lock_guard lock(finished_mu);
      done.swap(finished);
    }
    for (auto& f : done) {
      const std::string key = attempt_key(f.job_id, f.attempt);
      if (auto it = running.find(key); it != running.end()) {
        if (it->second.thread.joinable()) it->second.thread.join();
        running.erase(it);
      }
      // Still the worker's fault only while what failed still fails: its scratch dir takes no
      // file, or its own binary cannot be run (removed, made unexecutable). Otherwise it was the
      // job's doing (it filled the disk and its files are gone now) or a moment's (a fork refused
      // under a pid limit): the job's result.
      if (f.outcome.worker_fault) {
        const bool runner_ok = !f.outcome.runner_unstartable || ::access(opt.worker_binary.c_str(), X_OK) == 0;
        if (runner_ok && scratch_dir_usable(opt.scratch_dir)) {
          f.outcome.worker_fault = false;
          f.outcome.reason += " (the state dir took a write afterwards)";
        }
      }
      if (f.outcome.worker_fault) {
        // Not the job's outcome either: this worker could not run it or keep its result (its
        // state dir, its own binary). It stops (run() below) and the BYE hands the lease back, so
        // the job runs again elsewhere instead of every queued job being stored `error` here.
        logger()->error("{}: {}; not reported", key, f.outcome.reason);
        if (worker_fault.empty()) worker_fault = f.outcome.reason;
        continue;
      }
      if (stopped_with_us(f.outcome)) {
        // Not the job's outcome: the signal that stops this worker (Ctrl-C on the terminal,
        // `systemctl stop`, Slurm's scancel) reached its process group too. Not reported; the
        // BYE hands the lease back and the coordinator runs the job again.
        logger()->info("{} was stopped with the worker (signal {}); not reported", key, f.outcome.signal);
        continue;
      }
      proto::JobResult r;
      r.job_id = f.job_id;
      r.attempt = f.attempt;
      r.status = f.outcome.status;
      r.reason = f.outcome.reason;
      r.metrics = std::move(f.outcome.metrics);
      r.log_tail = std::move(f.outcome.log_tail);
      r.started_at_ms = f.outcome.started_at_ms;
      r.finished_at_ms = f.outcome.finished_at_ms;
      if (!ensure_deliverable(r)) {
        logger()->error("result of {} attempt {} was not deliverable: {}", r.job_id, r.attempt, r.reason);
      }
      logger()->info("finished {}: {} {}", key, to_string(r.status), r.reason);
      outbox[key] = r;
      if (registered) send(std::move(r));
    }
    if (!done.empty()) send_ready(false);
  }

  // Returns a non-OK status only when the coordinator refuses this worker for good.
  Status handle(const proto::Message& msg) {
    last_heard_ms = steady_ms();
    const auto& body = msg.body;
    if (const auto* w = std::get_if<proto::Welcome>(&body)) {
      if (!on_welcome(*w)) {
        return failed_precondition("coordinator speaks protocol " + std::to_string(w->version_major) + "." +
                                   std::to_string(w->version_minor) + "; this worker speaks " +
                                   std::to_string(proto::kVersionMajor) + "." + std::to_string(proto::kVersionMinor));
      }
    } else if (const auto* r = std::get_if<proto::Reject>(&body)) {
      if (!r->retry) return failed_precondition("coordinator rejected this worker: " + r->reason);
      // REJECTs answering messages sent before our HELLO need no second HELLO (PROTOCOL §5.1).
      if (!awaiting_welcome) {
        logger()->info("coordinator asks to register again: {}", r->reason);
        registered = false;
        send_hello();
      }
    } else if (const auto* a = std::get_if<proto::Assign>(&body)) {
      if (registered) on_assign(*a);
    } else if (const auto* ack = std::get_if<proto::Ack>(&body)) {
      outbox.erase(attempt_key(ack->job_id, ack->attempt));
      send_ready(true);   // PROTOCOL §5.2: a READY follows every ACK
    } else if (const auto* c = std::get_if<proto::Cancel>(&body)) {
      if (auto it = running.find(attempt_key(c->job_id, c->attempt)); it != running.end()) {
        logger()->info("cancelling {} attempt {}: {}", c->job_id, c->attempt, c->reason);
        it->second.cancel->store(true);
      }
    } else if (const auto* d = std::get_if<proto::Drain>(&body)) {
      if (!draining) {
        logger()->info("draining: {}", d->reason);
        draining = true;
        drain_idle_since_ms = steady_ms();
      }
    } else if (std::holds_alternative<proto::Heartbeat>(body)) {
      answer_heartbeat();
    } else {
      logger()->warn("unexpected {} from coordinator", proto::msg_type_name(msg.type()));
    }
    return Status::Ok();
  }

  Status run(const std::atomic<bool>& stop) {
    stop_flag = &stop;
    while (!stop.load()) {
      const int64_t now = steady_ms();
      if (!endpoint && now >= next_connect_ms) connect();
      if (endpoint) {
        auto msg = endpoint->recv(static_cast<int>(reliability::kPollTickMs));
        if (!msg.ok()) return msg.status();
        if (msg->has_value()) AM_RETURN_IF_ERROR(handle(**msg));
      } else {
        std::this_thread::sleep_for(Millis(reliability::kPollTickMs));
      }
      collect_finished();
      if (!worker_fault.empty()) break;
      const int64_t t = steady_ms();
      if (endpoint && registered && t - last_beat_ms >= interval_ms) {
        last_beat_ms = t;
        send(proto::Heartbeat{});
        send_ready(false);
      }
      if (endpoint && t - last_heard_ms > interval_ms * liveness) schedule_reconnect();
      if (draining && !running.empty()) drain_idle_since_ms = t;
      if (draining && running.empty() &&
          (outbox.empty() || t - drain_idle_since_ms > opt.drain_wait_ms)) {
        if (!outbox.empty()) {
          logger()->warn("leaving with {} unacknowledged result(s)", outbox.size());
        }
        send(proto::Bye{"drained"});
        // No endpoint while a reconnect waits out its backoff: then there is nothing to flush.
        if (endpoint) endpoint->flush_on_close(reliability::kLastMessagesFlushMs);
        return Status::Ok();
      }
    }
    // Results of jobs that really finished go out first; the jobs still running are stopped
    // (their `cancelled` outcome is our own doing, not the job's, so it is not reported: the
    // BYE hands their leases back and the coordinator runs them again).
    collect_finished();
    for (auto& [key, job] : running) job.cancel->store(true);
    send(proto::Bye{worker_fault.empty() ? "stopped" : "worker fault"});
    if (endpoint) endpoint->flush_on_close(reliability::kLastMessagesFlushMs);
    if (!worker_fault.empty()) return io_error("stopping: " + worker_fault + " (this worker cannot run jobs)");
    return Status::Ok();
  }
};

WorkerClient::WorkerClient(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
WorkerClient::~WorkerClient() = default;
Status WorkerClient::run(const std::atomic<bool>& stop) { return impl_->run(stop); }

}  // namespace am::worker
