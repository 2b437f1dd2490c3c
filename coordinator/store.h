// The result store: all coordinator state in one SQLite file.
//
// Contract:
// - open() creates or migrates the database (WAL mode, foreign keys on, a `schema_version`
//   table; migrations are applied in order inside a transaction and are idempotent). A file
//   that is not an accelmatrix database, or one with a newer schema than this build knows,
//   is refused with a clear error and left untouched.
// - Every write method runs in its own transaction (or a batch in one); a failure rolls back
//   and leaves what was stored before intact.
// - Idempotent storage: add_jobs() ignores jobs already present; store_results() stores each
//   (job, attempt) at most once. A job's terminal result is set once, by the first terminal
//   result stored for it; a later result of another attempt is kept as that attempt's record
//   and never overrides it.
// - The file is watched: every write checks that the database path still names the file that
//   was opened (same st_dev/st_ino), before it starts and after it commits. A file removed or
//   replaced underneath (deleted, moved, restored from a backup) fails the write with
//   kIoError naming the file, so the caller never acknowledges a result it did not store in
//   the database it will read back.
// - open_read_only() is for readers (`report`, `compare`): it opens an existing database and
//   never writes a row, migrates or creates the file, so it works on a file mode 0444, in a
//   read-only directory and beside a running coordinator (WAL: readers never wait for the
//   writer, and the coordinator's DB.lock is not taken). Where this process may write the file
//   and its directory, the connection is read-write with `PRAGMA query_only` (so closing it
//   removes the -wal/-shm it created, as every other connection does); elsewhere it is
//   SQLITE_OPEN_READONLY (`mode=ro`). A schema older than
//   kSchemaVersion but at least kMinReadableSchemaVersion is read as it is (the tables reports
//   read exist since version 1); a newer one is refused with the version numbers. Where SQLite
//   cannot set up WAL shared memory (read-only directory, no -wal/-shm beside the file) and no
//   -wal file exists (so no writer is live), the file is opened `immutable`. Write methods of a
//   read-only Store fail with kIoError ("attempt to write a readonly database").
// - Not thread-safe: one Store per thread (SQLite connections are cheap; WAL allows a reader
//   process such as `accelmatrix report` beside a writing coordinator).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/protocol.h"
#include "common/result_status.h"
#include "common/status.h"
#include "coordinator/spec_families.h"
#include "coordinator/job_state.h"
#include "coordinator/wal_checkpointer.h"
#include "jobs/plan.h"

struct sqlite3;

namespace am::coord {
namespace sqlite {
class Statement;
}

inline constexpr int kSchemaVersion = 9;   // 2: worker_credentials, counters; 3: interrupted attempts, runs.plan_hash;
                                          // 4: device_events; 5: placement targets, exclusive attempts, host ids;
                                          // 6: specs stored once per family (spec_families.h); 7: runs.plan_digest;
                                          // 8: run_submissions, plan_jobs.cancelled; 9: state CHECKs without IN lists
// The oldest schema open_read_only() reads without migrating: runs, jobs, attempts and workers
// (everything report_rows(), list_runs() and list_workers() read) have not changed since
// version 1, except runs.plan_hash (3), which is read only where the column exists, and
// jobs.family_id (6), read as 0 (every spec whole) below it.
inline constexpr int kMinReadableSchemaVersion = 1;

struct RunRecord {
  std::string run_id;
  std::string plan_name;
  std::string plan_path;
  std::string description;
  int64_t created_at_ms = 0;
  int64_t finished_at_ms = 0;      // 0 while running
  std::string plan_hash;           // jobs::plan_hash() of the plan last submitted; "" before schema 3
  // jobs::plan_inputs_digest() of the plan whose jobs the run holds, written once they are all
  // stored (set_plan_digest) and cleared by any change of the plan hash; "" when not known (before
  // schema 7, a plan submitted over the control socket). A restart whose plan has this digest
  // reads the run from the store instead of expanding the plan (Server::resume).
  std::string plan_digest;
};

// Job lifecycle in the store: queued -> leased -> done (terminal). An expired lease puts the
// job back to queued with the attempt counter kept.
struct JobRow {
  std::string run_id;
  std::string job_id;
  nlohmann::json spec;             // jobs::JobSpec document
  JobState state = JobState::kQueued;
  int attempts = 0;                // highest attempt number issued so far (0 = never leased)
  std::optional<ResultStatus> status;   // terminal status when done
  std::string reason;
  int terminal_attempt = 0;        // attempt whose result is the job's result (0 = none)
  // The currently outstanding lease, when state == leased.
  std::string lease_worker;
  std::string lease_host;          // the worker's hostname when the lease was recorded
  int64_t lease_expires_at_ms = 0;
  std::string lease_device;        // the device it was assigned to ("" when stored without one)
  int64_t lease_leased_at_ms = 0;
  bool lease_exclusive = false;    // it holds its hardware alone (a perf job)
  std::string target;              // placement target (jobs/placement.h); "" for any
  std::string hardware_class;      // the class the job was made for; "" for any
  std::string plan_job_id;         // the plan job it was made from ("" before schema 5, and for
                                   // `any` jobs stored from schema 6 on: their own)
  // The row's columns a spec is rendered from (schema 6, coordinator/spec_families.h), read in
  // every walk: its model and backend, its spec family (0: the spec is stored whole) and its
  // scalars (nullopt when the stored precision is not one).
  std::string model;
  std::string backend;
  int64_t family_id = 0;
  std::optional<jobs::JobScalars> scalars;
};

// A run's spec family as stored (Store::spec_families_of_run): its spec with neutral scalars,
// or why it cannot be read.
struct StoredSpecFamily {
  std::optional<jobs::JobSpec> spec;
  std::string damage;
};

struct LeaseRecord {
  std::string run_id;
  std::string job_id;
  int attempt = 0;
  std::string worker_id;
  std::string device;
  std::string hardware_class;
  int64_t leased_at_ms = 0;
  int64_t lease_expires_at_ms = 0;
  // The attempt holds its hardware alone: nothing else runs on the device or, for a device
  // that shares its host's cores, on any such device of the same host (a perf job).
  bool exclusive = false;
};

struct ResultRecord {
  std::string run_id;
  std::string job_id;
  int attempt = 0;
  std::string worker_id;
  ResultStatus status = ResultStatus::kError;
  std::string reason;
  // The metrics: as JSON text when `metrics_json` is set (a RESULT's, decoded straight to text:
  // proto::JobResult::metrics_json, i.e. what to_json_text() writes for an object), stored as
  // it is; else the tree, written with to_json_text().
  nlohmann::json metrics = nlohmann::json::object();
  std::string metrics_json;
  std::string log_tail;
  int64_t started_at_ms = 0;
  int64_t finished_at_ms = 0;
  int64_t received_at_ms = 0;
};

// A RESULT from the wire as the store takes it (Server::on_result; bench_scale's ingest times the
// same): the reason, metrics text and log tail moved out of `r` (a result is ~1 KiB of JSON),
// its ids and times copied.
ResultRecord result_record_of(proto::JobResult& r, const std::string& run_id, const std::string& worker_id,
                              int64_t received_at_ms);

struct StoredOutcome {
  bool duplicate = false;          // this (job, attempt) already had a result: nothing changed
  bool became_terminal = false;    // this result is now the job's terminal result
  // A `cancelled` result of an attempt the coordinator had already closed (expired or
  // interrupted): the cancellation was the coordinator's own doing, so the attempt keeps its
  // record and the job is not settled by it. Nothing changed; the result is still ACKed.
  bool discarded = false;
};

// The credential a worker id is bound to (PROTOCOL §5.8): under CURVE the client public key
// (Z85) of its first registration; without CURVE a hash of its registration secret.
struct WorkerCredential {
  std::string worker_id;
  std::string curve_key;           // "" when bound without CURVE
  std::string secret_hash;         // hex; "" when bound by key
  int64_t bound_at_ms = 0;
};

struct WorkerRecord {
  std::string worker_id;
  std::string hostname;
  std::string build;
  nlohmann::json capabilities = nlohmann::json::object();
  nlohmann::json tags = nlohmann::json::object();
  int64_t last_seen_at_ms = 0;
  std::string host_id;             // HELLO host_id; "" from workers before protocol 1.5
};

// Health and quarantine history of a device (schema 4). `device` is "" for an event about the
// whole worker (drained, a release of every device).
struct DeviceEvent {
  int64_t at_ms = 0;
  std::string worker_id;
  std::string device;
  std::string event;               // health_pass | health_fail | quarantined | lifted | released | drained
  std::string reason;
};

// A run's jobs by where they stand, for `accelmatrix runs`.
struct RunCounts {
  std::string run_id;
  int total = 0;                   // jobs, and plan jobs not placed yet
  int queued = 0;                  // of which waiting, unplaced ones included
  int unplaced = 0;                // plan jobs not yet made for any class or device
  int leased = 0;
  std::map<std::string, int> by_status;   // terminal jobs per status name
};

// One row per job for reports: the job, its terminal attempt's result and provenance.
struct ReportRow {
  std::string run_id;
  std::string job_id;
  nlohmann::json spec;
  std::string model, architecture, backend;
  // The model as the matrix and the memory table show it: `model`, or, where the run has this
  // model name under more than one config (plan entries with different overrides, an --extend
  // that changed them), "name (key=value, ...)" by every config key that differs among them, so
  // that no cell pools different models. Per run, so not a key across runs (compare keys on
  // `model`). Commands keep their label.
  std::string model_label;
  jobs::Precision precision = jobs::Precision::kF32;
  JobState state = JobState::kQueued;
  std::optional<ResultStatus> status;   // nullopt while not terminal
  std::string reason;
  int attempt = 0;                 // terminal attempt (or latest attempt when not terminal)
  int attempts = 0;
  std::string worker_id;
  std::string hostname;
  std::string build;
  std::string hardware_class;      // of the attempt shown; else the class the job was made for
  std::string device;
  nlohmann::json metrics = nlohmann::json::object();
  std::string log_tail;
  int64_t started_at_ms = 0;
  int64_t finished_at_ms = 0;
  std::string target;              // placement target; "" for any (and before schema 5)
  bool exclusive = false;          // the attempt shown held its hardware alone (schema 5)
};

// What a streaming report reads of a row beyond ReportRow: the stored documents as JSON text,
// verbatim when the stored text is a valid JSON object (our own compact dump, keys sorted), else
// the JSON of what the row shows instead ("{}" for metrics that are damaged or not an object;
// for a damaged spec the {batch, seq_len} of its columns).
struct ReportRowTexts {
  std::string_view spec_json;
  std::string_view metrics_json;
};

// Which top-level members of the stored documents a report row carries as trees: nullptr for
// the whole document. Projections cost a fraction of the whole (coordinator/stored_json.h); the
// texts are whole either way.
struct ReportDocumentKeys {
  const std::vector<std::string_view>* spec = nullptr;
  const std::vector<std::string_view>* metrics = nullptr;
};

using ReportRowVisitor = std::function<Status(const ReportRow&, const ReportRowTexts&)>;

// A plan sent with CONTROL `submit`, as the coordinator parsed it (Store::record_submission).
struct SubmissionRecord {
  std::string run_id;
  int64_t seq = 0;              // 1, 2, ... per run, in submission order
  std::string plan_text;        // the TOML text
  std::string plan_name;        // the file name the client read it from (for messages)
  bool extend = false;          // submitted with --extend
  int64_t submitted_at_ms = 0;
};

class Store {
 public:
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& db_path);
  // For readers; see the contract above. kNotFound when the file does not exist,
  // kFailedPrecondition for a file that is not an accelmatrix database or has a newer schema.
  static Result<std::unique_ptr<Store>> open_read_only(const std::filesystem::path& db_path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;

  // Runs.
  Status upsert_run(const RunRecord& run);               // insert, or keep the existing row
  // Records the plan a run now follows (after --extend, or a run from before schema 3 adopting
  // the hash of a plan that matches its jobs): name, path, description and hash.
  Status set_run_plan(const RunRecord& run);
  // Replaces the run's stored plan hash only (the same plan's hash under a newer definition).
  // Both clear the run's plan digest: the run's jobs no longer come from one known plan text.
  Status set_plan_hash(const std::string& run_id, const std::string& plan_hash);
  // Records the digest of the plan the run's jobs were all stored from (RunRecord::plan_digest);
  // called last, after the jobs are committed, so a run found with a digest holds every job of it.
  Status set_plan_digest(const std::string& run_id, const std::string& plan_digest);
  Result<std::optional<RunRecord>> get_run(const std::string& run_id);
  Result<std::vector<RunRecord>> list_runs();            // newest first
  Status mark_run_finished(const std::string& run_id, int64_t at_ms);
  // Job counts of every run (any order; runs without jobs are absent).
  Result<std::vector<RunCounts>> run_counts();

  // Plans sent with CONTROL `submit` (schema 8), kept so that a restarted `serve` serves their
  // runs again (Server::resume_submitted_runs). record_submission() appends one as the run's next
  // (seq from 1), unless the run's last one has the same text and extend flag (a plan submitted
  // twice adds nothing). unfinished_submissions(): every one of the runs not marked finished,
  // by run id then seq; nothing below schema 8.
  Status record_submission(const SubmissionRecord& submission);
  Result<std::vector<SubmissionRecord>> unfinished_submissions();
  // `accelmatrix cancel PLAN_JOB_ID` of a plan job placed each-class / each-device: it makes no
  // job for hardware registering later, across restarts too. kNotFound when the run has no such
  // plan job. cancelled_plan_jobs(): the run's, in any order (nothing below schema 8).
  Status mark_plan_job_cancelled(const std::string& run_id, const std::string& plan_job_id);
  Result<std::vector<std::string>> cancelled_plan_jobs(const std::string& run_id);
  // Whether the run has followed a plan of this hash (now or before an --extend; schema 8 keeps
  // them; below it only the run's current hash counts).
  Result<bool> run_followed_plan(const std::string& run_id, const std::string& plan_hash);
  // The ids of the run's plan jobs (placed each-class / each-device), in any order.
  Result<std::vector<std::string>> plan_job_ids(const std::string& run_id);

  // Jobs. Returns how many were newly inserted (0 when the plan was already submitted).
  // `hardware_classes`, when given, has one entry per job: the class it is made for; `plan_job_ids`
  // likewise the plan job each was made from (default: the job's own id). `own_plan_job`: how a
  // job that is its own plan job records that — kId (stand-ins of placed plan jobs, which the
  // unplaced-plan-job queries find by it) or kUnindexed (`any` jobs, no plan_jobs row: stored as
  // '' and kept out of the plan-job index, schema 6; JobRow::plan_job_id).
  enum class OwnPlanJob { kId, kUnindexed };
  Result<int> add_jobs(const std::string& run_id, const std::vector<jobs::PlannedJob>& jobs,
                       const std::vector<std::string>& hardware_classes = {},
                       const std::vector<std::string>& plan_job_ids = {},
                       OwnPlanJob own_plan_job = OwnPlanJob::kId);
  // Plan jobs placed each-class / each-device (docs/PLANS.md "Placement"): stored so that runs and
  // reports list those not yet made into jobs. Idempotent like add_jobs(); returns how many were new.
  Result<int> add_plan_jobs(const std::string& run_id, const std::vector<jobs::PlannedJob>& plan_jobs);
  // Removes a job that never had an attempt (the stand-in settled `skipped` for a plan job no
  // registered hardware could take, once hardware that can take it arrives). kFailedPrecondition
  // when the job has attempts: results are never deleted.
  Status remove_unattempted_job(const std::string& run_id, const std::string& job_id);
  Result<std::vector<JobRow>> load_jobs(const std::string& run_id);
  // The same rows one at a time, in submission order, without holding them all (a million-job run
  // restarts without a million rows in memory). Without `with_spec` each row's spec is null:
  // job_spec() reads one. A visit that returns an error stops the walk with it.
  Status for_each_job(const std::string& run_id, bool with_spec, const std::function<Status(JobRow&)>& visit);
  // SQLite's PRAGMA data_version of this connection: it changes when another connection (of
  // this process or another) commits to the database.
  Result<int64_t> data_version();
  Result<nlohmann::json> job_spec(const std::string& run_id, const std::string& job_id);
  // Jobs of the run without a placement target (`any` jobs and stand-ins), and its plan jobs.
  Result<int64_t> count_untargeted_jobs(const std::string& run_id);
  Result<int64_t> count_plan_jobs(const std::string& run_id);
  // The run's spec families by id (nothing below schema 6), each parsed and checked whole.
  Result<std::unordered_map<int64_t, StoredSpecFamily>> spec_families_of_run(const std::string& run_id);
  // The run's plan jobs in plan order: id and spec, or the error its stored spec reads to.
  Status for_each_plan_job(const std::string& run_id,
                           const std::function<Status(const std::string& job_id, Result<jobs::JobSpec>& spec)>& visit);

  // Leases: records attempt `attempt` as leased and the job as state=leased.
  Status record_lease(const LeaseRecord& lease);
  // Several leases in one transaction (one scheduling pass): all are recorded or none is; the
  // error names the lease that failed.
  Status record_leases(const std::vector<LeaseRecord>& leases);
  // The lease of (job, attempt) ran out or its worker was lost: the attempt is closed with
  // `reason`, the job goes back to queued (unless already done).
  Status expire_lease(const std::string& run_id, const std::string& job_id, int attempt,
                      const std::string& reason, int64_t at_ms);
  // A clean stop released the lease of (job, attempt): the attempt is closed as `interrupted`
  // (state and status) with `reason`, and the job goes back to queued like an expiry. Unlike an
  // expiry it is nobody's failure. No-op when the attempt is no longer leased.
  Status interrupt_lease(const std::string& run_id, const std::string& job_id, int attempt,
                         const std::string& reason, int64_t at_ms);
  // Terminal status without a result from a worker (skipped, lost). No-op if already done.
  Status set_job_terminal(const std::string& run_id, const std::string& job_id,
                          ResultStatus status, const std::string& reason, int64_t at_ms);

  // Stores a batch of results in one transaction; outcome i belongs to results[i].
  Result<std::vector<StoredOutcome>> store_results(const std::vector<ResultRecord>& results);

  // The worker an attempt was leased to, if that attempt exists. Lets the coordinator accept a
  // late result of an older attempt from its rightful worker (and only from it).
  // The run of the attempt `attempt` of `job_id` that is leased to `worker_id`, if there is one
  // (for a RESULT of a job the serving coordinator has not loaded: a run submitted to a
  // coordinator that restarted since). Read through the attempts' worker index.
  Result<std::optional<std::string>> leased_attempt_run(const std::string& worker_id, const std::string& job_id,
                                                        int attempt);
  Result<std::optional<std::string>> attempt_worker(const std::string& run_id,
                                                    const std::string& job_id, int attempt);

  // Workers (registry provenance).
  Status upsert_worker(const WorkerRecord& worker);
  // Every registered worker with its last capability record, ordered by worker id.
  Result<std::vector<WorkerRecord>> list_workers();
  // True when some attempt of this worker has a stored result (the worker has answered).
  Result<bool> worker_has_results(const std::string& worker_id);

  // Identity binding. bind_credential() stores the binding unless the id is bound already
  // (first registration wins; an existing binding is never changed).
  Result<std::optional<WorkerCredential>> get_credential(const std::string& worker_id);
  Status bind_credential(const WorkerCredential& credential);

  // Device events (schema 4). list_device_events() returns the newest `limit` events, oldest
  // first; on a database older than schema 4 (read-only) it returns none.
  Status record_device_event(const DeviceEvent& event);
  Result<std::vector<DeviceEvent>> list_device_events(int limit);
  // Server counters (name -> value), kept across restarts for `status`.
  Status save_counters(const std::map<std::string, uint64_t>& counters, int64_t at_ms);
  Result<std::map<std::string, uint64_t>> load_counters();

  // Called every kBusyHookRows rows of a bulk write or walk (add_jobs, add_plan_jobs, for_each_job,
  // for_each_plan_job), on the caller's
  // thread (the hook must not use the store): a coordinator storing a large submitted plan keeps its workers' heartbeats going
  // (Server) instead of going silent for seconds. Empty: none.
  static constexpr std::size_t kBusyHookRows = 256;
  void set_busy_hook(std::function<void()> hook) { busy_hook_ = std::move(hook); }

  // OK while the database path still names the opened file (see the contract above).
  Status check_file_identity() const;
  const std::filesystem::path& path() const { return path_; }
  bool read_only() const { return read_only_; }
  // Opened read-only with `immutable=1` (read-only directory, no writer); for messages and tests.
  bool immutable() const { return immutable_; }

  // Reports: one row per job of the run, in job order, then one per plan job not placed yet
  // (state queued, no class: it reached no hardware).
  Result<std::vector<ReportRow>> report_rows(const std::string& run_id);
  // The same rows one at a time, in the same order, without holding them: a row (and the texts)
  // is valid only during its visit. `keys` may ask for projected documents (ReportDocumentKeys).
  // A visitor's error stops the walk and is returned. The query runs on a thread of its own
  // while rows are visited: the visitor must not use this store.
  Status for_each_report_row(const std::string& run_id, const ReportDocumentKeys& keys,
                             const ReportRowVisitor& visit);
  // Runs `body` in one read transaction: every read in it sees the same state of the database
  // (WAL snapshot), whatever a coordinator commits meanwhile. Not nested.
  Status in_read_snapshot(const std::function<Status()>& body);
  // Runs `body` in one write transaction: what it stores is committed together when it returns
  // OK, and nothing of it when it fails or the process dies first. The store's own transactions
  // inside become savepoints (sqlite_transaction.h). Not for long bodies: it holds the write
  // lock throughout. The file's identity is checked after the commit.
  Status atomically(const std::function<Status()>& body);

 private:
  Store(sqlite3* db, std::filesystem::path path, uint64_t dev, uint64_t ino);
  // A statement of the per-message paths (leases, results), prepared once per connection and
  // reset after each use (CachedStatement) — parsing the SQL each time cost a quarter of the
  // coordinator's CPU at dispatch rate (docs/SCALE.md).
  class CachedStatement;
  Result<CachedStatement> cached(std::string_view sql);
  // Runs `sql` (?1 the run id, ?2 `value`) that changes one run's row: kNotFound when the run is
  // not there; the file's identity checked before and after.
  Status update_run(std::string_view sql, const std::string& run_id, const std::string& value);
  Status record_lease_in_transaction(const LeaseRecord& lease);
  std::unordered_map<std::string, std::unique_ptr<sqlite::Statement>> statements_;
  SpecFamilies families_;   // the spec families read so far (immutable rows: never stale)
  int families_schema_ = 0;  // the file's schema version as job_spec() last read it
  sqlite3* db_;
  std::filesystem::path path_;
  uint64_t dev_ = 0;
  uint64_t ino_ = 0;
  // When the file at the path was replaced or removed, this connection's -wal and -shm are
  // moved aside (once): left at the path, SQLite would replay the old file's pages onto whatever
  // database is put there next. What was moved is said in every identity error after.
  mutable std::string sidecars_moved_;
  void set_sidecars_aside() const;
  bool read_only_ = false;
  std::unique_ptr<WalCheckpointer> checkpointer_;   // writers only; reset first in ~Store
  std::function<void()> busy_hook_;
  void busy_tick(std::size_t row) const {
    if (busy_hook_ && row > 0 && row % kBusyHookRows == 0) busy_hook_();
  }
  bool immutable_ = false;
};

// A run's job rows (without specs) read ahead on a read-only connection, so that a restart
// reads them while its plan expands (docs/SCALE.md, restart), and can tell later whether they
// are still what the database holds: nothing committed since they were read, by any other
// connection (the coordinator's own included).
class PrefetchedJobs {
 public:
  // The rows of the database's only run (none when it holds no run or several: the caller reads
  // them itself then), when the database exists at the current schema version. Errors are
  // returned, never fatal to the caller: it reads the rows the ordinary way.
  // `wanted` (optional) is the run the caller will submit to, once it knows it (the plan's name,
  // known when the plan has been read): the read stops early when it reads another run.
  struct Wanted {
    std::mutex mu;
    std::optional<std::string> run_id;
  };
  static Result<PrefetchedJobs> read(const std::filesystem::path& db_path, Wanted* wanted = nullptr);
  const std::string& run_id() const { return run_id_; }
  // Whether the rows are still current (false on any error).
  bool current();
  std::vector<JobRow>& rows() { return rows_; }

 private:
  std::unique_ptr<Store> store_;
  std::string run_id_;
  int64_t version_ = 0;
  std::vector<JobRow> rows_;
};

}  // namespace am::coord
