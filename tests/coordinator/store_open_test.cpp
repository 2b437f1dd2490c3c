// Opening, creating and migrating the store; refusing files it must not touch.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <atomic>
#include <thread>

#include <fstream>
#include <functional>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coordinator/migrations.h"
#include "coordinator/sqlite_db.h"
#include "jobs/job_spec.h"
#include "coordinator/store.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::raw_exec;
using testing::raw_query;
using testing::read_bytes;
using testing::TempDir;

struct FileSnapshot {
  std::string bytes;
  std::filesystem::file_time_type mtime;
};

FileSnapshot snapshot(const std::filesystem::path& p) {
  return {read_bytes(p), std::filesystem::last_write_time(p)};
}

bool sidecars_absent(const std::filesystem::path& p) {
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (std::filesystem::exists(p.string() + suffix)) return false;
  }
  return true;
}

TEST(StoreOpen, CreatesCurrentSchemaVersionInWalMode) {
  TempDir dir;
  const auto path = dir.path() / "new.db";
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
  EXPECT_EQ(kSchemaVersion, 9);
  EXPECT_EQ(raw_query(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_query(path, "PRAGMA application_id"), std::to_string(kApplicationId));
  EXPECT_EQ(raw_query(path, "SELECT group_concat(version) FROM schema_version"), "1,2,3,4,5,6,7,8,9");
  for (const char* table : {"runs", "jobs", "attempts", "workers", "schema_version",
                            "worker_credentials", "counters"}) {
    EXPECT_EQ(raw_query(path, std::string("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='") +
                                  table + "'"),
              "1")
        << table;
  }
}

// A new database gets 16 KiB pages (a result's ~1.8 KiB row filled half of a 4 KiB one); a file
// made with another page size keeps it, rows and all, since WAL fixes a database's page size.
TEST(StoreOpen, ANewDatabaseHasSixteenKibPagesAndAnOlderOneKeepsItsOwn) {
  TempDir dir;
  const auto fresh = dir.path() / "new.db";
  ASSERT_TRUE(Store::open(fresh).ok());
  EXPECT_EQ(raw_query(fresh, "PRAGMA page_size"), "16384");

  const auto old = dir.path() / "old.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(old.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr),
              SQLITE_OK);
    Status migrated = migrate(db, 2);
    sqlite3_close(db);
    ASSERT_TRUE(migrated.ok()) << migrated.to_string();
  }
  raw_exec(old, "INSERT INTO runs(run_id) VALUES ('kept')");
  {
    auto store = Store::open(old);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
  }
  EXPECT_EQ(raw_query(old, "PRAGMA page_size"), "4096");
  EXPECT_EQ(raw_query(old, "SELECT group_concat(run_id) FROM runs"), "kept");
  EXPECT_EQ(raw_query(old, "PRAGMA integrity_check"), "ok");
}

TEST(StoreOpen, CreatesMissingParentDirectories) {
  TempDir dir;
  const auto path = dir.path() / "a" / "b" / "results.db";
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(StoreOpen, ReopeningAppliesNoMigrationAgain) {
  TempDir dir;
  const auto path = dir.path() / "twice.db";
  { ASSERT_TRUE(Store::open(path).ok()); }
  const std::string applied_at = raw_query(path, "SELECT applied_at FROM schema_version");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto again = Store::open(path);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->schema_version(), kSchemaVersion);
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM schema_version"), "9");
  EXPECT_EQ(raw_query(path, "SELECT applied_at FROM schema_version"), applied_at);
}

TEST(StoreOpen, RefusesNewerSchemaAndLeavesFileUntouched) {
  TempDir dir;
  const auto path = dir.path() / "future.db";
  { ASSERT_TRUE(Store::open(path).ok()); }
  raw_exec(path, "INSERT INTO schema_version(version, applied_at) VALUES (99, 0)");
  ASSERT_TRUE(sidecars_absent(path));   // the last connection checkpointed and removed the WAL
  const FileSnapshot before = snapshot(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));   // a write would move mtime

  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find(path.string()), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("99"), std::string::npos) << store.status().message();

  const FileSnapshot after = snapshot(path);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.mtime, before.mtime);
  EXPECT_TRUE(sidecars_absent(path));
}

TEST(StoreOpen, RefusesNonSqliteFileNamingItAndLeavesItUntouched) {
  TempDir dir;
  const auto path = dir.path() / "garbage.db";
  std::mt19937 rng(20240521);
  std::string garbage(8192, '\0');
  for (char& c : garbage) c = static_cast<char>(rng() & 0xff);
  { std::ofstream(path, std::ios::binary) << garbage; }
  const FileSnapshot before = snapshot(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));

  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find(path.string()), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("not an SQLite database"), std::string::npos);

  const FileSnapshot after = snapshot(path);
  EXPECT_EQ(after.bytes, garbage);
  EXPECT_EQ(after.mtime, before.mtime);
  EXPECT_TRUE(sidecars_absent(path));
}

// A database that cannot be written is said so in plain words, not by the SQL that failed.
TEST(StoreOpen, AWriteToAReadOnlyDatabaseSaysTheFileCannotBeWrittenNotWhichStatement) {
  TempDir dir;
  const auto path = dir.path() / "ro.db";
  { ASSERT_TRUE(Store::open(path).ok()); }
  auto db = sqlite::SqliteDb::open_read_only(path, /*immutable=*/false);
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  const Status st = sqlite::exec(db->get(), "CREATE TABLE t (x INTEGER)");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find(path.string() + ": cannot write the database"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("CREATE TABLE"), std::string::npos) << st.message();
}

TEST(StoreOpen, RefusesAnotherProgramsSqliteDatabase) {
  TempDir dir;
  const auto path = dir.path() / "other.db";
  raw_exec(path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('keep me')");
  const FileSnapshot before = snapshot(path);

  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(path.string()), std::string::npos);
  EXPECT_NE(store.status().message().find("no schema_version table"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(snapshot(path).bytes, before.bytes);
  EXPECT_EQ(raw_query(path, "PRAGMA journal_mode"), "delete");   // not switched to WAL
}

TEST(StoreOpen, RefusesDatabaseWithAnotherApplicationId) {
  TempDir dir;
  const auto path = dir.path() / "app.db";
  raw_exec(path, "PRAGMA application_id = 12345; CREATE TABLE schema_version(version INTEGER)");
  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("12345"), std::string::npos) << store.status().message();
}

TEST(StoreOpen, AcceptsEmptyFileAsNewDatabase) {
  TempDir dir;
  const auto path = dir.path() / "empty.db";
  { std::ofstream touch(path); }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
}

TEST(StoreOpen, MigrationsAreOrderedAndEndAtCurrentVersion) {
  const auto list = migrations();
  ASSERT_FALSE(list.empty());
  for (std::size_t i = 0; i < list.size(); ++i) EXPECT_EQ(list[i].version, static_cast<int>(i) + 1);
  EXPECT_EQ(list.back().version, kSchemaVersion);
}

// Schema 3 rebuilds the attempts table (a new state in its CHECK) and adds runs.plan_hash: a
// database written by a schema-2 build opens with every row as it was.
TEST(StoreOpen, ASchemaTwoDatabaseIsMigratedToTheCurrentSchemaWithEveryRowKept) {
  TempDir dir;
  const auto path = dir.path() / "v2.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Status migrated = migrate(db, 2);
    sqlite3_close(db);
    ASSERT_TRUE(migrated.ok()) << migrated.to_string();
  }
  raw_exec(path, R"sql(
    INSERT INTO runs(run_id, plan_name, plan_path, created_at, finished_at) VALUES ('old', 'smoke', 'smoke.toml', 5, 9);
    INSERT INTO jobs(run_id, job_id, seq, spec_json, model, architecture, backend, precision, batch, seq_len,
                     state, attempts, status, terminal_attempt)
      VALUES ('old', 'j1', 1, '{}', 'bert-tiny', 'encoder-only', 'cpu', 'f32', 1, 32, 'done', 2, 'pass', 2);
    INSERT INTO attempts(run_id, job_id, attempt, worker_id, state, reason) VALUES ('old', 'j1', 1, 'w', 'expired', 'lease expired');
    INSERT INTO attempts(run_id, job_id, attempt, worker_id, state, status, metrics_json)
      VALUES ('old', 'j1', 2, 'w', 'done', 'pass', '{"x":1}');
  )sql");
  ASSERT_EQ(raw_query(path, "SELECT max(version) FROM schema_version"), "2");

  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM device_events"), "0") << "schema 4 adds the device events";
  EXPECT_EQ(raw_query(path, "SELECT group_concat(state || ':' || reason || ':' || metrics_json, ' | ') FROM "
                            "(SELECT * FROM attempts ORDER BY attempt)"),
            "expired:lease expired:{} | done::{\"x\":1}");
  auto run = (*store)->get_run("old");
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->plan_hash, "");
  EXPECT_EQ((*run)->finished_at_ms, 9);
  EXPECT_EQ(raw_query(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw_query(path, "PRAGMA foreign_key_check"), "");
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'attempts_by_worker'"),
            "1");
  // The new state is accepted by the rebuilt table.
  raw_exec(path, "UPDATE attempts SET state = 'interrupted' WHERE attempt = 1");
}

// Schema 9 rewrites the state CHECKs of jobs and attempts without IN lists (each written row
// paid an ephemeral index for the list). A schema-8 database keeps its rows, passes the
// integrity check, still refuses a state outside the list, and writes a state without an
// ephemeral table.
TEST(StoreOpen, SchemaNineStateChecksRefuseTheSameStatesWithoutAnEphemeralTablePerRow) {
  TempDir dir;
  const auto path = dir.path() / "v8.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Status migrated = migrate(db, 8);
    sqlite3_close(db);
    ASSERT_TRUE(migrated.ok()) << migrated.to_string();
  }
  raw_exec(path, R"sql(
    INSERT INTO runs(run_id) VALUES ('r');
    INSERT INTO jobs(run_id, job_id, seq, spec_json, model, architecture, backend, precision, batch, seq_len, state)
      VALUES ('r', 'j1', 1, '{}', 'bert-tiny', 'encoder-only', 'cpu', 'f32', 1, 32, 'leased');
    INSERT INTO attempts(run_id, job_id, attempt, worker_id, state) VALUES ('r', 'j1', 1, 'w', 'interrupted');
  )sql");
  // Whether SQLite's program for `sql` opens an ephemeral table (the IN list's index).
  const auto explain_has_ephemeral = [&](const std::string& sql) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
    sqlite3_stmt* stmt = nullptr;
    bool found = false;
    if (sqlite3_prepare_v2(db, ("EXPLAIN " + sql).c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        const auto* op = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
        found = found || (op != nullptr && std::string(op) == "OpenEphemeral");
      }
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return found;
  };
  const std::string write_job = "UPDATE jobs SET state = 'done' WHERE run_id = 'r' AND job_id = 'j1'";
  const std::string write_attempt = "UPDATE attempts SET state = 'done' WHERE run_id = 'r' AND job_id = 'j1'";
  ASSERT_TRUE(explain_has_ephemeral(write_job)) << "the schema-8 CHECK this test is about";
  ASSERT_TRUE(explain_has_ephemeral(write_attempt));

  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_EQ((*store)->schema_version(), 9);
  store->reset();
  EXPECT_FALSE(explain_has_ephemeral(write_job));
  EXPECT_FALSE(explain_has_ephemeral(write_attempt));
  EXPECT_EQ(raw_query(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw_query(path, "SELECT state FROM jobs"), "leased");
  EXPECT_EQ(raw_query(path, "SELECT state FROM attempts"), "interrupted");
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%state IN (%'"), "0");
  // The same states are refused, by a connection that never saw the old text.
  for (const std::string& bad : {std::string("UPDATE jobs SET state = 'bogus'"),
                                 std::string("UPDATE attempts SET state = 'queued'")}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, bad.c_str(), nullptr, nullptr, &err), SQLITE_CONSTRAINT) << bad;
    EXPECT_NE(std::string(err ? err : "").find("CHECK constraint failed"), std::string::npos) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  for (const char* good : {"done", "queued"}) {
    raw_exec(path, std::string("UPDATE jobs SET state = '") + good + "'");
  }
  raw_exec(path, "UPDATE attempts SET state = 'expired'");
}

// A database replaced under its writer: the writer's -wal and -shm were left at the path, and
// the next opener (a `report`, the restart the error asks for) replayed the old file's pages
// onto the replacement. They are moved aside; the replacement reads back as it was.
TEST(StoreOpen, AReplacedDatabasesWalIsMovedAsideAndTheReplacementReadsAsItWas) {
  TempDir dir;
  const auto path = dir.path() / "live.db";
  const auto other = dir.path() / "other.db";
  auto writer = Store::open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  RunRecord run;
  run.run_id = "old-run";
  ASSERT_TRUE((*writer)->upsert_run(run).ok());
  {
    auto replacement = Store::open(other);
    ASSERT_TRUE(replacement.ok());
    run.run_id = "replacement-run";
    ASSERT_TRUE((*replacement)->upsert_run(run).ok());
  }
  ASSERT_TRUE(std::filesystem::exists(path.string() + "-wal"));
  ASSERT_EQ(::rename(other.c_str(), path.c_str()), 0);

  // Every write checks the file before or after (here the check itself).
  const Status st = (*writer)->check_file_identity();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("replaced by another file"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("moved aside"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  EXPECT_TRUE(std::filesystem::exists(path.string() + "-wal.stale-" + std::to_string(::getpid())));

  auto reader = Store::open_read_only(path);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto runs = (*reader)->list_runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().run_id, "replacement-run");
  writer->reset();   // the old connection's close touches nothing at the path
  auto again = Store::open_read_only(path);
  ASSERT_TRUE(again.ok());
  auto runs_again = (*again)->list_runs();
  ASSERT_TRUE(runs_again.ok());
  ASSERT_EQ(runs_again->size(), 1u);
  EXPECT_EQ(runs_again->front().run_id, "replacement-run");
}

TEST(StoreOpen, ReaderConnectionSeesWritesOfAnotherConnection) {
  TempDir dir;
  const auto path = dir.path() / "shared.db";
  auto writer = Store::open(path);
  auto reader = Store::open(path);
  ASSERT_TRUE(writer.ok() && reader.ok());
  RunRecord run;
  run.run_id = "shared-run";
  run.created_at_ms = 42;
  ASSERT_TRUE((*writer)->upsert_run(run).ok());
  auto seen = (*reader)->get_run("shared-run");
  ASSERT_TRUE(seen.ok());
  ASSERT_TRUE(seen->has_value());
  EXPECT_EQ((*seen)->created_at_ms, 42);
}

TEST(StoreOpen, WriterWaitsForAnotherWritersLockAndReaderDoesNot) {
  TempDir dir;
  const auto path = dir.path() / "busy.db";
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok());
  RunRecord first;
  first.run_id = "before";
  ASSERT_TRUE((*store)->upsert_run(first).ok());

  constexpr auto kHold = std::chrono::milliseconds(300);
  std::atomic<bool> locked{false};
  std::atomic<bool> release{false};
  std::thread other([&] {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO runs(run_id) VALUES ('held')", nullptr, nullptr, nullptr);
    locked = true;
    // The lock is held until the reader below has finished, whatever the time that takes.
    while (!release) std::this_thread::yield();
    std::this_thread::sleep_for(kHold);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  });
  while (!locked) std::this_thread::yield();

  // WAL: reading does not wait for the writer and sees the last committed state. The writer
  // holds its lock until this read has returned, so a read that waited for it could only fail
  // (busy timeout), never succeed: the event proves it, no stopwatch needed.
  auto runs = (*store)->list_runs();
  release = true;
  EXPECT_TRUE(runs.ok()) << runs.status().to_string();   // not ASSERT: `other` must be joined
  if (runs.ok()) EXPECT_EQ(runs->size(), 1u);

  // The busy timeout lets a write wait for the lock instead of failing with SQLITE_BUSY.
  const auto write_start = std::chrono::steady_clock::now();
  RunRecord second;
  second.run_id = "after";
  Status written = (*store)->upsert_run(second);
  const auto write_took = std::chrono::steady_clock::now() - write_start;
  other.join();
  EXPECT_TRUE(written.ok()) << written.to_string();
  EXPECT_GE(write_took, kHold / 2);
  auto all = (*store)->list_runs();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
}


// --- read-only opening (issue 14 item 5) --------------------------------------------------------

// A database with one run and one job, closed (so its WAL is checkpointed and removed).
void make_database(const std::filesystem::path& path) {
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  RunRecord run;
  run.run_id = "ro-run";
  run.plan_name = "smoke";
  run.created_at_ms = 7;
  ASSERT_TRUE((*store)->upsert_run(run).ok());
  jobs::JobSpec spec = testing::make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  ASSERT_TRUE((*store)->add_jobs("ro-run", {{jobs::compute_job_id("ro-run", spec), spec, std::string()}}).ok());
}

// A real accelmatrix database whose first page got damaged is said to be damaged (I/O, exit 4),
// not "not an accelmatrix database" (exit 2), and nothing is written to it.
TEST(StoreOpen, ADamagedDatabaseIsCalledDamagedAndLeftAsItIs) {
  TempDir dir;
  const auto path = dir.path() / "damaged.db";
  make_database(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);   // the schema table's b-tree page header, right after the file header
    const std::string junk(8, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const FileSnapshot before = snapshot(path);
  for (const bool read_only : {true, false}) {
    auto store = read_only ? Store::open_read_only(path) : Store::open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kIoError) << store.status().to_string();
    EXPECT_NE(store.status().message().find("damaged"), std::string::npos) << store.status().message();
    EXPECT_EQ(store.status().message().find("not an accelmatrix database"), std::string::npos)
        << store.status().message();
  }
  EXPECT_EQ(snapshot(path).bytes, before.bytes);
}

TEST(StoreOpenReadOnly, ReadsAMode0444CopyAndWritesNothing) {
  TempDir dir;
  const auto original = dir.path() / "live.db";
  make_database(original);
  const auto copy = dir.path() / "copy.db";
  std::filesystem::copy_file(original, copy);
  std::filesystem::permissions(copy, std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                         std::filesystem::perms::others_read);
  const FileSnapshot before = snapshot(copy);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    auto store = Store::open_read_only(copy);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    EXPECT_TRUE((*store)->read_only());
    EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
    auto runs = (*store)->list_runs();
    ASSERT_TRUE(runs.ok()) << runs.status().to_string();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ(runs->front().run_id, "ro-run");
    auto rows = (*store)->report_rows("ro-run");
    ASSERT_TRUE(rows.ok()) << rows.status().to_string();
    EXPECT_EQ(rows->size(), 1u);
    // Even as root (who may write a 0444 file) the connection itself is read-only.
    RunRecord other;
    other.run_id = "must-not-land";
    Status write = (*store)->upsert_run(other);
    EXPECT_FALSE(write.ok());
    EXPECT_NE(write.message().find("readonly"), std::string::npos) << write.message();
  }
  const FileSnapshot after = snapshot(copy);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.mtime, before.mtime);
}

TEST(StoreOpenReadOnly, ReadsAnOlderSchemaWithoutMigratingIt) {
  TempDir dir;
  const auto path = dir.path() / "v1.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Status st = migrate(db, 1);
    sqlite3_close(db);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  raw_exec(path, "INSERT INTO runs(run_id, plan_name, created_at) VALUES ('old', 'smoke', 5)");
  auto store = Store::open_read_only(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_EQ((*store)->schema_version(), 1);
  auto runs = (*store)->list_runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  auto rows = (*store)->report_rows("old");
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  EXPECT_TRUE(rows->empty());
  store->reset();
  EXPECT_EQ(raw_query(path, "SELECT max(version) FROM schema_version"), "1");
}

TEST(StoreOpenReadOnly, RefusesANewerSchemaSayingSo) {
  TempDir dir;
  const auto path = dir.path() / "future.db";
  make_database(path);
  raw_exec(path, "INSERT INTO schema_version(version, applied_at) VALUES (99, 0)");
  auto store = Store::open_read_only(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = store.status().message();
  EXPECT_NE(m.find("schema version 99 is newer than this build supports (" + std::to_string(kSchemaVersion) + ")"),
            std::string::npos) << m;
  EXPECT_EQ(m.find("not an accelmatrix database"), std::string::npos) << m;
}

TEST(StoreOpenReadOnly, MissingFileIsNotFoundAndNothingIsCreated) {
  TempDir dir;
  const auto path = dir.path() / "absent.db";
  auto store = Store::open_read_only(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(StoreOpenReadOnly, ForeignFilesAreRefusedAsBefore) {
  TempDir dir;
  const auto garbage = dir.path() / "garbage.db";
  { std::ofstream(garbage) << "this is not a database at all, just some text"; }
  auto a = Store::open_read_only(garbage);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kFailedPrecondition);
  const auto other = dir.path() / "other.db";
  raw_exec(other, "CREATE TABLE t(x)");
  auto b = Store::open_read_only(other);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("not an accelmatrix database"), std::string::npos) << b.status().message();
  const auto empty = dir.path() / "empty.db";
  { std::ofstream touch(empty); }
  auto c = Store::open_read_only(empty);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("empty database"), std::string::npos) << c.status().message();
}

TEST(StoreOpenReadOnly, ReadsWhileAnotherConnectionHoldsTheWriteLock) {
  TempDir dir;
  const auto path = dir.path() / "busy.db";
  auto writer = Store::open(path);
  ASSERT_TRUE(writer.ok());
  RunRecord first;
  first.run_id = "before";
  ASSERT_TRUE((*writer)->upsert_run(first).ok());

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO runs(run_id) VALUES ('uncommitted')", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  auto reader = Store::open_read_only(path);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto runs = (*reader)->list_runs();
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  ASSERT_TRUE(runs.ok()) << runs.status().to_string();
  ASSERT_EQ(runs->size(), 1u);          // the committed state, not the open transaction
  EXPECT_EQ(runs->front().run_id, "before");
  // No stopwatch: the writer's transaction stays open until after the read, so a reader that
  // waited for it could only have failed with SQLITE_BUSY, never returned the committed state.
}


// Runs `check` where file permissions apply: in this process, or — as root, who may write any
// file — in a forked child that drops to nobody. Returns check()'s result (0 = passed), or 100+
// when the child could not run it.
int as_unprivileged(const std::function<int()>& check) {
  if (geteuid() != 0) return check();
  const pid_t pid = fork();
  if (pid < 0) return 101;
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(102);
    _exit(check());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 103;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 104;
}

// 0: opened read-only, immutable as expected, the run listed; else which step failed.
int open_and_list(const std::filesystem::path& path, bool expect_immutable) {
  auto store = Store::open_read_only(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().to_string().c_str());
    return 1;
  }
  if (!(*store)->read_only()) return 2;
  if ((*store)->immutable() != expect_immutable) return 3;
  auto runs = (*store)->list_runs();
  if (!runs.ok() || runs->size() != 1 || runs->front().run_id != "ro-run") return 4;
  auto rows = (*store)->report_rows("ro-run");
  if (!rows.ok() || rows->size() != 1) return 5;
  return 0;
}

TEST(StoreOpenReadOnly, AReaderWhoCannotWriteTheFileOrTheDirectoryStillReads) {
  TempDir dir;
  const auto source = dir.path() / "source.db";
  make_database(source);
  // File 0444 in a directory anyone may write: SQLITE_OPEN_READONLY, the WAL index made beside.
  const auto open_dir = dir.path() / "open";
  std::filesystem::create_directories(open_dir);
  std::filesystem::copy_file(source, open_dir / "r.db");
  ASSERT_EQ(chmod((open_dir / "r.db").c_str(), 0444), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  // File 0444 in a read-only directory: nothing can be made beside it, so immutable.
  const auto closed_dir = dir.path() / "closed";
  std::filesystem::create_directories(closed_dir);
  std::filesystem::copy_file(source, closed_dir / "r.db");
  ASSERT_EQ(chmod((closed_dir / "r.db").c_str(), 0444), 0);
  ASSERT_EQ(chmod(closed_dir.c_str(), 0555), 0);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);

  EXPECT_EQ(as_unprivileged([&] { return open_and_list(open_dir / "r.db", false); }), 0);
  EXPECT_EQ(as_unprivileged([&] { return open_and_list(closed_dir / "r.db", true); }), 0);
  EXPECT_FALSE(std::filesystem::exists(closed_dir / "r.db-wal"));
  EXPECT_FALSE(std::filesystem::exists(closed_dir / "r.db-shm"));
  // A writer's WAL beside a file this reader cannot index is refused with the reason, never read
  // as immutable (that would miss the WAL's committed transactions).
  ASSERT_EQ(chmod(closed_dir.c_str(), 0755), 0);
  { std::ofstream(closed_dir / "r.db-wal") << ""; }
  ASSERT_EQ(chmod(closed_dir.c_str(), 0555), 0);
  EXPECT_NE(as_unprivileged([&] { return open_and_list(closed_dir / "r.db", true); }), 0);
  ASSERT_EQ(chmod(closed_dir.c_str(), 0755), 0);
}

}  // namespace
}  // namespace am::coord

namespace am::coord {
namespace {

// Opening the database read-only in the coordinator's own process (a restart reads its rows ahead
// that way) must leave the writer's POSIX locks in place. Before, the header check opened and
// closed the file with an ifstream, which dropped every lock the process held on it; a reader in
// another process (`accelmatrix runs`) then took the file exclusively when it closed and deleted
// the live WAL, and what the coordinator wrote afterwards was lost at its next kill.
TEST(StoreOpen, AReadOnlyOpenBesideTheWriterKeepsItsLocksSoAnotherProcessLeavesTheWal) {
  testing::TempDir dir;
  const auto path = dir.path() / "live.db";
  RunRecord run;
  run.run_id = "r";
  run.plan_name = "p";
  ASSERT_TRUE((*Store::open(path))->upsert_run(run).ok());   // an existing database
  // A restart: the stored rows read ahead on a read-only connection while the writer opens.
  auto ahead = Store::open_read_only(path);
  ASSERT_TRUE(ahead.ok()) << ahead.status().to_string();
  auto writer = Store::open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  ahead->reset();
  ASSERT_TRUE(Store::open_read_only(path).ok());
  run.run_id = "second";
  ASSERT_TRUE((*writer)->upsert_run(run).ok());
  const auto wal = std::filesystem::path(path.string() + "-wal");
  ASSERT_TRUE(std::filesystem::exists(wal));
  // Another process opens the file with plain SQLite, reads and closes: the last connection
  // would checkpoint and delete the WAL. A fresh process (this test binary again, running the
  // helper below): a forked child would inherit SQLite's record of this process's locks.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("AM_TEST_PLAIN_SQLITE_READ", path.c_str(), 1);
    execl("/proc/self/exe", "store_open_test", "--gtest_filter=StoreOpenHelper.ReadsTheDatabaseNamedByTheEnvironment",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "helper exit status " << status;
  EXPECT_TRUE(std::filesystem::exists(wal)) << "another process deleted the live coordinator's WAL";
  run.run_id = "after";
  ASSERT_TRUE((*writer)->upsert_run(run).ok());
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM runs"), "3");
}

// The other process of the test above (a no-op unless it names a database).
TEST(StoreOpenHelper, ReadsTheDatabaseNamedByTheEnvironment) {
  const char* db_path = std::getenv("AM_TEST_PLAIN_SQLITE_READ");
  if (db_path == nullptr) return;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "SELECT count(*) FROM runs", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_close(db), SQLITE_OK);
}

}  // namespace
}  // namespace am::coord
