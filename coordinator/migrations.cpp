#include "coordinator/migrations.h"

#include <sqlite3.h>

#include <cstring>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/sqlite_statement.h"
#include "coordinator/sqlite_transaction.h"

namespace am::coord {
namespace {

// Version 1. Timestamps are unix epoch milliseconds (0 = not yet). Text columns default to ''
// rather than NULL so readers need no NULL handling. jobs.seq keeps plan order independent of
// rowids (VACUUM may renumber those). attempts.hostname/build snapshot the worker's provenance
// when the attempt is leased or reported, so a worker that upgrades later does not rewrite the
// history of its earlier results.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version (
  version     INTEGER PRIMARY KEY,
  applied_at  INTEGER NOT NULL
);

CREATE TABLE runs (
  run_id       TEXT PRIMARY KEY,
  plan_name    TEXT NOT NULL DEFAULT '',
  plan_path    TEXT NOT NULL DEFAULT '',
  description  TEXT NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL DEFAULT 0,
  finished_at  INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE jobs (
  run_id            TEXT NOT NULL REFERENCES runs(run_id),
  job_id            TEXT NOT NULL,
  seq               INTEGER NOT NULL,
  spec_json         TEXT NOT NULL,
  model             TEXT NOT NULL,
  architecture      TEXT NOT NULL,
  backend           TEXT NOT NULL,
  precision         TEXT NOT NULL,
  batch             INTEGER NOT NULL,
  seq_len           INTEGER NOT NULL,
  state             TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'leased', 'done')),
  attempts          INTEGER NOT NULL DEFAULT 0,
  status            TEXT NOT NULL DEFAULT '',
  reason            TEXT NOT NULL DEFAULT '',
  terminal_attempt  INTEGER NOT NULL DEFAULT 0,
  created_at        INTEGER NOT NULL DEFAULT 0,
  finished_at       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, job_id)
);
CREATE INDEX jobs_by_run_seq ON jobs(run_id, seq);
CREATE INDEX jobs_by_run_state ON jobs(run_id, state);

CREATE TABLE workers (
  worker_id          TEXT PRIMARY KEY,
  hostname           TEXT NOT NULL DEFAULT '',
  build              TEXT NOT NULL DEFAULT '',
  capabilities_json  TEXT NOT NULL DEFAULT '{}',
  tags_json          TEXT NOT NULL DEFAULT '{}',
  first_seen         INTEGER NOT NULL DEFAULT 0,
  last_seen          INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE attempts (
  run_id            TEXT NOT NULL,
  job_id            TEXT NOT NULL,
  attempt           INTEGER NOT NULL CHECK (attempt >= 1),
  worker_id         TEXT NOT NULL DEFAULT '',
  hostname          TEXT NOT NULL DEFAULT '',
  build             TEXT NOT NULL DEFAULT '',
  device            TEXT NOT NULL DEFAULT '',
  hardware_class    TEXT NOT NULL DEFAULT '',
  leased_at         INTEGER NOT NULL DEFAULT 0,
  lease_expires_at  INTEGER NOT NULL DEFAULT 0,
  expired_at        INTEGER NOT NULL DEFAULT 0,
  state             TEXT NOT NULL CHECK (state IN ('leased', 'done', 'expired')),
  status            TEXT NOT NULL DEFAULT '',
  reason            TEXT NOT NULL DEFAULT '',
  metrics_json      TEXT NOT NULL DEFAULT '{}',
  log_tail          TEXT NOT NULL DEFAULT '',
  started_at        INTEGER NOT NULL DEFAULT 0,
  finished_at       INTEGER NOT NULL DEFAULT 0,
  received_at       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, job_id, attempt),
  FOREIGN KEY (run_id, job_id) REFERENCES jobs(run_id, job_id)
);
CREATE INDEX attempts_by_worker ON attempts(worker_id);

PRAGMA application_id = 1095587889;
)sql";

// Version 2 (reliability). worker_credentials binds a worker id to the credential of its first
// registration (PROTOCOL §5.8): the CURVE public key, or a hash of the worker's secret — never
// the secret itself. counters keeps the server's reliability counters (frames dropped, HELLOs
// refused, ...) across restarts, for `status`.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE worker_credentials (
  worker_id    TEXT PRIMARY KEY,
  curve_key    TEXT NOT NULL DEFAULT '',
  secret_hash  TEXT NOT NULL DEFAULT '',
  bound_at     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE counters (
  name        TEXT PRIMARY KEY,
  value       INTEGER NOT NULL DEFAULT 0,
  updated_at  INTEGER NOT NULL DEFAULT 0
);
)sql";

// Version 3 (fleet operations, issue 13). attempts gains the state 'interrupted' (a lease
// released by a clean stop, coordinator/job_state.h): SQLite cannot change a CHECK constraint in
// place, so the table is rebuilt with every row copied as it was (nothing references attempts).
// runs gains plan_hash, the hash of the plan's expanded job specs (jobs::plan_hash), so a changed
// plan under the same run id is refused instead of merged; '' on runs made before version 3, which
// adopt the hash of the first plan that matches their jobs.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE attempts_v3 (
  run_id            TEXT NOT NULL,
  job_id            TEXT NOT NULL,
  attempt           INTEGER NOT NULL CHECK (attempt >= 1),
  worker_id         TEXT NOT NULL DEFAULT '',
  hostname          TEXT NOT NULL DEFAULT '',
  build             TEXT NOT NULL DEFAULT '',
  device            TEXT NOT NULL DEFAULT '',
  hardware_class    TEXT NOT NULL DEFAULT '',
  leased_at         INTEGER NOT NULL DEFAULT 0,
  lease_expires_at  INTEGER NOT NULL DEFAULT 0,
  expired_at        INTEGER NOT NULL DEFAULT 0,
  state             TEXT NOT NULL CHECK (state IN ('leased', 'done', 'expired', 'interrupted')),
  status            TEXT NOT NULL DEFAULT '',
  reason            TEXT NOT NULL DEFAULT '',
  metrics_json      TEXT NOT NULL DEFAULT '{}',
  log_tail          TEXT NOT NULL DEFAULT '',
  started_at        INTEGER NOT NULL DEFAULT 0,
  finished_at       INTEGER NOT NULL DEFAULT 0,
  received_at       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, job_id, attempt),
  FOREIGN KEY (run_id, job_id) REFERENCES jobs(run_id, job_id)
);
INSERT INTO attempts_v3 (run_id, job_id, attempt, worker_id, hostname, build, device, hardware_class,
                         leased_at, lease_expires_at, expired_at, state, status, reason, metrics_json,
                         log_tail, started_at, finished_at, received_at)
  SELECT run_id, job_id, attempt, worker_id, hostname, build, device, hardware_class,
         leased_at, lease_expires_at, expired_at, state, status, reason, metrics_json,
         log_tail, started_at, finished_at, received_at
  FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_v3 RENAME TO attempts;
CREATE INDEX attempts_by_worker ON attempts(worker_id);

ALTER TABLE runs ADD COLUMN plan_hash TEXT NOT NULL DEFAULT '';
)sql";

// Version 4: device health and quarantine history (fleet operations): one row per health check
// outcome, quarantine, automatic lift and manual release, so `status` can say why and a lab can
// audit a box later.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE device_events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  at          INTEGER NOT NULL,
  worker_id   TEXT NOT NULL,
  device      TEXT NOT NULL DEFAULT '',
  event       TEXT NOT NULL CHECK (event IN ('health_pass', 'health_fail', 'quarantined', 'lifted',
                                             'released', 'drained')),
  reason      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX device_events_by_worker ON device_events(worker_id, device, at);
)sql";

// Version 5: placement (issue 11, docs/PLANS.md "Placement"). plan_jobs holds a run's plan jobs
// placed each-class / each-device, which become jobs as hardware registers; until one does, such a
// plan job is listed (runs, reports) as unplaced. jobs.target is the placement target a job was
// made for ('' for an `any` job, and for the stand-in of a plan job no registered hardware could
// take), jobs.plan_job_id the plan job it was made from (its own id for `any` jobs and stand-ins;
// '' on rows from before version 5), jobs.hardware_class the class it was made for (so a job
// settled unsupported for a class before any attempt still shows under that class).
// attempts.exclusive says the attempt held its hardware alone (a perf job: nothing else on the
// device or on any device sharing its host's cores). workers.host_id is the machine the worker
// runs on (HELLO host_id), which tells which workers' devices share cores.
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE plan_jobs (
  run_id     TEXT NOT NULL REFERENCES runs(run_id),
  job_id     TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  spec_json  TEXT NOT NULL,
  placement  TEXT NOT NULL,
  created_at INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, job_id)
);
ALTER TABLE jobs ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN plan_job_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN hardware_class TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_plan_job ON jobs(run_id, plan_job_id);
ALTER TABLE attempts ADD COLUMN exclusive INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN host_id TEXT NOT NULL DEFAULT '';
)sql";

// Version 6: job specs stored once per family (coordinator/spec_families.h, docs/SCALE.md). A job
// row made from then on keeps spec_json '' and the id of its family's row, whose text is the
// canonical spec of the family with neutral scalars (jobs::family_of); the reader renders a job's own text from it and the
// job's precision, batch and seq_len columns. Rows from before keep their spec_json (family 0).
// `any` jobs (made from a plan job of their own, not from a plan_jobs row) are stored from then on
// with plan_job_id '' and kept out of the plan-job index, which only the unplaced-plan-job
// queries read (for placed plan jobs): an index of a million random ids was a fifth of a
// million-job start. Their stand-ins keep their explicit plan-job id.
// The view job_specs shows every job's spec document to a person reading the file with sqlite3
// (SQLite's json_set: the same document; the store's own rendering is the byte-exact one).
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE spec_families (
  family_id  INTEGER PRIMARY KEY,
  run_id     TEXT NOT NULL REFERENCES runs(run_id),
  spec_json  TEXT NOT NULL
);
CREATE INDEX spec_families_by_run ON spec_families(run_id);
ALTER TABLE jobs ADD COLUMN family_id INTEGER NOT NULL DEFAULT 0;
DROP INDEX jobs_by_plan_job;
CREATE INDEX jobs_by_plan_job ON jobs(run_id, plan_job_id) WHERE plan_job_id <> '';
CREATE VIEW job_specs AS
  SELECT j.run_id AS run_id, j.job_id AS job_id,
         CASE WHEN j.spec_json <> '' OR j.family_id = 0 THEN j.spec_json
              ELSE json_set(f.spec_json, '$.batch', j.batch, '$.precision', j.precision, '$.seq_len', j.seq_len)
         END AS spec_json
  FROM jobs j LEFT JOIN spec_families f ON f.family_id = j.family_id;
)sql";

// Version 7: runs.plan_digest, the digest of the plan text, catalog and build the run's jobs were
// expanded from (jobs/plan_digest.h): a restart with the same digest reads the run from the
// store instead of expanding the plan again (Server::resume, docs/SCALE.md "Restart").
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE runs ADD COLUMN plan_digest TEXT NOT NULL DEFAULT '';
)sql";

// Version 8: what a restarted coordinator needs to go on as it was. run_submissions keeps the
// text of every plan sent with CONTROL `submit` that stored something, in order, so that a
// restarted `serve` serves those runs again without their plans being sent again (the plan
// files are the client's, not this host's). plan_jobs.cancelled records `accelmatrix cancel
// PLAN_JOB_ID`, so a restart makes no job of it for hardware registering later.
// run_plan_hashes lists every plan hash a run has followed (kept by triggers on runs): a plan
// that made the run once, and whose jobs the run all holds, is served again without --extend
// after the run was extended by another (a restarted `serve --plan` of its original plan).
constexpr const char* kSchemaV8 = R"sql(
CREATE TABLE run_submissions (
  run_id        TEXT NOT NULL REFERENCES runs(run_id),
  seq           INTEGER NOT NULL,
  plan_text     TEXT NOT NULL,
  plan_name     TEXT NOT NULL DEFAULT '',
  extend        INTEGER NOT NULL DEFAULT 0,
  submitted_at  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, seq)
);
ALTER TABLE plan_jobs ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0;
CREATE INDEX plan_jobs_cancelled ON plan_jobs(run_id) WHERE cancelled <> 0;
CREATE TABLE run_plan_hashes (
  run_id     TEXT NOT NULL REFERENCES runs(run_id),
  plan_hash  TEXT NOT NULL,
  PRIMARY KEY (run_id, plan_hash)
);
INSERT OR IGNORE INTO run_plan_hashes(run_id, plan_hash) SELECT run_id, plan_hash FROM runs WHERE plan_hash <> '';
CREATE TRIGGER runs_plan_hash_inserted AFTER INSERT ON runs WHEN NEW.plan_hash <> '' BEGIN
  INSERT OR IGNORE INTO run_plan_hashes(run_id, plan_hash) VALUES (NEW.run_id, NEW.plan_hash);
END;
CREATE TRIGGER runs_plan_hash_updated AFTER UPDATE OF plan_hash ON runs WHEN NEW.plan_hash <> '' BEGIN
  INSERT OR IGNORE INTO run_plan_hashes(run_id, plan_hash) VALUES (NEW.run_id, NEW.plan_hash);
END;
)sql";

// Version 9: the state CHECKs of jobs and attempts without IN lists. SQLite evaluates a CHECK
// `x IN ('a', 'b', 'c')` by building an ephemeral index of the list on every row written (a
// B-tree opened and closed per statement), which was a tenth of storing a lease and a result
// (docs/SCALE.md "Ingest"); the same test written as `x = 'a' OR x = 'b' OR ...` is plain
// comparisons. The constraint is unchanged in meaning and every stored row satisfies both, so
// the table's text is edited in place (SQLite's documented procedure for changing a CHECK:
// writable_schema, then a new schema cookie) instead of rebuilding a million-row table.
struct CheckRewrite {
  const char* table;
  const char* from;
  const char* to;
};
constexpr CheckRewrite kV9Checks[] = {
    {"jobs", "CHECK (state IN ('queued', 'leased', 'done'))",
     "CHECK (state = 'queued' OR state = 'leased' OR state = 'done')"},
    {"attempts", "CHECK (state IN ('leased', 'done', 'expired', 'interrupted'))",
     "CHECK (state = 'leased' OR state = 'done' OR state = 'expired' OR state = 'interrupted')"},
};

Result<int64_t> single_int(sqlite3* db, const char* sql);

Status rewrite_state_checks(sqlite3* db) {
  AM_ASSIGN_OR_RETURN(int64_t cookie, single_int(db, "PRAGMA schema_version"));
  AM_RETURN_IF_ERROR(sqlite::exec(db, "PRAGMA writable_schema = ON"));
  Status done = [&]() -> Status {
    for (const CheckRewrite& r : kV9Checks) {
      AM_ASSIGN_OR_RETURN(auto sql, sqlite::Statement::prepare(
                                        db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?"));
      sql.bind(1, r.table);
      AM_ASSIGN_OR_RETURN(bool row, sql.step());
      const std::string text = row ? sql.column_text(0) : std::string();
      // Exactly one occurrence of the old text, or the table is not what this build made.
      const std::size_t at = text.find(r.from);
      if (at == std::string::npos || text.find(r.from, at + 1) != std::string::npos) {
        return failed_precondition(std::string("table ") + r.table + " does not have the state CHECK of schema 8");
      }
      AM_ASSIGN_OR_RETURN(auto update, sqlite::Statement::prepare(
                                           db, "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?"));
      update.bind(1, text.substr(0, at) + r.to + text.substr(at + std::strlen(r.from))).bind(2, r.table);
      AM_RETURN_IF_ERROR(update.run());
    }
    return sqlite::exec(db, "PRAGMA schema_version = " + std::to_string(cookie + 1));
  }();
  // RESET also makes this connection read the edited schema back.
  Status reset = sqlite::exec(db, "PRAGMA writable_schema = RESET");
  AM_RETURN_IF_ERROR(done);
  return reset;
}

constexpr Migration kAll[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
    {3, kSchemaV3},
    {4, kSchemaV4},
    {5, kSchemaV5},
    {6, kSchemaV6},
    {7, kSchemaV7},
    {8, kSchemaV8},
    {9, nullptr, rewrite_state_checks},
};

static_assert(kApplicationId == 1095587889, "keep the PRAGMA in kSchemaV1 in step");

Result<bool> table_exists(sqlite3* db, const char* name) {
  AM_ASSIGN_OR_RETURN(auto stmt, sqlite::Statement::prepare(
                                     db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"));
  stmt.bind(1, name);
  return stmt.step();
}

Result<int64_t> single_int(sqlite3* db, const char* sql) {
  AM_ASSIGN_OR_RETURN(auto stmt, sqlite::Statement::prepare(db, sql));
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return int64_t{0};
  return stmt.column_int64(0);
}

}  // namespace

std::span<const Migration> migrations() { return kAll; }

Result<int> read_schema_version(sqlite3* db) {
  const std::string path = sqlite::db_path(db);
  // The first read of the file: SQLite reports SQLITE_NOTADB here for a file that is not a
  // database.
  auto tables = single_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  if (!tables.ok()) {
    // SQLITE_NOTADB and SQLITE_CORRUPT arrive as kFailedPrecondition (sqlite_db.cpp); anything
    // else (a read-only file or directory, a busy lock, an I/O error) is not a verdict on the
    // file and keeps its own code and message.
    if (tables.status().code() != StatusCode::kFailedPrecondition) {
      return tables.status().with_context(path + ": cannot read the database");
    }
    // The header said SQLite (checked before the open); a malformed image is a damaged
    // database, a fault of the storage (exit 4), not a file of another kind (exit 2).
    if ((sqlite3_errcode(db) & 0xff) == SQLITE_CORRUPT) {
      return io_error(path + ": the database is damaged (" + std::string(sqlite3_errmsg(db)) +
                      "); nothing was written to it: restore it from a backup");
    }
    return failed_precondition(path + ": not an accelmatrix database (" +
                               tables.status().message() + ")");
  }
  AM_ASSIGN_OR_RETURN(int64_t app_id, single_int(db, "PRAGMA application_id"));
  if (app_id != 0 && app_id != kApplicationId) {
    return failed_precondition(path + ": not an accelmatrix database (application_id " +
                               std::to_string(app_id) + " belongs to another program)");
  }
  AM_ASSIGN_OR_RETURN(bool has_version_table, table_exists(db, "schema_version"));
  if (!has_version_table) {
    if (*tables == 0) return 0;
    return failed_precondition(path + ": not an accelmatrix database (it has " +
                               std::to_string(*tables) +
                               " tables but no schema_version table); refusing to touch it");
  }
  AM_ASSIGN_OR_RETURN(int64_t version, single_int(db, "SELECT max(version) FROM schema_version"));
  return static_cast<int>(version);
}

Status newer_schema_error(const std::string& path, int found_version, int supported_version) {
  return failed_precondition(path + ": database schema version " + std::to_string(found_version) +
                             " is newer than this build supports (" +
                             std::to_string(supported_version) +
                             "); use a newer accelmatrix or another database file");
}

Status migrate(sqlite3* db, int target_version) {
  const std::string path = sqlite::db_path(db);
  AM_ASSIGN_OR_RETURN(int current, read_schema_version(db));
  if (current > target_version) return newer_schema_error(path, current, target_version);
  for (const Migration& m : kAll) {
    if (m.version <= current || m.version > target_version) continue;
    AM_ASSIGN_OR_RETURN(auto tx, sqlite::Transaction::begin(db));
    // Another process may have migrated between our read and the write lock.
    AM_ASSIGN_OR_RETURN(int locked_version, read_schema_version(db));
    if (locked_version >= m.version) {
      current = locked_version;
      continue;   // tx rolls back: nothing to do
    }
    Status applied = m.sql != nullptr ? sqlite::exec(db, m.sql) : Status::Ok();
    if (applied.ok() && m.apply != nullptr) applied = m.apply(db);
    if (!applied.ok()) {
      return applied.with_context(path + ": migration to schema version " +
                                  std::to_string(m.version) + " failed");
    }
    AM_ASSIGN_OR_RETURN(auto record, sqlite::Statement::prepare(
                                         db, "INSERT INTO schema_version(version, applied_at) VALUES (?, ?)"));
    record.bind(1, m.version).bind(2, now_epoch_ms());
    AM_RETURN_IF_ERROR(record.run());
    AM_RETURN_IF_ERROR(tx.commit());
    get_logger("coordinator/store")->info("{}: migrated to schema version {}", path, m.version);
    current = m.version;
  }
  return Status::Ok();
}

}  // namespace am::coord
