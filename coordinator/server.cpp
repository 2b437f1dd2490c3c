#include "coordinator/server.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "coordinator/credit_ledger.h"
#include "coordinator/matching.h"
#include "coordinator/peer_standing.h"
#include "coordinator/store.h"

#include <sodium.h>

namespace am::coord {
namespace {

std::shared_ptr<spdlog::logger> logger() {
  static auto l = get_logger("coordinator/server");
  return l;
}

// At most this many messages are handled per loop iteration before timers run, so a flood
// from one peer cannot starve heartbeats and lease checks.
constexpr int kMaxMessagesPerTick = 256;

// After a run completes, how long the coordinator keeps serving so that DRAIN reaches every
// worker and their BYEs come back.
constexpr int64_t kDrainWaitMs = 3000;

// After a clean stop released leases, how long the coordinator waits before closing its socket so
// that the CANCELs it sent leave (loopback and LAN need well under this).
constexpr int64_t kCancelFlushMs = 100;

struct JobEntry {
  std::string run_id;
  std::string job_id;
  nlohmann::json spec_doc;
  jobs::JobSpec spec;
  JobState state = JobState::kQueued;
  int attempts = 0;
  std::optional<ResultStatus> status;
  std::string lease_worker;          // worker id holding the current lease
  std::string lease_host;            // its hostname as stored with the lease (restart only)
  int lease_attempt = 0;
  int64_t lease_expires_at_ms = 0;   // epoch ms
  bool result_pending = false;       // the current lease's RESULT waits in the store batch
  bool lease_answered = false;       // the current lease's peer sent PROGRESS or RESULT for it
  std::string lease_device;
  std::set<std::string> lost_on;     // workers on which an attempt ended without a result
  std::set<std::string> failed_on;   // of those: the ones that had answered (counted, §5.5)
  int infra_failures = 0;            // answered leases that ended without a result
};

struct WorkerSession {
  std::string identity;
  std::string worker_id;
  std::string hostname;
  std::vector<DeviceInfo> devices;
  int slots = 1;
  CreditLedger credits;
  bool authenticated = false;        // registered under CURVE (key-bound)
  int64_t last_seen_ms = 0;          // steady ms
  WorkerRecord record;               // stored with the session's first lease
  bool record_stored = false;
};

// The stored form of a registration secret: BLAKE2b-256 of it, hex. The secret itself is never
// stored.
std::string secret_hash(const std::string& secret) {
  unsigned char out[crypto_generichash_BYTES];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(secret.data()),
                     secret.size(), nullptr, 0);
  std::string hex(sizeof out * 2, '0');
  sodium_bin2hex(hex.data(), hex.size() + 1, out, sizeof out);
  return hex;
}

struct PendingResult {
  ResultRecord record;
};

std::string describe(const JobEntry& j) {
  const auto& s = j.spec;
  return fmt::format("{} {} {} b{} s{}", s.model, s.backend, jobs::to_string(s.precision), s.batch,
                     s.seq_len);
}

std::string summarize_metrics(const nlohmann::json& m) {
  std::string out;
  if (auto l = m.find("latency_ms"); l != m.end() && l->is_object() && l->contains("median") &&
                                     (*l)["median"].is_number()) {
    out += fmt::format("  median {:.3f} ms", (*l)["median"].get<double>());
  }
  if (auto a = m.find("accuracy"); a != m.end() && a->is_object() && a->contains("nmse") &&
                                   (*a)["nmse"].is_number()) {
    out += fmt::format("  nmse {:.2e}", (*a)["nmse"].get<double>());
  }
  return out;
}

}  // namespace

struct Server::Impl {
  ServerOptions opt;
  std::unique_ptr<Store> store;
  RouterEndpoint router;

  std::map<std::string, JobEntry> jobs;            // job id -> entry
  std::vector<std::string> order;                  // job ids in submission order
  std::set<std::string> runs;
  // Runs that had work when submitted (or were never finished): only these get a new
  // "finished" time, so a rerun with nothing to do leaves the run's record as it was.
  std::set<std::string> runs_to_finish;
  std::map<std::string, double> budget_s;          // run id -> plan's time_budget_s (> 0 only)
  std::set<std::string> budget_spent;              // runs whose budget has run out
  int64_t serve_started_ms = 0;                    // steady ms; the time budgets count from here
  int64_t last_tick_notify_ms = 0;
  int measured_jobs = 0;
  int64_t measured_job_ms = 0;
  std::map<std::string, WorkerSession> sessions;   // routing identity -> session
  std::map<std::string, std::string> identity_of;  // worker id -> routing identity
  std::vector<PendingResult> pending;
  int64_t pending_since_ms = 0;
  int64_t last_heartbeat_ms = 0;
  bool assign_dirty = true;
  ServerCounters counters;
  PeerStanding standing;
  std::optional<Status> fatal;                     // a storage fault: stop, ACK nothing more
  std::string last_event;
  std::function<void(const Progress&)> progress_cb;

  Impl(ServerOptions o, std::unique_ptr<Store> s, RouterEndpoint r)
      : opt(std::move(o)), store(std::move(s)), router(std::move(r)) {}

  // ---- sending -------------------------------------------------------------------------
  void send(const std::string& identity, proto::Body body) {
    Status st = router.send(identity, proto::Message{std::move(body)});
    if (!st.ok()) logger()->warn("send failed: {}", st.to_string());
  }
  void send_to_worker(const std::string& worker_id, proto::Body body) {
    auto it = identity_of.find(worker_id);
    if (it != identity_of.end()) send(it->second, std::move(body));
  }

  void notify() {
    if (progress_cb) progress_cb(snapshot());
  }

  // A write to the store failed: results can no longer be made durable, so stop here rather
  // than ACK anything more (workers keep what is not ACKed and re-send it to the next run).
  void storage_fault(const std::string& what, const Status& st) {
    if (fatal) return;
    fatal = st.with_context(what);
    logger()->error("storage fault on database {}: {}: {}; stopping without acknowledging "
                    "anything not stored (exit code 4); restart on a good database and the "
                    "workers re-send their unacknowledged results",
                    store->path().string(), what, st.to_string());
  }

  ServerCounters current_counters() const {
    ServerCounters c = counters;
    c.frames_dropped_oversized = router.rejections().oversized;
    c.frames_dropped_malformed = router.rejections().malformed;
    return c;
  }

  Progress snapshot() const {
    Progress p;
    p.total = static_cast<int>(jobs.size());
    for (const auto& [id, j] : jobs) {
      if (j.state == JobState::kDone) {
        ++p.done;
        if (j.status) ++p.by_status[*j.status];
      } else if (j.state == JobState::kLeased) {
        ++p.leased;
      } else {
        ++p.queued;
      }
    }
    p.workers = static_cast<int>(sessions.size());
    for (const auto& [identity, s] : sessions) p.slots += s.slots;
    p.last_event = last_event;
    p.measured_jobs = measured_jobs;
    p.measured_job_ms = measured_job_ms;
    return p;
  }

  bool all_done() const {
    return std::all_of(jobs.begin(), jobs.end(),
                       [](const auto& kv) { return kv.second.state == JobState::kDone; });
  }

  // ---- job state transitions --------------------------------------------------------------
  void settle(JobEntry& j, ResultStatus status, const std::string& reason) {
    Status st = store->set_job_terminal(j.run_id, j.job_id, status, reason, now_epoch_ms());
    if (!st.ok()) {
      storage_fault("storing the terminal status of " + j.job_id, st);
      return;
    }
    j.state = JobState::kDone;
    j.status = status;
    last_event = std::string(to_string(status)) + "  " + describe(j) + "  (" + reason + ")";
    logger()->info("job {} {}: {}", j.job_id, to_string(status), reason);
    notify();
  }

  // The current lease of `j` is gone (worker lost, lease expired, worker left). The job goes
  // back to the queue — preferably for another worker. A lease its peer never answered (no
  // PROGRESS, no RESULT) costs the peer (PeerStanding: quarantine), not the job; an answered
  // one counts against the job, which is settled as lost after failing on max_infra_attempts
  // distinct workers (or kMaxInfraFailuresFactor times as many failures in all).
  // `reclaimed`: the worker re-registered without the attempt. If it never answered it, the
  // ASSIGN was most likely lost with a dead connection (a coordinator killed with unsent
  // bytes): neither the job nor the peer is to blame, so neither pays.
  void lease_lost(JobEntry& j, const std::string& reason, bool reclaimed = false) {
    if (j.state != JobState::kLeased) return;
    Status st = store->expire_lease(j.run_id, j.job_id, j.lease_attempt, reason, now_epoch_ms());
    if (!st.ok()) {
      storage_fault("expiring the lease of " + j.job_id, st);
      return;
    }
    const bool silent = !j.lease_answered;
    logger()->warn("job {} attempt {} on {}: {}{}", j.job_id, j.lease_attempt, j.lease_worker,
                   reason, silent ? " (the worker never answered this lease)" : "");
    if (!(silent && reclaimed)) j.lost_on.insert(j.lease_worker);
    if (silent && reclaimed) {
      // neutral, see above
    } else if (silent) {
      ++counters.leases_silent;
      if (int64_t q = standing.on_silent_lease(j.lease_worker, steady_ms()); q > 0) {
        ++counters.quarantines;
        logger()->warn("worker {} quarantined for {} ms: it took leases and did not answer them",
                       j.lease_worker, q);
      }
    } else {
      j.failed_on.insert(j.lease_worker);
      ++j.infra_failures;
    }
    j.lease_worker.clear();
    j.lease_attempt = 0;
    j.lease_answered = false;
    j.state = JobState::kQueued;
    assign_dirty = true;
    if (static_cast<int>(j.failed_on.size()) >= opt.max_infra_attempts ||
        j.infra_failures >= opt.max_infra_attempts * reliability::kMaxInfraFailuresFactor) {
      settle(j, ResultStatus::kLost,
             "infrastructure retries exhausted after failures on " +
                 std::to_string(j.failed_on.size()) + " worker(s) (" +
                 std::to_string(j.attempts) + " attempts); last: " + reason);
    }
  }

  // A clean stop (ours, or the worker's BYE) released the current lease of `j`: the attempt is
  // closed as interrupted and the job queued again. Nobody failed: neither the job nor the
  // worker pays for it.
  void lease_interrupted(JobEntry& j, const std::string& reason) {
    if (j.state != JobState::kLeased) return;
    Status st = store->interrupt_lease(j.run_id, j.job_id, j.lease_attempt, reason, now_epoch_ms());
    if (!st.ok()) {
      storage_fault("releasing the lease of " + j.job_id, st);
      return;
    }
    ++counters.leases_interrupted;
    logger()->info("job {} attempt {} on {} interrupted: {}", j.job_id, j.lease_attempt, j.lease_worker, reason);
    j.lease_worker.clear();
    j.lease_attempt = 0;
    j.lease_answered = false;
    j.state = JobState::kQueued;
    assign_dirty = true;
  }

  // The coordinator stops cleanly: every lease still out is released (attempt interrupted, job
  // queued) and its worker told to stop the attempt, so a restart runs those jobs at once
  // instead of waiting for the leases to run out.
  // Returns how many were released.
  int release_all_leases(const std::string& reason) {
    int released = 0;
    for (auto& [id, j] : jobs) {
      if (fatal) return released;
      if (j.state != JobState::kLeased || j.result_pending) continue;
      const std::string worker = j.lease_worker;
      const int attempt = j.lease_attempt;
      lease_interrupted(j, reason);
      if (j.state == JobState::kQueued) {
        send_to_worker(worker, proto::Cancel{j.job_id, attempt, reason});
        ++released;
      }
    }
    if (released > 0) {
      logger()->info("released {} lease(s) of jobs in flight (attempts interrupted; a restart runs them again)",
                     released);
    }
    return released;
  }

  // ---- workers -----------------------------------------------------------------------------
  void remove_session(const std::string& identity, const std::string& reason, bool expected = false) {
    auto it = sessions.find(identity);
    if (it == sessions.end()) return;
    std::string worker_id = it->second.worker_id;
    if (expected) {
      logger()->info("worker {} left: {}", worker_id, reason);
    } else {
      logger()->warn("worker {} gone: {}", worker_id, reason);
    }
    sessions.erase(it);
    auto id_it = identity_of.find(worker_id);
    if (id_it != identity_of.end() && id_it->second == identity) identity_of.erase(id_it);
    for (auto& [id, j] : jobs) {
      if (j.state != JobState::kLeased || j.lease_worker != worker_id || j.result_pending) continue;
      if (expected) {
        // A worker that stops cleanly (BYE) hands its leases back: not a failure of the job.
        lease_interrupted(j, "worker " + worker_id + " left: " + reason);
      } else {
        ++counters.leases_reclaimed;
        lease_lost(j, "worker lost: " + reason);
      }
    }
    notify();
  }

  // Checks that the HELLO's credential may use its worker id (PROTOCOL §5.8) and binds a new
  // id to it. Returns the refusal reason, or "" when the worker may register.
  std::string check_identity(const Envelope& env, const proto::Hello& h, bool* known) {
    auto cred = store->get_credential(h.worker_id);
    if (!cred.ok()) {
      storage_fault("reading the credential of worker " + h.worker_id, cred.status());
      return "coordinator storage fault";
    }
    *known = cred->has_value();
    const std::string key = opt.curve ? env.user_id : std::string();
    if (opt.curve && key.empty()) return "no authenticated CURVE key on this connection";
    if (cred->has_value()) {
      const WorkerCredential& c = **cred;
      if (!c.curve_key.empty()) {
        if (key.empty()) return "worker id " + h.worker_id + " is bound to a CURVE key; connect with it";
        if (key != c.curve_key) {
          return "worker id " + h.worker_id + " is bound to another CURVE key";
        }
        return "";
      }
      if (!c.secret_hash.empty()) {
        if (h.secret.empty() || secret_hash(h.secret) != c.secret_hash) {
          return "worker id " + h.worker_id +
                 " is registered with another secret (a worker keeps it in its state dir; "
                 "use a new id for a new state dir)";
        }
      }
      return "";
    }
    WorkerCredential c;
    c.worker_id = h.worker_id;
    c.curve_key = key;
    c.secret_hash = key.empty() && !h.secret.empty() ? secret_hash(h.secret) : std::string();
    c.bound_at_ms = now_epoch_ms();
    if (c.curve_key.empty() && c.secret_hash.empty()) {
      logger()->warn("worker {} sent no secret (protocol < 1.2): its id is not protected against "
                     "impersonation", h.worker_id);
      return "";
    }
    if (Status st = store->bind_credential(c); !st.ok()) {
      storage_fault("binding worker " + h.worker_id, st);
      return "coordinator storage fault";
    }
    return "";
  }

  void on_hello(const Envelope& env, const proto::Hello& h) {
    const std::string& identity = env.peer;
    if (!proto::version_compatible(h.version_major)) {
      ++counters.hellos_refused_version;
      std::string reason = "protocol version " + std::to_string(h.version_major) + "." +
                           std::to_string(h.version_minor) + " not supported: coordinator speaks " +
                           std::to_string(proto::kVersionMajor) + "." +
                           std::to_string(proto::kVersionMinor);
      logger()->warn("rejecting worker {}: {}", h.worker_id, reason);
      send(identity, proto::Reject{reason, false});
      return;
    }
    bool known = false;
    if (std::string refusal = check_identity(env, h, &known); !refusal.empty()) {
      if (fatal) return;
      ++counters.hellos_refused_identity;
      logger()->warn("refusing HELLO for worker {} (host '{}'){}: {} ({} refused so far)",
                     h.worker_id, h.hostname,
                     env.user_id.empty() ? "" : " with key " + env.user_id, refusal,
                     counters.hellos_refused_identity);
      send(identity, proto::Reject{refusal, false});
      return;
    }
    ++counters.registrations;
    if (known || identity_of.count(h.worker_id)) ++counters.reregistrations;
    // The same worker reconnecting (new socket, new identity) replaces its old session; its
    // leases stay valid because leases belong to the worker id, not the connection.
    if (auto old = identity_of.find(h.worker_id); old != identity_of.end() && old->second != identity) {
      sessions.erase(old->second);
    }
    WorkerSession s;
    s.identity = identity;
    s.worker_id = h.worker_id;
    s.hostname = h.hostname;
    s.devices = devices_from_capabilities(h.capabilities, h.tags);
    s.slots = h.slots;
    s.credits = CreditLedger(h.slots);
    s.authenticated = opt.curve.has_value();
    s.last_seen_ms = steady_ms();
    if (!standing.proven(h.worker_id)) {
      auto answered = store->worker_has_results(h.worker_id);
      if (answered.ok() && *answered) standing.mark_proven(h.worker_id);
    }
    sessions[identity] = std::move(s);
    identity_of[h.worker_id] = identity;

    // The workers row is written with the session's first lease (record_session_worker), so
    // peers that only say HELLO — a flood of invented ids, say — leave no row behind.
    WorkerRecord& rec = sessions[identity].record;
    rec.worker_id = h.worker_id;
    rec.hostname = h.hostname;
    rec.build = h.build;
    rec.capabilities = h.capabilities;
    rec.tags = nlohmann::json::object();
    for (const auto& [k, v] : h.tags) rec.tags[k] = v;

    proto::Welcome w;
    w.heartbeat_interval_ms = opt.heartbeat_interval_ms;
    w.heartbeat_liveness = opt.heartbeat_liveness;
    w.lease_grace_ms = opt.lease_grace_ms;
    w.run_id = runs.empty() ? std::string() : *runs.begin();
    send(identity, w);
    logger()->info("worker {} ({}) registered with {} device(s)", h.worker_id, h.hostname,
                   sessions[identity].devices.size());
    // Leases the worker does not hold any more (an ASSIGN lost with a dead connection, or a
    // restarted worker) are reclaimed now rather than when they run out.
    for (auto& [id, j] : jobs) {
      if (j.state != JobState::kLeased || j.lease_worker != h.worker_id) continue;
      auto held = h.held.find(j.job_id);
      if (held == h.held.end() || held->second != j.lease_attempt) {
        ++counters.leases_reclaimed;
        lease_lost(j, "worker registered without holding attempt " + std::to_string(j.lease_attempt),
                   /*reclaimed=*/true);
      }
    }
    settle_ineligible_jobs();
    assign_dirty = true;
    notify();
  }

  // Jobs no registered device could ever run are settled at once instead of waiting forever.
  void settle_ineligible_jobs() {
    if (opt.expect_workers <= 0 || static_cast<int>(sessions.size()) < opt.expect_workers) return;
    std::vector<DeviceInfo> all;
    for (const auto& [id, s] : sessions) all.insert(all.end(), s.devices.begin(), s.devices.end());
    for (const auto& id : order) {
      JobEntry& j = jobs[id];
      if (j.state != JobState::kQueued) continue;
      if (auto settlement = settle_ineligible(j.spec, all)) {
        settle(j, settlement->status, settlement->reason);
      }
    }
  }

  bool worker_owns_attempt(const std::string& worker_id, const JobEntry& j, int attempt) {
    if (j.lease_worker == worker_id && j.lease_attempt == attempt) return true;
    auto owner = store->attempt_worker(j.run_id, j.job_id, attempt);
    if (!owner.ok()) {
      logger()->error("attempt lookup failed: {}", owner.status().to_string());
      return false;
    }
    return owner->has_value() && **owner == worker_id;
  }

  void on_result(WorkerSession& s, const proto::JobResult& r) {
    auto it = jobs.find(r.job_id);
    if (it == jobs.end() || !worker_owns_attempt(s.worker_id, it->second, r.attempt)) {
      ++counters.results_dropped_forged;
      logger()->warn("dropping RESULT for {} attempt {} from {}: not leased to it ({} so far)",
                     r.job_id, r.attempt, s.worker_id, counters.results_dropped_forged);
      return;
    }
    standing.on_result(s.worker_id);
    assign_dirty = true;
    ResultRecord rec;
    rec.run_id = it->second.run_id;
    rec.job_id = r.job_id;
    rec.attempt = r.attempt;
    rec.worker_id = s.worker_id;
    rec.status = r.status;
    rec.reason = r.reason;
    rec.metrics = r.metrics;
    rec.log_tail = r.log_tail;
    rec.started_at_ms = r.started_at_ms;
    rec.finished_at_ms = r.finished_at_ms;
    rec.received_at_ms = now_epoch_ms();
    if (pending.empty()) pending_since_ms = steady_ms();
    JobEntry& j = it->second;
    if (j.lease_worker == s.worker_id && j.lease_attempt == r.attempt) {
      j.result_pending = true;
      j.lease_answered = true;
    }
    pending.push_back({std::move(rec)});
  }

  // Stores the batch in one transaction, then ACKs: a result is never acknowledged before it
  // is durable. On a store failure nothing is ACKed and the batch is retried next tick.
  void flush_results() {
    if (pending.empty() || fatal) return;
    std::vector<ResultRecord> batch;
    batch.reserve(pending.size());
    for (const auto& p : pending) batch.push_back(p.record);
    auto outcomes = store->store_results(batch);
    if (!outcomes.ok()) {
      storage_fault("storing " + std::to_string(batch.size()) + " result(s)", outcomes.status());
      return;
    }
    pending.clear();
    assign_dirty = true;   // leases ended: credits the slot cap held back are usable again
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const ResultRecord& rec = batch[i];
      const StoredOutcome& out = (*outcomes)[i];
      if (out.duplicate) ++counters.results_duplicate;
      if (out.discarded) {
        logger()->info("result {} of {} attempt {} from {} answers a CANCEL of an attempt already closed; "
                       "kept out of the job's record", to_string(rec.status), rec.job_id, rec.attempt, rec.worker_id);
      }
      JobEntry& j = jobs[rec.job_id];
      j.result_pending = false;
      const bool is_current_lease = j.lease_worker == rec.worker_id && j.lease_attempt == rec.attempt;
      if (out.became_terminal) {
        if (rec.started_at_ms > 0 && rec.finished_at_ms >= rec.started_at_ms) {
          ++measured_jobs;
          measured_job_ms += rec.finished_at_ms - rec.started_at_ms;
        }
        // Another attempt still out there (e.g. the job was re-queued after a lease expired and
        // the first worker delivered late) is no longer needed.
        if (j.state == JobState::kLeased && !is_current_lease) {
          send_to_worker(j.lease_worker, proto::Cancel{j.job_id, j.lease_attempt,
                                                       "job already has a result"});
        }
        j.state = JobState::kDone;
        j.status = rec.status;
        j.lease_worker.clear();
        j.lease_attempt = 0;
        last_event = std::string(to_string(rec.status)) + "  " + describe(j) + summarize_metrics(rec.metrics) +
                     (rec.reason.empty() ? "" : "  (" + rec.reason + ")");
        notify();
      } else if (is_current_lease) {
        j.lease_worker.clear();
        j.lease_attempt = 0;
      }
      send_to_worker(rec.worker_id, proto::Ack{rec.job_id, rec.attempt});
    }
  }

  int leases_held_by(const std::string& worker_id) const {
    int n = 0;
    for (const auto& [id, j] : jobs) {
      n += (j.state == JobState::kLeased && j.lease_worker == worker_id && !j.result_pending);
    }
    return n;
  }

  int leases_on_device(const std::string& worker_id, const std::string& device) const {
    int n = 0;
    for (const auto& [id, j] : jobs) {
      n += (j.state == JobState::kLeased && j.lease_worker == worker_id && j.lease_device == device);
    }
    return n;
  }

  // READY states credits; what may be assigned is worked out from them at assign time
  // (CreditLedger), so nothing granted is lost to a cap that applies only for a moment.
  void on_ready(WorkerSession& s, const proto::Ready& r) {
    auto known = [&](const std::string& device, int n) {
      bool ok = n >= 0 && std::any_of(s.devices.begin(), s.devices.end(),
                                      [&](const DeviceInfo& d) { return d.key == device; });
      if (!ok) {
        ++counters.messages_unexpected;
        logger()->warn("READY from {} names unknown device '{}' or negative credits", s.worker_id,
                       device);
      }
      return ok;
    };
    if (r.window) {
      std::map<std::string, int> window;
      for (const auto& [device, n] : *r.window) {
        if (known(device, n)) window[device] = n;
      }
      s.credits.on_window(window, r.seen);
    } else {
      for (const auto& [device, n] : r.credits) {
        if (known(device, n)) s.credits.on_legacy_credits(device, n);
      }
    }
    assign_dirty = true;
  }

  void on_progress(WorkerSession& s, const proto::Progress& p) {
    auto it = jobs.find(p.job_id);
    if (it == jobs.end() || it->second.lease_worker != s.worker_id ||
        it->second.lease_attempt != p.attempt) {
      return;   // informational; a PROGRESS of an old attempt changes nothing
    }
    it->second.lease_answered = true;
    standing.on_answer(s.worker_id);
  }

  void handle(const Envelope& env) {
    const proto::Body& body = env.message.body;
    if (const auto* hello = std::get_if<proto::Hello>(&body)) {
      on_hello(env, *hello);
      return;
    }
    auto it = sessions.find(env.peer);
    if (it == sessions.end()) {
      ++counters.messages_before_hello;
      send(env.peer, proto::Reject{"unknown peer: send HELLO", true});
      return;
    }
    WorkerSession& s = it->second;
    s.last_seen_ms = steady_ms();
    if (std::holds_alternative<proto::Heartbeat>(body)) return;
    if (const auto* progress = std::get_if<proto::Progress>(&body)) return on_progress(s, *progress);
    if (const auto* ready = std::get_if<proto::Ready>(&body)) return on_ready(s, *ready);
    if (const auto* result = std::get_if<proto::JobResult>(&body)) return on_result(s, *result);
    if (const auto* bye = std::get_if<proto::Bye>(&body)) {
      return remove_session(env.peer, "said BYE: " + bye->reason, /*expected=*/true);
    }
    ++counters.messages_unexpected;
    logger()->warn("unexpected {} from worker {}", proto::msg_type_name(env.message.type()),
                   s.worker_id);
  }

  // ---- scheduling ------------------------------------------------------------------------
  bool someone_else_could_run(const JobEntry& j, const std::string& worker_id) const {
    for (const auto& [id, s] : sessions) {
      if (s.worker_id == worker_id || j.lost_on.count(s.worker_id)) continue;
      for (const auto& d : s.devices) {
        if (device_can_run(d, j.spec)) return true;
      }
    }
    return false;
  }

  JobEntry* pick_job(const WorkerSession& s, const DeviceInfo& device) {
    JobEntry* fallback = nullptr;
    for (const auto& id : order) {
      JobEntry& j = jobs[id];
      if (j.state != JobState::kQueued || !device_can_run(device, j.spec)) continue;
      // Infrastructure retries go to a different worker when one could take them.
      if (j.lost_on.count(s.worker_id) && someone_else_could_run(j, s.worker_id)) continue;
      if (!j.lost_on.count(s.worker_id)) return &j;
      if (!fallback) fallback = &j;
    }
    return fallback;
  }

  void assign_jobs() {
    if (!assign_dirty) return;
    assign_dirty = false;
    const int64_t now = steady_ms();
    for (auto& [identity, s] : sessions) {
      if (standing.quarantined(s.worker_id, now)) continue;
      // Without CURVE nothing vouches for a new worker id: until it has returned a result it
      // holds at most kUnprovenLeasesPerDevice leases per device.
      const bool bounded = !s.authenticated && !standing.proven(s.worker_id);
      // Credits are per device, slots per worker: a worker with one slot and two devices
      // grants a credit on each, yet runs one job at a time.
      int held = leases_held_by(s.worker_id);
      for (const auto& device : s.devices) {
        int on_device = bounded ? leases_on_device(s.worker_id, device.key) : 0;
        while (s.credits.available(device.key, held) > 0 &&
               (!bounded || on_device < reliability::kUnprovenLeasesPerDevice)) {
          JobEntry* j = pick_job(s, device);
          if (!j) break;
          const int attempt = j->attempts + 1;
          const int64_t lease_ms =
              static_cast<int64_t>(j->spec.timeout_s * 1000.0) + opt.lease_grace_ms;
          if (!s.record_stored) {
            s.record.last_seen_at_ms = now_epoch_ms();
            if (Status st = store->upsert_worker(s.record); !st.ok()) {
              storage_fault("storing worker " + s.worker_id, st);
              return;
            }
            s.record_stored = true;
          }
          LeaseRecord lease;
          lease.run_id = j->run_id;
          lease.job_id = j->job_id;
          lease.attempt = attempt;
          lease.worker_id = s.worker_id;
          lease.device = device.key;
          lease.hardware_class = device.hardware_class;
          lease.leased_at_ms = now_epoch_ms();
          lease.lease_expires_at_ms = lease.leased_at_ms + lease_ms;
          if (Status st = store->record_lease(lease); !st.ok()) {
            storage_fault("recording the lease of " + j->job_id, st);
            return;
          }
          j->attempts = attempt;
          j->state = JobState::kLeased;
          j->lease_worker = s.worker_id;
          j->lease_attempt = attempt;
          j->lease_expires_at_ms = lease.lease_expires_at_ms;
          j->lease_answered = false;
          j->lease_device = device.key;
          s.credits.on_assign(device.key);
          ++held;
          ++on_device;
          proto::Assign a;
          a.job_id = j->job_id;
          a.attempt = attempt;
          a.lease_ms = lease_ms;
          a.device = device.key;
          a.spec = j->spec_doc;
          send(identity, std::move(a));
          logger()->debug("assigned {} attempt {} to {}", j->job_id, attempt, s.worker_id);
        }
      }
    }
  }

  // ---- timers ------------------------------------------------------------------------------
  void run_timers() {
    if (fatal) return;
    const int64_t now = steady_ms();
    if (now - last_heartbeat_ms >= opt.heartbeat_interval_ms) {
      last_heartbeat_ms = now;
      for (const auto& [identity, s] : sessions) send(identity, proto::Heartbeat{});
    }
    const int64_t dead_after = opt.heartbeat_interval_ms * opt.heartbeat_liveness;
    std::vector<std::string> dead;
    for (const auto& [identity, s] : sessions) {
      if (now - s.last_seen_ms > dead_after) dead.push_back(identity);
    }
    for (const auto& identity : dead) {
      remove_session(identity, "silent for more than " + std::to_string(dead_after) + " ms");
    }
    const int64_t epoch = now_epoch_ms();
    for (auto& [id, j] : jobs) {
      if (j.state == JobState::kLeased && j.lease_expires_at_ms > 0 && epoch > j.lease_expires_at_ms) {
        send_to_worker(j.lease_worker, proto::Cancel{j.job_id, j.lease_attempt, "lease expired"});
        ++counters.leases_expired;
        lease_lost(j, "lease expired");
      }
    }
    if (!pending.empty() &&
        (static_cast<int>(pending.size()) >= reliability::kStoreBatchMax ||
         now - pending_since_ms >= reliability::kStoreBatchMaxDelayMs)) {
      flush_results();
    }
    enforce_time_budgets(now);
    assign_jobs();
    if (progress_cb && now - last_tick_notify_ms >= kProgressTickMs) {
      last_tick_notify_ms = now;
      notify();
    }
  }

  // A run whose plan's time_budget_s has run out starts nothing more: each of its jobs that is
  // queued (never started, or put back after a lost lease) is settled `skipped`. Jobs running
  // now finish and report as usual.
  void enforce_time_budgets(int64_t now) {
    if (budget_s.empty() || serve_started_ms == 0) return;
    for (const auto& [run_id, budget] : budget_s) {
      if (now - serve_started_ms < static_cast<int64_t>(budget * 1000.0)) continue;
      const std::string reason = fmt::format("time budget: the plan's time_budget_s = {:g} ran out before it started", budget);
      if (budget_spent.insert(run_id).second) {
        int queued = 0;
        for (const auto& [id, j] : jobs) queued += (j.run_id == run_id && j.state == JobState::kQueued);
        logger()->warn("run {}: time budget of {:g} s ran out; no new job starts, {} job(s) not started are skipped",
                       run_id, budget, queued);
      }
      for (const auto& id : order) {
        JobEntry& j = jobs[id];
        if (j.run_id == run_id && j.state == JobState::kQueued) settle(j, ResultStatus::kSkipped, reason);
        if (fatal) return;
      }
    }
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  if (options.heartbeat_interval_ms <= 0 || options.heartbeat_liveness <= 0) {
    return invalid_argument("heartbeat interval and liveness must be positive");
  }
  if (options.max_infra_attempts <= 0) return invalid_argument("max attempts must be positive");
  if (sodium_init() < 0) return internal_error("libsodium failed to initialise");
  auto store = Store::open(options.db_path);
  if (!store.ok()) return store.status().with_context("opening " + options.db_path.string());
  auto router = RouterEndpoint::bind(options.bind, options.curve ? &*options.curve : nullptr);
  if (!router.ok()) return router.status().with_context("binding " + options.bind);
  auto impl = std::make_unique<Impl>(options, std::move(store).value(), std::move(router).value());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

namespace {

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

Status Server::submit(const jobs::Plan& plan, const std::string& run_id, const SubmitOptions& submit) {
  Impl& m = *impl_;
  RunRecord run;
  run.run_id = run_id;
  run.plan_name = plan.name;
  run.plan_path = plan.source.string();
  run.description = plan.description;
  run.created_at_ms = now_epoch_ms();
  run.plan_hash = jobs::plan_hash(plan.jobs);
  AM_ASSIGN_OR_RETURN(std::optional<RunRecord> existing, m.store->get_run(run_id));
  bool had_work = !existing || existing->finished_at_ms == 0;
  if (!existing) {
    AM_RETURN_IF_ERROR(m.store->upsert_run(run));
  } else if (existing->plan_hash != run.plan_hash) {
    AM_ASSIGN_OR_RETURN(std::vector<JobRow> stored, m.store->load_jobs(run_id));
    std::set<std::string> stored_ids;
    for (const JobRow& row : stored) stored_ids.insert(row.job_id);
    std::set<std::string> plan_ids;
    for (const auto& j : plan.jobs) plan_ids.insert(j.job_id);
    std::size_t only_plan = 0;
    for (const auto& id : plan_ids) only_plan += stored_ids.count(id) == 0;
    std::size_t only_run = 0;
    for (const auto& id : stored_ids) only_run += plan_ids.count(id) == 0;
    // A run from before schema 3 has no hash: it adopts this plan's when the jobs are the same.
    const bool legacy_same = existing->plan_hash.empty() && only_plan == 0 && only_run == 0;
    if (!legacy_same && !submit.extend) {
      return failed_precondition(fmt::format(
          "run '{}' in {} was made from another plan ({}, plan hash {}); {} (plan hash {}) has {} not in "
          "the run and the run has {} not in it. Use --run NAME to start a new run with this plan, or "
          "--extend to add its jobs to run '{}' on purpose",
          run_id, m.store->path().string(), existing->plan_path.empty() ? "unknown file" : existing->plan_path,
          existing->plan_hash.empty() ? "not recorded" : existing->plan_hash, plan.source.string(),
          run.plan_hash, plural(only_plan, "job"), plural(only_run, "job"), run_id));
    }
    if (!legacy_same) {
      logger()->info("run {}: extended with plan {} ({} new job(s))", run_id, plan.source.string(), only_plan);
      had_work = had_work || only_plan > 0;
    }
    AM_RETURN_IF_ERROR(m.store->set_run_plan(run));
  }
  AM_ASSIGN_OR_RETURN(int added, m.store->add_jobs(run_id, plan.jobs));
  AM_ASSIGN_OR_RETURN(std::vector<JobRow> rows, m.store->load_jobs(run_id));
  logger()->info("run {}: {} job(s), {} new", run_id, rows.size(), added);
  for (const JobRow& row : rows) {
    if (m.jobs.count(row.job_id)) continue;
    JobEntry j;
    j.run_id = row.run_id;
    j.job_id = row.job_id;
    j.spec_doc = row.spec;
    j.state = row.state;
    j.attempts = row.attempts;
    j.status = row.status;
    if (j.state != JobState::kDone) had_work = true;
    auto spec = jobs::job_spec_from_json(row.spec);
    m.order.push_back(row.job_id);
    if (!spec.ok()) {
      m.jobs[row.job_id] = std::move(j);
      m.settle(m.jobs[row.job_id], ResultStatus::kError, "stored job spec is invalid: " + spec.status().message());
      continue;
    }
    j.spec = std::move(spec).value();
    if (j.state == JobState::kLeased) {
      j.lease_worker = row.lease_worker;
      j.lease_host = row.lease_host;
      j.lease_attempt = row.attempts;
      j.lease_expires_at_ms = row.lease_expires_at_ms;
    }
    m.jobs[row.job_id] = std::move(j);
  }
  m.runs.insert(run_id);
  if (had_work) m.runs_to_finish.insert(run_id);
  if (plan.time_budget_s > 0) m.budget_s[run_id] = plan.time_budget_s;
  m.assign_dirty = true;
  return Status::Ok();
}

Result<int> Server::reclaim_leases(const std::function<bool(const std::string&, const std::string&)>& gone,
                                   const std::string& reason) {
  Impl& m = *impl_;
  int reclaimed = 0;
  for (auto& [id, j] : m.jobs) {
    if (j.state != JobState::kLeased || !gone(j.lease_worker, j.lease_host)) continue;
    const std::string why = reason + " (worker " + j.lease_worker + ")";
    AM_RETURN_IF_ERROR(m.store->expire_lease(j.run_id, j.job_id, j.lease_attempt, why, now_epoch_ms()));
    logger()->info("job {} attempt {}: lease reclaimed: {}", j.job_id, j.lease_attempt, why);
    j.lease_worker.clear();
    j.lease_host.clear();
    j.lease_attempt = 0;
    j.state = JobState::kQueued;
    ++m.counters.leases_reclaimed;
    ++reclaimed;
  }
  if (reclaimed > 0) m.assign_dirty = true;
  return reclaimed;
}

std::string Server::endpoint() const { return impl_->router.bound_endpoint(); }

void Server::on_progress(std::function<void(const Progress&)> callback) {
  impl_->progress_cb = std::move(callback);
}

Progress Server::progress() const { return impl_->snapshot(); }
bool Server::all_done() const { return impl_->all_done(); }
ServerCounters Server::counters() const { return impl_->current_counters(); }
bool Server::storage_failed() const { return impl_->fatal.has_value(); }

std::map<std::string, uint64_t> ServerCounters::as_map() const {
  return {{"frames_dropped_oversized", frames_dropped_oversized},
          {"frames_dropped_malformed", frames_dropped_malformed},
          {"messages_unexpected", messages_unexpected},
          {"messages_before_hello", messages_before_hello},
          {"hellos_refused_version", hellos_refused_version},
          {"hellos_refused_identity", hellos_refused_identity},
          {"results_dropped_forged", results_dropped_forged},
          {"results_duplicate", results_duplicate},
          {"leases_expired", leases_expired},
          {"leases_reclaimed", leases_reclaimed},
          {"leases_silent", leases_silent},
          {"registrations", registrations},
          {"reregistrations", reregistrations},
          {"quarantines", quarantines},
          {"leases_interrupted", leases_interrupted}};
}

std::string ServerCounters::summary() const {
  std::string out;
  for (const auto& [name, value] : as_map()) {
    if (value == 0) continue;
    out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  }
  return out.empty() ? "all zero" : out;
}

Status Server::serve(const std::atomic<bool>& stop) {
  Status st = serve_loop(stop);
  Impl& m = *impl_;
  const ServerCounters c = m.current_counters();
  logger()->info("counters: {}", c.summary());
  if (!m.fatal) {
    if (Status saved = m.store->save_counters(c.as_map(), now_epoch_ms()); !saved.ok()) {
      m.storage_fault("storing the counters", saved);
    }
  }
  if (m.fatal && st.ok()) return *m.fatal;
  return st;
}

Status Server::serve_loop(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  m.serve_started_ms = steady_ms();
  m.last_tick_notify_ms = m.serve_started_ms;
  m.notify();
  int64_t drain_started_ms = 0;
  while (!stop.load()) {
    if (m.fatal) return *m.fatal;
    auto first = m.router.recv(static_cast<int>(reliability::kPollTickMs));
    if (!first.ok()) return first.status().with_context("coordinator receive");
    if (first->has_value()) {
      m.handle(**first);
      for (int i = 1; i < kMaxMessagesPerTick; ++i) {
        auto more = m.router.recv(0);
        if (!more.ok()) return more.status().with_context("coordinator receive");
        if (!more->has_value()) break;
        m.handle(**more);
      }
    }
    m.run_timers();
    if (m.fatal) return *m.fatal;
    if (m.opt.exit_when_done && m.pending.empty() && m.all_done()) {
      if (drain_started_ms == 0) {
        drain_started_ms = steady_ms();
        for (const auto& [identity, s] : m.sessions) {
          m.send(identity, proto::Drain{"run complete"});
        }
        for (const auto& run_id : m.runs_to_finish) {
          if (Status st = m.store->mark_run_finished(run_id, now_epoch_ms()); !st.ok()) {
            m.storage_fault("marking run " + run_id + " finished", st);
            return *m.fatal;
          }
        }
        logger()->info("all {} job(s) terminal; draining workers", m.jobs.size());
      }
      // Stay up until every worker has said BYE (so DRAIN is delivered), or give up waiting.
      if (m.sessions.empty() || steady_ms() - drain_started_ms > kDrainWaitMs) return Status::Ok();
    }
  }
  // A clean stop: take in what has already arrived (results, BYEs), store it, then hand back
  // every lease still out.
  for (int i = 0; i < kMaxMessagesPerTick && !m.fatal; ++i) {
    auto more = m.router.recv(0);
    if (!more.ok() || !more->has_value()) break;
    m.handle(**more);
  }
  m.flush_results();
  if (m.fatal) return *m.fatal;
  if (m.release_all_leases("interrupted: the coordinator was stopped") > 0) {
    // Sockets close with linger 0: give ZeroMQ's I/O thread a moment to put the CANCELs on the
    // wire, so remote workers stop those jobs instead of finishing them for nobody.
    std::this_thread::sleep_for(Millis(kCancelFlushMs));
  }
  if (m.fatal) return *m.fatal;
  return Status::Ok();
}

}  // namespace am::coord
