// Opening, creating and migrating the store; refusing files it must not touch.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <atomic>
#include <thread>

#include "coordinator/migrations.h"
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
  EXPECT_EQ(kSchemaVersion, 3);
  EXPECT_EQ(raw_query(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_query(path, "PRAGMA application_id"), std::to_string(kApplicationId));
  EXPECT_EQ(raw_query(path, "SELECT group_concat(version) FROM schema_version"), "1,2,3");
  for (const char* table : {"runs", "jobs", "attempts", "workers", "schema_version",
                            "worker_credentials", "counters"}) {
    EXPECT_EQ(raw_query(path, std::string("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='") +
                                  table + "'"),
              "1")
        << table;
  }
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
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM schema_version"), "3");
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
TEST(StoreOpen, ASchemaTwoDatabaseIsMigratedToThreeWithEveryRowKept) {
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
  EXPECT_EQ((*store)->schema_version(), 3);
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
  std::thread other([&] {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO runs(run_id) VALUES ('held')", nullptr, nullptr, nullptr);
    locked = true;
    std::this_thread::sleep_for(kHold);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  });
  while (!locked) std::this_thread::yield();

  // WAL: reading does not wait for the writer and sees the last committed state.
  const auto read_start = std::chrono::steady_clock::now();
  auto runs = (*store)->list_runs();
  const auto read_took = std::chrono::steady_clock::now() - read_start;
  ASSERT_TRUE(runs.ok()) << runs.status().to_string();
  EXPECT_EQ(runs->size(), 1u);
  EXPECT_LT(read_took, kHold / 2);

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

}  // namespace
}  // namespace am::coord
