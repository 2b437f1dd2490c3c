#include "coordinator/store.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <fstream>
#include <system_error>
#include <thread>
#include <utility>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/json_text.h"
#include "common/log.h"
#include "coordinator/batch_pipe.h"
#include "coordinator/migrations.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/sqlite_statement.h"
#include "coordinator/sqlite_transaction.h"
#include "coordinator/stored_json.h"
#include "jobs/job_spec.h"
#include "jobs/selftest_models.h"
#include "jobs/spec_family.h"

namespace am::coord {
namespace {

using sqlite::Statement;
using sqlite::Transaction;
using sqlite::kSqliteHeader;

// How long a connection waits for another one's write lock before giving up with SQLITE_BUSY.
// A coordinator's write transactions are short (a batch of results), so a reader such as
// `accelmatrix report` or a second writer is delayed at most by one batch.
constexpr int kBusyTimeoutMs = 5000;

// The writer's page cache, KiB (SQLite's default is 2 MiB). Results and leases update rows all over
// a large jobs table and its indexes; with the default cache each one missed it (measured with
// bench/bench_scale: docs/SCALE.md). Counts toward the coordinator's RSS.
constexpr int64_t kWriterCacheKib = 64 * 1024;
// A report's page cache, KiB: the upper pages of the three indexes a report walks stay cached.
constexpr int64_t kReaderCacheKib = 64 * 1024;
// WAL size after which a commit copies the WAL back into the database (SQLite's default: 1000
// pages, 4 MiB at 4 KiB). Each such checkpoint ends in an fsync of the database; a results batch dirties pages
// all over the jobs and attempts tables, so with the default every batch paid several, and a
// page updated by several batches was copied back once per checkpoint instead of once.
// Measured (bench_scale, 201,150 jobs, two runs each, docs/SCALE.md): ingest 5,738/6,297 →
// 6,417/6,857 rows/s; the start (11.2 → 11.5 s) and restart (6.1 → 6.5 s) about 5% slower,
// reading through the larger WAL.
constexpr int64_t kWalAutocheckpointBytes = 64 * 1024 * 1024;
// The page size of a database this build creates (SQLite's default: 4096). A result's row is
// about 1.8 KiB (its metrics document), so a 4 KiB page held two and every row that grew from
// its lease to its result moved pages. Measured on a 201,150-job database with half of it done
// (the lease, result and job updates of 20,000 jobs as bulk statements in `sqlite3`, docs/SCALE.md):
// 4 KiB 0.59 s, 8 KiB 0.52 s, 16 KiB 0.43 s, 32 KiB 0.38 s. A database keeps the page size it was
// made with (WAL cannot change it), so older files keep 4 KiB.
constexpr int kNewDatabasePageBytes = 16384;


// The first bytes of the file at `path`, read through SQLite's own VFS. Not with open()/close():
// POSIX record locks belong to the process, and closing any descriptor of a file drops every lock
// the process holds on it — the locks of this process's live SQLite connections too, which SQLite
// then believes it still holds. A reader in another process could then take the database
// exclusively when it closed, and delete the coordinator's live WAL (found by a tester: every
// `runs` or `report` after a restart that read the database ahead removed the -wal, and what the
// coordinator wrote after it was lost at its next kill). SQLite's unix VFS defers such a close
// while its connections hold locks on the file.
Result<std::string> read_head_through_sqlite(const std::filesystem::path& path, int bytes) {
  sqlite3_vfs* vfs = sqlite3_vfs_find(nullptr);
  if (vfs == nullptr) return internal_error("no default SQLite VFS");
  std::vector<std::max_align_t> storage((static_cast<std::size_t>(vfs->szOsFile) + sizeof(std::max_align_t) - 1) /
                                        sizeof(std::max_align_t));
  auto* file = reinterpret_cast<sqlite3_file*>(storage.data());
  const std::string name = path.string();
  // The VFS opens full pathnames only, as sqlite3_open_v2 makes them (symlinks resolved): a
  // --db that was a symlink failed here with SQLITE_CANTOPEN, exit 4.
  std::string full(static_cast<std::size_t>(vfs->mxPathname) + 1, '\0');
  // (SQLITE_OK_SYMLINK, an extended OK, says a symlink was resolved.)
  if (const int rc = vfs->xFullPathname(vfs, name.c_str(), vfs->mxPathname + 1, full.data()); (rc & 0xff) != SQLITE_OK) {
    return io_error(name + ": cannot resolve its path (SQLite error " + std::to_string(rc) + ")");
  }
  full.resize(std::strlen(full.c_str()));
  int out_flags = 0;
  const int rc = vfs->xOpen(vfs, full.c_str(), file, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &out_flags);
  if (rc != SQLITE_OK) {
    if (file->pMethods != nullptr) file->pMethods->xClose(file);
    return io_error(name + ": cannot open for reading (SQLite error " + std::to_string(rc) + ")");
  }
  std::string head(static_cast<std::size_t>(bytes), '\0');
  const int read = file->pMethods->xRead(file, head.data(), bytes, 0);
  file->pMethods->xClose(file);
  if (read == SQLITE_IOERR_SHORT_READ) return std::string();   // shorter than the header
  if (read != SQLITE_OK) return io_error(name + ": cannot read its header (SQLite error " + std::to_string(read) + ")");
  return head;
}

// SQLite itself would only notice a foreign file at the first query; checking the header first
// means such a file is never handed to SQLite at all and cannot be modified by it.
Status check_file_header(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::Ok();
  if (!std::filesystem::is_regular_file(path, ec)) {
    return failed_precondition(path.string() + ": not a regular file; refusing to open it as a database");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return io_error(path.string() + ": cannot read size: " + ec.message());
  if (size == 0) return Status::Ok();   // SQLite treats an empty file as an empty database
  AM_ASSIGN_OR_RETURN(const std::string head, read_head_through_sqlite(path, static_cast<int>(kSqliteHeader.size())));
  if (head.size() != kSqliteHeader.size() || !std::equal(head.begin(), head.end(), kSqliteHeader.begin())) {
    return failed_precondition(path.string() +
                               ": not an SQLite database (unrecognised file header); refusing to touch it");
  }
  return Status::Ok();
}

// Workers send arbitrary bytes in log tails and metrics; replacing invalid UTF-8 keeps dump()
// from throwing and the stored text valid.
std::string dump_json(const nlohmann::json& doc) {
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The stored JSON of job specs, from their family's template (jobs/spec_family.h) while
// consecutive jobs share one: the same text as dump_json(to_json(spec)) for valid UTF-8, made
// without a document per job (docs/SCALE.md). Commands (free text) are
// dumped for real.
class SpecDumps {
 public:
  std::string of(const jobs::JobSpec& spec) {
    return spec.command ? dump_json(jobs::to_json(spec)) : templates_.canonical(spec);
  }

 private:
  jobs::SpecTemplates templates_;
};

Result<nlohmann::json> parse_stored_json(const std::string& text, const std::string& what) {
  if (text.empty()) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return internal_error("corrupt " + what + " in the store: " + e.what());
  }
}

std::string job_name(const std::string& run_id, const std::string& job_id) {
  return "job '" + job_id + "' of run '" + run_id + "'";
}

Status require_ids(const std::string& run_id, const std::string& job_id) {
  if (run_id.empty()) return invalid_argument("empty run id");
  if (job_id.empty()) return invalid_argument("empty job id (run '" + run_id + "')");
  return Status::Ok();
}

// Prepares `sql` with the state words it compares with taken from their enums: SQL names them
// :job_queued, :job_leased, :job_done, :attempt_leased, :attempt_done and :attempt_expired, and
// each becomes the quoted word coordinator/job_state.h spells, so no state string is written
// here. They are not bound as parameters: SQLite numbers a named parameter one above the largest
// ?N seen so far in the text, so ":attempt_done" after "?4" *is* ?5 and binding ?5 would
// overwrite it. The words are fixed identifiers from the enum tables, never input.
Result<Statement> prepare(sqlite3* db, std::string_view sql) {
  std::string text(sql);
  auto substitute = [&text](const std::string& name, std::string_view word) {
    const std::string token = ":" + name;
    const std::string literal = "'" + std::string(word) + "'";
    for (std::size_t at = text.find(token); at != std::string::npos; at = text.find(token, at)) {
      const std::size_t end = at + token.size();
      const bool whole = end >= text.size() ||
                         !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
      if (!whole) {
        at = end;
        continue;
      }
      text.replace(at, token.size(), literal);
      at += literal.size();
    }
  };
  for (JobState s : {JobState::kQueued, JobState::kLeased, JobState::kDone}) {
    substitute("job_" + std::string(to_string(s)), to_string(s));
  }
  for (AttemptState s : {AttemptState::kLeased, AttemptState::kDone, AttemptState::kExpired,
                         AttemptState::kInterrupted}) {
    substitute("attempt_" + std::string(to_string(s)), to_string(s));
  }
  return Statement::prepare(db, text);
}

// Stored words read back: a value outside the enum means the file was edited or written by a
// newer build; say which.
Result<JobState> stored_job_state(const std::string& text, const std::string& what) {
  if (std::optional<JobState> s = parse_job_state(text)) return *s;
  return internal_error("corrupt job state '" + text + "' of " + what + " in the store");
}

Result<std::optional<ResultStatus>> stored_status(const std::string& text, const std::string& what) {
  if (text.empty()) return std::optional<ResultStatus>();
  if (std::optional<ResultStatus> s = parse_result_status(text)) return s;
  return internal_error("unknown status '" + text + "' of " + what + " in the store");
}

// The job's state, or nullopt when the job does not exist.
Result<std::optional<JobState>> job_state(sqlite3* db, const std::string& run_id,
                                          const std::string& job_id) {
  AM_ASSIGN_OR_RETURN(auto stmt,
                      prepare(db, "SELECT state FROM jobs WHERE run_id = ? AND job_id = ?"));
  stmt.bind(1, run_id).bind(2, job_id);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return std::optional<JobState>();
  AM_ASSIGN_OR_RETURN(JobState s, stored_job_state(stmt.column_text("state"), job_name(run_id, job_id)));
  return std::optional<JobState>(s);
}

RunRecord run_from_row(const Statement& stmt) {
  RunRecord run;
  run.run_id = stmt.column_text("run_id");
  run.plan_name = stmt.column_text("plan_name");
  run.plan_path = stmt.column_text("plan_path");
  run.description = stmt.column_text("description");
  run.created_at_ms = stmt.column_int64("created_at");
  run.finished_at_ms = stmt.column_int64("finished_at");
  run.plan_hash = stmt.column_text("plan_hash");
  run.plan_digest = stmt.column_text("plan_digest");
  return run;
}

// The runs columns; a database older than schema 3 (read by open_read_only() without
// migrating) has no plan_hash and reads it as "", and one older than 7 no plan_digest.
std::string run_columns(int schema_version) {
  return std::string("SELECT run_id, plan_name, plan_path, description, created_at, finished_at, ") +
         (schema_version >= 3 ? "plan_hash, " : "'' AS plan_hash, ") +
         (schema_version >= 7 ? "plan_digest" : "'' AS plan_digest") + " FROM runs ";
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& db_path) {
  if (db_path.empty()) return invalid_argument("empty database path");
  std::error_code ec;
  if (db_path.has_parent_path() && !std::filesystem::exists(db_path.parent_path(), ec)) {
    std::filesystem::create_directories(db_path.parent_path(), ec);
    if (ec) {
      return io_error(db_path.string() + ": cannot create directory " +
                      db_path.parent_path().string() + ": " + ec.message());
    }
  }
  AM_RETURN_IF_ERROR(check_file_header(db_path));
  // A file this user cannot write: said before SQLite opens it, which leaves -wal and -shm files
  // behind with the database's read-only mode.
  if (std::filesystem::exists(db_path, ec) && ::access(db_path.c_str(), W_OK) != 0) {
    return io_error(db_path.string() + ": cannot write the database: " + std::strerror(errno) +
                    " (this user must be able to write the file, its -wal and -shm files and their directory)");
  }
  AM_ASSIGN_OR_RETURN(auto db, sqlite::SqliteDb::open(db_path));
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);

  // Refuse foreign and newer databases before anything that writes: switching the journal mode
  // to WAL rewrites the file header.
  AM_ASSIGN_OR_RETURN(int version, read_schema_version(db.get()));
  if (version > kSchemaVersion) return newer_schema_error(db_path.string(), version, kSchemaVersion);

  // Only an empty file takes a page size; set before WAL, which fixes it.
  if (version == 0) {
    AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "PRAGMA page_size = " + std::to_string(kNewDatabasePageBytes)));
  }
  {
    AM_ASSIGN_OR_RETURN(auto wal, Statement::prepare(db.get(), "PRAGMA journal_mode = WAL"));
    AM_ASSIGN_OR_RETURN(bool row, wal.step());
    const std::string mode = row ? wal.column_text("journal_mode") : "";
    if (mode != "wal") {
      // Still usable (e.g. a file system without shared memory), only without a concurrent
      // reader; say so instead of failing.
      get_logger("coordinator/store")
          ->warn("{}: journal mode is '{}', not WAL; readers will wait for writers",
                 db_path.string(), mode);
    }
  }
  // NORMAL is durable across application crashes in WAL mode; only a power loss may lose the
  // last transactions, which workers re-send until acknowledged anyway.
  AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"));
  AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "PRAGMA cache_size = " + std::to_string(-kWriterCacheKib)));
  int64_t checkpoint_pages = 0;
  {
    AM_ASSIGN_OR_RETURN(auto page, Statement::prepare(db.get(), "PRAGMA page_size"));
    AM_ASSIGN_OR_RETURN(bool row, page.step());
    const int64_t page_bytes = row ? std::max<int64_t>(512, page.column_int64(0)) : 4096;
    checkpoint_pages = kWalAutocheckpointBytes / page_bytes;
    AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "PRAGMA wal_autocheckpoint = " + std::to_string(checkpoint_pages)));
  }
  AM_RETURN_IF_ERROR(migrate(db.get(), kSchemaVersion));
  struct stat st {};
  if (::stat(db_path.c_str(), &st) != 0) {
    return io_error(db_path.string() + ": cannot stat the database file just opened");
  }
  std::unique_ptr<Store> store(new Store(db.release(), db_path, static_cast<uint64_t>(st.st_dev),
                                         static_cast<uint64_t>(st.st_ino)));
  // The WAL is copied back on a thread of its own (coordinator/wal_checkpointer.h); without it
  // (no second connection), SQLite's automatic checkpoint set above stays.
  // The thread starts at half the threshold and the writer helps at the threshold itself
  // (kWriterCheckpointFactor): the WAL keeps the bound it had with SQLite's own checkpoints.
  if (auto checkpointer = WalCheckpointer::start(store->db_, db_path,
                                                 checkpoint_pages / WalCheckpointer::kWriterCheckpointFactor);
      checkpointer.ok()) {
    store->checkpointer_ = std::move(*checkpointer);
  } else {
    get_logger("coordinator/store")
        ->warn("{}: checkpoints stay in the writer's commits: {}", db_path.string(), checkpointer.status().to_string());
  }
  return store;
}

namespace {

// The first read of the file. Its raw SQLite code tells "SQLite cannot set up the WAL index for
// a read-only connection here" (SQLITE_READONLY / SQLITE_CANTOPEN: read-only directory, no -shm)
// apart from everything else.
int probe_read(sqlite3* db) {
  return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
}

// Whether this process may write the database file and create files beside it (its -wal/-shm).
bool can_write_beside(const std::filesystem::path& db_path) {
  std::filesystem::path dir = db_path.parent_path();
  if (dir.empty()) dir = ".";
  return ::access(db_path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open_read_only(const std::filesystem::path& db_path) {
  if (db_path.empty()) return invalid_argument("empty database path");
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return not_found("database " + db_path.string() + " does not exist");
  AM_RETURN_IF_ERROR(check_file_header(db_path));
  struct stat st {};
  if (::stat(db_path.c_str(), &st) != 0) return io_error(db_path.string() + ": cannot stat the database file");

  bool immutable = false;
  sqlite::SqliteDb db;
  if (can_write_beside(db_path)) {
    // We could write the file: a read-write connection with query_only on. It writes no row, but
    // unlike an SQLITE_OPEN_READONLY one it removes the -wal/-shm it had to create when it is the
    // last connection to close, so `report` leaves the directory as it found it.
    AM_ASSIGN_OR_RETURN(db, sqlite::SqliteDb::open_existing(db_path));
    sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
    AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "PRAGMA query_only = ON"));
    const int rc = probe_read(db.get());
    const int primary = rc & 0xff;
    if (rc != SQLITE_OK && (primary == SQLITE_IOERR || primary == SQLITE_FULL)) {
      // A full file system: the -shm a WAL reader needs cannot be made. As for a directory we
      // cannot write: with no -wal holding data, no writer is mid-way and the file alone is the
      // database, so it is read as immutable.
      std::error_code size_ec;
      const auto wal_bytes = std::filesystem::file_size(db_path.string() + "-wal", size_ec);
      if (!size_ec && wal_bytes > 0) {
        return io_error(db_path.string() + ": cannot read the database: the write-ahead log beside it needs a "
                        "shared-memory index that cannot be written (" + std::string(sqlite3_errstr(rc)) +
                        "; is the file system full?)");
      }
      db = sqlite::SqliteDb();
      AM_ASSIGN_OR_RETURN(db, sqlite::SqliteDb::open_read_only(db_path, true));
      immutable = true;
    }
  } else {
    AM_ASSIGN_OR_RETURN(db, sqlite::SqliteDb::open_read_only(db_path, false));
    sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
    const int rc = probe_read(db.get());
    const int primary = rc & 0xff;
    if (rc != SQLITE_OK && (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN)) {
      // A WAL database in a directory we cannot write: no -shm can be made. Without a -wal file
      // no coordinator has the database open (a live WAL writer always has one), so the file is
      // stable and may be read as immutable.
      if (std::filesystem::exists(db_path.string() + "-wal", ec)) {
        return io_error(db_path.string() + ": cannot read the database: a writer's -wal file is beside it "
                        "but this process cannot open its shared-memory index (" +
                        std::string(sqlite3_errstr(rc)) + "); read it as the user that runs the coordinator");
      }
      AM_ASSIGN_OR_RETURN(db, sqlite::SqliteDb::open_read_only(db_path, true));
      immutable = true;
    }
  }
  AM_ASSIGN_OR_RETURN(int version, read_schema_version(db.get()));
  if (version > kSchemaVersion) return newer_schema_error(db_path.string(), version, kSchemaVersion);
  if (version < kMinReadableSchemaVersion) {
    return failed_precondition(db_path.string() + ": empty database (no accelmatrix schema yet): no runs to read");
  }
  // A report walks every row of a run through three indexes: their upper pages stay cached
  // instead of being read again for every row (SQLite's default cache is 2 MiB).
  AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "PRAGMA cache_size = " + std::to_string(-kReaderCacheKib)));
  auto store = std::unique_ptr<Store>(new Store(db.release(), db_path, static_cast<uint64_t>(st.st_dev),
                                                static_cast<uint64_t>(st.st_ino)));
  store->read_only_ = true;
  store->immutable_ = immutable;
  return store;
}

Store::Store(sqlite3* db, std::filesystem::path path, uint64_t dev, uint64_t ino)
    : db_(db), path_(std::move(path)), dev_(dev), ino_(ino) {}

namespace {

// Whether this process holds a descriptor of the file at `p`: SQLite keeps its connection's
// -wal and -shm open, so a sidecar that is ours is one we hold, whatever the path now names.
bool held_by_this_process(const std::filesystem::path& p) {
  struct stat at {};
  if (::lstat(p.c_str(), &at) != 0 || !S_ISREG(at.st_mode)) return false;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    struct stat held {};
    if (::stat(entry.path().c_str(), &held) == 0 && held.st_dev == at.st_dev && held.st_ino == at.st_ino) return true;
  }
  return false;
}

}  // namespace

Status Store::check_file_identity() const {
  struct stat st {};
  const bool present = ::stat(path_.c_str(), &st) == 0;
  if (!present && errno != ENOENT) {
    // Not a verdict on the file (an NFS hiccup, EIO): the -wal may hold committed transactions,
    // so nothing is moved; the caller stops, and a restart replays it.
    return io_error("cannot check database file " + path_.string() + ": " + std::strerror(errno));
  }
  if (present && static_cast<uint64_t>(st.st_dev) == dev_ && static_cast<uint64_t>(st.st_ino) == ino_) {
    return Status::Ok();
  }
  set_sidecars_aside();
  return io_error("database file " + path_.string() +
                  (present ? " was replaced by another file while open" : " was removed while open") +
                  "; writes since then are not in it" + sidecars_moved_);
}

void Store::set_sidecars_aside() const {
  if (!sidecars_moved_.empty() || read_only_) return;
  std::vector<std::string> moved;
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::filesystem::path at = path_.string() + suffix;
    if (!held_by_this_process(at)) continue;
    std::filesystem::path aside = at;
    aside += ".stale-" + std::to_string(::getpid());
    if (::rename(at.c_str(), aside.c_str()) == 0) moved.push_back(aside.string());
  }
  if (moved.empty()) return;
  sidecars_moved_ = "; its write-ahead log and shared-memory index were moved aside to ";
  for (std::size_t i = 0; i < moved.size(); ++i) sidecars_moved_ += (i ? " and " : "") + moved[i];
  sidecars_moved_ += " so that they are not replayed onto the file now at that path";
}

Store::~Store() {
  checkpointer_.reset();   // its connection closes first: the writer, last, checkpoints and removes the WAL
  statements_.clear();   // finalized before the connection closes
  sqlite::SqliteDb closer(db_);
}

// A cached statement in use: reset (bindings cleared, read snapshot released) when it goes out of
// scope, so a SELECT stepped once does not hold the database open.
class Store::CachedStatement {
 public:
  explicit CachedStatement(Statement* s) : s_(s) {}
  CachedStatement(CachedStatement&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  CachedStatement& operator=(CachedStatement&&) = delete;
  ~CachedStatement() {
    if (s_) s_->reset();
  }
  Statement* operator->() const { return s_; }
  Statement& operator*() const { return *s_; }

 private:
  Statement* s_;
};

Result<Store::CachedStatement> Store::cached(std::string_view sql) {
  auto it = statements_.find(std::string(sql));
  if (it == statements_.end()) {
    AM_ASSIGN_OR_RETURN(Statement stmt, prepare(db_, sql));
    it = statements_.emplace(std::string(sql), std::make_unique<Statement>(std::move(stmt))).first;
  }
  it->second->reset();
  return CachedStatement(it->second.get());
}

int Store::schema_version() const {
  auto version = read_schema_version(db_);
  return version.ok() ? *version : 0;
}

// ---------------------------------------------------------------------------------------------
// Runs

Status Store::upsert_run(const RunRecord& run) {
  if (run.run_id.empty()) return invalid_argument("empty run id");
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      INSERT INTO runs(run_id, plan_name, plan_path, description, created_at, finished_at, plan_hash)
      VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(run_id) DO NOTHING)sql"));
  stmt.bind(1, run.run_id)
      .bind(2, run.plan_name)
      .bind(3, run.plan_path)
      .bind(4, run.description)
      .bind(5, run.created_at_ms != 0 ? run.created_at_ms : now_epoch_ms())
      .bind(6, run.finished_at_ms)
      .bind(7, run.plan_hash);
  return stmt.run();
}

Status Store::set_run_plan(const RunRecord& run) {
  if (run.run_id.empty()) return invalid_argument("empty run id");
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      UPDATE runs SET plan_name = ?2, plan_path = ?3, description = ?4, plan_hash = ?5, plan_digest = ''
      WHERE run_id = ?1)sql"));
  stmt.bind(1, run.run_id).bind(2, run.plan_name).bind(3, run.plan_path).bind(4, run.description).bind(5, run.plan_hash);
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_RETURN_IF_ERROR(stmt.run());
  if (stmt.changes() == 0) return not_found("run '" + run.run_id + "' is not in the store");
  return check_file_identity();
}

Status Store::update_run(std::string_view sql, const std::string& run_id, const std::string& value) {
  if (run_id.empty()) return invalid_argument("empty run id");
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, sql));
  stmt.bind(1, run_id).bind(2, value);
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_RETURN_IF_ERROR(stmt.run());
  if (stmt.changes() == 0) return not_found("run '" + run_id + "' is not in the store");
  return check_file_identity();
}

Status Store::set_plan_hash(const std::string& run_id, const std::string& plan_hash) {
  return update_run("UPDATE runs SET plan_hash = ?2, plan_digest = '' WHERE run_id = ?1", run_id, plan_hash);
}

Status Store::set_plan_digest(const std::string& run_id, const std::string& plan_digest) {
  return update_run("UPDATE runs SET plan_digest = ?2 WHERE run_id = ?1", run_id, plan_digest);
}

Result<std::optional<RunRecord>> Store::get_run(const std::string& run_id) {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, run_columns(schema_version()) + "WHERE run_id = ?"));
  stmt.bind(1, run_id);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(run_from_row(stmt));
}

Result<std::vector<RunRecord>> Store::list_runs() {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(
                                     db_, run_columns(schema_version()) + "ORDER BY created_at DESC, rowid DESC"));
  std::vector<RunRecord> runs;
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    runs.push_back(run_from_row(stmt));
  }
  return runs;
}

Status Store::mark_run_finished(const std::string& run_id, int64_t at_ms) {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, "UPDATE runs SET finished_at = ? WHERE run_id = ?"));
  stmt.bind(1, at_ms).bind(2, run_id);
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_RETURN_IF_ERROR(stmt.run());
  if (stmt.changes() == 0) return not_found("run '" + run_id + "' is not in the store");
  return check_file_identity();
}

// ---------------------------------------------------------------------------------------------
// Submissions and cancelled plan jobs (schema 8)

Status Store::record_submission(const SubmissionRecord& submission) {
  if (schema_version() < 8) return failed_precondition(path_.string() + ": schema older than 8 keeps no submissions");
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  AM_ASSIGN_OR_RETURN(auto last, prepare(db_, "SELECT seq, plan_text, extend FROM run_submissions WHERE run_id = ?1 "
                                              "ORDER BY seq DESC LIMIT 1"));
  last.bind(1, submission.run_id);
  AM_ASSIGN_OR_RETURN(bool row, last.step());
  int64_t seq = 1;
  if (row) {
    if (last.column_text(1) == submission.plan_text && (last.column_int64(2) != 0) == submission.extend) {
      return Status::Ok();
    }
    seq = last.column_int64(0) + 1;
  }
  AM_ASSIGN_OR_RETURN(auto insert, prepare(db_, "INSERT INTO run_submissions(run_id, seq, plan_text, plan_name, extend, "
                                                "submitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  insert.bind(1, submission.run_id)
      .bind(2, seq)
      .bind(3, submission.plan_text)
      .bind(4, submission.plan_name)
      .bind(5, int64_t{submission.extend ? 1 : 0})
      .bind(6, submission.submitted_at_ms);
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_RETURN_IF_ERROR(insert.run());
  AM_RETURN_IF_ERROR(tx.commit());
  return check_file_identity();
}

Result<std::vector<SubmissionRecord>> Store::unfinished_submissions() {
  std::vector<SubmissionRecord> out;
  if (schema_version() < 8) return out;
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, "SELECT s.run_id, s.seq, s.plan_text, s.plan_name, s.extend, s.submitted_at "
                                              "FROM run_submissions s JOIN runs r ON r.run_id = s.run_id "
                                              "WHERE r.finished_at = 0 ORDER BY s.run_id, s.seq"));
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    SubmissionRecord s;
    s.run_id = stmt.column_text(0);
    s.seq = stmt.column_int64(1);
    s.plan_text = stmt.column_text(2);
    s.plan_name = stmt.column_text(3);
    s.extend = stmt.column_int64(4) != 0;
    s.submitted_at_ms = stmt.column_int64(5);
    out.push_back(std::move(s));
  }
  return out;
}

Status Store::mark_plan_job_cancelled(const std::string& run_id, const std::string& plan_job_id) {
  if (schema_version() < 8) return failed_precondition(path_.string() + ": schema older than 8 keeps no cancellations");
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, "UPDATE plan_jobs SET cancelled = 1 WHERE run_id = ?1 AND job_id = ?2"));
  stmt.bind(1, run_id).bind(2, plan_job_id);
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_RETURN_IF_ERROR(stmt.run());
  if (stmt.changes() == 0) return not_found("plan job '" + plan_job_id + "' of run '" + run_id + "' is not in the store");
  return check_file_identity();
}

Result<bool> Store::run_followed_plan(const std::string& run_id, const std::string& plan_hash) {
  if (plan_hash.empty()) return false;
  if (schema_version() < 8) {
    AM_ASSIGN_OR_RETURN(std::optional<RunRecord> run, get_run(run_id));
    return run && run->plan_hash == plan_hash;
  }
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, "SELECT 1 FROM run_plan_hashes WHERE run_id = ?1 AND plan_hash = ?2"));
  stmt.bind(1, run_id).bind(2, plan_hash);
  return stmt.step();
}

namespace {

// The first column of every row `sql` (bound to the run id as ?1) returns, as text.
Result<std::vector<std::string>> texts_of_run(sqlite3* db, const char* sql, const std::string& run_id) {
  std::vector<std::string> out;
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db, sql));
  stmt.bind(1, run_id);
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    out.push_back(stmt.column_text(0));
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> Store::plan_job_ids(const std::string& run_id) {
  if (schema_version() < 5) return std::vector<std::string>();
  return texts_of_run(db_, "SELECT job_id FROM plan_jobs WHERE run_id = ?1", run_id);
}

Result<std::vector<std::string>> Store::cancelled_plan_jobs(const std::string& run_id) {
  if (schema_version() < 8) return std::vector<std::string>();
  return texts_of_run(db_, "SELECT job_id FROM plan_jobs WHERE run_id = ?1 AND cancelled <> 0", run_id);
}

// ---------------------------------------------------------------------------------------------
// Jobs

Result<int> Store::add_jobs(const std::string& run_id, const std::vector<jobs::PlannedJob>& jobs,
                            const std::vector<std::string>& hardware_classes,
                            const std::vector<std::string>& plan_job_ids, OwnPlanJob own_plan_job) {
  if (run_id.empty()) return invalid_argument("empty run id");
  if ((!hardware_classes.empty() && hardware_classes.size() != jobs.size()) ||
      (!plan_job_ids.empty() && plan_job_ids.size() != jobs.size())) {
    return invalid_argument("add_jobs: " + std::to_string(hardware_classes.size()) + " hardware classes and " +
                            std::to_string(plan_job_ids.size()) + " plan job ids for " + std::to_string(jobs.size()) +
                            " jobs");
  }
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  AM_ASSIGN_OR_RETURN(auto run, get_run(run_id));
  if (!run) {
    return failed_precondition("run '" + run_id + "' is not in the store; upsert_run() comes first");
  }
  int64_t next_seq = 0;
  {
    AM_ASSIGN_OR_RETURN(auto max_seq, Statement::prepare(
                                          db_, "SELECT coalesce(max(seq), 0) AS max_seq FROM jobs WHERE run_id = ?"));
    max_seq.bind(1, run_id);
    AM_ASSIGN_OR_RETURN(bool row, max_seq.step());
    next_seq = (row ? max_seq.column_int64("max_seq") : 0) + 1;
  }
  AM_ASSIGN_OR_RETURN(auto insert, Statement::prepare(db_, R"sql(
      INSERT INTO jobs(run_id, job_id, seq, spec_json, model, architecture, backend, precision,
                       batch, seq_len, created_at, target, hardware_class, plan_job_id, family_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(run_id, job_id) DO NOTHING)sql"));
  const int64_t now = now_epoch_ms();
  int inserted = 0;
  // A family's row is written with its first job (or found, when an earlier submit wrote it).
  SpecFamilyWriter specs(db_, run_id);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    busy_tick(i);
    const jobs::PlannedJob& job = jobs[i];
    if (job.job_id.empty()) return invalid_argument("empty job id in run '" + run_id + "'");
    AM_ASSIGN_OR_RETURN(SpecFamilyWriter::Stored spec, specs.stored(job.spec));
    insert.reset();
    insert.bind(1, run_id)
        .bind(2, job.job_id)
        .bind(3, next_seq)
        .bind(4, spec.spec_json)
        .bind(5, job.spec.model)
        .bind(6, job.spec.architecture)
        .bind(7, job.spec.backend)
        .bind(8, jobs::to_string(job.spec.precision))
        .bind(9, job.spec.batch)
        .bind(10, job.spec.seq_len)
        .bind(11, now)
        .bind(12, job.target)
        .bind(13, hardware_classes.empty() ? std::string() : hardware_classes[i])
        .bind(14, !plan_job_ids.empty()                      ? plan_job_ids[i]
                  : own_plan_job == OwnPlanJob::kUnindexed ? std::string()
                                                           : job.job_id)
        .bind(15, spec.family_id);
    AM_RETURN_IF_ERROR(insert.run());
    if (insert.changes() > 0) {
      ++inserted;
      ++next_seq;
    }
  }
  AM_RETURN_IF_ERROR(tx.commit());
  return inserted;
}

Result<int> Store::add_plan_jobs(const std::string& run_id, const std::vector<jobs::PlannedJob>& plan_jobs) {
  if (run_id.empty()) return invalid_argument("empty run id");
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  int64_t next_seq = 0;
  {
    AM_ASSIGN_OR_RETURN(auto max_seq, Statement::prepare(
                                          db_, "SELECT coalesce(max(seq), 0) AS max_seq FROM plan_jobs WHERE run_id = ?"));
    max_seq.bind(1, run_id);
    AM_ASSIGN_OR_RETURN(bool row, max_seq.step());
    next_seq = (row ? max_seq.column_int64("max_seq") : 0) + 1;
  }
  AM_ASSIGN_OR_RETURN(auto insert, Statement::prepare(db_, R"sql(
      INSERT INTO plan_jobs(run_id, job_id, seq, spec_json, placement, created_at) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT(run_id, job_id) DO NOTHING)sql"));
  const int64_t now = now_epoch_ms();
  int inserted = 0;
  SpecDumps dumps;
  std::size_t row = 0;
  for (const jobs::PlannedJob& job : plan_jobs) {
    busy_tick(row++);
    if (job.job_id.empty()) return invalid_argument("empty plan job id in run '" + run_id + "'");
    insert.reset();
    insert.bind(1, run_id)
        .bind(2, job.job_id)
        .bind(3, next_seq)
        .bind(4, dumps.of(job.spec))
        .bind(5, jobs::to_string(job.spec.placement))
        .bind(6, now);
    AM_RETURN_IF_ERROR(insert.run());
    if (insert.changes() > 0) {
      ++inserted;
      ++next_seq;
    }
  }
  AM_RETURN_IF_ERROR(tx.commit());
  AM_RETURN_IF_ERROR(check_file_identity());
  return inserted;
}

Status Store::remove_unattempted_job(const std::string& run_id, const std::string& job_id) {
  AM_RETURN_IF_ERROR(require_ids(run_id, job_id));
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  AM_ASSIGN_OR_RETURN(auto count, Statement::prepare(
                                      db_, "SELECT count(*) AS n FROM attempts WHERE run_id = ?1 AND job_id = ?2"));
  count.bind(1, run_id).bind(2, job_id);
  AM_ASSIGN_OR_RETURN(bool row, count.step());
  if (row && count.column_int64("n") > 0) {
    return failed_precondition(job_name(run_id, job_id) + " has attempts; results are never removed");
  }
  AM_ASSIGN_OR_RETURN(auto del, Statement::prepare(db_, "DELETE FROM jobs WHERE run_id = ?1 AND job_id = ?2"));
  del.bind(1, run_id).bind(2, job_id);
  AM_RETURN_IF_ERROR(del.run());
  AM_RETURN_IF_ERROR(tx.commit());
  return check_file_identity();
}

Result<std::vector<JobRow>> Store::load_jobs(const std::string& run_id) {
  std::vector<JobRow> rows;
  AM_RETURN_IF_ERROR(for_each_job(run_id, /*with_spec=*/true, [&rows](JobRow& row) {
    rows.push_back(std::move(row));
    return Status::Ok();
  }));
  return rows;
}

Result<int64_t> Store::data_version() {
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, "PRAGMA data_version"));
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return internal_error("PRAGMA data_version returned no row");
  return stmt.column_int64(0);
}

Result<PrefetchedJobs> PrefetchedJobs::read(const std::filesystem::path& db_path, Wanted* wanted) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return not_found(db_path.string() + " does not exist yet");
  PrefetchedJobs p;
  AM_ASSIGN_OR_RETURN(p.store_, Store::open_read_only(db_path));
  if (p.store_->schema_version() != kSchemaVersion) {
    return failed_precondition("schema " + std::to_string(p.store_->schema_version()) + " is migrated first");
  }
  AM_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, p.store_->list_runs());
  if (runs.size() != 1) return failed_precondition(std::to_string(runs.size()) + " runs stored");
  p.run_id_ = runs.front().run_id;
  AM_ASSIGN_OR_RETURN(p.version_, p.store_->data_version());
  constexpr std::size_t kWantedCheckRows = 4096;
  const auto another_run = [&] {
    if (wanted == nullptr) return false;
    std::lock_guard<std::mutex> lock(wanted->mu);
    return wanted->run_id.has_value() && *wanted->run_id != p.run_id_;
  };
  AM_RETURN_IF_ERROR(p.store_->for_each_job(p.run_id_, /*with_spec=*/false, [&](JobRow& row) -> Status {
    if (p.rows_.size() % kWantedCheckRows == 0 && another_run()) return unavailable("another run is submitted");
    p.rows_.push_back(std::move(row));
    return Status::Ok();
  }));
  // A commit while the two statements of the walk ran could have split them.
  if (!p.current()) return unavailable("the database changed while its jobs were read");
  return p;
}

bool PrefetchedJobs::current() {
  if (!store_) return false;
  Result<int64_t> v = store_->data_version();
  return v.ok() && *v == version_;
}

Status Store::for_each_job(const std::string& run_id, bool with_spec, const std::function<Status(JobRow&)>& visit) {
  // The outstanding lease of a leased job is its highest attempt still in state 'leased'. The
  // leases are read first, for the leased jobs alone (found through jobs_by_run_state): joined
  // into the walk below, SQLite sought each job's attempts whatever its state, and that join was
  // three quarters of reading back a million jobs (docs/SCALE.md, restart).
  struct OutstandingLease {
    std::string worker;
    std::string host;
    int64_t expires_at_ms = 0;
    std::string device;
    int64_t leased_at_ms = 0;
    bool exclusive = false;
  };
  std::unordered_map<std::string, OutstandingLease> leases;
  {
    AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, R"sql(
        SELECT j.job_id, a.worker_id, a.hostname, a.lease_expires_at, a.device, a.leased_at, a.exclusive
        FROM jobs j
        JOIN attempts a
          ON a.run_id = j.run_id AND a.job_id = j.job_id
         AND a.attempt = (SELECT max(attempt) FROM attempts l
                          WHERE l.run_id = j.run_id AND l.job_id = j.job_id
                            AND l.state = :attempt_leased)
        WHERE j.run_id = ?1 AND j.state = :job_leased)sql"));
    stmt.bind(1, run_id);
    while (true) {
      AM_ASSIGN_OR_RETURN(bool row, stmt.step());
      if (!row) break;
      leases[stmt.column_text(0)] = OutstandingLease{stmt.column_text(1), stmt.column_text(2), stmt.column_int64(3),
                                                     stmt.column_text(4), stmt.column_int64(5), stmt.column_int(6) != 0};
    }
  }
  // Columns by position (a by-name lookup takes SQLite's mutex per column per row).
  // The family columns are read in every walk (a restart from the store renders no text, but
  // takes each job's family and scalars from them: Server::resume).
  const bool has_families = schema_version() >= kSpecFamiliesSchemaVersion;
  const bool families = with_spec && has_families;
  if (families) AM_RETURN_IF_ERROR(families_.load_run(db_, run_id, kSpecFamiliesSchemaVersion));
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, std::string(R"sql(
      SELECT job_id, state, attempts, status, reason, terminal_attempt, target, hardware_class, plan_job_id, )sql") +
                                              (with_spec ? "spec_json, " : "'', ") +
                                              "precision, batch, seq_len, model, backend, " +
                                              (has_families ? "family_id" : "0") + R"sql(
      FROM jobs
      WHERE run_id = ?1
      ORDER BY seq)sql"));
  enum Column {
    kJobId, kState, kAttempts, kStatus, kReason, kTerminalAttempt, kTarget, kHardwareClass, kPlanJobId,
    kSpec, kPrecision, kBatch, kSeqLen, kModel, kBackend, kFamily
  };
  std::string spec_scratch;
  stmt.bind(1, run_id);
  JobRow job;
  std::size_t walked = 0;
  while (true) {
    busy_tick(walked++);
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    job = JobRow{};
    job.run_id = run_id;
    job.job_id = stmt.column_text(kJobId);
    const auto what = [&] { return job_name(run_id, job.job_id); };
    if (with_spec) {
      const SpecFamilies::Row columns{run_id, stmt.column_view(kModel), stmt.column_view(kBackend),
                                      stmt.column_view(kPrecision), stmt.column_int64(kBatch),
                                      stmt.column_int64(kSeqLen)};
      Result<std::string_view> text =
          families_.text(stmt.column_view(kSpec), stmt.column_int64(kFamily), columns, spec_scratch);
      if (!text.ok()) return internal_error("corrupt spec of " + what() + " in the store: " + text.status().message());
      AM_ASSIGN_OR_RETURN(job.spec, parse_stored_json(std::string(*text), "spec of " + what()));
    }
    const std::string_view state = stmt.column_view(kState);
    if (std::optional<JobState> parsed = parse_job_state(state)) {
      job.state = *parsed;
    } else {
      return stored_job_state(std::string(state), what()).status();
    }
    job.attempts = stmt.column_int(kAttempts);
    if (const std::string_view status = stmt.column_view(kStatus); !status.empty()) {
      job.status = parse_result_status(status);
      if (!job.status) return stored_status(std::string(status), what()).status();
    }
    job.reason = stmt.column_text(kReason);
    job.terminal_attempt = stmt.column_int(kTerminalAttempt);
    if (job.state == JobState::kLeased) {
      if (auto lease = leases.find(job.job_id); lease != leases.end()) {
        job.lease_worker = std::move(lease->second.worker);
        job.lease_host = std::move(lease->second.host);
        job.lease_expires_at_ms = lease->second.expires_at_ms;
        job.lease_device = std::move(lease->second.device);
        job.lease_leased_at_ms = lease->second.leased_at_ms;
        job.lease_exclusive = lease->second.exclusive;
      }
    }
    job.target = stmt.column_text(kTarget);
    job.hardware_class = stmt.column_text(kHardwareClass);
    job.plan_job_id = stmt.column_text(kPlanJobId);
    job.model = stmt.column_text(kModel);
    job.backend = stmt.column_text(kBackend);
    job.family_id = stmt.column_int64(kFamily);
    if (std::optional<jobs::Precision> precision = jobs::parse_precision_label(stmt.column_view(kPrecision))) {
      job.scalars = jobs::JobScalars{*precision, stmt.column_int(kBatch), stmt.column_int(kSeqLen)};
    }
    AM_RETURN_IF_ERROR(visit(job));
  }
  return Status::Ok();
}

namespace {

// The single count(*) AS n of `sql` with ?1 bound to run_id.
Result<int64_t> count_of_run(sqlite3* db, const char* sql, const std::string& run_id) {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db, sql));
  stmt.bind(1, run_id);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  return row ? stmt.column_int64("n") : 0;
}

}  // namespace

Result<int64_t> Store::count_untargeted_jobs(const std::string& run_id) {
  return count_of_run(db_, "SELECT count(*) AS n FROM jobs WHERE run_id = ?1 AND target = ''", run_id);
}

Result<int64_t> Store::count_plan_jobs(const std::string& run_id) {
  return count_of_run(db_, "SELECT count(*) AS n FROM plan_jobs WHERE run_id = ?1", run_id);
}

Result<std::unordered_map<int64_t, StoredSpecFamily>> Store::spec_families_of_run(const std::string& run_id) {
  std::unordered_map<int64_t, StoredSpecFamily> out;
  if (schema_version() < kSpecFamiliesSchemaVersion) return out;
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, "SELECT family_id, spec_json FROM spec_families WHERE run_id = ?1"));
  stmt.bind(1, run_id);
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    const int64_t id = stmt.column_int64(0);
    StoredSpecFamily& f = out[id];
    auto doc = parse_stored_json(stmt.column_text(1), "spec family " + std::to_string(id) + " of run '" + run_id + "'");
    auto spec = doc.ok() ? jobs::job_spec_from_json(*doc) : Result<jobs::JobSpec>(doc.status());
    if (spec.ok()) {
      f.spec = std::move(spec).value();
    } else {
      f.damage = "spec family " + std::to_string(id) + " is damaged: " + spec.status().message();
    }
  }
  return out;
}

Status Store::for_each_plan_job(const std::string& run_id,
                                const std::function<Status(const std::string& job_id, Result<jobs::JobSpec>& spec)>& visit) {
  if (schema_version() < 5) return Status::Ok();   // no plan_jobs table before placements
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, "SELECT job_id, spec_json FROM plan_jobs WHERE run_id = ?1 ORDER BY seq"));
  stmt.bind(1, run_id);
  std::size_t walked = 0;
  while (true) {
    busy_tick(walked++);
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    const std::string job_id = stmt.column_text(0);
    auto doc = parse_stored_json(stmt.column_text(1), "spec of plan job '" + job_id + "' of run '" + run_id + "'");
    Result<jobs::JobSpec> spec = doc.ok() ? jobs::job_spec_from_json(*doc) : Result<jobs::JobSpec>(doc.status());
    AM_RETURN_IF_ERROR(visit(job_id, spec));
  }
  return Status::Ok();
}

Result<nlohmann::json> Store::job_spec(const std::string& run_id, const std::string& job_id) {
  // Schema versions only grow: once a file is at 6 it stays there (this is called per job of a
  // restart's read-back where the plan does not name the job).
  if (families_schema_ < kSpecFamiliesSchemaVersion) families_schema_ = schema_version();
  const bool families = families_schema_ >= kSpecFamiliesSchemaVersion;
  AM_ASSIGN_OR_RETURN(auto stmt, cached(families ? "SELECT spec_json, family_id, precision, batch, seq_len, model, backend "
                                                   "FROM jobs WHERE run_id = ?1 AND job_id = ?2"
                                                 : "SELECT spec_json, 0, precision, batch, seq_len, model, backend "
                                                   "FROM jobs WHERE run_id = ?1 AND job_id = ?2"));
  stmt->bind(1, run_id).bind(2, job_id);
  AM_ASSIGN_OR_RETURN(bool row, stmt->step());
  if (!row) return not_found(job_name(run_id, job_id) + " is not in the store");
  const int64_t family = stmt->column_int64(1);
  AM_RETURN_IF_ERROR(families_.load(db_, family));
  std::string scratch;
  const SpecFamilies::Row columns{run_id, stmt->column_view(5), stmt->column_view(6), stmt->column_view(2),
                                  stmt->column_int64(3), stmt->column_int64(4)};
  Result<std::string_view> text = families_.text(stmt->column_view(0), family, columns, scratch);
  if (!text.ok()) {
    return internal_error("corrupt spec of " + job_name(run_id, job_id) + " in the store: " + text.status().message());
  }
  return parse_stored_json(std::string(*text), "spec of " + job_name(run_id, job_id));
}

// ---------------------------------------------------------------------------------------------
// Leases

Status Store::record_lease(const LeaseRecord& lease) { return record_leases({lease}); }

Status Store::record_leases(const std::vector<LeaseRecord>& leases) {
  for (const LeaseRecord& lease : leases) {
    AM_RETURN_IF_ERROR(require_ids(lease.run_id, lease.job_id));
    if (lease.attempt < 1) {
      return invalid_argument("attempt must be >= 1 (got " + std::to_string(lease.attempt) + ") for " +
                              job_name(lease.run_id, lease.job_id));
    }
  }
  if (leases.empty()) return Status::Ok();
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  for (const LeaseRecord& lease : leases) AM_RETURN_IF_ERROR(record_lease_in_transaction(lease));
  AM_RETURN_IF_ERROR(tx.commit());
  return check_file_identity();
}

Status Store::record_lease_in_transaction(const LeaseRecord& lease) {
  // The job's row first: updating it is also the check that it exists (one statement fewer per
  // lease than a SELECT first). A done job keeps its state: a lease recorded after the terminal
  // result changes nothing but the attempt counter. A failure below rolls this back with the
  // rest of the batch (record_leases' transaction).
  {
    AM_ASSIGN_OR_RETURN(auto job, cached(R"sql(
        UPDATE jobs SET attempts = max(attempts, ?3),
                        state = CASE WHEN state = :job_done THEN :job_done ELSE :job_leased END
        WHERE run_id = ?1 AND job_id = ?2)sql"));
    job->bind(1, lease.run_id).bind(2, lease.job_id).bind(3, lease.attempt);
    AM_RETURN_IF_ERROR(job->run());
    if (job->changes() == 0) return not_found(job_name(lease.run_id, lease.job_id) + " is not in the store");
  }

  // Renewing a lease that is still out updates it; an attempt that already expired or has a
  // result is history and is not revived (the scheduler issues a new attempt number instead).
  AM_ASSIGN_OR_RETURN(auto upsert, cached(R"sql(
      INSERT INTO attempts(run_id, job_id, attempt, worker_id, hostname, build, device,
                           hardware_class, leased_at, lease_expires_at, state, exclusive)
      VALUES (?1, ?2, ?3, ?4,
              coalesce((SELECT hostname FROM workers WHERE worker_id = ?4), ''),
              coalesce((SELECT build FROM workers WHERE worker_id = ?4), ''),
              ?5, ?6, ?7, ?8, :attempt_leased, ?9)
      ON CONFLICT(run_id, job_id, attempt) DO UPDATE SET
        worker_id = excluded.worker_id, hostname = excluded.hostname, build = excluded.build,
        device = excluded.device, hardware_class = excluded.hardware_class,
        leased_at = excluded.leased_at, lease_expires_at = excluded.lease_expires_at,
        exclusive = excluded.exclusive
      WHERE attempts.state = :attempt_leased)sql"));
  upsert->bind(1, lease.run_id)
      .bind(2, lease.job_id)
      .bind(3, lease.attempt)
      .bind(4, lease.worker_id)
      .bind(5, lease.device)
      .bind(6, lease.hardware_class)
      .bind(7, lease.leased_at_ms != 0 ? lease.leased_at_ms : now_epoch_ms())
      .bind(8, lease.lease_expires_at_ms)
      .bind(9, lease.exclusive ? 1 : 0);
  AM_RETURN_IF_ERROR(upsert->run());
  if (upsert->changes() == 0) {
    return failed_precondition("attempt " + std::to_string(lease.attempt) + " of " +
                               job_name(lease.run_id, lease.job_id) +
                               " already expired or has a result; lease a new attempt instead");
  }
  return Status::Ok();
}

namespace {

// Closes a leased attempt without a result, as `how` (expired or interrupted), and puts its job
// back to the queue unless another attempt of it is still out. No-op when the attempt is no
// longer leased. Runs in its own transaction.
Status close_lease(sqlite3* db, const std::string& run_id, const std::string& job_id, int attempt,
                   const std::string& reason, int64_t at_ms, AttemptState how) {
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db));
  AM_ASSIGN_OR_RETURN(auto select, Statement::prepare(
                                       db, "SELECT state FROM attempts WHERE run_id = ? AND job_id = ? AND attempt = ?"));
  select.bind(1, run_id).bind(2, job_id).bind(3, attempt);
  AM_ASSIGN_OR_RETURN(bool found, select.step());
  if (!found) {
    return not_found("attempt " + std::to_string(attempt) + " of " + job_name(run_id, job_id) +
                     " was never leased");
  }
  if (parse_attempt_state(select.column_text("state")) != AttemptState::kLeased) {
    return Status::Ok();   // result, expiry or interruption already stored
  }

  // An interrupted attempt also carries the status `interrupted` (common/result_status.h), so
  // reports that show a job's latest attempt say what happened to it.
  const std::string status =
      how == AttemptState::kInterrupted ? std::string(to_string(ResultStatus::kInterrupted)) : std::string();
  AM_ASSIGN_OR_RETURN(auto close, prepare(db, R"sql(
      UPDATE attempts SET state = ?6, status = ?7, reason = ?4, expired_at = ?5
      WHERE run_id = ?1 AND job_id = ?2 AND attempt = ?3 AND state = :attempt_leased)sql"));
  close.bind(1, run_id).bind(2, job_id).bind(3, attempt).bind(4, reason).bind(5, at_ms)
      .bind(6, to_string(how)).bind(7, status);
  AM_RETURN_IF_ERROR(close.run());

  // Back to the queue only when no other attempt of the job is still out.
  AM_ASSIGN_OR_RETURN(auto requeue, prepare(db, R"sql(
      UPDATE jobs SET state = :job_queued
      WHERE run_id = ?1 AND job_id = ?2 AND state = :job_leased
        AND NOT EXISTS (SELECT 1 FROM attempts
                        WHERE run_id = ?1 AND job_id = ?2 AND state = :attempt_leased))sql"));
  requeue.bind(1, run_id).bind(2, job_id);
  AM_RETURN_IF_ERROR(requeue.run());
  return tx.commit();
}

}  // namespace

Status Store::expire_lease(const std::string& run_id, const std::string& job_id, int attempt,
                           const std::string& reason, int64_t at_ms) {
  AM_RETURN_IF_ERROR(require_ids(run_id, job_id));
  AM_RETURN_IF_ERROR(close_lease(db_, run_id, job_id, attempt, reason, at_ms, AttemptState::kExpired));
  return check_file_identity();
}

Status Store::interrupt_lease(const std::string& run_id, const std::string& job_id, int attempt,
                              const std::string& reason, int64_t at_ms) {
  AM_RETURN_IF_ERROR(require_ids(run_id, job_id));
  AM_RETURN_IF_ERROR(close_lease(db_, run_id, job_id, attempt, reason, at_ms, AttemptState::kInterrupted));
  return check_file_identity();
}

Status Store::set_job_terminal(const std::string& run_id, const std::string& job_id,
                               ResultStatus status, const std::string& reason, int64_t at_ms) {
  AM_RETURN_IF_ERROR(require_ids(run_id, job_id));
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  AM_ASSIGN_OR_RETURN(auto state, job_state(db_, run_id, job_id));
  if (!state) return not_found(job_name(run_id, job_id) + " is not in the store");
  if (*state == JobState::kDone) return Status::Ok();
  AM_ASSIGN_OR_RETURN(auto update, prepare(db_, R"sql(
      UPDATE jobs SET state = :job_done, status = ?3, reason = ?4, finished_at = ?5
      WHERE run_id = ?1 AND job_id = ?2 AND state <> :job_done)sql"));
  update.bind(1, run_id).bind(2, job_id).bind(3, to_string(status)).bind(4, reason).bind(5, at_ms);
  AM_RETURN_IF_ERROR(update.run());
  AM_RETURN_IF_ERROR(tx.commit());
  return check_file_identity();
}

// ---------------------------------------------------------------------------------------------
// Results

ResultRecord result_record_of(proto::JobResult& r, const std::string& run_id, const std::string& worker_id,
                              int64_t received_at_ms) {
  ResultRecord rec;
  rec.run_id = run_id;
  rec.job_id = r.job_id;
  rec.attempt = r.attempt;
  rec.worker_id = worker_id;
  rec.status = r.status;
  rec.reason = std::move(r.reason);
  rec.metrics_json = std::move(r.metrics_json);
  rec.log_tail = std::move(r.log_tail);
  rec.started_at_ms = r.started_at_ms;
  rec.finished_at_ms = r.finished_at_ms;
  rec.received_at_ms = received_at_ms;
  return rec;
}

Result<std::vector<StoredOutcome>> Store::store_results(const std::vector<ResultRecord>& results) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ResultRecord& r = results[i];
    Status ids = require_ids(r.run_id, r.job_id);
    if (!ids.ok()) return ids.with_context("result " + std::to_string(i));
    if (r.attempt < 1) {
      return invalid_argument("result " + std::to_string(i) + " for " + job_name(r.run_id, r.job_id) +
                              ": attempt must be >= 1 (got " + std::to_string(r.attempt) + ")");
    }
  }
  std::vector<StoredOutcome> outcomes(results.size());
  if (results.empty()) return outcomes;
  AM_RETURN_IF_ERROR(check_file_identity());

  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  // Whether the job exists and the attempt's state, in one statement.
  AM_ASSIGN_OR_RETURN(auto lookup, cached(R"sql(
      SELECT (SELECT state FROM jobs WHERE run_id = ?1 AND job_id = ?2) AS job_state,
             (SELECT state FROM attempts WHERE run_id = ?1 AND job_id = ?2 AND attempt = ?3) AS state)sql"));
  // Without a lease row (e.g. the result of an attempt leased before a coordinator restart
  // that lost it) the attempt is created from the result alone. The lease's worker, device and
  // hardware class are kept when present.
  AM_ASSIGN_OR_RETURN(auto upsert, cached(R"sql(
      INSERT INTO attempts(run_id, job_id, attempt, worker_id, hostname, build, state, status,
                           reason, metrics_json, log_tail, started_at, finished_at, received_at)
      VALUES (?1, ?2, ?3, ?4,
              coalesce((SELECT hostname FROM workers WHERE worker_id = ?4), ''),
              coalesce((SELECT build FROM workers WHERE worker_id = ?4), ''),
              :attempt_done, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
      ON CONFLICT(run_id, job_id, attempt) DO UPDATE SET
        worker_id = CASE WHEN attempts.worker_id = '' THEN excluded.worker_id ELSE attempts.worker_id END,
        hostname = CASE WHEN attempts.hostname = '' THEN excluded.hostname ELSE attempts.hostname END,
        build = CASE WHEN attempts.build = '' THEN excluded.build ELSE attempts.build END,
        state = :attempt_done, status = excluded.status, reason = excluded.reason,
        metrics_json = excluded.metrics_json, log_tail = excluded.log_tail,
        started_at = excluded.started_at, finished_at = excluded.finished_at,
        received_at = excluded.received_at
      WHERE attempts.state <> :attempt_done)sql"));
  // One update of the job's row: the first terminal result settles it (SET reads the row as it
  // was), any result counts its attempt. Rewriting the row twice was a sixth of a result.
  AM_ASSIGN_OR_RETURN(auto settle, cached(R"sql(
      UPDATE jobs SET
        status = CASE WHEN state <> :job_done THEN ?3 ELSE status END,
        reason = CASE WHEN state <> :job_done THEN ?4 ELSE reason END,
        terminal_attempt = CASE WHEN state <> :job_done THEN ?5 ELSE terminal_attempt END,
        finished_at = CASE WHEN state <> :job_done THEN ?6 ELSE finished_at END,
        attempts = max(attempts, ?5),
        state = :job_done
      WHERE run_id = ?1 AND job_id = ?2)sql"));

  const int64_t now = now_epoch_ms();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ResultRecord& r = results[i];
    lookup->reset();
    lookup->bind(1, r.run_id).bind(2, r.job_id).bind(3, r.attempt);
    AM_ASSIGN_OR_RETURN(bool row, lookup->step());
    if (!row || lookup->column_is_null("job_state")) {
      return not_found("result " + std::to_string(i) + ": " + job_name(r.run_id, r.job_id) +
                       " is not in the store; nothing of this batch was stored");
    }
    const bool job_was_done =
        parse_job_state(lookup->column_view(lookup->column_index("job_state"))) == JobState::kDone;
    const std::optional<AttemptState> was =
        lookup->column_is_null("state") ? std::nullopt : parse_attempt_state(lookup->column_text("state"));
    if (was == AttemptState::kDone) {
      outcomes[i].duplicate = true;
      continue;
    }
    // The coordinator closed this attempt and sent CANCEL (lease expired, clean stop): the
    // `cancelled` that comes back is the echo of that, not an outcome of the job.
    if ((was == AttemptState::kExpired || was == AttemptState::kInterrupted) &&
        r.status == ResultStatus::kCancelled) {
      outcomes[i].discarded = true;
      continue;
    }
    const int64_t received = r.received_at_ms != 0 ? r.received_at_ms : now;
    // A RESULT's metrics arrive as text already (ResultRecord::metrics_json); a tree is written
    // here (common/json_text.h: with dump() the text was a third of this call).
    std::string tree_text;
    if (r.metrics_json.empty()) tree_text = r.metrics.is_null() ? std::string("{}") : to_json_text(r.metrics);
    const std::string_view metrics_text = r.metrics_json.empty() ? std::string_view(tree_text) : r.metrics_json;
    upsert->reset();
    upsert->bind(1, r.run_id)
        .bind(2, r.job_id)
        .bind(3, r.attempt)
        .bind(4, r.worker_id)
        .bind(5, to_string(r.status))
        .bind(6, r.reason)
        .bind(7, metrics_text)
        .bind(8, r.log_tail)
        .bind(9, r.started_at_ms)
        .bind(10, r.finished_at_ms)
        .bind(11, received);
    AM_RETURN_IF_ERROR(upsert->run());

    settle->reset();
    settle->bind(1, r.run_id)
        .bind(2, r.job_id)
        .bind(3, to_string(r.status))
        .bind(4, r.reason)
        .bind(5, r.attempt)
        .bind(6, r.finished_at_ms != 0 ? r.finished_at_ms : received);
    AM_RETURN_IF_ERROR(settle->run());
    outcomes[i].became_terminal = !job_was_done;
  }
  AM_RETURN_IF_ERROR(tx.commit());
  // A file removed between the check above and the commit took this batch with it.
  AM_RETURN_IF_ERROR(check_file_identity());
  return outcomes;
}

Result<std::optional<std::string>> Store::attempt_worker(const std::string& run_id,
                                                         const std::string& job_id, int attempt) {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(
                                     db_, "SELECT worker_id FROM attempts WHERE run_id = ? AND job_id = ? AND attempt = ?"));
  stmt.bind(1, run_id).bind(2, job_id).bind(3, attempt);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt.column_text("worker_id"));
}

Result<std::optional<std::string>> Store::leased_attempt_run(const std::string& worker_id, const std::string& job_id,
                                                              int attempt) {
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, R"sql(
      SELECT run_id FROM attempts INDEXED BY attempts_by_worker
      WHERE worker_id = ?1 AND job_id = ?2 AND attempt = ?3 AND state = :attempt_leased)sql"));
  stmt.bind(1, worker_id).bind(2, job_id).bind(3, attempt);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt.column_text("run_id"));
}

// ---------------------------------------------------------------------------------------------
// Workers

Status Store::upsert_worker(const WorkerRecord& worker) {
  if (worker.worker_id.empty()) return invalid_argument("empty worker id");
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      INSERT INTO workers(worker_id, hostname, build, capabilities_json, tags_json, first_seen,
                          last_seen, host_id)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)
      ON CONFLICT(worker_id) DO UPDATE SET
        hostname = excluded.hostname, build = excluded.build,
        capabilities_json = excluded.capabilities_json, tags_json = excluded.tags_json,
        last_seen = excluded.last_seen, host_id = excluded.host_id)sql"));
  stmt.bind(1, worker.worker_id)
      .bind(2, worker.hostname)
      .bind(3, worker.build)
      .bind(4, dump_json(worker.capabilities))
      .bind(5, dump_json(worker.tags))
      .bind(6, worker.last_seen_at_ms != 0 ? worker.last_seen_at_ms : now_epoch_ms())
      .bind(7, worker.host_id);
  return stmt.run();
}

Result<std::vector<WorkerRecord>> Store::list_workers() {
  // host_id exists since schema 5; a reader of an older file reads it as "".
  const std::string host_id = schema_version() >= 5 ? "host_id" : "'' AS host_id";
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_,
      "SELECT worker_id, hostname, build, capabilities_json, tags_json, last_seen, " + host_id +
      " FROM workers ORDER BY worker_id"));
  std::vector<WorkerRecord> out;
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    WorkerRecord w;
    w.worker_id = stmt.column_text("worker_id");
    w.hostname = stmt.column_text("hostname");
    w.build = stmt.column_text("build");
    AM_ASSIGN_OR_RETURN(w.capabilities, parse_stored_json(stmt.column_text("capabilities_json"),
                                                          "capabilities of worker '" + w.worker_id + "'"));
    AM_ASSIGN_OR_RETURN(w.tags, parse_stored_json(stmt.column_text("tags_json"),
                                                  "tags of worker '" + w.worker_id + "'"));
    w.last_seen_at_ms = stmt.column_int64("last_seen");
    w.host_id = stmt.column_text("host_id");
    out.push_back(std::move(w));
  }
  return out;
}

Result<bool> Store::worker_has_results(const std::string& worker_id) {
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(
                                     db_, "SELECT 1 FROM attempts WHERE worker_id = ?1 AND state = :attempt_done LIMIT 1"));
  stmt.bind(1, worker_id);
  return stmt.step();
}

Result<std::optional<WorkerCredential>> Store::get_credential(const std::string& worker_id) {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      SELECT worker_id, curve_key, secret_hash, bound_at FROM worker_credentials
      WHERE worker_id = ?)sql"));
  stmt.bind(1, worker_id);
  AM_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return std::optional<WorkerCredential>();
  WorkerCredential c;
  c.worker_id = stmt.column_text("worker_id");
  c.curve_key = stmt.column_text("curve_key");
  c.secret_hash = stmt.column_text("secret_hash");
  c.bound_at_ms = stmt.column_int64("bound_at");
  return std::optional<WorkerCredential>(std::move(c));
}

Status Store::bind_credential(const WorkerCredential& c) {
  if (c.worker_id.empty()) return invalid_argument("empty worker id");
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      INSERT INTO worker_credentials(worker_id, curve_key, secret_hash, bound_at)
      VALUES (?1, ?2, ?3, ?4) ON CONFLICT(worker_id) DO NOTHING)sql"));
  stmt.bind(1, c.worker_id)
      .bind(2, c.curve_key)
      .bind(3, c.secret_hash)
      .bind(4, c.bound_at_ms != 0 ? c.bound_at_ms : now_epoch_ms());
  return stmt.run();
}

Status Store::save_counters(const std::map<std::string, uint64_t>& counters, int64_t at_ms) {
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      INSERT INTO counters(name, value, updated_at) VALUES (?1, ?2, ?3)
      ON CONFLICT(name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at)sql"));
  for (const auto& [name, value] : counters) {
    stmt.reset();
    stmt.bind(1, name).bind(2, static_cast<int64_t>(value)).bind(3, at_ms);
    AM_RETURN_IF_ERROR(stmt.run());
  }
  AM_RETURN_IF_ERROR(tx.commit());
  return check_file_identity();
}

Result<std::vector<RunCounts>> Store::run_counts() {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      SELECT run_id, state, status, count(*) AS n FROM jobs GROUP BY run_id, state, status ORDER BY run_id)sql"));
  std::vector<RunCounts> out;
  for (;;) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    const std::string run_id = stmt.column_text("run_id");
    if (out.empty() || out.back().run_id != run_id) out.push_back(RunCounts{run_id});
    RunCounts& c = out.back();
    const int n = static_cast<int>(stmt.column_int64("n"));
    c.total += n;
    const auto state = parse_job_state(stmt.column_text("state"));
    if (state == JobState::kQueued) c.queued += n;
    else if (state == JobState::kLeased) c.leased += n;
    else c.by_status[stmt.column_text("status")] += n;
  }
  if (schema_version() < 5) return out;
  // Plan jobs no job was made from yet (placement, schema 5) are waiting too.
  AM_ASSIGN_OR_RETURN(auto unplaced, Statement::prepare(db_, R"sql(
      SELECT p.run_id, count(*) AS n FROM plan_jobs p
      WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = p.run_id AND j.plan_job_id = p.job_id
                                             AND j.plan_job_id <> '')
      GROUP BY p.run_id)sql"));
  for (;;) {
    AM_ASSIGN_OR_RETURN(bool row, unplaced.step());
    if (!row) break;
    const std::string run_id = unplaced.column_text("run_id");
    const int n = static_cast<int>(unplaced.column_int64("n"));
    auto it = std::find_if(out.begin(), out.end(), [&](const RunCounts& c) { return c.run_id == run_id; });
    if (it == out.end()) {
      out.push_back(RunCounts{run_id});
      it = std::prev(out.end());
    }
    it->total += n;
    it->queued += n;
    it->unplaced += n;
  }
  std::sort(out.begin(), out.end(), [](const RunCounts& a, const RunCounts& b) { return a.run_id < b.run_id; });
  return out;
}

Status Store::record_device_event(const DeviceEvent& e) {
  if (e.worker_id.empty()) return invalid_argument("device event without a worker id");
  AM_RETURN_IF_ERROR(check_file_identity());
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      INSERT INTO device_events(at, worker_id, device, event, reason) VALUES (?1, ?2, ?3, ?4, ?5))sql"));
  stmt.bind(1, e.at_ms).bind(2, e.worker_id).bind(3, e.device).bind(4, e.event).bind(5, e.reason);
  AM_RETURN_IF_ERROR(stmt.run());
  return check_file_identity();
}

Result<std::vector<DeviceEvent>> Store::list_device_events(int limit) {
  std::vector<DeviceEvent> out;
  if (schema_version() < 4) return out;
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, R"sql(
      SELECT at, worker_id, device, event, reason FROM
        (SELECT * FROM device_events ORDER BY id DESC LIMIT ?1) ORDER BY id)sql"));
  stmt.bind(1, static_cast<int64_t>(limit));
  for (;;) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    DeviceEvent e;
    e.at_ms = stmt.column_int64("at");
    e.worker_id = stmt.column_text("worker_id");
    e.device = stmt.column_text("device");
    e.event = stmt.column_text("event");
    e.reason = stmt.column_text("reason");
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::map<std::string, uint64_t>> Store::load_counters() {
  AM_ASSIGN_OR_RETURN(auto stmt, Statement::prepare(db_, "SELECT name, value FROM counters"));
  std::map<std::string, uint64_t> out;
  for (;;) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    out[stmt.column_text("name")] = static_cast<uint64_t>(stmt.column_int64("value"));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reports

Result<std::vector<ReportRow>> Store::report_rows(const std::string& run_id) {
  std::vector<ReportRow> rows;
  AM_RETURN_IF_ERROR(for_each_report_row(run_id, ReportDocumentKeys{},
                                         [&](const ReportRow& row, const ReportRowTexts&) {
                                           rows.push_back(row);
                                           return Status::Ok();
                                         }));
  return rows;
}

Status Store::atomically(const std::function<Status()>& body) {
  AM_ASSIGN_OR_RETURN(auto tx, Transaction::begin(db_));
  AM_RETURN_IF_ERROR(body());
  AM_RETURN_IF_ERROR(tx.commit());
  return check_file_identity();
}

Status Store::in_read_snapshot(const std::function<Status()>& body) {
  // BEGIN (deferred) takes no lock until the first read, which then pins the WAL snapshot.
  AM_RETURN_IF_ERROR(sqlite::exec(db_, "BEGIN"));
  Status st = body();
  Status ended = sqlite::exec(db_, st.ok() ? "COMMIT" : "ROLLBACK");
  if (!st.ok()) return st;
  return ended;
}

namespace {

// One row of the report query as SQLite returned it, copied out of the statement so that the
// thread stepping it can go on (for_each_report_row).
struct RawReportRow {
  std::string job_id, spec, model, architecture, backend, precision, state, status, reason, worker_id, hostname,
      build, hardware_class, job_class, target, device, metrics, log_tail, attempt_reason;
  int64_t job_batch = 0, job_seq_len = 0, job_finished = 0, started = 0, finished = 0, family_id = 0;
  int terminal_attempt = 0, attempts = 0;
  bool has_attempt = false, exclusive = false;
};

// Rows in flight between the query's thread and the visiting one: enough to keep both busy,
// a few megabytes at most.
constexpr std::size_t kReportPipeBatches = 4;
constexpr std::size_t kReportPipeBatchRows = 256;

// The text a streaming report writes for a stored document: the stored text itself when it is a
// JSON object, else the JSON of the tree the row shows.
std::string_view document_text(std::string_view stored, const nlohmann::json& shown, bool damaged,
                               std::string& scratch) {
  if (!damaged && shown.is_object() && !stored.empty()) return stored;
  scratch = shown.is_object() ? dump_json(shown) : std::string("{}");
  return scratch;
}

}  // namespace

namespace {

// A model name that stands for more than one model in a run: the same catalog model under
// different `overrides` (an --extend that changed them, two plan entries), i.e. jobs whose
// spec's model_config differ. Each config gets a label of its own (ReportRow::model_label),
// "bert-tiny (layers=8)" by the keys whose values differ, so that no matrix cell or memory row
// pools different models under one name (a cell showed the mean of two models' medians and
// rated a command against a baseline that was neither). Commands are left out: their model is
// a label.
using ModelVariantLabels = std::map<std::string, std::map<nlohmann::json, std::string>>;

Result<ModelVariantLabels> model_variant_labels(sqlite3* db, const std::string& run_id, bool families) {
  // The distinct specs: a family's text stands for all its jobs; rows with a whole spec of
  // their own (before schema 6, commands) are read one by one.
  const std::string sql =
      std::string(R"sql(
      SELECT json_extract(spec_json, '$.model'), json_extract(spec_json, '$.model_config')
      FROM (SELECT spec_json FROM jobs WHERE run_id = ?1 AND spec_json <> ''
                 AND json_valid(spec_json) AND json_type(spec_json, '$.command') IS NULL)sql") +
      (families ? R"sql(
            UNION SELECT spec_json FROM spec_families WHERE run_id = ?1 AND json_valid(spec_json)
                 AND json_type(spec_json, '$.command') IS NULL)sql"
                : "") +
      ")";
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db, sql));
  stmt.bind(1, run_id);
  std::map<std::string, std::vector<nlohmann::json>> configs;
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    if (stmt.column_is_null(0) || stmt.column_is_null(1)) continue;
    nlohmann::json config = nlohmann::json::parse(stmt.column_text(1), nullptr, /*allow_exceptions=*/false);
    if (!config.is_object()) continue;
    std::vector<nlohmann::json>& seen = configs[stmt.column_text(0)];
    if (std::find(seen.begin(), seen.end(), config) == seen.end()) seen.push_back(std::move(config));
  }
  ModelVariantLabels labels;
  for (auto& [model, seen] : configs) {
    if (seen.size() < 2) continue;
    std::set<std::string> keys;
    for (const nlohmann::json& c : seen) {
      for (const auto& [key, value] : c.items()) keys.insert(key);
    }
    std::vector<std::string> differing;
    for (const std::string& key : keys) {
      const nlohmann::json* first = seen.front().contains(key) ? &seen.front().at(key) : nullptr;
      for (const nlohmann::json& c : seen) {
        const nlohmann::json* v = c.contains(key) ? &c.at(key) : nullptr;
        if ((first == nullptr) != (v == nullptr) || (first != nullptr && *first != *v)) {
          differing.push_back(key);
          break;
        }
      }
    }
    // Every differing key: two distinct configs differ in one of them, so no two labels are the
    // same (naming only the first few let two configs share a label and be pooled again).
    for (const nlohmann::json& c : seen) {
      std::string label;
      for (const std::string& key : differing) {
        label += (label.empty() ? "" : ", ") + key + "=" + (c.contains(key) ? c.at(key).dump() : std::string("-"));
      }
      labels[model][c] = model + " (" + label + ")";
    }
  }
  return labels;
}

}  // namespace

Status Store::for_each_report_row(const std::string& run_id, const ReportDocumentKeys& keys,
                                  const ReportRowVisitor& visit) {
  AM_ASSIGN_OR_RETURN(auto run, get_run(run_id));
  if (!run) return not_found("run '" + run_id + "' is not in the store");
  // The attempt shown is the terminal one, or the latest issued while the job is not terminal
  // (and for jobs settled without a result, e.g. lost). Provenance snapshotted on the attempt
  // wins over the worker's current registry entry.
  // Placement columns exist since schema 5; a reader of an older file reads them as empty.
  const int schema = schema_version();
  const bool placed = schema >= 5;
  const std::string placement_columns =
      placed ? "j.target AS target, j.hardware_class AS job_class, coalesce(a.exclusive, 0) AS exclusive"
             : "'' AS target, '' AS job_class, 0 AS exclusive";
  // Spec families since schema 6, all of the run's read before the walk: the connection is the
  // reader thread's until it is joined.
  const bool families = schema >= kSpecFamiliesSchemaVersion;
  if (families) AM_RETURN_IF_ERROR(families_.load_run(db_, run_id, schema));
  AM_ASSIGN_OR_RETURN(const ModelVariantLabels variant_labels, model_variant_labels(db_, run_id, families));
  std::unordered_map<int64_t, std::string> label_of_family;
  AM_ASSIGN_OR_RETURN(auto stmt, prepare(db_, R"sql(
      SELECT )sql" + placement_columns + R"sql(, )sql" + (families ? "j.family_id" : "0") + R"sql( AS family_id,
             j.job_id, j.spec_json, j.model, j.architecture, j.backend, j.precision, j.state,
             j.batch AS job_batch, j.seq_len AS job_seq_len,
             j.status, j.reason, j.terminal_attempt, j.attempts, j.finished_at AS job_finished_at,
             a.attempt IS NOT NULL AS has_attempt, coalesce(a.worker_id, '') AS worker_id,
             coalesce(nullif(a.hostname, ''), w.hostname, '') AS hostname,
             coalesce(nullif(a.build, ''), w.build, '') AS build,
             coalesce(a.hardware_class, '') AS hardware_class, coalesce(a.device, '') AS device,
             coalesce(a.metrics_json, '{}') AS metrics_json, coalesce(a.log_tail, '') AS log_tail,
             coalesce(a.started_at, 0) AS started_at, coalesce(a.finished_at, 0) AS finished_at,
             coalesce(a.reason, '') AS attempt_reason
      FROM jobs j
      LEFT JOIN attempts a
        ON a.run_id = j.run_id AND a.job_id = j.job_id
       AND a.attempt = CASE WHEN j.terminal_attempt > 0 THEN j.terminal_attempt ELSE j.attempts END
      LEFT JOIN workers w ON w.worker_id = a.worker_id
      WHERE j.run_id = ?1
      ORDER BY j.seq)sql"));
  stmt.bind(1, run_id);
  // Column positions once: a lookup by name per row and column was a tenth of a report.
  const int c_job_id = stmt.column_index("job_id"), c_spec = stmt.column_index("spec_json"),
            c_model = stmt.column_index("model"), c_architecture = stmt.column_index("architecture"),
            c_backend = stmt.column_index("backend"), c_precision = stmt.column_index("precision"),
            c_state = stmt.column_index("state"), c_job_batch = stmt.column_index("job_batch"),
            c_job_seq_len = stmt.column_index("job_seq_len"), c_status = stmt.column_index("status"),
            c_reason = stmt.column_index("reason"), c_terminal = stmt.column_index("terminal_attempt"),
            c_attempts = stmt.column_index("attempts"), c_job_finished = stmt.column_index("job_finished_at"),
            c_has_attempt = stmt.column_index("has_attempt"), c_worker = stmt.column_index("worker_id"),
            c_hostname = stmt.column_index("hostname"), c_build = stmt.column_index("build"),
            c_class = stmt.column_index("hardware_class"), c_job_class = stmt.column_index("job_class"),
            c_target = stmt.column_index("target"), c_exclusive = stmt.column_index("exclusive"),
            c_device = stmt.column_index("device"), c_metrics = stmt.column_index("metrics_json"),
            c_log = stmt.column_index("log_tail"), c_started = stmt.column_index("started_at"),
            c_finished = stmt.column_index("finished_at"), c_attempt_reason = stmt.column_index("attempt_reason"),
            c_family = stmt.column_index("family_id");

  // SQLite steps the query on a thread of its own and hands the rows over in batches; this
  // thread decodes and visits them (two cores: a million-result report, docs/SCALE.md). The
  // connection is used by that thread alone until it is joined.
  StoredJsonReader reader;
  // One row reused: its strings keep their buffers from row to row (every field is set below).
  ReportRow r;
  {   // the reader thread's scope: joined before the query of plan jobs below uses the connection
    BatchPipe<RawReportRow> pipe(kReportPipeBatches, kReportPipeBatchRows);
    std::thread reader_thread([&] {
      const auto copy = [&stmt](std::string& field, int column) {
        const std::string_view v = stmt.column_view(column);
        field.assign(v.data(), v.size());
      };
      Status ended;
      bool more = true;
      try {
        while (more) {
          auto* batch = pipe.take_empty();
          if (batch == nullptr) break;   // the visitor stopped the walk
          while (batch->size < batch->rows.size()) {
            Result<bool> row = stmt.step();
            if (!row.ok()) {
              ended = row.status();
              more = false;
              break;
            }
            if (!*row) {
              more = false;
              break;
            }
            RawReportRow& raw = batch->rows[batch->size++];
            copy(raw.job_id, c_job_id);
            copy(raw.spec, c_spec);
            copy(raw.model, c_model);
            copy(raw.architecture, c_architecture);
            copy(raw.backend, c_backend);
            copy(raw.precision, c_precision);
            copy(raw.state, c_state);
            copy(raw.status, c_status);
            copy(raw.reason, c_reason);
            copy(raw.worker_id, c_worker);
            copy(raw.hostname, c_hostname);
            copy(raw.build, c_build);
            copy(raw.hardware_class, c_class);
            copy(raw.job_class, c_job_class);
            copy(raw.target, c_target);
            copy(raw.device, c_device);
            copy(raw.metrics, c_metrics);
            copy(raw.log_tail, c_log);
            copy(raw.attempt_reason, c_attempt_reason);
            raw.job_batch = stmt.column_int64(c_job_batch);
            raw.job_seq_len = stmt.column_int64(c_job_seq_len);
            raw.terminal_attempt = stmt.column_int(c_terminal);
            raw.attempts = stmt.column_int(c_attempts);
            raw.job_finished = stmt.column_int64(c_job_finished);
            raw.has_attempt = stmt.column_int(c_has_attempt) != 0;
            raw.exclusive = stmt.column_int(c_exclusive) != 0;
            raw.started = stmt.column_int64(c_started);
            raw.finished = stmt.column_int64(c_finished);
            raw.family_id = stmt.column_int64(c_family);
          }
          pipe.put_full(batch);
        }
      } catch (const std::exception& e) {   // bad_alloc copying a row: the walk fails, not the process
        ended = internal_error(std::string("reading the report's rows: ") + e.what());
      }
      pipe.close(std::move(ended));
    });
    // However this walk ends, the reader thread is stopped and joined before the statement goes.
    struct JoinReader {
      BatchPipe<RawReportRow>& pipe;
      std::thread& thread;
      ~JoinReader() {
        pipe.stop();
        while (auto* b = pipe.take_full()) pipe.put_empty(b);
        thread.join();
      }
    } join_reader{pipe, reader_thread};

    r.run_id = run_id;
    std::string spec_scratch, metrics_scratch, family_scratch;
    while (auto* batch = pipe.take_full()) {
      for (std::size_t i = 0; i < batch->size; ++i) {
        RawReportRow& raw = batch->rows[i];
        // Strings are swapped, not copied: the batch gets the previous row's buffers back.
        r.job_id.swap(raw.job_id);
        // One damaged document does not take the report down: the job is shown from its columns
        // (model, backend, precision, shape, status) with the damage named in its reason.
        std::string damaged;
        bool spec_damaged = false;
        Status family = Status::Ok();
        if (raw.spec.empty() && raw.family_id != 0) {
          // Rendered from the family into the row's own buffer, the spec's text from here on.
          const SpecFamilies::Row columns{run_id, raw.model, raw.backend, raw.precision, raw.job_batch,
                                          raw.job_seq_len};
          Result<std::string_view> text = families_.text("", raw.family_id, columns, family_scratch);
          if (text.ok()) {
            raw.spec.swap(family_scratch);
          } else {
            family = text.status();
          }
        }
        if (Result<nlohmann::json> spec = family.ok() ? reader.decode(raw.spec, keys.spec) : Result<nlohmann::json>(family);
            spec.ok()) {
          r.spec = std::move(spec).value();
        } else {
          r.spec = {{"batch", raw.job_batch}, {"seq_len", raw.job_seq_len}};
          damaged = "corrupt spec of " + job_name(run_id, r.job_id) + " in the store: " + spec.status().message();
          spec_damaged = true;
        }
        r.model.swap(raw.model);
        r.model_label = r.model;
        if (auto variants = variant_labels.find(r.model); variants != variant_labels.end() && !spec_damaged) {
          // Once per spec family (a family is one config); a job with a whole spec of its own
          // (a command, an older schema) is parsed itself.
          auto cached = raw.family_id != 0 ? label_of_family.find(raw.family_id) : label_of_family.end();
          if (cached != label_of_family.end()) {
            r.model_label = cached->second;
          } else {
            const nlohmann::json whole = nlohmann::json::parse(raw.spec, nullptr, /*allow_exceptions=*/false);
            if (whole.is_object() && !whole.contains("command") && whole.contains("model_config")) {
              if (auto label = variants->second.find(whole.at("model_config")); label != variants->second.end()) {
                r.model_label = label->second;
              }
            }
            if (raw.family_id != 0) label_of_family.emplace(raw.family_id, r.model_label);
          }
        }
        r.architecture.swap(raw.architecture);
        if (jobs::is_selftest_model(r.model)) r.architecture = jobs::kSelftestShownArchitecture;
        r.backend.swap(raw.backend);
        const std::optional<jobs::Precision> p = jobs::parse_precision_label(raw.precision);
        if (!p) {
          return internal_error("unknown precision '" + raw.precision + "' of " + job_name(run_id, r.job_id) +
                                " in the store");
        }
        r.precision = *p;
        // The job's name is made only for a message: a row costs microseconds.
        if (std::optional<JobState> state = parse_job_state(raw.state)) {
          r.state = *state;
        } else {
          return stored_job_state(raw.state, job_name(run_id, r.job_id)).status();
        }
        if (raw.status.empty()) {
          r.status.reset();
        } else if (std::optional<ResultStatus> parsed = parse_result_status(raw.status)) {
          r.status = parsed;
        } else {
          return stored_status(raw.status, job_name(run_id, r.job_id)).status();
        }
        r.reason.swap(raw.reason);
        r.attempts = raw.attempts;
        r.attempt = raw.terminal_attempt > 0 ? raw.terminal_attempt : raw.attempts;
        r.worker_id.swap(raw.worker_id);
        r.hostname.swap(raw.hostname);
        r.build.swap(raw.build);
        r.hardware_class.swap(raw.hardware_class.empty() ? raw.job_class : raw.hardware_class);
        r.target.swap(raw.target);
        r.exclusive = raw.exclusive;
        r.device.swap(raw.device);
        bool metrics_damaged = false;
        Result<nlohmann::json> metrics = reader.decode(raw.metrics, keys.metrics);
        if (metrics.ok() && !metrics->is_object()) {
          metrics = internal_error(std::string("a JSON ") + metrics->type_name() + ", not an object");
        }
        if (metrics.ok()) {
          r.metrics = std::move(metrics).value();
        } else {
          r.metrics = nlohmann::json::object();
          damaged += (damaged.empty() ? "" : "; ") + ("corrupt metrics of " + job_name(run_id, r.job_id) +
                                                      " in the store: " + metrics.status().message());
          metrics_damaged = true;
        }
        r.log_tail.swap(raw.log_tail);
        r.started_at_ms = raw.started;
        r.finished_at_ms = raw.finished != 0 ? raw.finished : raw.job_finished;
        // A job back in the queue says why its last attempt ended (e.g. the lease expired).
        if (r.reason.empty() && raw.has_attempt && r.state != JobState::kDone) r.reason = raw.attempt_reason;
        if (!damaged.empty()) {
          get_logger("coordinator/store")->warn("{}", damaged);
          r.reason += (r.reason.empty() ? "" : "; ") + damaged;
        }
        const ReportRowTexts texts{document_text(raw.spec, r.spec, spec_damaged, spec_scratch),
                                   document_text(raw.metrics, r.metrics, metrics_damaged, metrics_scratch)};
        AM_RETURN_IF_ERROR(visit(r, texts));
      }
      pipe.put_empty(batch);
    }
    AM_RETURN_IF_ERROR(pipe.status());
  }
  if (!placed) return Status::Ok();
  // Plan jobs no job was made from yet: waiting for hardware, in no column of any class.
  AM_ASSIGN_OR_RETURN(auto unplaced, Statement::prepare(db_, R"sql(
      SELECT p.job_id, p.spec_json FROM plan_jobs p
      WHERE p.run_id = ?1
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = p.run_id AND j.plan_job_id = p.job_id
                                               AND j.plan_job_id <> '')
      ORDER BY p.seq)sql"));
  unplaced.bind(1, run_id);
  while (true) {
    AM_ASSIGN_OR_RETURN(bool row, unplaced.step());
    if (!row) break;
    r = ReportRow{};
    r.run_id = run_id;
    r.job_id = unplaced.column_text("job_id");
    const std::string what = "plan job '" + r.job_id + "' of run '" + run_id + "'";
    // A plan job whose stored spec is damaged (or no longer valid) cannot be shown by model:
    // it is left out with a warning naming it, and the rest of the report stands.
    const std::string_view spec_text = unplaced.column_view(unplaced.column_index("spec_json"));
    Result<nlohmann::json> doc = reader.decode(spec_text);
    if (!doc.ok()) doc = internal_error("corrupt spec of " + what + " in the store: " + doc.status().message());
    auto spec = doc.ok() ? jobs::job_spec_from_json(*doc) : Result<jobs::JobSpec>(doc.status());
    if (!spec.ok()) {
      get_logger("coordinator/store")->warn("{} left out of the report: its stored spec is invalid: {}", what,
                                            spec.status().message());
      continue;
    }
    // Read whole to be validated; the row carries the projection asked for (a plan job not
    // placed is rare: reading it twice costs nothing).
    if (keys.spec == nullptr) {
      r.spec = std::move(doc).value();
    } else {
      AM_ASSIGN_OR_RETURN(r.spec, reader.decode(spec_text, keys.spec));
    }
    r.model = spec->model;
    r.architecture = jobs::shown_architecture(spec->model, spec->architecture);
    r.backend = spec->backend;
    r.precision = spec->precision;
    r.state = JobState::kQueued;
    r.reason = "not placed yet: no hardware of its backend has registered";
    const ReportRowTexts texts{spec_text, "{}"};
    AM_RETURN_IF_ERROR(visit(r, texts));
  }
  return Status::Ok();
}

}  // namespace am::coord
