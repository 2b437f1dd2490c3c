// The coordinator: a ROUTER server that registers workers, leases jobs to them against their
// credits, stores every result in SQLite before acknowledging it, and reclaims the jobs of dead
// workers and expired leases.
//
// Contract:
// - create() opens (or migrates) the store and binds the endpoint; errors name which.
// - submit() records a run and its jobs (idempotent: a plan submitted twice adds nothing) and
//   loads every job of the run that is not terminal into the queue. Plan jobs placed
//   each-class / each-device become jobs per class or device as workers register (those already
//   registered get theirs at once); `any` jobs are made here. A job leased before a
//   restart keeps its lease until it expires; its worker may still deliver the result.
//   The run keeps its plan's hash (jobs::plan_hash): a different plan under the same run id is
//   refused (kFailedPrecondition, naming --run and --extend) unless SubmitOptions::extend.
// - A plan's time_budget_s counts from the start of serve(): once it has run out no job of
//   that run is leased again, and every job not started is settled `skipped` (reason "time
//   budget ..."); jobs already running finish.
// - A clean stop (`stop` set) ends serve() after the results already received are stored:
//   every lease still out is released — its attempt closed as `interrupted`, its job queued
//   again, its worker sent CANCEL — so a restart re-runs those jobs at once. A worker that says
//   BYE while holding leases releases them the same way.
// - serve() runs the loop on the calling thread until `stop` becomes true, or — with
//   exit_when_done — until every submitted job is terminal, after which workers are sent DRAIN.
//   It never throws and never crashes on what a peer sends; bad messages are logged and counted.
// - Storage faults stop it: when a write to the store fails, or the database file was removed
//   or replaced underneath, serve() logs an error naming the file and returns that error at
//   once, without acknowledging any result it did not store (workers keep those and re-send
//   them to the next coordinator). storage_failed() then says so; the CLI exits with code 4.
// - Identity (PROTOCOL §5.8): a worker id is bound to the CURVE key, or without CURVE to the
//   registration secret, of its first registration; a HELLO for a bound id with another
//   credential is refused (REJECT, retry false), logged and counted, and changes nothing.
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
#include <vector>

#include "common/reliability.h"
#include "common/result_status.h"
#include "common/status.h"
#include "common/transport.h"
#include "jobs/plan.h"

namespace am::coord {

// How often serve() calls the progress callback when nothing happens, so a display can tick its
// elapsed time and ETA.
inline constexpr int64_t kProgressTickMs = 500;

struct ServerOptions {
  std::string bind = "tcp://*:7450";
  std::filesystem::path db_path = "accelmatrix.db";
  int64_t heartbeat_interval_ms = reliability::kHeartbeatIntervalMs;
  int heartbeat_liveness = reliability::kHeartbeatLiveness;
  int64_t lease_grace_ms = reliability::kLeaseGraceMs;
  int max_infra_attempts = reliability::kMaxInfraAttempts;   // distinct workers (PROTOCOL §5.5)
  // Jobs that no registered device can run are settled (skipped/unsupported) once this many
  // workers have registered. 0 = never settle them; they wait for a capable worker. A run of
  // this session is complete only once this many workers and `expect_classes` hardware classes
  // of backends the runs use have registered (docs/PLANS.md "Placement").
  int expect_workers = 1;
  int expect_classes = 0;
  bool exit_when_done = false;
  // CURVE encryption with a ZAP allow-list of worker keys; absent = plain TCP.
  std::optional<CurveServerConfig> curve;
  // Admin clients (CONTROL, PROTOCOL §5.10). Under CURVE: the client public keys (Z85) allowed
  // to send control requests — never also worker keys; they are admitted by the ZAP handler and
  // cannot register as workers. Without CURVE, `status` is answered to anyone who can reach the
  // endpoint and every other request only from this host (IPC, or TCP from a loopback address).
  std::vector<std::string> admin_keys;
  // Parses a plan sent with CONTROL `submit` (its TOML text, and the file name the client read
  // it from, for messages). Without one, submit is refused.
  // `run_id`: the run the plan's jobs are for (their ids hash it); "" for the plan's name.
  std::function<Result<jobs::Plan>(const std::string& text, const std::string& name, const std::string& run_id)>
      plan_parser;
  // Device health (PROTOCOL §5.11, coordinator/device_health.h). health_interval_ms = 0 turns
  // health jobs off entirely (devices run jobs at once; a quarantine lifts only by release);
  // quarantine_after = 0 never quarantines for crashes.
  int64_t health_interval_ms = reliability::kHealthIntervalMs;
  int quarantine_after = reliability::kCrashesBeforeDeviceQuarantine;
  int64_t quarantine_backoff_ms = reliability::kDeviceQuarantineInitialMs;
  // While jobs wait, a scheduling pass walks every session at least this often, whatever
  // happened (server.cpp, assign_jobs: between such passes only the sessions whose own state
  // changed are walked). Tests set it past their run to show those passes alone keep a fleet busy.
  int64_t full_pass_interval_ms = reliability::kFullSchedulingPassMs;
  // How this coordinator was started ("accelmatrix serve"), for `status`.
  std::string command = "accelmatrix serve";
};

// Reliability counters of one serve session: logged when serve() returns and stored in the
// `counters` table (for a `status` command to show). Monotonic; names in as_map() are stable.
struct ServerCounters {
  uint64_t frames_dropped_oversized = 0;   // transport: frame above the size limit
  uint64_t frames_dropped_malformed = 0;   // transport: bad frame count, type or body
  uint64_t messages_unexpected = 0;        // decoded, but not valid from this peer now
  uint64_t messages_before_hello = 0;      // from a peer without a session (REJECT retry)
  uint64_t hellos_refused_version = 0;
  uint64_t hellos_refused_identity = 0;    // worker id bound to another key or secret
  uint64_t results_dropped_forged = 0;     // RESULT for an attempt not leased to the sender
  uint64_t progress_dropped_forged = 0;    // PROGRESS for an attempt not leased to the sender
  uint64_t results_duplicate = 0;          // RESULT already stored (re-sent): ACKed again
  uint64_t leases_expired = 0;             // lease ran out
  uint64_t leases_reclaimed = 0;           // worker lost, left, or re-registered without it
  uint64_t leases_silent = 0;              // of those two: the peer never answered the lease
  uint64_t registrations = 0;              // HELLOs answered with WELCOME
  uint64_t reregistrations = 0;            // of those: for a worker id seen before
  uint64_t quarantines = 0;                // peers quarantined for silent leases
  uint64_t leases_interrupted = 0;         // released by a clean stop or a worker's BYE
  uint64_t control_requests = 0;           // CONTROL requests answered (any outcome)
  uint64_t control_refused = 0;            // of those: refused for want of admin rights
  uint64_t health_checks = 0;              // health jobs that returned a verdict
  uint64_t device_quarantines = 0;         // devices quarantined (failed health job, crashes)
  std::map<std::string, uint64_t> as_map() const;
  std::string summary() const;             // one line, non-zero counters only
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
  uint64_t event_seq = 0;                 // events so far: a new one is a new line even if its text repeats
  int slots = 0;                          // job slots of the registered workers, together
  // Results received in this session with both timestamps: their count and summed duration
  // (finished_at - started_at), for an ETA.
  int measured_jobs = 0;
  int64_t measured_job_ms = 0;
};

class PrefetchedJobs;  // coordinator/store.h

struct SubmitOptions {
  // Add the plan's jobs to an existing run made from another plan (`--extend`), and record this
  // plan as the run's plan. Without it such a submit is refused.
  bool extend = false;
  // The run's stored jobs read ahead (a restart reads them while its plan expands). Used only
  // for the same run, when the submit stores nothing new and they are still current
  // (PrefetchedJobs::current()); otherwise the jobs are read as always. May be null.
  PrefetchedJobs* prefetched = nullptr;
  // jobs::plan_inputs_digest() of the plan (a plan read from a file here): stored as the run's
  // plan digest once its jobs are (RunRecord::plan_digest) when the run holds this plan's jobs and
  // nothing else (not after --extend), so that the next start with the same plan text, catalog
  // and build resumes the run from the store (resume()). "" leaves the stored one as it is.
  std::string plan_digest;
  // Store no digest for the run ("" instead): a resume of it found a doubt (resume()), and the
  // next start expands the plan again rather than meet the same doubt.
  bool forget_digest = false;
  // Set once submit() has changed what the server holds in memory (plan jobs, jobs, the run):
  // a failure after that leaves memory and the store apart, which a caller undoing the store's
  // side (Store::atomically) must treat as a storage fault. May be null.
  bool* memory_changed = nullptr;
};

// A resume (Server::resume) parses each stored plan job's spec whole (plan_jobs keeps them as
// documents, ~10 us each): past this many plan jobs expanding the plan again costs no more, and
// the restart does that.
inline constexpr int64_t kResumeMaxPlanJobs = 20'000;

enum class ResumeOutcome { kResumed, kNotResumable, kDoubted };

class Server {
 public:
  static Result<std::unique_ptr<Server>> create(const ServerOptions& options);
  ~Server();

  // Also reachable while serving, through CONTROL `submit` (then the run's time budget counts
  // from the submission).
  Status submit(const jobs::Plan& plan, const std::string& run_id, const SubmitOptions& submit = {});

  // A restart without expanding the plan: when the stored run `run_id` has `plan_digest` (the
  // digest of the plan text, catalog and build its jobs, and only those, were stored from), its
  // plan jobs and jobs are read from the store — the state a submit of that plan would build —
  // and kResumed is returned. It settles nothing for what it reads. kNotResumable, with nothing
  // changed: no such run, another digest or none, more plan jobs than kResumeMaxPlanJobs.
  // kDoubted, logged: a damaged spec family, a plan job or job that is not the job its id names,
  // a row it cannot read; this server may then hold part of the run — rows before the doubt, each
  // the job its id names. After either the caller must submit() the expanded plan next (with
  // forget_digest after kDoubted), which adds the rest as a submit on a fresh server would.
  // `prefetched` as in SubmitOptions. Call once, before serve().
  Result<ResumeOutcome> resume(const jobs::PlanSummary& summary, const std::string& run_id,
                               const std::string& plan_digest, PrefetchedJobs* prefetched = nullptr);

  // Releases at once the leases whose worker `gone(worker_id, worker_host)` says will never
  // come back (the local workers of an embedded run that stopped without releasing them): their
  // attempts are closed as expired with `reason` and the jobs queued again, counting against
  // neither job nor worker. Returns how many. Call after submit(), before serve().
  // Serves again every run a plan was submitted for (CONTROL `submit`) that is not finished:
  // every plan submitted for it is parsed with plan_parser and submitted as it was received, in
  // order, each as part of the run (a plan the run followed, all of whose jobs it holds); any one
  // of them serves the whole run (its stored jobs and plan jobs). A plan that no longer expands to
  // the run's jobs (another catalog or build), or does not parse, is logged; a run none of whose
  // plans is served is left for its client to submit again. Then warn_unserved_runs(). Returns
  // how many runs are served again; errors only for store faults. Call after submit().
  Result<int> resume_submitted_runs();
  // Names the database's unfinished runs this server does not serve in one warning.
  Status warn_unserved_runs();
  Result<int> reclaim_leases(const std::function<bool(const std::string&, const std::string&)>& gone,
                             const std::string& reason);
  std::string endpoint() const;   // resolved bind endpoint, e.g. tcp://127.0.0.1:40123

  // Called on the loop thread whenever a job becomes terminal or a worker comes or goes, and
  // at least every kProgressTickMs while serving (for displays of elapsed time).
  void on_progress(std::function<void(const Progress&)> callback);

  Status serve(const std::atomic<bool>& stop);

  // The state now, as on_progress() would report it. Not while serve() runs on another thread
  // (it reads the loop's state and caches part of it); a serving loop reports it to on_progress.
  Progress progress() const;
  bool all_done() const;
  // The runs this server serves (its own and those submitted to it), in id order.
  std::vector<std::string> runs() const;
  ServerCounters counters() const;
  bool storage_failed() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  Status serve_loop(const std::atomic<bool>& stop);
  std::unique_ptr<Impl> impl_;
};

}  // namespace am::coord
