#include "coordinator/server.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/hash.h"
#include "common/heap_trim.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "common/warning_budget.h"
#include "coordinator/batch_pipe.h"
#include "coordinator/credit_ledger.h"
#include "coordinator/device_health.h"
#include "coordinator/exclusivity.h"
#include "coordinator/health_job.h"
#include "coordinator/job_queue.h"
#include "coordinator/matching.h"
#include "coordinator/peer_standing.h"
#include "coordinator/placement.h"
#include "coordinator/stable_table.h"
#include "coordinator/store.h"
#include "coordinator/stored_json.h"
#include "jobs/names.h"
#include "jobs/spec_family.h"
#include "jobs/spec_limits.h"

#include <sodium.h>
#include <unistd.h>

namespace am::coord {
namespace {

std::shared_ptr<spdlog::logger> logger() {
  static auto l = get_logger("coordinator/server");
  return l;
}

// At most this many messages are handled per loop iteration before timers run, so a flood
// from one peer cannot starve heartbeats and lease checks.
constexpr int kMaxMessagesPerTick = 256;

// How often the serving loop looks for silent workers and expired leases (at most; half the
// heartbeat interval when that is shorter).
constexpr int64_t kTimerScanMs = 100;

// How often the serving loop looks for health jobs that fell due.
constexpr int64_t kHealthWakeMs = 1000;

// How often an idle coordinator checks that its database file is still the one it opened (a
// busy one learns it at its next write; an idle one went on serving a deleted file).
constexpr int64_t kDbFileCheckMs = 1000;

// How long a built status document is reused (PROTOCOL §5.10: "status may be this much old").
constexpr int64_t kStatusCacheMs = 250;

// After a run completes, how long the coordinator keeps serving so that DRAIN reaches every
// worker and their BYEs come back.
constexpr int64_t kDrainWaitMs = 3000;

// After a clean stop released leases, how long the coordinator waits before closing its socket so
// that the CANCELs it sent leave (loopback and LAN need well under this).
constexpr int64_t kCancelFlushMs = 100;

struct QueueBucket;

// What the jobs of one model entry share (everything but precision, batch and sequence length),
// kept once (Impl::intern_family) — a spec per job cost ~1.5 KiB, most of a queued job's memory.
struct SpecFamily {
  jobs::SpecTemplate canonical;      // its family() is the shared spec, with neutral scalars
  const jobs::JobSpec& spec() const { return canonical.family(); }
};

// What a job's leases leave on it (JobEntry::lease_state).
struct LeaseFields {
  std::string worker;                // worker id holding the current lease
  std::string host;                  // its hostname as stored with the lease (restart only)
  int attempt = 0;
  int64_t expires_at_ms = 0;         // epoch ms
  int64_t started_ms = 0;            // epoch ms of the current ASSIGN (0 after a restart)
  bool result_pending = false;       // the current lease's RESULT waits in the store batch
  bool answered = false;             // the current lease's peer sent PROGRESS or RESULT for it
  bool exclusive = false;            // the current lease holds its hardware alone (§5.12)
  std::string device;
  std::set<std::string> lost_on;     // workers on which an attempt ended without a result
  std::set<std::string> failed_on;   // of those: the ones that had answered (counted, §5.5)
  int infra_failures = 0;            // answered leases that ended without a result
  // The worker whose lease index lists the job (Impl::index_job) and whether as exclusive.
  std::string indexed_worker;
  bool indexed_exclusive = false;
};
const LeaseFields kNeverLeased{};
const PlacedTarget kAnyTarget{};

struct JobEntry {
  // The run's id, its family and its placement target are shared by many jobs and owned by
  // Impl (runs_by_id, families, targets), which never drops one while the server lives: each
  // is a pointer here, not a copy or a reference count (a million queued jobs; docs/SCALE.md).
  const std::string* run = nullptr;
  const std::string& run_id() const { return *run; }
  std::string job_id;
  const SpecFamily* family = nullptr;
  jobs::JobScalars scalars;
  jobs::JobSpec spec() const { return jobs::with_scalars(family->spec(), scalars); }
  const jobs::JobSpec& family_spec() const { return family->spec(); }
  JobState state = JobState::kQueued;
  int attempts = 0;
  std::optional<ResultStatus> status;
  // Lease state and history: allocated the first time the job is leased, so a queued job that
  // never was costs one pointer (a million queued jobs; docs/SCALE.md). Read with lease(),
  // write through lease_mut().
  std::unique_ptr<LeaseFields> lease_state;
  const LeaseFields& lease() const { return lease_state ? *lease_state : kNeverLeased; }
  LeaseFields& lease_mut() {
    if (!lease_state) lease_state = std::make_unique<LeaseFields>();
    return *lease_state;
  }
  // The class or device it was made for; null for `any` (every device). Shared by the jobs of a
  // target (Impl::intern_target): 136 bytes a job otherwise, a million times the same.
  const PlacedTarget* placed_target = nullptr;
  const PlacedTarget& placed() const { return placed_target ? *placed_target : kAnyTarget; }
  // The plan job it was made from (one copy, Impl::intern_plan_job); null when that is the job
  // itself (`any` jobs, stand-ins): a million copies of the job's own id were a heap string each.
  const std::string* plan_job_id = nullptr;
  const std::string& plan_job() const { return plan_job_id ? *plan_job_id : job_id; }
  // Scheduler indexes (Impl::index_job): submission order and the queue it waits in (the lease
  // index's part is in lease_state).
  uint32_t seq = 0;
  QueueBucket* bucket = nullptr;
  // Device memory it needs (-1: not estimated for it), worked out the first time a device asks
  // (need_bytes()): estimating a million jobs up front was seconds of every restart.
  static constexpr int64_t kNotEstimatedYet = -2;
  mutable int64_t need_bytes_cache = kNotEstimatedYet;
  int64_t need_bytes() const {
    if (need_bytes_cache == kNotEstimatedYet) {
      need_bytes_cache = family_spec().command ? -1 : estimated_job_bytes(spec()).value_or(-1);
    }
    return need_bytes_cache;
  }
};

// The queued jobs of one kind for one placement target (any, a class, a device): a device takes
// from the buckets of its three targets whose kind it admits (device_admits_kind), the lowest
// submission order first. A fleet of any size and a run of any length pick a job in
// O(buckets of the device's targets), not O(jobs) (docs/SCALE.md).
struct QueueBucket {
  jobs::JobSpec kind;                // a job of the bucket: backend, precision, tags, command
  JobQueue queue;                    // seqs; entries that left the queue are skipped lazily
};

// A plan job whose placement is each-class or each-device: the coordinator makes one job of it
// per class or device of its backend as they register (docs/PLANS.md "Placement"). Until one
// exists it is unplaced; a run with unplaced jobs is not complete. When none can ever be made
// (no registered hardware has the backend, or the run was closed) a stand-in job under the plan
// job's own id is settled instead, so the run's report says why.
struct PlanJob {
  std::string run_id;
  std::string job_id;                // compute_job_id(run, spec): the stand-in's id
  std::shared_ptr<const SpecFamily> family;
  jobs::JobScalars scalars;
  jobs::JobSpec spec() const { return jobs::with_scalars(family->spec(), scalars); }
  const jobs::JobSpec& family_spec() const { return family->spec(); }
  std::string canonical() const { return family->canonical.canonical(scalars); }   // for job_id_of()
  int placed = 0;                    // jobs made of it for classes or devices
  bool stand_in = false;             // its stand-in is in `jobs`
  bool cancelled = false;            // `accelmatrix cancel PLAN_JOB_ID`: makes no more jobs
};

// Held attempts of runs not served here that one HELLO may have looked up in the store
// (WorkerSession::held_unserved): a bound on the store work an unauthenticated HELLO can cause.
constexpr int kMaxHeldUnservedLookups = 64;

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
  bool draining = false;             // `accelmatrix drain`: no new jobs; DRAIN sent
  int64_t registered_at_ms = 0;      // epoch ms of this session's WELCOME
  std::string build;
  std::string host_key;              // exclusivity.h host_key_of(HELLO.host_id, worker id)
  // Attempts its HELLO said it holds that are no job of a run served here (a run the restarted
  // coordinator does not serve) and that the store has leased to it: {job id: (run id, attempt)}.
  // Shown by `status` (the worker otherwise looked idle with a slot taken); dropped when their
  // RESULT arrives.
  std::map<std::string, std::pair<std::string, int>> held_unserved;
};

// A health job out on a device (PROTOCOL §5.11). Not a run's job: nothing of it is stored but
// the device event its verdict makes.
struct HealthLease {
  std::string worker_id;
  std::string device;
  int attempt = 1;
  int64_t issued_at_ms = 0;          // epoch ms
  int64_t expires_at_ms = 0;         // epoch ms
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
  const auto& f = j.family_spec();
  return fmt::format("{} {} {} b{} s{}", f.model, f.backend, jobs::to_string(j.scalars.precision), j.scalars.batch,
                     j.scalars.seq_len);
}

std::string plural_of(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
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

// The same of a result's metrics given as JSON text (proto::JobResult::metrics_json), reading
// only those two members; text that does not parse summarizes to nothing (nor do NaN and
// infinities, null in the text). A reader of its own per call: a thread's reader would keep the
// buffers of the largest document a peer ever sent (tens of MiB from one 4 MiB frame).
std::string summarize_metrics_text(std::string_view text) {
  static const std::vector<std::string_view> kMembers = {"latency_ms.median", "accuracy.nmse"};
  StoredJsonReader reader;
  Result<nlohmann::json> m = reader.decode(text, &kMembers);
  return m.ok() && m->is_object() ? summarize_metrics(*m) : std::string();
}

}  // namespace

struct Server::Impl {
  ServerOptions opt;
  std::unique_ptr<Store> store;
  RouterEndpoint router;

  // Job id -> entry. Hashed: a million ids in a tree cost a third of a restart in string
  // compares. Entries never move (by_seq and the queues hold pointers) and live in chunks of
  // their own (stable_table.h: as hash-map nodes they left the heap half holes); iterate by_seq
  // for order.
  StableTable<JobEntry, &JobEntry::job_id> jobs;
  // ---- indexes over `jobs`, kept by index_job()/set_state() (docs/SCALE.md) ----
  std::vector<JobEntry*> by_seq;                   // submission order; nullptr: a removed stand-in
  std::unordered_map<std::string, std::vector<std::unique_ptr<QueueBucket>>> buckets_by_target;
  std::unordered_map<std::string, QueueBucket*> bucket_by_key;
  // Worker id -> seqs of the jobs leased to it (a superset: entries are checked on use).
  std::unordered_map<std::string, std::set<uint32_t>> leased_by_worker;
  int count_queued = 0;
  int count_queued_perf = 0;                       // of those: jobs that measure speed (exclusive)
  int count_leased = 0;
  int count_leased_exclusive = 0;                  // of those: exclusive leases
  int count_done = 0;
  std::map<ResultStatus, int> done_by_status;
  std::unordered_map<std::string, int> open_by_run;     // run id -> jobs not terminal
  std::unordered_map<std::string, int> queued_by_run;   // run id -> jobs queued
  // Unplaced plan jobs per run, recomputed when a plan job is added, placed or stood in for.
  mutable std::map<std::string, int> unplaced_cache;
  mutable bool unplaced_dirty = true;
  // (run, the placement-relevant traits of a device) already placed: a worker of a class that is
  // already served adds nothing, so a thousand workers of one class do not each walk the plan.
  std::set<std::string> placed_for;
  std::set<std::string> runs_with_each_device;     // runs with an each-device plan job
  // The registered devices' traits when ineligible `any` jobs were last settled.
  std::set<std::string> ineligible_checked_kinds;
  bool ineligible_checked = false;
  std::unordered_map<std::string, PlanJob> plan_jobs;   // each-class / each-device plan jobs by id (plan_job_order: order)
  std::vector<std::string> plan_job_order;
  // Worker ids registered in this session with a device that can take a job: what
  // --expect-workers counts. A peer with none (an empty or useless capability record) would
  // otherwise complete the fleet and settle every job `skipped` before real hardware arrives.
  std::set<std::string> workers_seen;
  std::map<std::string, std::string> classes_seen; // hardware classes registered in this session -> backend
  std::set<std::string> backends_planned;          // the backends of every run's jobs
  std::set<std::string> closed_runs;               // take no new placements (budget spent, cancelled)
  std::string last_served;                         // routing identity of the last ASSIGN's worker
  std::set<std::string> runs;
  // Runs that had work when submitted (or were never finished): only these get a new
  // "finished" time, so a rerun with nothing to do leaves the run's record as it was.
  std::set<std::string> runs_to_finish;
  std::map<std::string, double> budget_s;          // run id -> plan's time_budget_s (> 0 only)
  std::map<std::string, int64_t> budget_from_ms;   // steady ms the run was submitted
  std::set<std::string> budget_spent;              // runs whose budget has run out
  int64_t serve_started_ms = 0;                    // steady ms the serve loop started
  // Steady ms the first worker of this session registered: the time budgets count from here
  // (or from their run's submit, if later), so a budget does not run out on a coordinator that
  // waits for its fleet.
  int64_t first_worker_ms = 0;
  int64_t last_tick_notify_ms = 0;
  int measured_jobs = 0;
  int64_t measured_job_ms = 0;
  std::map<std::string, WorkerSession> sessions;   // routing identity -> session
  std::map<std::string, std::string> identity_of;  // worker id -> routing identity
  std::vector<PendingResult> pending;
  int64_t pending_since_ms = 0;
  int64_t last_heartbeat_ms = 0;
  int64_t last_scan_ms = 0;                        // steady ms of the last silent-worker/lease scan
  int64_t last_db_check_ms = 0;                    // steady ms of the last database file check
  // What the next scheduling pass walks (assign_jobs): every session when assign_dirty, else only
  // the sessions in assign_ready, whose own state changed (a credit granted, a result of theirs
  // received or stored). Everything that can let another session take work (a job queued again
  // or settled, a plan submitted, a worker registered or gone, health and quarantine, a lease of
  // another worker or one that held its hardware alone ended) sets assign_dirty; so does
  // run_timers every full_pass_interval_ms while jobs wait.
  // docs/SCALE.md, "A thousand workers".
  bool assign_dirty = true;
  int64_t last_full_pass_ms = 0;                    // steady ms
  std::set<std::string> assign_ready;               // routing identities
  mutable std::optional<int> slots_total;           // over every session; reset when sessions change
  ServerCounters counters;
  PeerStanding standing;
  std::optional<Status> fatal;                     // a storage fault: stop, ACK nothing more
  // What the newest event says; for a job's result the line is made from last_result when a
  // snapshot is taken (a progress display takes one per result, a headless serve only for
  // `status`), so no result's metrics are read on the way to the store.
  std::string last_event;
  struct LastResult {
    std::string head, metrics_json, tail;
  };
  std::optional<LastResult> last_result;   // newer than last_event when set
  // Counts events: two jobs that end with the same line are two lines of a progress display.
  uint64_t event_seq = 0;
  std::function<void(const Progress&)> progress_cb;

  DeviceHealth health;
  std::map<std::string, HealthLease> health_leases;   // job id -> lease
  uint64_t health_seq = 0;
  std::set<std::string> admin_keys;
  bool bound_to_ipc = false;                       // every peer is on this host
  std::map<std::string, int64_t> run_started_ms;   // epoch ms the run was submitted this session
  // Epoch ms the run's last job ended this session (its "elapsed" stops there while it stays so).
  std::map<std::string, int64_t> run_finished_ms;
  std::map<std::string, std::pair<int, int64_t>> run_measured;   // run -> (jobs, summed job ms)
  int64_t started_at_ms = 0;                       // epoch ms of create()
  bool runs_dirty = false;                         // a job became terminal since the last check
  int64_t last_health_wake_ms = 0;                 // steady ms
  // `status` documents are built at most every kStatusCacheMs (a remote peer may ask for one
  // without CURVE; building it is O(jobs)); a mutating control op clears the cache.
  mutable std::optional<nlohmann::json> status_cache;
  mutable int64_t status_cached_ms = 0;

  Impl(ServerOptions o, std::unique_ptr<Store> s, RouterEndpoint r)
      : opt(std::move(o)),
        store(std::move(s)),
        router(std::move(r)),
        health(HealthPolicy{opt.health_interval_ms, opt.quarantine_after, opt.quarantine_backoff_ms,
                            std::max(opt.quarantine_backoff_ms, reliability::kDeviceQuarantineMaxMs)}),
        admin_keys(opt.admin_keys.begin(), opt.admin_keys.end()),
        bound_to_ipc(opt.bind.rfind("ipc://", 0) == 0),
        started_at_ms(now_epoch_ms()) {
    // Lines about frames dropped by the transport name the worker registered on the connection.
    router.name_peers([this](const std::string& identity) {
      auto it = sessions.find(identity);
      return it == sessions.end() ? std::string() : "worker " + it->second.worker_id;
    });
  }

  // ---- logging what peers do -------------------------------------------------------------
  // Peers can make these warnings at will (a refused HELLO, a forged RESULT, an unknown device
  // per READY key): at most reliability::kPeerWarningsPerWindow per window, the rest at debug.
  WarningBudget peer_warnings{reliability::kPeerWarningsPerWindow, reliability::kPeerWarningWindowMs};

  template <typename... Args>
  void peer_warn(fmt::format_string<Args...> format, Args&&... args) {
    if (!peer_warnings.admit(steady_ms())) {
      logger()->debug(format, std::forward<Args>(args)...);
      return;
    }
    std::string line = fmt::format(format, std::forward<Args>(args)...);
    if (const uint64_t held = peer_warnings.take_held_back(); held > 0) {
      line += fmt::format(" ({} more warning(s) about peers held back since the last one)", held);
    }
    logger()->warn("{}", line);
  }

  // A peer as log lines name it: its worker id once registered, else its routing identity, and
  // its TCP address when it has one.
  std::string peer_name(const Envelope& env) const {
    std::string name;
    if (auto it = sessions.find(env.peer); it != sessions.end()) {
      name = "worker " + it->second.worker_id + " (peer " + hex_identity(env.peer) + ")";
    } else {
      name = "peer " + hex_identity(env.peer);
    }
    if (!env.peer_address.empty()) name += " at " + env.peer_address;
    return name;
  }

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

  // ---- spec families -------------------------------------------------------------------------
  // Jobs in plan order mostly share the previous job's family: that one is checked first.
  std::unordered_map<std::string, std::vector<std::shared_ptr<const SpecFamily>>> families;
  std::shared_ptr<const SpecFamily> last_family;

  // One shared PlacedTarget per distinct target; `any` is null (JobEntry::placed()).
  std::shared_ptr<const PlacedTarget> intern_target(const PlacedTarget& p) {
    if (p.placement == jobs::Placement::kAny && p.target.empty() && p.hardware_class.empty() &&
        p.worker_id.empty() && p.device_key.empty()) {
      return nullptr;
    }
    auto& slot = targets[std::to_string(static_cast<int>(p.placement)) + "\x1f" + p.target + "\x1f" + p.hardware_class +
                         "\x1f" + p.worker_id + "\x1f" + p.device_key];
    if (!slot) slot = std::make_shared<const PlacedTarget>(p);
    return slot;
  }
  std::unordered_map<std::string, std::shared_ptr<const PlacedTarget>> targets;
  // Run ids, one copy each (JobEntry::run); std::set: its elements never move.
  const std::string* intern_run(const std::string& run_id) { return &*runs_by_id.insert(run_id).first; }
  std::set<std::string> runs_by_id;
  // Plan-job ids that jobs were made from (JobEntry::plan_job_id), one copy each.
  const std::string* intern_plan_job(const std::string& id) { return &*plan_job_ids.insert(id).first; }
  std::set<std::string> plan_job_ids;

  std::shared_ptr<const SpecFamily> intern_family(const jobs::JobSpec& spec) {
    if (last_family && jobs::same_family(spec, last_family->spec())) return last_family;
    auto& list = families[spec.model + "\x1f" + spec.backend + "\x1f" + spec.mode];
    for (const auto& f : list) {
      if (jobs::same_family(spec, f->spec())) return last_family = f;
    }
    auto made = std::make_shared<const SpecFamily>(SpecFamily{jobs::SpecTemplate::of(spec)});
    list.push_back(made);
    return last_family = made;
  }

  // ---- indexes (docs/SCALE.md) ----------------------------------------------------------------
  // Every job enters them once, through index_job(), and changes state only through set_state(),
  // so that counts, queues and lease lists never disagree with the entries.
  static std::string target_key(const PlacedTarget& p) {
    switch (p.placement) {
      case jobs::Placement::kAny: return "any";
      case jobs::Placement::kEachClass: return "class\x1f" + p.hardware_class;
      case jobs::Placement::kEachDevice: return "device\x1f" + p.worker_id + "\x1f" + p.device_key;
    }
    return "any";
  }

  // What device_admits_kind() reads of a spec.
  static std::string kind_key(const jobs::JobSpec& spec, jobs::Precision precision) {
    std::string k = spec.backend + "\x1f" + std::string(jobs::to_string(precision)) + (spec.command ? "\x1f" "c" : "\x1f" "m");
    for (const auto& [name, value] : spec.required_tags) k += "\x1f" + name + "=" + value;
    return k;
  }

  QueueBucket* bucket_for(const JobEntry& j) {
    const std::string target = target_key(j.placed());
    const std::string key = target + "\x1e" + kind_key(j.family_spec(), j.scalars.precision);
    auto it = bucket_by_key.find(key);
    if (it != bucket_by_key.end()) return it->second;
    auto b = std::make_unique<QueueBucket>();
    b->kind = j.spec();
    QueueBucket* raw = b.get();
    buckets_by_target[target].push_back(std::move(b));
    bucket_by_key.emplace(key, raw);
    return raw;
  }

  // The buckets a device takes from: any, its class, itself.
  template <typename Visit>
  void for_each_bucket(const WorkerSession& s, const DeviceInfo& device, Visit&& visit) const {
    PlacedTarget any;
    PlacedTarget cls;
    cls.placement = jobs::Placement::kEachClass;
    cls.hardware_class = device.hardware_class;
    PlacedTarget dev;
    dev.placement = jobs::Placement::kEachDevice;
    dev.worker_id = s.worker_id;
    dev.device_key = device.key;
    for (const PlacedTarget* t : {&any, &cls, &dev}) {
      auto it = buckets_by_target.find(target_key(*t));
      if (it == buckets_by_target.end()) continue;
      for (const auto& b : it->second) {
        if (device_admits_kind(device, b->kind)) visit(*b);
      }
    }
  }

  bool is_queued(uint32_t seq) const {
    return seq < by_seq.size() && by_seq[seq] != nullptr && by_seq[seq]->state == JobState::kQueued;
  }

  // Adds a job just put into `jobs` (with the state it has) to the indexes.
  JobEntry& index_job(JobEntry& j) {
    j.seq = static_cast<uint32_t>(by_seq.size());
    by_seq.push_back(&j);
    j.bucket = bucket_for(j);
    enter_state(j, /*fresh=*/true);
    return j;
  }

  // Takes a job out of the indexes before it leaves `jobs` (a stand-in giving way).
  void unindex_job(JobEntry& j) {
    leave_state(j);
    by_seq[j.seq] = nullptr;
  }

  void enter_state(JobEntry& j, bool fresh) {
    switch (j.state) {
      case JobState::kQueued:
        ++count_queued;
        count_queued_perf += measures_speed(j.family_spec());
        ++open_by_run[j.run_id()];
        ++queued_by_run[j.run_id()];
        if (fresh) {
          j.bucket->queue.append(j.seq);
        } else {
          j.bucket->queue.requeue(j.seq);
          // Queued again (a lease lost): an `any` job is checked against the registered devices
          // at the next registration even if their kinds did not change (settle_ineligible_jobs).
          if (j.placed().placement == jobs::Placement::kAny) ineligible_checked = false;
        }
        break;
      case JobState::kLeased: {
        ++count_leased;
        ++open_by_run[j.run_id()];
        LeaseFields& l = j.lease_mut();
        l.indexed_exclusive = l.exclusive;
        count_leased_exclusive += l.indexed_exclusive;
        l.indexed_worker = l.worker;
        leased_by_worker[l.indexed_worker].insert(j.seq);
        break;
      }
      case JobState::kDone:
        ++count_done;
        if (j.status) ++done_by_status[*j.status];
        break;
    }
  }

  void leave_state(JobEntry& j) {
    switch (j.state) {
      case JobState::kQueued:
        --count_queued;
        count_queued_perf -= measures_speed(j.family_spec());
        --open_by_run[j.run_id()];
        --queued_by_run[j.run_id()];
        break;   // the queue drops it lazily
      case JobState::kLeased: {
        --count_leased;
        --open_by_run[j.run_id()];
        count_leased_exclusive -= j.lease().indexed_exclusive;
        auto it = leased_by_worker.find(j.lease().indexed_worker);
        if (it != leased_by_worker.end()) {
          it->second.erase(j.seq);
          if (it->second.empty()) leased_by_worker.erase(it);
        }
        j.lease_mut().indexed_worker.clear();
        break;
      }
      case JobState::kDone:
        --count_done;
        if (j.status) --done_by_status[*j.status];
        break;
    }
  }

  // The one way a job changes state. For kLeased, set lease_worker first; for kDone, `status`.
  void set_state(JobEntry& j, JobState to, std::optional<ResultStatus> status = std::nullopt) {
    leave_state(j);
    j.state = to;
    if (to == JobState::kDone) j.status = status;
    enter_state(j, /*fresh=*/false);
  }

  // The jobs leased to `worker_id` now, in submission order (a copy: the caller may change them).
  std::vector<JobEntry*> leased_to(const std::string& worker_id) const {
    std::vector<JobEntry*> out;
    auto it = leased_by_worker.find(worker_id);
    if (it == leased_by_worker.end()) return out;
    for (uint32_t seq : it->second) {
      JobEntry* j = by_seq[seq];
      if (j && j->state == JobState::kLeased && j->lease().worker == worker_id) out.push_back(j);
    }
    return out;
  }

  // Every job leased now, in submission order.
  std::vector<JobEntry*> all_leased() const {
    std::vector<uint32_t> seqs;
    for (const auto& [worker, set] : leased_by_worker) seqs.insert(seqs.end(), set.begin(), set.end());
    std::sort(seqs.begin(), seqs.end());
    std::vector<JobEntry*> out;
    for (uint32_t seq : seqs) {
      JobEntry* j = by_seq[seq];
      if (j && j->state == JobState::kLeased) out.push_back(j);
    }
    return out;
  }

  const std::map<std::string, int>& unplaced_counts() const {
    if (unplaced_dirty) {
      unplaced_cache.clear();
      for (const auto& [id, pj] : plan_jobs) {
        if (pj.placed == 0 && !pj.stand_in) ++unplaced_cache[pj.run_id];
      }
      unplaced_dirty = false;
    }
    return unplaced_cache;
  }

  Progress snapshot() const {
    Progress p;
    p.total = static_cast<int>(jobs.size());
    // A plan job not placed yet is work to come: counted as queued.
    const int waiting = unplaced_plan_jobs();
    p.total += waiting;
    p.queued += waiting + count_queued;
    p.done = count_done;
    p.leased = count_leased;
    for (const auto& [status, n] : done_by_status) {
      if (n > 0) p.by_status[status] = n;
    }
    p.workers = static_cast<int>(sessions.size());
    if (!slots_total) {
      slots_total = 0;
      for (const auto& [identity, s] : sessions) *slots_total += s.slots;
    }
    p.slots = *slots_total;
    p.last_event = last_result ? last_result->head + summarize_metrics_text(last_result->metrics_json) + last_result->tail
                               : last_event;
    p.event_seq = event_seq;
    p.measured_jobs = measured_jobs;
    p.measured_job_ms = measured_job_ms;
    return p;
  }

  int unplaced_plan_jobs(const std::string* run_id = nullptr) const {
    const auto& counts = unplaced_counts();
    if (run_id != nullptr) {
      auto it = counts.find(*run_id);
      return it == counts.end() ? 0 : it->second;
    }
    int n = 0;
    for (const auto& [run, count] : counts) n += count;
    return n;
  }

  // Whether a device can take a job at all: it runs commands, or is schedulable with a precision
  // this build knows. Only such devices count for --expect-workers and classes, and make jobs for
  // their class: a peer's device that can run nothing (not schedulable, no precision) made its
  // class's each-class jobs and settled them skipped or unsupported before the class's real
  // workers came.
  static bool usable(const DeviceInfo& d) { return d.runs_commands || (d.schedulable && !d.precisions.empty()); }
  static bool has_usable_device(const WorkerSession& s) { return std::any_of(s.devices.begin(), s.devices.end(), usable); }

  // The hardware classes registered in this session that the runs can use: a class counts toward
  // --expect-classes when some run has jobs of its backend (a PoCL device beside the cpu is no
  // second class for a cpu-only plan).
  int classes_in_use() const {
    int n = 0;
    for (const auto& [cls, backend] : classes_seen) n += backends_planned.count(backend) > 0;
    return n;
  }

  // Enough of the fleet has registered to close a run (--expect-workers, --expect-classes).
  bool expectations_met() const {
    return static_cast<int>(workers_seen.size()) >= opt.expect_workers && classes_in_use() >= opt.expect_classes;
  }

  // Every job terminal and every plan job placed (or settled by its stand-in); while a run of
  // this session is open (not closed by cancel or its time budget), also the expected workers
  // and classes registered (PLANS.md
  // "Placement": when a run is complete). A rerun with nothing to do is done at once.
  bool all_done() const {
    const bool jobs_done = count_queued == 0 && count_leased == 0;
    const bool fleet_settled = expectations_met() || std::all_of(runs_to_finish.begin(), runs_to_finish.end(),
                                                                 [this](const std::string& r) {
                                                                   return closed_runs.count(r) > 0;
                                                                 });
    return jobs_done && unplaced_plan_jobs() == 0 && fleet_settled;
  }

  // ---- job state transitions --------------------------------------------------------------
  void settle(JobEntry& j, ResultStatus status, const std::string& reason) {
    Status st = store->set_job_terminal(j.run_id(), j.job_id, status, reason, now_epoch_ms());
    if (!st.ok()) {
      storage_fault("storing the terminal status of " + j.job_id, st);
      return;
    }
    set_state(j, JobState::kDone, status);
    runs_dirty = true;
    assign_dirty = true;   // a queued perf job settled no longer reserves its hardware
    last_event = std::string(to_string(status)) + "  " + describe(j) + "  (" + reason + ")";
    last_result.reset();
    ++event_seq;
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
    Status st = store->expire_lease(j.run_id(), j.job_id, j.lease().attempt, reason, now_epoch_ms());
    if (!st.ok()) {
      storage_fault("expiring the lease of " + j.job_id, st);
      return;
    }
    const bool silent = !j.lease().answered;
    logger()->warn("job {} attempt {} on {}: {}{}", j.job_id, j.lease().attempt, j.lease().worker,
                   reason, silent ? " (the worker never answered this lease)" : "");
    LeaseFields& l = j.lease_mut();
    if (!(silent && reclaimed)) l.lost_on.insert(l.worker);
    if (silent && reclaimed) {
      // neutral, see above
    } else if (silent) {
      ++counters.leases_silent;
      if (int64_t q = standing.on_silent_lease(j.lease().worker, steady_ms()); q > 0) {
        ++counters.quarantines;
        logger()->warn("worker {} quarantined for {} ms: it took leases and did not answer them",
                       j.lease().worker, q);
      }
    } else {
      l.failed_on.insert(l.worker);
      ++l.infra_failures;
    }
    l.worker.clear();
    l.attempt = 0;
    l.answered = false;
    set_state(j, JobState::kQueued);
    assign_dirty = true;
    if (static_cast<int>(j.lease().failed_on.size()) >= opt.max_infra_attempts ||
        j.lease().infra_failures >= opt.max_infra_attempts * reliability::kMaxInfraFailuresFactor) {
      settle(j, ResultStatus::kLost,
             "infrastructure retries exhausted after failures on " +
                 std::to_string(j.lease().failed_on.size()) + " worker(s) (" +
                 std::to_string(j.attempts) + " attempts); last: " + reason);
    }
  }

  // A clean stop (ours, or the worker's BYE) released the current lease of `j`: the attempt is
  // closed as interrupted and the job queued again. Nobody failed: neither the job nor the
  // worker pays for it.
  void lease_interrupted(JobEntry& j, const std::string& reason) {
    if (j.state != JobState::kLeased) return;
    Status st = store->interrupt_lease(j.run_id(), j.job_id, j.lease().attempt, reason, now_epoch_ms());
    if (!st.ok()) {
      storage_fault("releasing the lease of " + j.job_id, st);
      return;
    }
    ++counters.leases_interrupted;
    logger()->info("job {} attempt {} on {} interrupted: {}", j.job_id, j.lease().attempt, j.lease().worker, reason);
    LeaseFields& l = j.lease_mut();
    l.worker.clear();
    l.attempt = 0;
    l.answered = false;
    set_state(j, JobState::kQueued);
    assign_dirty = true;
  }

  // The coordinator stops cleanly: every lease still out is released (attempt interrupted, job
  // queued) and its worker told to stop the attempt, so a restart runs those jobs at once
  // instead of waiting for the leases to run out.
  // Returns how many were released.
  int release_all_leases(const std::string& reason) {
    int released = 0;
    for (JobEntry* jp : all_leased()) {
      JobEntry& j = *jp;
      if (fatal) return released;
      if (j.lease().result_pending) continue;
      const std::string worker = j.lease().worker;
      const int attempt = j.lease().attempt;
      lease_interrupted(j, reason);
      if (j.state == JobState::kQueued) {
        send_to_worker(worker, proto::Cancel{j.job_id, attempt, reason});
        ++released;
      }
    }
    for (const auto& [job_id, h] : health_leases) {
      send_to_worker(h.worker_id, proto::Cancel{job_id, h.attempt, reason});
      ++released;
    }
    health_leases.clear();
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
    slots_total.reset();
    assign_dirty = true;   // a job lost elsewhere may now fall back to a worker that lost it too
    auto id_it = identity_of.find(worker_id);
    if (id_it != identity_of.end() && id_it->second == identity) identity_of.erase(id_it);
    drop_health_leases(worker_id);
    for (JobEntry* jp : leased_to(worker_id)) {
      JobEntry& j = *jp;
      if (j.lease().result_pending) continue;
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
      peer_warn("worker {} sent no secret (protocol < 1.2): its id is not protected against "
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
      peer_warn("rejecting HELLO of worker '{}' from {}: {}", h.worker_id, peer_name(env), reason);
      send(identity, proto::Reject{reason, false});
      return;
    }
    if (opt.curve && admin_keys.count(env.user_id)) {
      ++counters.hellos_refused_identity;
      peer_warn("refusing HELLO for worker {} (host '{}') from {}: key {} is an admin key, not a worker key",
                h.worker_id, h.hostname, peer_name(env), env.user_id);
      send(identity, proto::Reject{"this CURVE key is on the admin allow-list; a worker needs a worker key", false});
      return;
    }
    bool known = false;
    if (std::string refusal = check_identity(env, h, &known); !refusal.empty()) {
      if (fatal) return;
      ++counters.hellos_refused_identity;
      peer_warn("refusing HELLO for worker {} (host '{}') from {}{}: {} ({} refused so far)",
                h.worker_id, h.hostname, peer_name(env),
                env.user_id.empty() ? "" : " with key " + env.user_id, refusal,
                counters.hellos_refused_identity);
      send(identity, proto::Reject{refusal, false});
      return;
    }
    // A connection that was another worker registers as this one: that worker is gone (its
    // leases lost, not left orphaned under an id that no session answers for until they expire).
    if (auto same = sessions.find(identity); same != sessions.end() && same->second.worker_id != h.worker_id) {
      remove_session(identity, "its connection registered again as worker " + h.worker_id);
      if (fatal) return;
    }
    ++counters.registrations;
    if (known || identity_of.count(h.worker_id)) ++counters.reregistrations;
    // The same worker reconnecting (new socket, new identity) replaces its old session; its
    // leases stay valid because leases belong to the worker id, not the connection.
    if (auto old = identity_of.find(h.worker_id); old != identity_of.end() && old->second != identity) {
      sessions.erase(old->second);
    }
    slots_total.reset();
    WorkerSession s;
    s.identity = identity;
    s.worker_id = h.worker_id;
    s.hostname = h.hostname;
    s.devices = devices_from_capabilities(h.capabilities, h.tags, h.commands);
    s.slots = h.slots;
    s.credits = CreditLedger(h.slots);
    s.authenticated = opt.curve.has_value();
    s.last_seen_ms = steady_ms();
    s.registered_at_ms = now_epoch_ms();
    s.build = h.build;
    s.host_key = host_key_of(h.host_id, h.worker_id);
    // Drained before a restart: it is still finishing its jobs and leaving (PROTOCOL §5.7).
    s.draining = h.draining;
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
    rec.host_id = h.host_id;

    proto::Welcome w;
    w.heartbeat_interval_ms = opt.heartbeat_interval_ms;
    w.heartbeat_liveness = opt.heartbeat_liveness;
    w.lease_grace_ms = opt.lease_grace_ms;
    w.run_id = runs.empty() ? std::string() : *runs.begin();
    send(identity, w);
    logger()->info("worker {} ({}) registered with {} device(s)", h.worker_id, h.hostname,
                   sessions[identity].devices.size());
    // Health: a health job out before this registration has no verdict any more; every device is
    // checked again (a restarted worker may run on other drivers).
    drop_health_leases(h.worker_id);
    for (const auto& d : sessions[identity].devices) {
      if (!d.schedulable) continue;
      health.on_register(h.worker_id, d.key, steady_ms(), device_can_run(d, health_job_spec(d)));
    }
    // Leases the worker does not hold any more (an ASSIGN lost with a dead connection, or a
    // restarted worker) are reclaimed now rather than when they run out.
    for (JobEntry* jp : leased_to(h.worker_id)) {
      JobEntry& j = *jp;
      auto held = h.held.find(j.job_id);
      if (held == h.held.end() || held->second != j.lease().attempt) {
        ++counters.leases_reclaimed;
        lease_lost(j, "worker registered without holding attempt " + std::to_string(j.lease().attempt),
                   /*reclaimed=*/true);
      }
    }
    // Only attempts the store has leased to this worker, and a bounded number of look-ups: an
    // unauthenticated HELLO may list thousands of invented ids.
    int lookups = 0;
    for (const auto& [job_id, attempt] : h.held) {
      if (is_health_job_id(job_id) || jobs.find(job_id) != nullptr) continue;
      if (++lookups > kMaxHeldUnservedLookups) break;
      auto run = store->leased_attempt_run(h.worker_id, job_id, attempt);
      if (run.ok() && run->has_value()) sessions[identity].held_unserved[job_id] = {**run, attempt};
    }
    if (has_usable_device(sessions[identity])) {
      workers_seen.insert(h.worker_id);
      if (first_worker_ms == 0) first_worker_ms = steady_ms();
    }
    for (const auto& d : sessions[identity].devices) {
      if (usable(d)) classes_seen.emplace(d.hardware_class, d.backend);
    }
    place_plan_jobs(sessions[identity]);
    settle_ineligible_jobs();
    assign_dirty = true;
    notify();
  }

  // ---- placement (docs/PLANS.md "Placement") -------------------------------------------------
  // A run takes new placements while it is open: it has work in this session and was neither
  // closed (time budget spent, cancelled) nor finished.
  bool run_open(const std::string& run_id) const {
    return runs_to_finish.count(run_id) > 0 && closed_runs.count(run_id) == 0;
  }

  JobEntry& add_entry(const std::string& run_id, const jobs::PlannedJob& job,
                      const PlacedTarget& placed, const std::string& plan_job_id) {
    JobEntry j;
    j.run = intern_run(run_id);
    j.job_id = job.job_id;
    j.family = intern_family(job.spec).get();
    j.scalars = jobs::scalars_of(job.spec);
    j.placed_target = intern_target(placed).get();
    if (plan_job_id != job.job_id) j.plan_job_id = intern_plan_job(plan_job_id);
    if (JobEntry* old = jobs.find(job.job_id)) {
      unindex_job(*old);
      return index_job(jobs.replace(*old, std::move(j)));
    }
    return index_job(jobs.insert(std::move(j)));
  }

  // What placement_for() reads of a device, with the run: a device whose traits were placed for
  // the run already makes no new job of an each-class plan job (each-device ones name the device).
  static std::string placement_traits(const std::string& run_id, const std::string& worker_id, const DeviceInfo& d) {
    std::string k = run_id + "\x1f" + d.hardware_class + "\x1f" + d.backend + (d.runs_commands ? "\x1f" "c" : "\x1f" "-") +
                    "\x1f" + worker_id + "\x1f" + d.key;
    for (const auto& [name, value] : d.worker_tags) k += "\x1f" + name + "=" + value;
    return k;
  }
  static std::string class_traits(const std::string& run_id, const DeviceInfo& d) {
    std::string k = run_id + "\x1f" + d.hardware_class + "\x1f" + d.backend + (d.runs_commands ? "\x1f" "c" : "\x1f" "-");
    for (const auto& [name, value] : d.worker_tags) k += "\x1f" + name + "=" + value;
    return k;
  }

  // Makes the jobs a newly registered worker's devices are owed: for each plan job of an open run,
  // one per class (each-class) or per device (each-device) of the job's backend that has none yet.
  // A job made for hardware that cannot run it (a precision it lacks, too little memory) is
  // settled at once for that class: a finding of the matrix, not a failure.
  void place_plan_jobs(const WorkerSession& s) {
    if (plan_jobs.empty() || fatal) return;
    struct Made {
      jobs::PlannedJob job;
      PlacedTarget placed;
      const DeviceInfo* device;
      std::string plan_job_id;
    };
    std::map<std::string, std::vector<Made>> by_run;
    std::set<std::string> made_ids;
    // Devices (per run) whose class was placed already and whose run has no each-device plan
    // job: nothing to make for them. Decided per run before the walk, recorded after it.
    std::set<std::pair<std::string, std::string>> skip;   // (run, device key)
    std::vector<std::string> newly_placed;
    for (const std::string& run_id : runs) {
      if (!run_open(run_id)) continue;
      for (const DeviceInfo& d : s.devices) {
        if (!usable(d)) continue;
        const std::string traits = runs_with_each_device.count(run_id) ? placement_traits(run_id, s.worker_id, d)
                                                                        : class_traits(run_id, d);
        if (placed_for.count(traits)) {
          skip.emplace(run_id, d.key);
        } else {
          newly_placed.push_back(traits);
        }
      }
    }
    // Every device of an open run placed already (the thousandth worker of a class): nothing to
    // make, and no walk of the plan jobs (a thousand HELLOs each walking 20,000 of them kept a
    // registering fleet waiting seconds).
    if (newly_placed.empty()) return;
    for (const std::string& pid : plan_job_order) {
      PlanJob& pj = plan_jobs[pid];
      if (!run_open(pj.run_id) || plan_job_cancelled(pj)) continue;
      for (const DeviceInfo& d : s.devices) {
        if (!usable(d) || skip.count({pj.run_id, d.key})) continue;
        std::optional<PlacedTarget> placed = placement_for(pj.family_spec(), s.worker_id, d);
        if (!placed) continue;
        std::string id = jobs::job_id_of(pj.run_id, pj.canonical(), placed->target);
        if (jobs.find(id) != nullptr || !made_ids.insert(id).second) continue;
        by_run[pj.run_id].push_back(Made{jobs::PlannedJob{std::move(id), pj.spec(), placed->target}, *placed, &d, pid});
      }
    }
    for (auto& [run_id, made] : by_run) {
      std::vector<jobs::PlannedJob> batch;
      std::vector<std::string> classes;
      std::vector<std::string> plan_job_ids;
      for (const Made& m : made) {
        batch.push_back(m.job);
        classes.push_back(m.placed.hardware_class);
        plan_job_ids.push_back(m.plan_job_id);
      }
      if (auto added = store->add_jobs(run_id, batch, classes, plan_job_ids); !added.ok()) {
        storage_fault("placing " + std::to_string(batch.size()) + " job(s) of run " + run_id, added.status());
        return;
      }
      for (const Made& m : made) {
        JobEntry& j = add_entry(run_id, m.job, m.placed, m.plan_job_id);
        PlanJob& pj = plan_jobs[m.plan_job_id];
        ++pj.placed;
        unplaced_dirty = true;
        logger()->debug("job {} made for {} ({})", j.job_id, m.placed.target, describe(j));
        if (pj.stand_in) remove_stand_in(pj);
        if (!device_can_run(*m.device, m.job.spec)) {
          std::optional<Settlement> why = settle_ineligible(m.job.spec, {*m.device});
          settle(j, why ? why->status : ResultStatus::kUnsupported,
                 (why ? why->reason : std::string("the device cannot run it")) + " [" + m.placed.target + "]");
        }
        if (fatal) return;
      }
      logger()->info("run {}: {} job(s) made for the devices of worker {}", run_id, made.size(), s.worker_id);
    }
    placed_for.insert(newly_placed.begin(), newly_placed.end());
  }

  // A plan job cancelled by an administrator makes no job for hardware registering later. After
  // a restart that is known from its stand-in, settled `cancelled` (a stand-in settled for want
  // of hardware gives way to real jobs; a cancelled one does not).
  bool plan_job_cancelled(PlanJob& pj) {
    if (!pj.cancelled && pj.stand_in) {
      const JobEntry* stand_in = jobs.find(pj.job_id);
      pj.cancelled = stand_in != nullptr && stand_in->status == ResultStatus::kCancelled;
    }
    return pj.cancelled;
  }

  // Hardware that can take the plan job arrived after its stand-in was settled: the stand-in
  // (never leased, so it has no attempt and no result) gives way to the real jobs.
  void remove_stand_in(PlanJob& pj) {
    if (Status st = store->remove_unattempted_job(pj.run_id, pj.job_id); !st.ok()) {
      storage_fault("removing the stand-in " + pj.job_id, st);
      return;
    }
    if (JobEntry* j = jobs.find(pj.job_id)) {
      unindex_job(*j);
      jobs.erase(*j);
    }
    pj.stand_in = false;
    unplaced_dirty = true;
    runs_dirty = true;
  }

  // Settles every unplaced plan job of `run_id` (all runs when empty) by a stand-in: with `status`
  // and `reason` when given, else with why no registered device can take it (no device of its
  // backend, none with its tags, none running commands).
  // `only_plan_job`: that plan job alone (when unplaced).
  void settle_unplaced(const std::string& run_id, std::optional<ResultStatus> status, const std::string& reason,
                       const std::string& only_plan_job = {}) {
    std::vector<DeviceInfo> all;
    if (!status) {
      for (const auto& [id, s] : sessions) all.insert(all.end(), s.devices.begin(), s.devices.end());
    }
    std::map<std::string, std::vector<PlanJob*>> by_run;
    for (const std::string& pid : plan_job_order) {
      if (!only_plan_job.empty() && pid != only_plan_job) continue;
      PlanJob& pj = plan_jobs[pid];
      if (pj.placed > 0 || pj.stand_in || (!run_id.empty() && pj.run_id != run_id)) continue;
      by_run[pj.run_id].push_back(&pj);
    }
    for (auto& [run, pending] : by_run) {
      std::vector<jobs::PlannedJob> batch;
      for (PlanJob* pj : pending) batch.push_back(jobs::PlannedJob{pj->job_id, pj->spec(), ""});
      if (auto added = store->add_jobs(run, batch); !added.ok()) {
        storage_fault("settling " + std::to_string(batch.size()) + " unplaced job(s) of run " + run, added.status());
        return;
      }
      for (PlanJob* pj : pending) {
        JobEntry& j = add_entry(run, jobs::PlannedJob{pj->job_id, pj->spec(), ""}, PlacedTarget{},
                                pj->job_id);
        pj->stand_in = true;
        unplaced_dirty = true;
        if (status) {
          settle(j, *status, reason);
        } else {
          std::optional<Settlement> why = settle_ineligible(pj->spec(), all);
          settle(j, why ? why->status : ResultStatus::kSkipped,
                 why ? why->reason : "no eligible hardware registered for " + pj->family_spec().backend);
        }
        if (fatal) return;
      }
    }
  }

  // Jobs no registered device could ever run are settled at once instead of waiting forever.
  void settle_ineligible_jobs() {
    if (opt.expect_workers <= 0) return;
    const auto with_devices = std::count_if(sessions.begin(), sessions.end(),
                                            [](const auto& kv) { return has_usable_device(kv.second); });
    if (with_devices < opt.expect_workers) return;
    // Plan jobs no registered hardware took: once the expected classes are here too.
    if (classes_in_use() >= opt.expect_classes && unplaced_plan_jobs() > 0) settle_unplaced("", std::nullopt, "");
    // Only `any` jobs are left to check (a job made for a class or a device was settled when made,
    // if that hardware cannot run it), and only when the registered devices differ from the last
    // check: a thousand workers of one kind registering check once.
    auto any = buckets_by_target.find("any");
    if (any == buckets_by_target.end()) return;
    std::vector<DeviceInfo> all;
    std::set<std::string> kinds;
    for (const auto& [id, s] : sessions) {
      for (const auto& d : s.devices) {
        std::string kind = d.backend + "\x1f" + d.hardware_class + "\x1f" + (d.schedulable ? "s" : "-") +
                           (d.runs_commands ? "c" : "-") + "\x1f" + std::to_string(d.memory_bytes);
        for (const auto& p : d.precisions) kind += "\x1f" + std::string(jobs::to_string(p));
        for (const auto& [name, value] : d.worker_tags) kind += "\x1f" + name + "=" + value;
        kinds.insert(std::move(kind));
        all.push_back(d);
      }
    }
    if (ineligible_checked && kinds == ineligible_checked_kinds) return;
    ineligible_checked = true;
    ineligible_checked_kinds = std::move(kinds);
    std::vector<uint32_t> queued;
    for (const auto& b : any->second) {
      b->queue.scan([this](uint32_t seq) { return is_queued(seq); }, [&](uint32_t seq) {
        queued.push_back(seq);
        return true;
      });
    }
    std::sort(queued.begin(), queued.end());
    for (uint32_t seq : queued) {
      JobEntry& j = *by_seq[seq];
      if (auto settlement = settle_ineligible(j.spec(), all)) {
        settle(j, settlement->status, settlement->reason);
      }
      if (fatal) return;
    }
  }

  bool worker_owns_attempt(const std::string& worker_id, const JobEntry& j, int attempt) {
    if (j.lease().worker == worker_id && j.lease().attempt == attempt) return true;
    auto owner = store->attempt_worker(j.run_id(), j.job_id, attempt);
    if (!owner.ok()) {
      logger()->error("attempt lookup failed: {}", owner.status().to_string());
      return false;
    }
    return owner->has_value() && **owner == worker_id;
  }

  // A RESULT for a job this coordinator has not loaded, of an attempt the store has leased to its
  // sender: a run submitted over the control socket to a coordinator that restarted since (a
  // restarted `serve` serves its own plan's run). The result is stored in that run and ACKed with
  // the batch, so the worker's held result is not lost and a later submit finds the job done
  // (before: dropped as forged, and the job leased again only when the lease ran out).
  bool store_result_of_unserved_run(const WorkerSession& s, proto::JobResult& r) {
    auto run = store->leased_attempt_run(s.worker_id, r.job_id, r.attempt);
    if (!run.ok()) {
      logger()->error("attempt lookup failed: {}", run.status().to_string());
      return false;
    }
    if (!run->has_value() || runs.count(**run)) return false;
    logger()->info("RESULT for {} attempt {} from {}: stored in run {}, which this coordinator does not serve",
                   r.job_id, r.attempt, s.worker_id, **run);
    if (pending.empty()) pending_since_ms = steady_ms();
    pending.push_back({result_record_of(r, **run, s.worker_id, now_epoch_ms())});
    return true;
  }

  // Takes the metrics, reason and log tail out of `r` (a result is ~1 KiB of JSON: copying it
  // was a tenth of the coordinator's CPU at dispatch rate).
  void on_result(WorkerSession& s, proto::JobResult& r) {
    // skipped, lost and interrupted are the coordinator's verdicts, never a worker's: from a
    // worker they would settle a job `lost` (exit 4) or end it `interrupted`, which is never final.
    if (!is_worker_reported(r.status)) {
      ++counters.messages_unexpected;
      peer_warn("dropping RESULT for {} attempt {} from {}: status '{}' is the coordinator's to give",
                r.job_id, r.attempt, s.worker_id, to_string(r.status));
      return;
    }
    if (is_health_job_id(r.job_id)) return on_health_result(s, r);
    if (auto held = s.held_unserved.find(r.job_id); held != s.held_unserved.end() && held->second.second == r.attempt) {
      s.held_unserved.erase(held);
    }
    JobEntry* found = jobs.find(r.job_id);
    if (found == nullptr && store_result_of_unserved_run(s, r)) return;
    if (found == nullptr || !worker_owns_attempt(s.worker_id, *found, r.attempt)) {
      ++counters.results_dropped_forged;
      peer_warn("dropping RESULT for {} attempt {} from {}: not leased to it ({} so far)",
                r.job_id, r.attempt, s.worker_id, counters.results_dropped_forged);
      return;
    }
    standing.on_result(s.worker_id);
    assign_ready.insert(s.identity);   // the lease it answers holds no slot from now on
    ResultRecord rec = result_record_of(r, found->run_id(), s.worker_id, now_epoch_ms());
    if (pending.empty()) pending_since_ms = steady_ms();
    JobEntry& j = *found;
    std::string device;
    if (j.lease().worker == s.worker_id && j.lease().attempt == r.attempt) {
      j.lease_mut().result_pending = true;
      j.lease_mut().answered = true;
      device = j.lease().device;
    }
    // The outcome is judged on receipt (the first RESULT of the current lease, never a re-sent
    // one), before the slot it frees is leased again: a device that just crossed the crash
    // threshold gets no next job.
    if (!device.empty()) {
      apply_health_events(health.on_job_outcome(s.worker_id, device, j.family_spec().model, r.status, steady_ms()));
    }
    pending.push_back({std::move(rec)});
  }

  // Stores the batch in one transaction, then ACKs: a result is never acknowledged before it
  // is durable. A store failure is a storage fault: nothing is ACKed and serving stops.
  void flush_results() {
    if (pending.empty() || fatal) return;
    std::vector<ResultRecord> batch;
    batch.reserve(pending.size());
    for (auto& p : pending) batch.push_back(std::move(p.record));
    pending.clear();
    auto outcomes = store->store_results(batch);
    if (!outcomes.ok()) {
      // Nothing was ACKed: the workers keep these results and re-send them to the next
      // coordinator (a storage fault stops this one).
      storage_fault("storing " + std::to_string(batch.size()) + " result(s)", outcomes.status());
      return;
    }
    // Leases ended: credits the slot cap held back are usable again, by the worker that held
    // each (a pass over it alone); every worker is walked when the job was another worker's too,
    // or the lease held its hardware alone (a worker sharing that host may start now, and with
    // the job done before the pass no perf lease may be left to make the pass a full one).
    for (std::size_t i = 0; i < batch.size(); ++i) {
      ResultRecord& rec = batch[i];   // stored: its metrics text may move on to last_result
      const StoredOutcome& out = (*outcomes)[i];
      if (out.duplicate) ++counters.results_duplicate;
      if (out.discarded) {
        logger()->info("result {} of {} attempt {} from {} answers a CANCEL of an attempt already closed; "
                       "kept out of the job's record", to_string(rec.status), rec.job_id, rec.attempt, rec.worker_id);
      }
      JobEntry* found = jobs.find(rec.job_id);
      if (found == nullptr) {   // stored in a run this coordinator does not serve
        send_to_worker(rec.worker_id, proto::Ack{rec.job_id, rec.attempt});
        continue;
      }
      JobEntry& j = *found;
      j.lease_mut().result_pending = false;
      const bool is_current_lease = j.lease().worker == rec.worker_id && j.lease().attempt == rec.attempt;
      if (auto id = identity_of.find(rec.worker_id);
          is_current_lease && !j.lease().exclusive && id != identity_of.end()) {
        assign_ready.insert(id->second);
      } else {
        assign_dirty = true;
      }
      if (out.became_terminal) {
        if (rec.started_at_ms > 0 && rec.finished_at_ms >= rec.started_at_ms) {
          ++measured_jobs;
          measured_job_ms += rec.finished_at_ms - rec.started_at_ms;
          auto& [n, ms] = run_measured[rec.run_id];
          ++n;
          ms += rec.finished_at_ms - rec.started_at_ms;
        }
        runs_dirty = true;
        // Another attempt still out there (e.g. the job was re-queued after a lease expired and
        // the first worker delivered late) is no longer needed.
        if (j.state == JobState::kLeased && !is_current_lease) {
          send_to_worker(j.lease().worker, proto::Cancel{j.job_id, j.lease().attempt,
                                                       "job already has a result"});
        }
        set_state(j, JobState::kDone, rec.status);
        j.lease_mut().worker.clear();
        j.lease_mut().attempt = 0;
        ++event_seq;
        last_result = LastResult{std::string(to_string(rec.status)) + "  " + describe(j), std::move(rec.metrics_json),
                                 rec.reason.empty() ? "" : "  (" + rec.reason + ")"};
        notify();   // per finished job: a display prints each one's line (progress_display.h)
      } else if (is_current_lease) {
        j.lease_mut().worker.clear();
        j.lease_mut().attempt = 0;
      }
      send_to_worker(rec.worker_id, proto::Ack{rec.job_id, rec.attempt});
    }
  }

  // Health leases out per worker and per (worker, device): counted once per scheduling pass.
  struct HealthCounts {
    std::unordered_map<std::string, int> by_worker;
    std::map<std::pair<std::string, std::string>, int> by_device;
  };
  HealthCounts health_counts() const {
    HealthCounts c;
    for (const auto& [id, h] : health_leases) {
      ++c.by_worker[h.worker_id];
      ++c.by_device[{h.worker_id, h.device}];
    }
    return c;
  }

  int leases_held_by(const std::string& worker_id, const HealthCounts& hc) const {
    int n = 0;
    if (auto it = leased_by_worker.find(worker_id); it != leased_by_worker.end()) {
      for (uint32_t seq : it->second) {
        const JobEntry* j = by_seq[seq];
        n += j && j->state == JobState::kLeased && j->lease().worker == worker_id && !j->lease().result_pending;
      }
    }
    if (auto it = hc.by_worker.find(worker_id); it != hc.by_worker.end()) n += it->second;
    return n;
  }

  int leases_on_device(const std::string& worker_id, const std::string& device, const HealthCounts& hc) const {
    int n = 0;
    for (const JobEntry* j : leased_to(worker_id)) n += j->lease().device == device;
    if (auto it = hc.by_device.find({worker_id, device}); it != hc.by_device.end()) n += it->second;
    return n;
  }

  // READY states credits; what may be assigned is worked out from them at assign time
  // (CreditLedger), so nothing granted is lost to a cap that applies only for a moment.
  void on_ready(WorkerSession& s, const proto::Ready& r) {
    // Keys of devices the worker did not declare, or negative credits, are dropped; one READY
    // counts and says so once, however many such keys it carries.
    int refused = 0;
    const std::string* first_refused = nullptr;
    auto known = [&](const std::string& device, int n) {
      bool ok = n >= 0 && std::any_of(s.devices.begin(), s.devices.end(),
                                      [&](const DeviceInfo& d) { return d.key == device; });
      if (!ok && refused++ == 0) first_refused = &device;
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
    if (refused > 0) {
      ++counters.messages_unexpected;
      peer_warn("READY from {} names {} unknown device(s) or negative credits (first: '{}'); those ignored",
                s.worker_id, refused, first_refused->substr(0, 64));
    }
    assign_ready.insert(s.identity);
  }

  void on_progress(WorkerSession& s, const proto::Progress& p) {
    if (is_health_job_id(p.job_id)) {
      auto it = health_leases.find(p.job_id);
      if (it != health_leases.end() && it->second.worker_id != s.worker_id && it->second.attempt == p.attempt) {
        return drop_forged_progress(s, p);
      }
      return;   // informational; health jobs are timed by their lease alone
    }
    JobEntry* j = jobs.find(p.job_id);
    // An attempt never issued, or the outstanding one held by another worker, was never this
    // worker's (PROTOCOL §5.5). An earlier attempt may have been, and changes nothing.
    if (j == nullptr || p.attempt > j->attempts ||
        (j->lease().attempt == p.attempt && j->lease().worker != s.worker_id)) {
      return drop_forged_progress(s, p);
    }
    if (j->lease().worker != s.worker_id || j->lease().attempt != p.attempt) return;
    j->lease_mut().answered = true;
    standing.on_answer(s.worker_id);
  }

  void drop_forged_progress(const WorkerSession& s, const proto::Progress& p) {
    ++counters.progress_dropped_forged;
    peer_warn("dropping PROGRESS for {} attempt {} from {}: not leased to it ({} so far)", p.job_id.substr(0, 64),
              p.attempt, s.worker_id, counters.progress_dropped_forged);
  }

  void handle(Envelope& env) {
    proto::Body& body = env.message.body;
    if (const auto* hello = std::get_if<proto::Hello>(&body)) {
      on_hello(env, *hello);
      return;
    }
    if (const auto* control = std::get_if<proto::Control>(&body)) {
      on_control(env, *control);
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
    if (auto* result = std::get_if<proto::JobResult>(&body)) return on_result(s, *result);
    if (const auto* bye = std::get_if<proto::Bye>(&body)) {
      return remove_session(env.peer, "said BYE: " + bye->reason, /*expected=*/true);
    }
    ++counters.messages_unexpected;
    peer_warn("unexpected {} from {}", proto::msg_type_name(env.message.type()), peer_name(env));
  }

  // ---- scheduling ------------------------------------------------------------------------
  // The job may run on this device of this worker: the device can run it and it is one of the
  // devices the job was made for (any device, its class, or itself).
  static bool fits(const JobEntry& j, const WorkerSession& s, const DeviceInfo& device) {
    return admits(j.placed(), s.worker_id, device) && j.bucket != nullptr && device_admits_kind(device, j.bucket->kind) &&
           (j.family_spec().command || fits_memory(device, j.need_bytes()));
  }

  // Another worker that takes work now could run the job: a draining or quarantined worker, or
  // a quarantined device, is no one the job should wait for (one still to pass its first health
  // job is: it is seconds away).
  bool someone_else_could_run(const JobEntry& j, const std::string& worker_id) const {
    const int64_t now = steady_ms();
    for (const auto& [id, s] : sessions) {
      if (s.worker_id == worker_id || j.lease().lost_on.count(s.worker_id) || !takes_work(s, now)) continue;
      for (const auto& d : s.devices) {
        if (const DeviceHealthEntry* e = health.find(s.worker_id, d.key);
            e != nullptr && e->condition == DeviceCondition::kQuarantined) {
          continue;
        }
        if (fits(j, s, d)) return true;
      }
    }
    return false;
  }

  // The first queued job in submission order that fits the device; infrastructure retries go to
  // a different worker when one could take them (a job lost on this worker is its fallback only).
  JobEntry* pick_job(const WorkerSession& s, const DeviceInfo& device) {
    JobEntry* best = nullptr;
    JobEntry* fallback = nullptr;
    for_each_bucket(s, device, [&](QueueBucket& b) {
      b.queue.scan([this](uint32_t seq) { return is_queued(seq); }, [&](uint32_t seq) {
        if (best && seq > best->seq) return false;   // nothing later in this bucket can win
        JobEntry& j = *by_seq[seq];
        if (!fits_memory(device, j.need_bytes())) return true;
        if (!j.lease().lost_on.empty() && j.lease().lost_on.count(s.worker_id)) {
          if (!someone_else_could_run(j, s.worker_id) && (!fallback || seq < fallback->seq)) fallback = &j;
          return true;
        }
        best = &j;
        return false;
      });
    });
    return best ? best : fallback;
  }

  static const DeviceInfo* device_of(const WorkerSession& s, const std::string& key) {
    for (const auto& d : s.devices) {
      if (d.key == key) return &d;
    }
    return nullptr;
  }

  // Who holds which hardware now (exclusivity.h): every lease out whose job still runs, and every
  // health job. A lease of a worker not connected (a restart before it reconnects) holds nothing
  // the scheduler could hand out anyway.
  Occupancy current_occupancy() const {
    Occupancy occ;
    for (const JobEntry* jp : all_leased()) {
      const JobEntry& j = *jp;
      if (j.lease().result_pending) continue;
      const WorkerSession* s = session_of_const(j.lease().worker);
      const DeviceInfo* d = s ? device_of(*s, j.lease().device) : nullptr;
      if (d) occ.hold(slot_of(s->host_key, s->worker_id, *d), j.lease().exclusive);
    }
    for (const auto& [id, h] : health_leases) {
      const WorkerSession* s = session_of_const(h.worker_id);
      const DeviceInfo* d = s ? device_of(*s, h.device) : nullptr;
      if (d) occ.hold(slot_of(s->host_key, s->worker_id, *d), false);
    }
    return occ;
  }

  const WorkerSession* session_of_const(const std::string& worker_id) const {
    auto it = identity_of.find(worker_id);
    if (it == identity_of.end()) return nullptr;
    auto s = sessions.find(it->second);
    return s == sessions.end() ? nullptr : &s->second;
  }

  bool takes_work(const WorkerSession& s, int64_t now) const {
    return !s.draining && !standing.quarantined(s.worker_id, now);
  }

  // A job that measures speed and must wait for its hardware to empty reserves it, so no shared
  // job starts there meanwhile (exclusivity.h): the first job each device would take decides.
  void reserve_for_waiting_perf_jobs(Occupancy& occupancy, int64_t now) {
    for (auto& [identity, s] : sessions) {
      if (!takes_work(s, now)) continue;
      for (const auto& device : s.devices) {
        if (device.schedulable && !health.may_run_jobs(s.worker_id, device.key)) continue;
        const HardwareSlot slot = slot_of(s.host_key, s.worker_id, device);
        const JobEntry* head = pick_job(s, device);
        if (head && measures_speed(head->family_spec()) && !occupancy.can_start(slot, /*exclusive=*/true)) {
          occupancy.reserve(slot);
        }
      }
    }
  }

  void assign_jobs() {
    if (!assign_dirty && assign_ready.empty()) return;
    // With a perf job queued or out, a lease ending on one worker can free hardware another
    // shares (exclusivity.h): every session is walked.
    const bool full = assign_dirty || count_queued_perf > 0 || count_leased_exclusive > 0;
    assign_dirty = false;
    const int64_t now = steady_ms();
    if (full) last_full_pass_ms = now;
    std::set<std::string> ready;
    ready.swap(assign_ready);
    // In identity order, as the full pass walks them (the round robin below relies on it).
    std::vector<std::pair<const std::string, WorkerSession>*> turn;
    if (full) {
      turn.reserve(sessions.size());
      for (auto& kv : sessions) turn.push_back(&kv);
    } else {
      for (const std::string& identity : ready) {
        if (auto it = sessions.find(identity); it != sessions.end()) turn.push_back(&*it);
      }
    }
    const HealthCounts hc = health_counts();
    // Most passes in a large fleet find one or two workers with a free credit: find them first,
    // and build the hardware picture only when some worker could take a job.
    bool anyone_free = false;
    for (const auto* kv : turn) {
      const WorkerSession& s = kv->second;
      if (!takes_work(s, now)) continue;
      const int held = leases_held_by(s.worker_id, hc);
      for (const auto& device : s.devices) {
        if (s.credits.available(device.key, held) > 0) {
          anyone_free = true;
          break;
        }
      }
      if (anyone_free) break;
    }
    if (!anyone_free) return;
    // Exclusivity matters only with a perf job queued or leased; without one every shared job may
    // start anywhere it fits, and the picture would be empty of all that could stop it.
    Occupancy occupancy;
    if (count_queued_perf > 0 || count_leased_exclusive > 0) {
      occupancy = current_occupancy();
      reserve_for_waiting_perf_jobs(occupancy, now);
    }
    // Round robin: the pass starts after the worker served first last time, so workers that
    // share hardware take turns at exclusive jobs instead of the first in map order taking all.
    auto first = std::upper_bound(turn.begin(), turn.end(), last_served,
                                  [](const std::string& id, const auto* kv) { return id < kv->first; });
    std::rotate(turn.begin(), first, turn.end());
    // The pass's leases are stored in one transaction before any of its ASSIGNs leaves (a lease
    // is durable before its worker hears of it); one commit per lease capped dispatch at a few
    // thousand jobs/s (docs/SCALE.md).
    std::vector<LeaseRecord> leases;
    std::vector<std::pair<std::string, proto::Assign>> outgoing;
    for (auto* kv : turn) {
      const std::string& identity = kv->first;
      WorkerSession& s = kv->second;
      if (!takes_work(s, now)) continue;
      // Without CURVE nothing vouches for a new worker id: until it has returned a result it
      // holds at most kUnprovenLeasesPerDevice leases per device.
      const bool bounded = !s.authenticated && !standing.proven(s.worker_id);
      // Credits are per device, slots per worker: a worker with one slot and two devices
      // grants a credit on each, yet runs one job at a time.
      int held = leases_held_by(s.worker_id, hc);
      for (const auto& device : s.devices) {
        int on_device = bounded ? leases_on_device(s.worker_id, device.key, hc) : 0;
        const HardwareSlot slot = slot_of(s.host_key, s.worker_id, device);
        // A due health job goes first; until a device's first one passes, and while it is
        // quarantined, it runs nothing else. A device no queued job could use is not checked
        // (an OpenCL device on a cpu-only plan would pay a kernel compile for nothing).
        if (health.health_due(s.worker_id, device.key, now) && s.credits.available(device.key, held) > 0 &&
            (!bounded || on_device < reliability::kUnprovenLeasesPerDevice) && has_queued_job_for(s, device) &&
            occupancy.can_start(slot, /*exclusive=*/false)) {
          issue_health_job(s, device);
          occupancy.hold(slot, /*exclusive=*/false);
          ++held;
          ++on_device;
        }
        // A device our backends cannot run (a probed CUDA GPU) has no health job of ours; it
        // takes command jobs only (device_can_run), which bring their own runtime.
        if (device.schedulable && !health.may_run_jobs(s.worker_id, device.key)) continue;
        while (s.credits.available(device.key, held) > 0 &&
               (!bounded || on_device < reliability::kUnprovenLeasesPerDevice)) {
          JobEntry* j = pick_job(s, device);
          if (!j) break;
          // A perf job waits until it can have the hardware to itself; the device takes nothing
          // else meanwhile (its first job in plan order decides, so none is starved).
          const bool exclusive = measures_speed(j->family_spec());
          if (!occupancy.can_start(slot, exclusive)) break;
          const int attempt = j->attempts + 1;
          const int64_t lease_ms =
              static_cast<int64_t>(j->family_spec().timeout_s * 1000.0) + opt.lease_grace_ms;
          if (!s.record_stored) {
            s.record.last_seen_at_ms = now_epoch_ms();
            if (Status st = store->upsert_worker(s.record); !st.ok()) {
              storage_fault("storing worker " + s.worker_id, st);
              return;
            }
            s.record_stored = true;
          }
          LeaseRecord lease;
          lease.run_id = j->run_id();
          lease.job_id = j->job_id;
          lease.attempt = attempt;
          lease.worker_id = s.worker_id;
          lease.device = device.key;
          lease.hardware_class = device.hardware_class;
          lease.leased_at_ms = now_epoch_ms();
          lease.lease_expires_at_ms = lease.leased_at_ms + lease_ms;
          lease.exclusive = exclusive;
          j->attempts = attempt;
          LeaseFields& l = j->lease_mut();
          l.worker = s.worker_id;
          l.exclusive = exclusive;
          set_state(*j, JobState::kLeased);
          l.attempt = attempt;
          l.expires_at_ms = lease.lease_expires_at_ms;
          l.started_ms = lease.leased_at_ms;
          l.answered = false;
          l.device = device.key;
          leases.push_back(std::move(lease));
          occupancy.hold(slot, exclusive);
          s.credits.on_assign(device.key);
          ++held;
          ++on_device;
          proto::Assign a;
          a.job_id = j->job_id;
          a.attempt = attempt;
          a.lease_ms = lease_ms;
          a.device = device.key;
          a.spec = jobs::to_json(j->spec());   // made when sent: a document per queued job cost ~3 KiB each
          outgoing.emplace_back(identity, std::move(a));
          last_served = identity;
        }
      }
    }
    if (leases.empty()) return;
    if (Status st = store->record_leases(leases); !st.ok()) {
      storage_fault("recording " + plural_of(leases.size(), "lease") + " (first: " + leases.front().job_id + ")", st);
      return;
    }
    for (auto& [identity, a] : outgoing) {
      logger()->debug("assigned {} attempt {} to {}", a.job_id, a.attempt, identity);
      send(identity, std::move(a));
    }
  }

  // ---- device health (PROTOCOL §5.11) -------------------------------------------------------
  void issue_health_job(WorkerSession& s, const DeviceInfo& device) {
    const jobs::JobSpec spec = health_job_spec(device);
    HealthLease h;
    h.worker_id = s.worker_id;
    h.device = device.key;
    h.issued_at_ms = now_epoch_ms();
    const int64_t lease_ms = static_cast<int64_t>(spec.timeout_s * 1000.0) + opt.lease_grace_ms;
    h.expires_at_ms = h.issued_at_ms + lease_ms;
    const std::string job_id = health_job_id(++health_seq);
    health_leases[job_id] = h;
    health.on_health_issued(s.worker_id, device.key);
    s.credits.on_assign(device.key);
    proto::Assign a;
    a.job_id = job_id;
    a.attempt = h.attempt;
    a.lease_ms = lease_ms;
    a.device = device.key;
    a.spec = jobs::to_json(spec);
    send(s.identity, std::move(a));
    logger()->info("health job {} for {}/{} ({} {})", job_id, s.worker_id, device.key, spec.backend,
                   jobs::to_string(spec.precision));
  }

  // The worker left or registered again: its health jobs out have no verdict; the devices are
  // checked again when due.
  void drop_health_leases(const std::string& worker_id) {
    for (auto it = health_leases.begin(); it != health_leases.end();) {
      if (it->second.worker_id != worker_id) {
        ++it;
        continue;
      }
      health.on_health_abandoned(worker_id, it->second.device);
      it = health_leases.erase(it);
    }
  }

  // Records device events and acts on them: a quarantined device's jobs in flight are stopped
  // and queued again (preferably for another worker), neutrally for job and worker.
  void apply_health_events(const std::vector<HealthEvent>& events) {
    for (const HealthEvent& e : events) {
      if (fatal) return;
      DeviceEvent row{now_epoch_ms(), e.worker_id, e.device, e.event, e.reason};
      if (Status st = store->record_device_event(row); !st.ok()) {
        storage_fault("recording a device event of " + e.worker_id, st);
        return;
      }
      if (e.event == "health_pass" || e.event == "health_fail") ++counters.health_checks;
      if (e.event == "quarantined") {
        ++counters.device_quarantines;
        logger()->warn("device {}/{} quarantined: {}", e.worker_id, e.device, e.reason);
        for (JobEntry* jp : leased_to(e.worker_id)) {
          JobEntry& j = *jp;
          if (j.lease().device != e.device || j.lease().result_pending) continue;
          const int attempt = j.lease().attempt;
          j.lease_mut().lost_on.insert(e.worker_id);   // prefer another worker for it
          lease_interrupted(j, "device " + e.worker_id + "/" + e.device + " quarantined");
          send_to_worker(e.worker_id, proto::Cancel{j.job_id, attempt, "device quarantined"});
        }
      } else if (e.event == "health_fail") {
        logger()->warn("device {}/{} failed its health check: {}", e.worker_id, e.device, e.reason);
      } else {
        logger()->info("device {}/{}: {} ({})", e.worker_id, e.device, e.event, e.reason);
      }
      last_event = e.event + "  " + e.worker_id + "/" + e.device + "  (" + e.reason + ")";
      last_result.reset();
      ++event_seq;
    }
    if (!events.empty()) {
      assign_dirty = true;
      notify();
    }
  }

  void on_health_result(WorkerSession& s, const proto::JobResult& r) {
    auto it = health_leases.find(r.job_id);
    if (it == health_leases.end()) {
      // A health job issued before a restart or a re-registration: no verdict is wanted, and
      // nothing is stored. ACK it so the worker forgets it.
      logger()->info("health result {} attempt {} from {} answers no health job out now; acknowledged",
                     r.job_id, r.attempt, s.worker_id);
      send(s.identity, proto::Ack{r.job_id, r.attempt});
      return;
    }
    if (it->second.worker_id != s.worker_id || it->second.attempt != r.attempt) {
      ++counters.results_dropped_forged;
      peer_warn("dropping RESULT for {} attempt {} from {}: not leased to it ({} so far)", r.job_id,
                r.attempt, s.worker_id, counters.results_dropped_forged);
      return;
    }
    const std::string device = it->second.device;
    health_leases.erase(it);
    standing.on_result(s.worker_id);
    const bool passed = r.status == ResultStatus::kPass;
    std::string detail = std::string(to_string(r.status));
    if (!r.reason.empty()) detail += ": " + r.reason;
    detail += summarize_metrics_text(r.metrics_json);
    apply_health_events(health.on_health_result(s.worker_id, device, passed, detail, steady_ms()));
    if (fatal) return;
    send(s.identity, proto::Ack{r.job_id, r.attempt});
    assign_dirty = true;
  }

  bool has_queued_job_for(const WorkerSession& s, const DeviceInfo& device) {
    bool found = false;
    for_each_bucket(s, device, [&](QueueBucket& b) {
      if (found) return;
      b.queue.scan([this](uint32_t seq) { return is_queued(seq); }, [&](uint32_t seq) {
        found = fits_memory(device, by_seq[seq]->need_bytes());
        return !found;
      });
    });
    return found;
  }

  void run_health_timers() {
    const int64_t epoch = now_epoch_ms();
    std::vector<std::pair<std::string, HealthLease>> expired;
    for (const auto& [id, h] : health_leases) {
      if (epoch > h.expires_at_ms) expired.emplace_back(id, h);
    }
    for (const auto& [id, h] : expired) {
      health_leases.erase(id);
      send_to_worker(h.worker_id, proto::Cancel{id, h.attempt, "lease expired"});
      apply_health_events(health.on_health_result(h.worker_id, h.device, false,
                                                  "no result within the health job's lease", steady_ms()));
    }
    // Health jobs fall due with time, not with messages: wake the scheduler for them (at most
    // every kHealthWakeMs: a due check may wait for work, and a scheduling pass walks every session).
    const int64_t now = steady_ms();
    if (!health.checks_on() || assign_dirty || now - last_health_wake_ms < kHealthWakeMs) return;
    last_health_wake_ms = now;
    for (const auto& [identity, s] : sessions) {
      for (const auto& d : s.devices) {
        if (health.health_due(s.worker_id, d.key, now)) {
          assign_dirty = true;
          return;
        }
      }
    }
  }

  // A run whose jobs are all terminal gets its "finished" time as soon as that is so (a live
  // coordinator serves many runs; `serve --exit-when-done` marks the rest on the way out).
  void finish_completed_runs() {
    if (!runs_dirty) return;
    runs_dirty = false;
    std::map<std::string, bool> complete;
    const bool fleet_ready = expectations_met();
    // A closed run (cancelled, time budget spent) takes no more placements, so it does not wait
    // for the expected fleet either.
    for (const auto& run_id : runs_to_finish) complete[run_id] = fleet_ready || closed_runs.count(run_id) > 0;
    for (auto& [run_id, done] : complete) {
      if (auto open = open_by_run.find(run_id); open != open_by_run.end() && open->second > 0) done = false;
      if (unplaced_plan_jobs(&run_id) > 0) done = false;
    }
    for (const auto& [run_id, done] : complete) {
      if (!done) continue;
      if (Status st = store->mark_run_finished(run_id, now_epoch_ms()); !st.ok()) {
        storage_fault("marking run " + run_id + " finished", st);
        return;
      }
      runs_to_finish.erase(run_id);
      run_finished_ms[run_id] = now_epoch_ms();
      logger()->info("run {}: every job is terminal", run_id);
    }
  }

  // ---- control (PROTOCOL §5.10) -------------------------------------------------------------
  static proto::Reply refusal(const std::string& request_id, const std::string& code, const std::string& error) {
    proto::Reply r;
    r.request_id = request_id;
    r.ok = false;
    r.code = code;
    r.error = error;
    return r;
  }

  static std::string reply_code(const Status& st) {
    switch (st.code()) {
      case StatusCode::kInvalidArgument: return "invalid_argument";
      case StatusCode::kNotFound: return "not_found";
      case StatusCode::kFailedPrecondition:
      case StatusCode::kAlreadyExists:
      case StatusCode::kUnsupported: return "failed_precondition";
      default: return "internal";
    }
  }

  // Who may ask what: under CURVE only admin keys, for every op; without CURVE `status` from
  // anyone who reaches the endpoint, the rest only from this host.
  std::string control_refusal(const Envelope& env, const std::string& op) const {
    if (opt.curve) {
      if (admin_keys.count(env.user_id)) return "";
      return "this CURVE key is not on the coordinator's admin allow-list (serve --curve-admin)";
    }
    if (op == "status") return "";
    if (bound_to_ipc || is_loopback_address(env.peer_address)) return "";
    return "without CURVE, '" + op + "' is accepted only from the coordinator's own host (peer " +
           (env.peer_address.empty() ? std::string("unknown") : env.peer_address) +
           "); run it there, or use CURVE with an admin key";
  }

  void on_control(const Envelope& env, const proto::Control& c) {
    ++counters.control_requests;
    if (std::string why = control_refusal(env, c.op); !why.empty()) {
      ++counters.control_refused;
      peer_warn("refusing control '{}' from {}{}: {}", c.op, env.peer_address.empty() ? "local peer" : env.peer_address,
                env.user_id.empty() ? "" : " key " + env.user_id, why);
      send(env.peer, refusal(c.request_id, "permission_denied", why));
      return;
    }
    Result<nlohmann::json> data = internal_error("unhandled");
    if (c.op == "status") {
      data = cached_status_document();
    } else if (c.op == "submit") {
      data = control_submit(c.args);
    } else if (c.op == "cancel") {
      data = control_cancel(c.args, env);
    } else if (c.op == "drain") {
      data = control_drain(c.args);
    } else if (c.op == "release") {
      data = control_release(c.args);
    } else {
      data = invalid_argument("unknown control op '" + c.op.substr(0, 64) +
                              "' (known: status, submit, cancel, drain, release)");
    }
    if (!data.ok()) {
      logger()->info("control '{}' refused: {}", c.op, data.status().message());
      send(env.peer, refusal(c.request_id, reply_code(data.status()), data.status().message()));
      return;
    }
    if (c.op != "status") {
      status_cache.reset();   // the client may ask for status next and expects to see this
      logger()->info("control '{}' done: {}", c.op, data->dump());
    }
    proto::Reply r;
    r.request_id = c.request_id;
    r.ok = true;
    r.data = std::move(data).value();
    send(env.peer, std::move(r));
  }

  static Result<std::string> string_arg(const nlohmann::json& args, const char* name, bool required) {
    auto it = args.find(name);
    if (it == args.end() || it->is_null()) {
      if (required) return invalid_argument(std::string("missing argument '") + name + "'");
      return std::string();
    }
    if (!it->is_string()) return invalid_argument(std::string("argument '") + name + "' must be a string");
    return it->get<std::string>();
  }

  Result<nlohmann::json> control_submit(const nlohmann::json& args) {
    Result<nlohmann::json> answer = submit_plan(args);
    // The submitted plan and what storing it made (a kilobyte of spec per job) are freed by now,
    // between the job entries made from them; serve_loop trims once at its start, so without this
    // a serving coordinator kept those pages (199,809 jobs submitted: RSS 327 MB, docs/SCALE.md).
    release_free_heap();
    return answer;
  }

  Result<nlohmann::json> submit_plan(const nlohmann::json& args) {
    if (!opt.plan_parser) return failed_precondition("this coordinator does not accept plans");
    AM_ASSIGN_OR_RETURN(std::string text, string_arg(args, "plan", true));
    AM_ASSIGN_OR_RETURN(std::string name, string_arg(args, "name", false));
    AM_ASSIGN_OR_RETURN(std::string run_id, string_arg(args, "run", false));
    bool extend = false;
    if (auto it = args.find("extend"); it != args.end() && !it->is_null()) {
      if (!it->is_boolean()) return invalid_argument("argument 'extend' must be a boolean");
      extend = it->get<bool>();
    }
    if (std::string problem = jobs::run_id_problem(run_id); !problem.empty()) return invalid_argument(problem);
    AM_ASSIGN_OR_RETURN(jobs::Plan plan, opt.plan_parser(text, name.empty() ? "submitted plan" : name, run_id));
    keep_peers_alive();   // the expansion of a large plan takes a while; its storing calls this too
    if (run_id.empty()) run_id = plan.name;
    const std::size_t before = jobs.size();
    SubmitOptions options;
    options.extend = extend;   // no digest: a plan sent here is not a file of this host's
    // The run, its jobs and the plan's text (kept for a restart, resume_submitted_runs: the plan
    // file is the client's, not this host's) are committed together: a coordinator killed in
    // between left a run with no jobs and no plan to serve it again, which also refused every
    // other plan under its id.
    bool submitted = false;
    options.memory_changed = &submitted;
    const Status stored = store->atomically([&]() -> Status {
      keep_peers_alive();
      AM_RETURN_IF_ERROR(submit(plan, run_id, options));
      keep_peers_alive();
      SubmissionRecord record;
      record.run_id = run_id;
      record.plan_text = text;
      record.plan_name = name;
      record.extend = extend;
      record.submitted_at_ms = now_epoch_ms();
      return store->record_submission(record);
    });
    keep_peers_alive();   // the commit of a large plan's rows is itself a pause
    if (!stored.ok()) {
      if (!submitted) return stored;   // refused before anything changed, here or in the store
      // The plan is (partly) in memory but none of it is stored: this coordinator cannot go on.
      storage_fault("storing the plan submitted for run " + run_id, stored);
      return *fatal;
    }
    settle_ineligible_jobs();
    assign_dirty = true;
    notify();
    int total = 0;
    int remaining = 0;
    for (const JobEntry* j : by_seq) {
      if (j == nullptr || j->run_id() != run_id) continue;
      ++total;
      remaining += j->state != JobState::kDone;
    }
    return nlohmann::json{{"run_id", run_id},
                          {"plan", plan.name},
                          {"jobs", total},
                          {"new_jobs", static_cast<int>(jobs.size() - before)},
                          {"remaining", remaining},
                          {"unplaced", unplaced_plan_jobs(&run_id)}};
  }

  // Server::resume_submitted_runs (server.h): every plan submitted for each unfinished run, parsed
  // and submitted again as it was received, in order. Any one of them serves the whole run (its
  // stored jobs and plan jobs are read back, whichever plan made them); one that no longer
  // expands to jobs of the run (another catalog or build) is refused by submit() like any other
  // plan of another hash, and logged. A run none of whose plans is served is left for its client
  // to submit again. Store faults are returned.
  Result<int> resume_submitted_runs() {
    if (!opt.plan_parser) return 0;
    AM_ASSIGN_OR_RETURN(std::vector<SubmissionRecord> submissions, store->unfinished_submissions());
    std::set<std::string> served;
    std::set<std::string> failed;
    for (const SubmissionRecord& s : submissions) {
      const std::string name = s.plan_name.empty() ? "submitted plan" : s.plan_name;
      Status st = Status::Ok();
      if (std::string problem = jobs::run_id_problem(s.run_id); !problem.empty()) {
        st = invalid_argument(problem);
      } else if (Result<jobs::Plan> plan = opt.plan_parser(s.plan_text, name, s.run_id); !plan.ok()) {
        st = plan.status();
      } else {
        st = submit(*plan, s.run_id, SubmitOptions{});
      }
      release_free_heap();
      if (fatal) return *fatal;
      if (st.ok()) {
        served.insert(s.run_id);
        continue;
      }
      if (exit_code_for_error(st) != kExitUsage) return st;
      logger()->warn("run {}: plan {} submitted for it (#{}) is not served again: {}", s.run_id, name, s.seq,
                     st.message());
      failed.insert(s.run_id);
    }
    for (const std::string& run_id : served) {
      logger()->info("run {}: served again from the plan(s) submitted for it", run_id);
    }
    for (const std::string& run_id : failed) {
      if (!served.count(run_id) && !runs.count(run_id)) {
        logger()->warn("run {}: none of the plans submitted for it is served after this restart; submit it again",
                       run_id);
      }
    }
    if (!served.empty()) {
      settle_ineligible_jobs();
      assign_dirty = true;
    }
    AM_RETURN_IF_ERROR(warn_unserved_runs());
    return static_cast<int>(served.size());
  }

  // Unfinished runs of the database this server does not serve, named in one warning so they are
  // not forgotten silently (runs another `serve` made, submitted before schema 8, or to `run`).
  Status warn_unserved_runs() {
    AM_ASSIGN_OR_RETURN(std::vector<RunRecord> all_runs, store->list_runs());
    std::vector<std::string> idle;
    for (const RunRecord& r : all_runs) {
      if (r.finished_at_ms == 0 && !runs.count(r.run_id)) idle.push_back(r.run_id);
    }
    if (idle.empty()) return Status::Ok();
    constexpr std::size_t kNamed = 5;
    std::string names;
    for (std::size_t i = 0; i < idle.size() && i < kNamed; ++i) names += (i > 0 ? ", " : "") + idle[i];
    if (idle.size() > kNamed) names += fmt::format(" and {} more", idle.size() - kNamed);
    logger()->warn("{} unfinished run(s) of {} are not served by this coordinator ({}): serve or submit their "
                   "plans to go on with them",
                   idle.size(), store->path().string(), names);
    return Status::Ok();
  }

  // Cancels one job: queued -> cancelled; leased -> its attempt is stored `cancelled` and the
  // worker told to stop it (the worker kills the job's process; its own `cancelled` RESULT is
  // then a duplicate). Returns false when there was nothing to cancel.
  bool cancel_job(JobEntry& j, const std::string& reason) {
    if (j.state == JobState::kDone || j.lease().result_pending) return false;
    if (j.state == JobState::kQueued) {
      settle(j, ResultStatus::kCancelled, reason);
      return !fatal;
    }
    ResultRecord rec;
    rec.run_id = j.run_id();
    rec.job_id = j.job_id;
    rec.attempt = j.lease().attempt;
    rec.worker_id = j.lease().worker;
    rec.status = ResultStatus::kCancelled;
    rec.reason = reason;
    rec.finished_at_ms = rec.received_at_ms = now_epoch_ms();
    auto stored = store->store_results({rec});
    if (!stored.ok()) {
      storage_fault("storing the cancellation of " + j.job_id, stored.status());
      return false;
    }
    send_to_worker(j.lease().worker, proto::Cancel{j.job_id, j.lease().attempt, reason});
    set_state(j, JobState::kDone, ResultStatus::kCancelled);
    j.lease_mut().worker.clear();
    j.lease_mut().attempt = 0;
    runs_dirty = true;
    assign_dirty = true;
    last_event = "cancelled  " + describe(j) + "  (" + reason + ")";
    last_result.reset();
    ++event_seq;
    notify();
    return true;
  }

  Result<nlohmann::json> control_cancel(const nlohmann::json& args, const Envelope& env) {
    AM_ASSIGN_OR_RETURN(std::string id, string_arg(args, "id", true));
    const std::string reason = "cancelled by an administrator" +
                               (env.user_id.empty() ? std::string() : " (key " + env.user_id + ")");
    if (runs.count(id)) {
      int cancelled = unplaced_plan_jobs(&id);
      int running = 0;
      // Classes registering from now on get no share of it; plan jobs not placed yet end here.
      closed_runs.insert(id);
      settle_unplaced(id, ResultStatus::kCancelled, reason);
      if (fatal) return *fatal;
      cancel_jobs_where([&](const JobEntry& j) { return j.run_id() == id; }, reason, cancelled, running);
      if (fatal) return *fatal;
      return nlohmann::json{{"run_id", id}, {"cancelled", cancelled}, {"stopped_running", running}};
    }
    if (auto pj = plan_jobs.find(id); pj != plan_jobs.end()) return cancel_plan_job(pj->second, reason);
    JobEntry* found = jobs.find(id);
    if (found == nullptr) {
      std::string known;
      for (const auto& r : runs) known += (known.empty() ? "" : ", ") + r;
      return not_found("no run or job '" + id.substr(0, 128) + "' on this coordinator (runs: " +
                       (known.empty() ? "none" : known) + ")");
    }
    JobEntry& j = *found;
    const bool was_leased = j.state == JobState::kLeased;
    const bool cancelled = cancel_job(j, reason);
    if (fatal) return *fatal;
    nlohmann::json out{{"job_id", id}, {"run_id", j.run_id()}, {"cancelled", cancelled ? 1 : 0},
                       {"stopped_running", cancelled && was_leased ? 1 : 0}};
    if (!cancelled && j.status) out["status"] = std::string(to_string(*j.status));
    return out;
  }

  // Cancels every job `which` picks (cancel_job), counting those cancelled and, of them, those
  // that were running. Stops at a storage fault.
  template <typename Pick>
  void cancel_jobs_where(const Pick& which, const std::string& reason, int& cancelled, int& running) {
    for (std::size_t seq = 0; seq < by_seq.size(); ++seq) {   // by index: settling may add entries
      if (by_seq[seq] == nullptr || !which(*by_seq[seq])) continue;
      JobEntry& j = *by_seq[seq];
      const bool was_leased = j.state == JobState::kLeased;
      if (cancel_job(j, reason)) {
        ++cancelled;
        running += was_leased;
      }
      if (fatal) return;
    }
  }

  // A plan job placed each-class or each-device (the id `accelmatrix plan` lists): every job made
  // of it that has not ended is cancelled, and it makes none for hardware registering later. One
  // not placed anywhere yet ends as a stand-in settled `cancelled`, which the report shows and a
  // restarted coordinator reads as the cancellation.
  Result<nlohmann::json> cancel_plan_job(PlanJob& pj, const std::string& reason) {
    const std::string id = pj.job_id;
    const std::string run_id = pj.run_id;
    pj.cancelled = true;
    int cancelled = 0;
    int running = 0;
    cancel_jobs_where([&](const JobEntry& j) { return j.plan_job() == id && j.run_id() == run_id; }, reason,
                      cancelled, running);
    if (fatal) return *fatal;
    // Stored first (plan_jobs.cancelled), so a restart makes no job of it for classes to come.
    // Placed nowhere, it also ends as a stand-in settled `cancelled`, which the reports show. One
    // settled for want of hardware (skipped) would give way to the first class that came, so it
    // is replaced by a cancelled one.
    if (Status st = store->mark_plan_job_cancelled(run_id, id); !st.ok()) {
      storage_fault("recording the cancellation of plan job " + id, st);
      return *fatal;
    }
    if (pj.placed == 0 && pj.stand_in) {
      const JobEntry* stand_in = jobs.find(id);
      if (stand_in != nullptr && stand_in->status != ResultStatus::kCancelled) {
        remove_stand_in(pj);
        if (fatal) return *fatal;
      }
    }
    if (pj.placed == 0 && !pj.stand_in) {
      settle_unplaced(run_id, ResultStatus::kCancelled, reason, id);
      if (fatal) return *fatal;
      ++cancelled;
    }
    pj.cancelled = true;   // remove_stand_in() above read the stand-in, not this flag
    return nlohmann::json{{"plan_job_id", id}, {"run_id", run_id}, {"cancelled", cancelled},
                          {"stopped_running", running}, {"durable", true}};
  }

  WorkerSession* session_of(const std::string& worker_id) {
    auto it = identity_of.find(worker_id);
    if (it == identity_of.end()) return nullptr;
    auto s = sessions.find(it->second);
    return s == sessions.end() ? nullptr : &s->second;
  }

  std::string connected_workers() const {
    std::string out;
    int shown = 0;
    for (const auto& [identity, s] : sessions) {
      if (++shown > 10) {
        out += ", ...";
        break;
      }
      out += (out.empty() ? "" : ", ") + s.worker_id;
    }
    return out.empty() ? "none" : out;
  }

  Result<nlohmann::json> control_drain(const nlohmann::json& args) {
    AM_ASSIGN_OR_RETURN(std::string worker, string_arg(args, "worker", true));
    WorkerSession* s = session_of(worker);
    if (s == nullptr) {
      return not_found("worker '" + worker.substr(0, 128) + "' is not connected (connected: " + connected_workers() + ")");
    }
    const int held = leases_held_by(worker, health_counts());
    if (!s->draining) {
      s->draining = true;
      send(s->identity, proto::Drain{"drained by an administrator"});
      if (Status st = store->record_device_event({now_epoch_ms(), worker, "", "drained", "drained by an administrator"});
          !st.ok()) {
        storage_fault("recording the drain of " + worker, st);
        return *fatal;
      }
      logger()->info("worker {} drained: no new jobs; it finishes the {} it holds and leaves", worker, held);
      notify();
    }
    return nlohmann::json{{"worker", worker}, {"holding", held}};
  }

  Result<nlohmann::json> control_release(const nlohmann::json& args) {
    AM_ASSIGN_OR_RETURN(std::string worker, string_arg(args, "worker", true));
    AM_ASSIGN_OR_RETURN(std::string device, string_arg(args, "device", false));
    const int64_t now = steady_ms();
    WorkerSession* session = session_of(worker);
    if (!health.known(worker) && session == nullptr) {
      return not_found("worker '" + worker.substr(0, 128) + "' is not known to this coordinator (connected: " +
                       connected_workers() + ")");
    }
    if (!device.empty() && health.find(worker, device) == nullptr &&
        (session == nullptr || std::none_of(session->devices.begin(), session->devices.end(),
                                            [&](const DeviceInfo& d) { return d.key == device; }))) {
      return not_found("worker '" + worker + "' has no device '" + device.substr(0, 64) + "'");
    }
    const bool peer_was = device.empty() && standing.release(worker, now);
    std::vector<HealthEvent> events = health.release(worker, device, now);
    nlohmann::json released = nlohmann::json::array();
    for (const auto& e : events) released.push_back(e.device);
    apply_health_events(events);
    if (fatal) return *fatal;
    assign_dirty = true;
    return nlohmann::json{{"worker", worker}, {"devices", released}, {"worker_quarantine_lifted", peer_was}};
  }

  const nlohmann::json& cached_status_document() const {
    const int64_t now = steady_ms();
    if (!status_cache || now - status_cached_ms >= kStatusCacheMs) {
      status_cache = status_document();
      status_cached_ms = now;
    }
    return *status_cache;
  }

  // Everything `accelmatrix status` shows (docs/PROTOCOL.md §5.10 lists the fields).
  nlohmann::json status_document() const {
    const int64_t now_epoch = now_epoch_ms();
    const int64_t now = steady_ms();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    nlohmann::json doc;
    doc["coordinator"] = {{"endpoint", router.bound_endpoint()},
                          {"database", store->path().string()},
                          {"host", host},
                          {"pid", static_cast<int64_t>(getpid())},
                          {"command", opt.command},
                          {"started_at_ms", started_at_ms},
                          {"uptime_s", (now_epoch - started_at_ms) / 1000.0},
                          {"health_interval_s", opt.health_interval_ms / 1000.0},
                          {"quarantine_after", opt.quarantine_after},
                          {"curve", opt.curve.has_value()}};
    int slots = 0;
    for (const auto& [identity, s] : sessions) slots += s.draining ? 0 : s.slots;
    struct Counts {
      int total = 0, done = 0, leased = 0, queued = 0;
      std::map<std::string, int> by_status;
    };
    std::map<std::string, Counts> counts;
    std::map<std::string, std::vector<const JobEntry*>> running;   // worker -> leased jobs
    for (const JobEntry* jp : by_seq) {   // submission order
      if (jp == nullptr) continue;
      const JobEntry& j = *jp;
      Counts& c = counts[j.run_id()];
      ++c.total;
      if (j.state == JobState::kDone) {
        ++c.done;
        if (j.status) ++c.by_status[std::string(to_string(*j.status))];
      } else if (j.state == JobState::kLeased) {
        ++c.leased;
        running[j.lease().worker].push_back(&j);
      } else {
        ++c.queued;
      }
    }
    // Plan jobs not placed on any class or device yet are work to come (queued).
    for (const auto& [id, pj] : plan_jobs) {
      if (pj.placed > 0 || pj.stand_in) continue;
      ++counts[pj.run_id].total;
      ++counts[pj.run_id].queued;
    }
    doc["runs"] = nlohmann::json::array();
    for (const auto& run_id : runs) {
      const Counts& c = counts[run_id];
      nlohmann::json r{{"run_id", run_id}, {"total", c.total}, {"done", c.done}, {"running", c.leased},
                       {"queued", c.queued}, {"by_status", c.by_status}};
      // Until its last job ended (when that happened in this session), not the coordinator's uptime.
      const auto started = run_started_ms.find(run_id);
      if (started != run_started_ms.end()) {
        const auto finished = run_finished_ms.find(run_id);
        const int64_t end = c.done == c.total && finished != run_finished_ms.end() ? finished->second : now_epoch;
        r["elapsed_s"] = std::max<int64_t>(0, end - started->second) / 1000.0;
      }
      // ETA from the run's own jobs measured in this session: the jobs left, spread over the
      // slots. None before one has finished (another run's jobs say nothing of this one's: a run
      // of hour-long jobs showed an ETA of 339 ms from a smoke run's).
      const auto measured = run_measured.find(run_id);
      const double mean = measured != run_measured.end() && measured->second.first > 0
                              ? static_cast<double>(measured->second.second) / measured->second.first
                              : 0.0;
      if (c.done == c.total) {
        r["eta_s"] = 0.0;
      } else if (mean > 0 && slots > 0) {
        r["eta_s"] = std::ceil(static_cast<double>(c.total - c.done) / slots) * mean / 1000.0;
      } else {
        r["eta_s"] = nullptr;
        r["eta_unknown_because"] = mean > 0 ? "no connected worker takes jobs" : "no job measured yet";
      }
      r["time_budget_s"] = budget_s.count(run_id) ? nlohmann::json(budget_s.at(run_id)) : nlohmann::json(nullptr);
      r["unplaced"] = unplaced_plan_jobs(&run_id);
      r["open"] = run_open(run_id);
      doc["runs"].push_back(std::move(r));
    }
    doc["workers"] = nlohmann::json::array();
    for (const auto& [identity, s] : sessions) {
      nlohmann::json w{{"worker_id", s.worker_id},
                       {"host", s.hostname},
                       {"build", s.build},
                       {"slots", s.slots},
                       {"draining", s.draining},
                       {"registered_at_ms", s.registered_at_ms},
                       {"last_heard_ms_ago", now - s.last_seen_ms}};
      const int64_t until = standing.quarantined_until(s.worker_id, now);
      w["quarantined"] = until > 0;
      if (until > 0) {
        w["quarantine_reason"] = "took leases and never answered them (silent peer)";
        w["quarantine_left_s"] = (until - now) / 1000.0;
      }
      w["devices"] = nlohmann::json::array();
      for (const auto& d : s.devices) {
        nlohmann::json dev{{"key", d.key}, {"backend", d.backend}, {"name", d.name},
                           {"hardware_class", d.hardware_class}, {"schedulable", d.schedulable}};
        if (const DeviceHealthEntry* e = health.find(s.worker_id, d.key)) {
          dev["condition"] = std::string(to_string(e->condition));
          dev["quarantined"] = e->condition == DeviceCondition::kQuarantined;
          if (!e->reason.empty()) dev["reason"] = e->reason;
          if (e->last_check_ms > 0) {
            dev["last_health_check_s_ago"] = (now - e->last_check_ms) / 1000.0;
            dev["last_health_check_passed"] = e->last_check_passed;
          }
          if (health.checks_on() && e->checkable) dev["next_health_check_in_s"] = std::max<int64_t>(0, e->next_check_ms - now) / 1000.0;
          dev["health_check_running"] = e->check_in_flight;
        } else {
          dev["condition"] = d.schedulable ? "healthy" : "not schedulable";
          dev["quarantined"] = false;
        }
        w["devices"].push_back(std::move(dev));
      }
      w["jobs"] = nlohmann::json::array();
      for (const JobEntry* j : running[s.worker_id]) {
        nlohmann::json job{{"job_id", j->job_id}, {"run_id", j->run_id()}, {"model", j->family_spec().model},
                           {"backend", j->family_spec().backend}, {"precision", std::string(jobs::to_string(j->scalars.precision))},
                           {"device", j->lease().device}, {"attempt", j->lease().attempt}};
        if (j->lease().started_ms > 0) job["running_s"] = (now_epoch - j->lease().started_ms) / 1000.0;
        w["jobs"].push_back(std::move(job));
      }
      for (const auto& [id, h] : health_leases) {
        if (h.worker_id != s.worker_id) continue;
        w["jobs"].push_back({{"job_id", id}, {"model", std::string(kHealthModel)}, {"device", h.device},
                             {"attempt", h.attempt}, {"running_s", (now_epoch - h.issued_at_ms) / 1000.0}});
      }
      for (const auto& [id, held] : s.held_unserved) {
        if (jobs.find(id) != nullptr) continue;   // its run was submitted here since: listed above
        w["jobs"].push_back({{"job_id", id}, {"run_id", held.first}, {"attempt", held.second}, {"served", false}});
      }
      doc["workers"].push_back(std::move(w));
    }
    doc["counters"] = current_counters().as_map();
    return doc;
  }

  // ---- submission (Server::submit, CONTROL submit) ------------------------------------------
  // The plan job a stored job was made from: its own id when it has no target (an `any` job, or
  // a stand-in), else the id of its spec without the target.
  static std::string plan_job_id_of(const std::string& run_id, const JobRow& row) {
    if (!row.plan_job_id.empty()) return row.plan_job_id;
    if (row.target.empty()) return row.job_id;
    auto spec = jobs::job_spec_from_json(row.spec);
    return spec.ok() ? jobs::compute_job_id(run_id, *spec) : row.job_id;
  }

  Status submit(const jobs::Plan& plan, const std::string& run_id, const SubmitOptions& submit) {
    // Job ids hash their run id: a plan expanded for one run submitted as another would share
    // its ids with the first (the jobs are found by id alone on the wire).
    if (!plan.run_id.empty() && plan.run_id != run_id) {
      return invalid_argument("plan '" + plan.name + "' was expanded for run '" + plan.run_id + "', not for run '" +
                              run_id + "' (load it with that run id)");
    }
    Impl& m = *this;
    RunRecord run;
    // Job ids are unique on this coordinator (the wire names a job by its id alone). Ids hash
    // the run id, so only a run an older build made under `--run` (ids of the plan's name) can
    // meet the ids of the run named after the plan: refused, not merged into the other run.
    const bool other_runs = std::any_of(m.runs.begin(), m.runs.end(), [&](const std::string& r) { return r != run_id; });
    for (std::size_t i = 0; other_runs && i < plan.jobs.size(); ++i) {
      const jobs::PlannedJob& job = plan.jobs[i];
      const auto pj = m.plan_jobs.find(job.job_id);
      const JobEntry* j = pj == m.plan_jobs.end() ? m.jobs.find(job.job_id) : nullptr;
      const std::string* other = pj != m.plan_jobs.end() ? &pj->second.run_id
                                 : j != nullptr          ? &j->run_id()
                                                         : nullptr;
      if (other != nullptr && *other != run_id) {
        return failed_precondition("job " + job.job_id + " of plan '" + plan.name + "' is a job of run '" + *other +
                                   "' on this coordinator (a run an older build made under --run shares the ids of "
                                   "the run named after its plan); serve run '" + run_id +
                                   "' with a coordinator of its own");
      }
    }
    run.run_id = run_id;
    run.plan_name = plan.name;
    run.plan_path = plan.source.string();
    run.description = plan.description;
    run.created_at_ms = now_epoch_ms();
    run.plan_hash = jobs::plan_hash(plan.jobs);
    AM_ASSIGN_OR_RETURN(std::optional<RunRecord> existing, m.store->get_run(run_id));
    bool had_work = !existing || existing->finished_at_ms == 0;
    bool record_plan_after_jobs = false;
    bool part_of_run = false;   // a plan the run followed before, all of whose jobs it holds
    if (existing && jobs::is_plan_hash_v1(existing->plan_hash) &&
        jobs::plan_hash_v1(plan.jobs) == existing->plan_hash) {
      // A run stored with the first definition of the hash, resubmitted with its own plan: the
      // same plan, from now on under the v2 hash (computed once; the v1 hash re-reads every spec).
      AM_RETURN_IF_ERROR(m.store->set_plan_hash(run_id, run.plan_hash));
      logger()->info("run {}: plan hash stored as {} (was {}, the same plan)", run_id, run.plan_hash,
                     existing->plan_hash);
      existing->plan_hash = run.plan_hash;
    }
    if (!existing) {
      AM_RETURN_IF_ERROR(m.store->upsert_run(run));
    } else if (existing->plan_hash != run.plan_hash) {
      // The plan jobs the stored jobs were made from, without their specs: one damaged spec
      // must not refuse the run (the read-back below settles that job `error`).
      std::set<std::string> stored_ids;
      AM_RETURN_IF_ERROR(m.store->for_each_job(run_id, /*with_spec=*/false, [&](JobRow& row) -> Status {
        if (row.plan_job_id.empty() && !row.target.empty()) {
          // A placed job stored before plan_job_id was (schema < 5): its plan job is its spec's id.
          if (auto doc = m.store->job_spec(run_id, row.job_id); doc.ok()) row.spec = std::move(doc).value();
        }
        stored_ids.insert(plan_job_id_of(run_id, row));
        return Status::Ok();
      }));
      // Plan jobs no hardware took yet have no job row: they are the run's too.
      AM_ASSIGN_OR_RETURN(std::vector<std::string> placed_ids, m.store->plan_job_ids(run_id));
      stored_ids.insert(placed_ids.begin(), placed_ids.end());
      std::set<std::string> plan_ids;
      for (const auto& j : plan.jobs) plan_ids.insert(j.job_id);
      std::size_t only_plan = 0;
      for (const auto& id : plan_ids) only_plan += stored_ids.count(id) == 0;
      std::size_t only_run = 0;
      for (const auto& id : stored_ids) only_run += plan_ids.count(id) == 0;
      // A run from before schema 3 has no hash: it adopts this plan's when the jobs are the same.
      const bool legacy_same = existing->plan_hash.empty() && only_plan == 0 && only_run == 0;
      // A plan the run was made from before another extended it (`serve --plan` of its own plan
      // after a `submit --extend`, a restart serving the run's submitted plans again): every job
      // of it is the run's already. It is served as part of the run, which keeps the plan it follows.
      AM_ASSIGN_OR_RETURN(const bool followed, m.store->run_followed_plan(run_id, run.plan_hash));
      if (!legacy_same && followed && only_plan == 0) {
        logger()->info("run {}: plan {} made it before it was extended; it is served as part of the run",
                       run_id, plan.source.string());
        part_of_run = true;
      } else if (!legacy_same && !submit.extend) {
        return failed_precondition(fmt::format(
            "run '{}' in {} was made from another plan ({}, plan hash {}); {} (plan hash {}) has {} not in "
            "the run and the run has {} not in it. Use --run NAME to start a new run with this plan, or "
            "--extend to add its jobs to run '{}' on purpose",
            run_id, m.store->path().string(), existing->plan_path.empty() ? "unknown file" : existing->plan_path,
            existing->plan_hash.empty() ? "not recorded" : existing->plan_hash, plan.source.string(),
            run.plan_hash, plural_of(only_plan, "job"), plural_of(only_run, "job"), run_id));
      }
      if (!legacy_same && !part_of_run) {
        logger()->info("run {}: extended with plan {} ({} new job(s))", run_id, plan.source.string(), only_plan);
        had_work = had_work || only_plan > 0;
      }
      // The run names this plan only once its jobs are stored (below): a crash in between leaves
      // the old hash, so the next submit adds them instead of finding "the same plan, stored".
      record_plan_after_jobs = !part_of_run;
    }
    // Jobs placed `any` are made now; the others when hardware of their backend registers (they
    // are stored as plan jobs meanwhile, so `runs` and reports list them).
    // A plan is mostly of one placement: then its job list is used as it is (a million specs are
    // not copied); a mixed plan is split.
    const auto is_any = [](const jobs::PlannedJob& j) { return j.spec.placement == jobs::Placement::kAny; };
    const bool all_any = std::all_of(plan.jobs.begin(), plan.jobs.end(), is_any);
    const bool none_any = std::none_of(plan.jobs.begin(), plan.jobs.end(), is_any);
    std::vector<jobs::PlannedJob> any_split;
    std::vector<jobs::PlannedJob> placed_split;
    if (!all_any && !none_any) {
      for (const jobs::PlannedJob& job : plan.jobs) (is_any(job) ? any_split : placed_split).push_back(job);
    }
    static const std::vector<jobs::PlannedJob> kNone;
    const std::vector<jobs::PlannedJob>& any_jobs = all_any ? plan.jobs : none_any ? kNone : any_split;
    const std::vector<jobs::PlannedJob>& placed_jobs = none_any ? plan.jobs : all_any ? kNone : placed_split;
    if (submit.memory_changed != nullptr) *submit.memory_changed = true;
    for (const jobs::PlannedJob& job : plan.jobs) m.backends_planned.insert(job.spec.backend);
    // The plan's families by their expansion ordinal: a job of a family met before is not
    // compared with it again (a million comparisons of model configs were a seventh of a restart).
    std::vector<std::shared_ptr<const SpecFamily>> plan_families;
    const auto family_of = [&](const jobs::PlannedJob& job) {
      if (job.family < 0) return m.intern_family(job.spec);
      const auto k = static_cast<std::size_t>(job.family);
      if (k >= plan_families.size()) plan_families.resize(k + 1);
      if (!plan_families[k]) plan_families[k] = m.intern_family(job.spec);
      return plan_families[k];
    };
    std::size_t made = 0;
    for (const jobs::PlannedJob& job : placed_jobs) {
      if ((++made & 255) == 0) m.keep_peers_alive();
      if (job.spec.placement == jobs::Placement::kEachDevice) m.runs_with_each_device.insert(run_id);
      if (!m.plan_jobs.count(job.job_id)) {
        m.unplaced_dirty = true;
        m.placed_for.clear();   // devices placed before have this new plan job to make
        PlanJob pj;
        pj.run_id = run_id;
        pj.job_id = job.job_id;
        pj.family = family_of(job);
        pj.scalars = jobs::scalars_of(job.spec);
        m.plan_jobs[job.job_id] = std::move(pj);
        m.plan_job_order.push_back(job.job_id);
      }
    }
    m.ineligible_checked = false;   // new `any` jobs: check them against the devices here
    const auto store_started = SteadyClock::now();
    // A restart of the same plan finds its jobs stored: adding them would only be ignored, a
    // million times. They are all there when the run's hash is this plan's and the counts agree
    // (add_jobs and add_plan_jobs each commit all of their rows or none).
    bool stored = false;
    if (existing && existing->plan_hash == run.plan_hash) {
      AM_ASSIGN_OR_RETURN(int64_t untargeted, m.store->count_untargeted_jobs(run_id));
      AM_ASSIGN_OR_RETURN(int64_t stored_plan_jobs, m.store->count_plan_jobs(run_id));
      stored = untargeted >= static_cast<int64_t>(any_jobs.size()) &&
               stored_plan_jobs == static_cast<int64_t>(placed_jobs.size());
    }
    int added = 0;
    if (!stored) {
      // Jobs are about to change: a digest stored for the run's old jobs goes first, so that a
      // crash below leaves none (a restart then expands the plan instead of resuming).
      if (existing && !existing->plan_digest.empty()) AM_RETURN_IF_ERROR(m.store->set_plan_digest(run_id, ""));
      AM_RETURN_IF_ERROR(m.store->add_plan_jobs(run_id, placed_jobs).status());
      AM_ASSIGN_OR_RETURN(added, m.store->add_jobs(run_id, any_jobs, {}, {}, Store::OwnPlanJob::kUnindexed));
    }
    if (record_plan_after_jobs) AM_RETURN_IF_ERROR(m.store->set_run_plan(run));
    // The run's plan jobs of its other plans (an --extend, a plan served as part of the run):
    // stored, so they are placed and counted as this plan's are. Without them a run served from
    // its older plan was marked finished with the newer plan's jobs never made (found by a tester).
    AM_RETURN_IF_ERROR(register_stored_plan_jobs(run_id, static_cast<int64_t>(placed_jobs.size())));
    const double store_s = seconds_since(store_started);
    // Rows read ahead serve when nothing was stored since (no new jobs, no new plan recorded)
    // and no connection committed meanwhile; else they are read now.
    const bool prefetched = submit.prefetched != nullptr && submit.prefetched->run_id() == run_id && stored &&
                            !record_plan_after_jobs && submit.prefetched->current();
    RowFamilies families;
    families.any_jobs = &any_jobs;
    families.family_of = family_of;
    families.check_rows = !submit.plan_digest.empty() && !submit.forget_digest;
    const auto load_started = SteadyClock::now();
    AM_ASSIGN_OR_RETURN(std::size_t rows, load_stored_jobs(run_id, prefetched ? submit.prefetched : nullptr, families));
    had_work = had_work || families.had_work;
    // Last: a run found with a digest holds every job of that plan and nothing else (Server::resume):
    // no row came from anywhere but this plan and its plan jobs are all the run's.
    if (!submit.plan_digest.empty()) {
      // Past kResumeMaxPlanJobs no resume would read the run: no digest either.
      bool exact = !submit.forget_digest && !record_plan_after_jobs && !part_of_run && families.parsed_rows == 0 &&
                   families.next_any == any_jobs.size() && families.rows_agree &&
                   static_cast<int64_t>(placed_jobs.size()) <= kResumeMaxPlanJobs;
      if (exact) {
        AM_ASSIGN_OR_RETURN(int64_t stored_plan_jobs, m.store->count_plan_jobs(run_id));
        exact = stored_plan_jobs == static_cast<int64_t>(placed_jobs.size());
      }
      if (exact) {
        // What a resume would read of the plan jobs is what the plan says.
        std::unordered_map<std::string_view, const jobs::JobSpec*> by_id;
        for (const jobs::PlannedJob& job : placed_jobs) by_id.emplace(job.job_id, &job.spec);
        AM_RETURN_IF_ERROR(m.store->for_each_plan_job(run_id, [&](const std::string& id, Result<jobs::JobSpec>& spec) {
          auto it = by_id.find(id);
          if (!spec.ok() || it == by_id.end() || !(*spec == *it->second)) exact = false;
          return Status::Ok();
        }));
      }
      AM_RETURN_IF_ERROR(m.store->set_plan_digest(run_id, exact ? submit.plan_digest : std::string()));
    }
    logger()->info("run {}: {} job(s) stored, {} new; {} plan job(s) placed per class or device "
                   "(stored in {:.2f} s, read back in {:.2f} s{})",
                   run_id, rows, added, plan.jobs.size() - any_jobs.size(), store_s, seconds_since(load_started),
                   prefetched ? ", read ahead while the plan expanded" : "");
    return open_run(run_id, had_work, plan.time_budget_s);
  }

  // Registers the run's stored plan jobs that no plan given to this server holds, from their
  // stored specs (as resume() does), when the store has more than `from_plan` of them. A spec
  // that does not read is logged and left out: its plan job waits unplaced, as it would without
  // this, and the run does not finish until that plan is served again.
  Status register_stored_plan_jobs(const std::string& run_id, int64_t from_plan) {
    Impl& m = *this;
    AM_ASSIGN_OR_RETURN(int64_t stored, m.store->count_plan_jobs(run_id));
    if (stored <= from_plan) return Status::Ok();
    int added = 0;
    AM_RETURN_IF_ERROR(m.store->for_each_plan_job(run_id, [&](const std::string& id, Result<jobs::JobSpec>& spec) -> Status {
      if (m.plan_jobs.count(id)) return Status::Ok();
      if (!spec.ok() || jobs::compute_job_id(run_id, *spec) != id) {
        logger()->warn("run {}: plan job {} is not served: {}", run_id, id,
                       spec.ok() ? std::string("its stored spec is not the job its id names") : spec.status().message());
        return Status::Ok();
      }
      m.backends_planned.insert(spec->backend);
      if (spec->placement == jobs::Placement::kEachDevice) m.runs_with_each_device.insert(run_id);
      PlanJob pj;
      pj.run_id = run_id;
      pj.job_id = id;
      pj.family = m.intern_family(*spec);
      pj.scalars = jobs::scalars_of(*spec);
      m.plan_jobs[id] = std::move(pj);
      m.plan_job_order.push_back(id);
      ++added;
      return Status::Ok();
    }));
    if (added > 0) {
      m.unplaced_dirty = true;
      m.placed_for.clear();
      logger()->info("run {}: {} plan job(s) of its other plans read back from the store", run_id, added);
    }
    return Status::Ok();
  }

  // Server::resume (see server.h): the run's plan jobs and jobs from the store alone. It never
  // settles a job for what it reads: every doubt (a damaged family, a row or plan job that is not
  // the job its id names) sends the run back to the plan, whose expansion does not read those.
  Result<ResumeOutcome> resume(const jobs::PlanSummary& summary, const std::string& run_id, const std::string& plan_digest,
                      PrefetchedJobs* prefetched) {
    Impl& m = *this;
    if (plan_digest.empty() || m.runs.count(run_id)) return ResumeOutcome::kNotResumable;
    AM_ASSIGN_OR_RETURN(std::optional<RunRecord> existing, m.store->get_run(run_id));
    if (!existing || existing->plan_digest != plan_digest) return ResumeOutcome::kNotResumable;
    AM_ASSIGN_OR_RETURN(int64_t plan_job_count, m.store->count_plan_jobs(run_id));
    if (plan_job_count > kResumeMaxPlanJobs) return ResumeOutcome::kNotResumable;
    const auto give_up = [&](const std::string& why) {
      logger()->warn("run {}: not resumed from the store: {}; the plan is expanded instead", run_id, why);
      return ResumeOutcome::kDoubted;
    };
    // Everything that could send the run back to the plan without touching a row is read first.
    // Every id hashes the run's id (jobs::compute_job_id); a run an older build made under --run
    // (ids of the plan's name) stores no digest and never comes here (commands.cpp).
    std::vector<std::pair<std::string, jobs::JobSpec>> stored_plan_jobs;
    std::string doubt;
    AM_RETURN_IF_ERROR(m.store->for_each_plan_job(run_id, [&](const std::string& id, Result<jobs::JobSpec>& spec) -> Status {
      if (!doubt.empty()) return Status::Ok();
      if (!spec.ok()) {
        doubt = "plan job '" + id + "': " + spec.status().message();
      } else if (jobs::compute_job_id(run_id, *spec) != id) {
        doubt = "plan job '" + id + "' is not the job its stored spec makes (the row was changed)";
      } else {
        stored_plan_jobs.emplace_back(id, std::move(spec).value());
      }
      return Status::Ok();
    }));
    if (!doubt.empty()) return give_up(doubt);
    RowFamilies families;
    families.from_store = true;
    AM_ASSIGN_OR_RETURN(families.stored, m.store->spec_families_of_run(run_id));
    for (const auto& [id, family] : families.stored) {
      if (!family.spec) return give_up(family.damage);
    }

    const auto load_started = SteadyClock::now();
    for (auto& [id, spec] : stored_plan_jobs) {
      m.backends_planned.insert(spec.backend);
      if (spec.placement == jobs::Placement::kEachDevice) m.runs_with_each_device.insert(run_id);
      if (m.plan_jobs.count(id)) continue;
      m.unplaced_dirty = true;
      m.placed_for.clear();
      PlanJob pj;
      pj.run_id = run_id;
      pj.job_id = id;
      pj.family = m.intern_family(spec);
      pj.scalars = jobs::scalars_of(spec);
      m.plan_jobs[id] = std::move(pj);
      m.plan_job_order.push_back(id);
    }
    m.ineligible_checked = false;
    const bool use_prefetched = prefetched != nullptr && prefetched->run_id() == run_id && prefetched->current();
    Result<std::size_t> rows = load_stored_jobs(run_id, use_prefetched ? prefetched : nullptr, families);
    // From here this server may hold part of the run (rows each checked to be its id's job, the
    // plan's jobs as the expansion makes them): the caller's submit of the plan adds the rest.
    if (!families.doubt.empty()) return give_up(families.doubt);
    if (!rows.ok()) return give_up("reading its rows: " + rows.status().message());
    logger()->info("run {}: resumed from the store: {} job(s), {} plan job(s) placed per class or device, the plan's "
                   "inputs unchanged (read back in {:.2f} s{})",
                   run_id, *rows, stored_plan_jobs.size(), seconds_since(load_started),
                   use_prefetched ? ", read ahead" : "");
    AM_RETURN_IF_ERROR(open_run(run_id, existing->finished_at_ms == 0 || families.had_work, summary.time_budget_s));
    return ResumeOutcome::kResumed;
  }

  // How load_stored_jobs() finds each row's spec family and scalars besides the plan jobs: from
  // the expanded plan's `any` jobs (a submit; rows and plan list them in the same order), or from
  // the row's stored family (a resume). A row found by neither has its stored spec parsed.
  struct RowFamilies {
    const std::vector<jobs::PlannedJob>* any_jobs = nullptr;
    std::function<std::shared_ptr<const SpecFamily>(const jobs::PlannedJob&)> family_of;
    std::size_t next_any = 0;
    // A resume: families from `stored` (the run's, read whole before the walk), each row checked
    // to be the job its id names; the first row that is not stops the walk with `doubt`.
    bool from_store = false;
    std::unordered_map<int64_t, StoredSpecFamily> stored;
    std::unordered_map<int64_t, std::shared_ptr<const SpecFamily>> interned;
    jobs::SpecTemplates ids;   // id hashes per (family, batch)
    std::string doubt;
    // A submit that would store a digest: whether every row's own columns (its stored family and
    // scalars) say what the plan says of it, so that a resume reading them would agree.
    bool check_rows = false;
    bool rows_agree = true;
    const std::string* last_backend = nullptr;
    bool had_work = false;       // out: a job not done was read
    std::size_t parsed_rows = 0;   // out: rows neither the plan nor a family gave (their spec parsed)
  };

  // Whether `job_id` is the id of `family` with `scalars` made for `target` in the run, as the
  // expansion (untargeted jobs) or a placement (targeted ones) made it (jobs::compute_job_id): a
  // hash over the last few dozen bytes of the job's canonical spec.
  static bool id_matches(const std::string& run_id, const SpecFamily& family, const jobs::JobScalars& scalars,
                         const std::string& target, const std::string& job_id, jobs::SpecTemplates& ids) {
    return hex64_equals(job_id, jobs::job_hash_with_target(ids.id_hash(run_id, family.canonical, scalars), target));
  }

  // Whether a row the plan gave `family` and `scalars` would pass a resume's checks as that job
  // (RowFamilies::check_rows): its scalars, its stored family (interned: the plan's own family
  // object when the same) or, stored whole (family 0), its own document, and its id with its
  // target.
  bool row_agrees(const std::string& run_id, const JobRow& row, const SpecFamily& family,
                  const jobs::JobScalars& scalars, RowFamilies& f) {
    if (row.scalars != scalars) return false;
    if (row.family_id == 0) {
      auto doc = store->job_spec(run_id, row.job_id);
      auto spec = doc.ok() ? jobs::job_spec_from_json(*doc) : Result<jobs::JobSpec>(doc.status());
      if (!spec.ok() || !(*spec == jobs::with_scalars(family.spec(), scalars))) return false;
    } else {
      if (f.stored.empty()) {
        auto loaded = store->spec_families_of_run(run_id);
        if (!loaded.ok()) return false;
        f.stored = std::move(loaded).value();
      }
      std::string why;
      std::shared_ptr<const SpecFamily> stored = stored_family_of(row, f, why);
      if (stored.get() != &family) return false;
    }
    return id_matches(run_id, family, scalars, row.target, row.job_id, f.ids);
  }

  // A resumed row's family from its stored one: the family as stored, of the row's model and
  // backend, and the row's scalars in range (as the store's reader checks a rendered spec,
  // coordinator/spec_families.h). Null with `why` when unusable.
  std::shared_ptr<const SpecFamily> stored_family_of(const JobRow& row, RowFamilies& f, std::string& why) {
    auto it = f.stored.find(row.family_id);
    if (it == f.stored.end() || !it->second.spec) {
      why = "spec family " + std::to_string(row.family_id) + " of job '" + row.job_id + "' is not in the store";
      return nullptr;
    }
    const jobs::JobSpec& spec = *it->second.spec;
    if (spec.model != row.model || spec.backend != row.backend) {
      why = "spec family " + std::to_string(row.family_id) + " is of model '" + spec.model + "' on " + spec.backend +
            ", not job '" + row.job_id + "''s '" + row.model.substr(0, 200) + "' on " + row.backend.substr(0, 64);
      return nullptr;
    }
    if (!row.scalars || row.scalars->batch < 1 || row.scalars->batch > jobs::kMaxBatch || row.scalars->seq_len < 1 ||
        row.scalars->seq_len > jobs::kMaxSeqLen) {
      why = "job '" + row.job_id + "''s precision, batch or seq_len is out of range";
      return nullptr;
    }
    auto& interned = f.interned[row.family_id];
    if (!interned) interned = intern_family(spec);
    return interned;
  }

  // The stored jobs of `run_id` read back into the scheduler (their states, leases and
  // placements), one row at a time and without their spec documents: from `prefetched` when
  // given (rows read ahead and still current), else from the store. Returns how many rows.
  Result<std::size_t> load_stored_jobs(const std::string& run_id, PrefetchedJobs* prefetched, RowFamilies& f) {
    Impl& m = *this;
    std::size_t rows = 0;
    // Jobs whose stored spec or target is invalid are settled after the walk (no write to the
    // jobs table while its rows are being read).
    std::vector<std::pair<JobEntry*, std::string>> invalid;
    const auto load_row = [&](JobRow& row) -> Status {
      ++rows;
      if (const JobEntry* known = m.jobs.find(row.job_id); known != nullptr) {
        // Indexed already (a resume that stopped at a doubt, or a run this server serves); the
        // plan's `any` job of the same id is passed over with it.
        if (known->state != JobState::kDone) f.had_work = true;
        if (f.any_jobs != nullptr && f.next_any < f.any_jobs->size() && (*f.any_jobs)[f.next_any].job_id == row.job_id) {
          ++f.next_any;
        }
        return Status::Ok();
      }
      JobEntry j;
      j.run = m.intern_run(row.run_id);
      j.job_id = row.job_id;
      j.state = row.state;
      j.attempts = row.attempts;
      j.status = row.status;
      if (j.state != JobState::kDone) f.had_work = true;
      if (row.plan_job_id.empty() && !row.target.empty()) {
        // A placed job stored before plan_job_id was (schema < 5): its plan job is its spec's id.
        if (auto doc = m.store->job_spec(run_id, row.job_id); doc.ok()) row.spec = std::move(doc).value();
      }
      if (std::string plan_job = plan_job_id_of(run_id, row); plan_job != row.job_id) j.plan_job_id = m.intern_plan_job(plan_job);
      std::optional<PlacedTarget> placed = placed_target(row.target, row.hardware_class);
      Status spec_status = Status::Ok();
      std::string family_damage;
      if (auto pj = m.plan_jobs.find(j.plan_job()); pj != m.plan_jobs.end()) {
        j.family = pj->second.family.get();
        j.scalars = pj->second.scalars;
      } else if (f.any_jobs != nullptr && f.next_any < f.any_jobs->size() &&
                 (*f.any_jobs)[f.next_any].job_id == row.job_id) {
        j.family = f.family_of((*f.any_jobs)[f.next_any]).get();
        j.scalars = jobs::scalars_of((*f.any_jobs)[f.next_any].spec);
        ++f.next_any;
      } else if (f.from_store && row.family_id != 0) {
        std::shared_ptr<const SpecFamily> stored = stored_family_of(row, f, family_damage);
        if (!stored) {
          f.doubt = family_damage;
          return unavailable("resume abandoned");
        }
        j.family = stored.get();
        j.scalars = *row.scalars;
      } else {
        ++f.parsed_rows;
        auto doc = m.store->job_spec(run_id, row.job_id);
        auto spec = doc.ok() ? jobs::job_spec_from_json(*doc) : Result<jobs::JobSpec>(doc.status());
        if (spec.ok()) {
          j.family = m.intern_family(*spec).get();
          j.scalars = jobs::scalars_of(*spec);
        } else {
          spec_status = spec.status();
        }
      }
      if (f.from_store) {
        // A resumed row is exactly the job its id names, or the run goes back to its plan.
        if (!placed) {
          f.doubt = "job '" + row.job_id + "': stored placement target '" + row.target.substr(0, 200) + "' is invalid";
          return unavailable("resume abandoned");
        }
        if (!spec_status.ok()) {
          f.doubt = "job '" + row.job_id + "': " + spec_status.message();
          return unavailable("resume abandoned");
        }
        if (!id_matches(run_id, *j.family, j.scalars, row.target, row.job_id, f.ids)) {
          f.doubt = "job '" + row.job_id + "' is not the job its stored family, precision, batch, seq_len and target "
                    "make (the row was changed)";
          return unavailable("resume abandoned");
        }
        const std::string& backend = j.family->spec().backend;
        if (!backend.empty() && (f.last_backend == nullptr || *f.last_backend != backend)) {
          f.last_backend = &*m.backends_planned.insert(backend).first;
        }
      } else if (f.check_rows && spec_status.ok() && (!placed || !row_agrees(run_id, row, *j.family, j.scalars, f))) {
        f.rows_agree = false;
      }
      if (!spec_status.ok() || !placed) {
        // Indexed as a queued `any` job of a spec no device admits, then settled; a finished
        // one keeps its stored result (the store would not overwrite it, and the run's summary
        // and exit code must say what the store says).
        jobs::JobSpec none;
        none.backend.clear();
        j.family = m.intern_family(none).get();
        if (j.state == JobState::kDone) {
          m.index_job(m.jobs.insert(std::move(j)));
          return Status::Ok();
        }
        j.state = JobState::kQueued;
        JobEntry& e = m.index_job(m.jobs.insert(std::move(j)));
        invalid.emplace_back(&e, !spec_status.ok() ? "stored job spec is invalid: " + spec_status.message()
                                                   : "stored placement target '" + row.target.substr(0, 200) + "' is invalid");
        return Status::Ok();
      }
      j.placed_target = m.intern_target(*placed).get();
      if (auto pj = m.plan_jobs.find(j.plan_job()); pj != m.plan_jobs.end()) {
        m.unplaced_dirty = true;
        if (row.target.empty()) {
          pj->second.stand_in = true;   // settled before for want of hardware
        } else {
          ++pj->second.placed;
        }
      }
      if (j.state == JobState::kLeased) {
        LeaseFields& l = j.lease_mut();
        l.worker = row.lease_worker;
        l.host = row.lease_host;
        l.attempt = row.attempts;
        l.expires_at_ms = row.lease_expires_at_ms;
        // Its worker may still be measuring there: the device stays held, alone for a perf
        // job, until the lease ends (after a restart a second perf job was started beside it).
        l.exclusive = row.lease_exclusive || measures_speed(j.family_spec());
        l.device = row.lease_device;
        l.started_ms = row.lease_leased_at_ms;
      }
      m.index_job(m.jobs.insert(std::move(j)));
      return Status::Ok();
    };
    Status loaded = Status::Ok();
    if (prefetched != nullptr) {
      for (JobRow& row : prefetched->rows()) {
        loaded = load_row(row);
        if (!loaded.ok()) break;
      }
    } else if (f.from_store) {
      loaded = read_rows_beside(run_id, load_row);
    } else {
      loaded = m.store->for_each_job(run_id, /*with_spec=*/false, load_row);
    }
    AM_RETURN_IF_ERROR(loaded);
    for (auto& [entry, reason] : invalid) {
      m.settle(*entry, ResultStatus::kError, reason);
      if (m.fatal) return *m.fatal;
    }
    return rows;
  }

  // The run's rows walked on a read-only connection of a thread of their own and handed to
  // `visit` here in batches (coordinator/batch_pipe.h): SQLite steps on one core while the rows
  // are indexed on the other (a resume has nothing else to overlap; on one thread the walk was
  // 1.83 s of a million-job restart). Nothing writes the database meanwhile: the server holds its
  // lock and does not serve yet.
  Status read_rows_beside(const std::string& run_id, const std::function<Status(JobRow&)>& visit) {
    BatchPipe<JobRow> pipe(kReadBesideBatches, kReadBesideRows);
    std::jthread reader([&](std::stop_token stop) {
      // However this function is left (an exception in `visit` included), the jthread asks to
      // stop before it joins: the producer must not wait for a batch nobody will hand back.
      std::stop_callback unblock(stop, [&] { pipe.stop(); });
      auto ro = Store::open_read_only(store->path());
      if (!ro.ok()) return pipe.close(ro.status());
      BatchPipe<JobRow>::Batch* b = nullptr;
      Status walked = (*ro)->for_each_job(run_id, /*with_spec=*/false, [&](JobRow& row) -> Status {
        if (b == nullptr && (b = pipe.take_empty()) == nullptr) return unavailable("the rows are no longer wanted");
        std::swap(b->rows[b->size++], row);
        if (b->size == b->rows.size()) {
          pipe.put_full(b);
          b = nullptr;
        }
        return Status::Ok();
      });
      if (b != nullptr) pipe.put_full(b);
      pipe.close(std::move(walked));
    });
    Status visited = Status::Ok();
    while (BatchPipe<JobRow>::Batch* b = pipe.take_full()) {
      for (std::size_t i = 0; i < b->size && visited.ok(); ++i) visited = visit(b->rows[i]);
      pipe.put_empty(b);
      if (!visited.ok()) {
        pipe.stop();
        return visited;
      }
    }
    return pipe.status();
  }
  static constexpr std::size_t kReadBesideBatches = 4;
  static constexpr std::size_t kReadBesideRows = 4096;

  // A submitted or resumed run, its jobs loaded: served from now on.
  Status open_run(const std::string& run_id, bool had_work, double time_budget_s) {
    Impl& m = *this;
    m.runs.insert(run_id);
    // Plan jobs cancelled before a restart make no job for the hardware registering below.
    AM_ASSIGN_OR_RETURN(std::vector<std::string> cancelled, m.store->cancelled_plan_jobs(run_id));
    for (const std::string& id : cancelled) {
      if (auto pj = m.plan_jobs.find(id); pj != m.plan_jobs.end() && pj->second.run_id == run_id) pj->second.cancelled = true;
    }
    if (m.unplaced_plan_jobs(&run_id) > 0) had_work = true;
    if (had_work) m.runs_to_finish.insert(run_id);
    // A live coordinator: the workers already here get their share of the new run at once.
    for (const auto& [identity, session] : m.sessions) m.place_plan_jobs(session);
    if (m.fatal) return *m.fatal;
    if (time_budget_s > 0) {
      m.budget_s[run_id] = time_budget_s;
      m.budget_from_ms[run_id] = steady_ms();
    }
    if (!m.run_started_ms.count(run_id)) {
      m.run_started_ms[run_id] = now_epoch_ms();
      // A run finished before this session that gets no work in it: its elapsed time is the
      // stored one, fixed (after a restart it grew with the coordinator's uptime).
      if (!had_work) {
        AM_ASSIGN_OR_RETURN(std::optional<RunRecord> stored, m.store->get_run(run_id));
        if (stored && stored->finished_at_ms > 0 && stored->created_at_ms > 0) {
          m.run_started_ms[run_id] = stored->created_at_ms;
          m.run_finished_ms[run_id] = stored->finished_at_ms;
        }
      }
    }
    m.assign_dirty = true;
    return Status::Ok();
  }

  // ---- timers ------------------------------------------------------------------------------
  // Heartbeats to every worker when one is due, from inside a long operation of the loop (a
  // large submit's store writes): workers that hear nothing for their liveness reconnect.
  void keep_peers_alive() {
    const int64_t now = steady_ms();
    if (now - last_heartbeat_ms < opt.heartbeat_interval_ms) return;
    last_heartbeat_ms = now;
    for (const auto& [identity, s] : sessions) send(identity, proto::Heartbeat{});
  }

  // After a message whose handling kept the loop from reading for longer than a heartbeat
  // interval (a large submit), the workers' own heartbeats of that time are still queued: the
  // pause does not count against their liveness (each one's silence is moved on by its length).
  // Only the pause: a worker that is silent outside pauses is dropped as ever, however often the
  // loop pauses.
  void after_handling(int64_t started_ms) {
    const int64_t now = steady_ms();
    const int64_t paused = now - started_ms;
    if (paused <= opt.heartbeat_interval_ms) return;
    for (auto& [identity, s] : sessions) s.last_seen_ms = std::min(now, s.last_seen_ms + paused);
    logger()->info("the loop was busy for {} ms; that time does not count against the liveness of {} worker(s)",
                   paused, sessions.size());
    keep_peers_alive();
  }

  void run_timers() {
    if (fatal) return;
    const int64_t now = steady_ms();
    if (now - last_heartbeat_ms >= opt.heartbeat_interval_ms) {
      last_heartbeat_ms = now;
      for (const auto& [identity, s] : sessions) send(identity, proto::Heartbeat{});
    }
    // Silent workers and expired leases are looked for every kTimerScanMs (or half a heartbeat
    // interval, when that is shorter), not on every tick: with a thousand workers each tick
    // handles a message or two, and walking every session and lease per tick was most of an idle
    // coordinator's CPU (docs/SCALE.md).
    if (now - last_scan_ms >= std::min<int64_t>(kTimerScanMs, std::max<int64_t>(1, opt.heartbeat_interval_ms / 2))) {
      last_scan_ms = now;
      const int64_t dead_after = opt.heartbeat_interval_ms * opt.heartbeat_liveness;
      std::vector<std::string> dead;
      for (const auto& [identity, s] : sessions) {
        if (now - s.last_seen_ms > dead_after) dead.push_back(identity);
      }
      for (const auto& identity : dead) {
        remove_session(identity, "silent for more than " + std::to_string(dead_after) + " ms");
      }
      const int64_t epoch = now_epoch_ms();
      for (JobEntry* jp : all_leased()) {
        JobEntry& j = *jp;
        if (j.state == JobState::kLeased && j.lease().expires_at_ms > 0 && epoch > j.lease().expires_at_ms) {
          send_to_worker(j.lease().worker, proto::Cancel{j.job_id, j.lease().attempt, "lease expired"});
          ++counters.leases_expired;
          lease_lost(j, "lease expired");
        }
      }
    }
    // The net under the narrow passes: whatever let a session take work without an event of
    // its own (a peer quarantine running out, say) is seen within full_pass_interval_ms.
    if (count_queued > 0 && now - last_full_pass_ms >= opt.full_pass_interval_ms) assign_dirty = true;
    if (!pending.empty() &&
        (static_cast<int>(pending.size()) >= reliability::kStoreBatchMax ||
         now - pending_since_ms >= reliability::kStoreBatchMaxDelayMs)) {
      flush_results();
    }
    if (now - last_db_check_ms >= kDbFileCheckMs) {
      last_db_check_ms = now;
      if (Status st = store->check_file_identity(); !st.ok()) return storage_fault("checking the database file", st);
    }
    enforce_time_budgets(now);
    run_health_timers();
    finish_completed_runs();
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
    if (budget_s.empty() || serve_started_ms == 0 || first_worker_ms == 0) return;
    for (const auto& [run_id, budget] : budget_s) {
      const int64_t from = std::max({serve_started_ms, first_worker_ms, budget_from_ms[run_id]});
      // Compared as doubles: a budget of 1e19 s cast to int64 ms overflowed (undefined; here it
      // came out negative) and every job of the run was skipped at once.
      if (static_cast<double>(now - from) < budget * 1000.0) continue;
      const std::string reason = fmt::format("time budget: the plan's time_budget_s = {:g} ran out before it started", budget);
      if (budget_spent.insert(run_id).second) {
        const int queued = unplaced_plan_jobs(&run_id) + queued_by_run[run_id];
        logger()->warn("run {}: time budget of {:g} s ran out; no new job starts, {} job(s) not started are skipped",
                       run_id, budget, queued);
        // No class registering from now on gets a share of it.
        closed_runs.insert(run_id);
        settle_unplaced(run_id, ResultStatus::kSkipped, reason);
        if (fatal) return;
      }
      if (queued_by_run[run_id] == 0) continue;
      for (JobEntry* j : by_seq) {
        if (j != nullptr && j->run_id() == run_id && j->state == JobState::kQueued) settle(*j, ResultStatus::kSkipped, reason);
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
  if (options.health_interval_ms < 0 || options.quarantine_after < 0 || options.quarantine_backoff_ms <= 0) {
    return invalid_argument("health interval and quarantine settings must not be negative");
  }
  if (sodium_init() < 0) return internal_error("libsodium failed to initialise");
  std::optional<CurveServerConfig> curve = options.curve;
  if (!options.admin_keys.empty()) {
    if (!curve) return invalid_argument("admin keys (--curve-admin) need CURVE (--curve-key)");
    for (const auto& key : options.admin_keys) {
      if (std::find(curve->allowed_client_keys.begin(), curve->allowed_client_keys.end(), key) !=
          curve->allowed_client_keys.end()) {
        return invalid_argument("key " + key + " is both a worker key (--curve-allow) and an admin key "
                                "(--curve-admin); give admins their own keys");
      }
    }
    // An empty worker allow-list admits any client that knows the server key; otherwise the
    // admins must be admitted too.
    if (!curve->allowed_client_keys.empty()) {
      curve->allowed_client_keys.insert(curve->allowed_client_keys.end(), options.admin_keys.begin(),
                                        options.admin_keys.end());
    }
  }
  // The endpoint first: a port that is taken must not leave a new, empty database behind.
  auto router = RouterEndpoint::bind(options.bind, curve ? &*curve : nullptr);
  if (!router.ok()) return router.status().with_context("binding " + options.bind);
  auto store = Store::open(options.db_path);
  if (!store.ok()) return store.status().with_context("opening " + options.db_path.string());
  auto impl = std::make_unique<Impl>(options, std::move(store).value(), std::move(router).value());
  impl->store->set_busy_hook([raw = impl.get()] { raw->keep_peers_alive(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::submit(const jobs::Plan& plan, const std::string& run_id, const SubmitOptions& submit) {
  return impl_->submit(plan, run_id, submit);
}

Result<ResumeOutcome> Server::resume(const jobs::PlanSummary& summary, const std::string& run_id,
                                     const std::string& plan_digest, PrefetchedJobs* prefetched) {
  return impl_->resume(summary, run_id, plan_digest, prefetched);
}

Result<int> Server::resume_submitted_runs() { return impl_->resume_submitted_runs(); }
Status Server::warn_unserved_runs() { return impl_->warn_unserved_runs(); }

Result<int> Server::reclaim_leases(const std::function<bool(const std::string&, const std::string&)>& gone,
                                   const std::string& reason) {
  Impl& m = *impl_;
  int reclaimed = 0;
  for (JobEntry* jp : m.all_leased()) {
    JobEntry& j = *jp;
    if (!gone(j.lease().worker, j.lease().host)) continue;
    const std::string why = reason + " (worker " + j.lease().worker + ")";
    AM_RETURN_IF_ERROR(m.store->expire_lease(j.run_id(), j.job_id, j.lease().attempt, why, now_epoch_ms()));
    logger()->info("job {} attempt {}: lease reclaimed: {}", j.job_id, j.lease().attempt, why);
    j.lease_mut().worker.clear();
    j.lease_mut().host.clear();
    j.lease_mut().attempt = 0;
    m.set_state(j, JobState::kQueued);
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
std::vector<std::string> Server::runs() const { return {impl_->runs.begin(), impl_->runs.end()}; }
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
          {"progress_dropped_forged", progress_dropped_forged},
          {"results_duplicate", results_duplicate},
          {"leases_expired", leases_expired},
          {"leases_reclaimed", leases_reclaimed},
          {"leases_silent", leases_silent},
          {"registrations", registrations},
          {"reregistrations", reregistrations},
          {"quarantines", quarantines},
          {"leases_interrupted", leases_interrupted},
          {"control_requests", control_requests},
          {"control_refused", control_refused},
          {"health_checks", health_checks},
          {"device_quarantines", device_quarantines}};
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
  // The plan's expansion and the store's read-back freed far more heap than serving keeps (a
  // million-job plan: gigabytes); hand it back to the system before the long haul.
  release_free_heap();
  m.serve_started_ms = steady_ms();
  m.last_tick_notify_ms = m.serve_started_ms;
  m.notify();
  int64_t drain_started_ms = 0;
  while (!stop.load()) {
    if (m.fatal) return *m.fatal;
    auto first = m.router.recv(static_cast<int>(reliability::kPollTickMs));
    if (!first.ok()) return first.status().with_context("coordinator receive");
    if (first->has_value()) {
      int64_t started = steady_ms();
      m.handle(**first);
      m.after_handling(started);
      for (int i = 1; i < kMaxMessagesPerTick; ++i) {
        auto more = m.router.recv(0);
        if (!more.ok()) return more.status().with_context("coordinator receive");
        if (!more->has_value()) break;
        started = steady_ms();
        m.handle(**more);
        m.after_handling(started);
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
          m.run_finished_ms[run_id] = now_epoch_ms();
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
