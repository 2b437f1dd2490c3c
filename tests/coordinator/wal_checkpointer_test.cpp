// The WAL is copied back into the database by the checkpointer's thread once the writer's
// commits make it reach the threshold, not inside those commits; the writer, closed last, still
// removes the WAL.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "coordinator/sqlite_db.h"
#include "coordinator/wal_checkpointer.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::TempDir;
using testing::raw_query;

// Rows in the database file itself: read with immutable=1, which ignores the WAL (0 while not
// even the table is there).
int64_t rows_in_main_file(const std::filesystem::path& path) {
  auto db = sqlite::SqliteDb::open_read_only(path, /*immutable=*/true);
  if (!db.ok()) {
    ADD_FAILURE() << db.status().to_string();
    return -1;
  }
  sqlite3_stmt* stmt = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db->get(), "SELECT count(*) FROM t", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(stmt, 0);
  } else if (std::string(sqlite3_errmsg(db->get())).find("no such table") != std::string::npos) {
    n = 0;   // not even the table has reached the file yet
  }
  sqlite3_finalize(stmt);
  return n;
}

TEST(WalCheckpointer, CopiesTheWalIntoTheDatabaseOnItsOwnThreadOnceTheThresholdIsReached) {
  TempDir dir;
  const auto path = dir.path() / "w.db";
  auto opened = sqlite::SqliteDb::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  sqlite::SqliteDb writer = std::move(*opened);
  ASSERT_TRUE(sqlite::exec(writer.get(), "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; "
                                         "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)").ok());
  constexpr int64_t kThresholdPages = 32;
  auto started = WalCheckpointer::start(writer.get(), path, kThresholdPages);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  std::unique_ptr<WalCheckpointer> checkpointer = std::move(*started);

  // A few small commits stay under the threshold: nothing is copied back.
  std::mt19937 rng(7);
  const auto insert = [&](int rows, int bytes) {
    ASSERT_TRUE(sqlite::exec(writer.get(), "BEGIN").ok());
    for (int i = 0; i < rows; ++i) {
      std::string v(static_cast<std::size_t>(bytes), 'a');
      for (char& c : v) c = static_cast<char>('a' + rng() % 26);
      ASSERT_TRUE(sqlite::exec(writer.get(), "INSERT INTO t(v) VALUES ('" + v + "')").ok());
    }
    ASSERT_TRUE(sqlite::exec(writer.get(), "COMMIT").ok());
  };
  insert(2, 100);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(checkpointer->checkpoints(), 0);
  EXPECT_EQ(rows_in_main_file(path), 0) << "the rows are still only in the WAL";

  // One commit past the threshold and under twice it (about 40 pages of 4 KiB): the thread
  // copies it back.
  insert(40, 3000);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (checkpointer->checkpoints() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(checkpointer->checkpoints(), 1);
  EXPECT_EQ(checkpointer->writer_checkpoints(), 0);
  EXPECT_EQ(rows_in_main_file(path), 42);

  // Stopped before the writer closes: the writer, the last connection, removes the WAL.
  checkpointer.reset();
  writer = sqlite::SqliteDb();
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM t"), "42");
}

}  // namespace
}  // namespace am::coord

namespace am::coord {
namespace {

// A writer that commits without pause: the thread's PASSIVE checkpoints never reach the WAL's
// end, and the WAL grew without bound (1.5 GB for an 83 MB database during a large cancel). The
// writer's own checkpoint past twice the threshold keeps it near the threshold.
TEST(WalCheckpointer, TheWalStaysBoundedUnderAWriterThatNeverPauses) {
  testing::TempDir dir;
  const auto path = dir.path() / "busy.db";
  auto opened = sqlite::SqliteDb::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  sqlite::SqliteDb writer = std::move(*opened);
  ASSERT_TRUE(sqlite::exec(writer.get(), "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; "
                                         "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; "
                                         "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)").ok());
  constexpr int64_t kThresholdPages = 32;
  auto started = WalCheckpointer::start(writer.get(), path, kThresholdPages);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  std::unique_ptr<WalCheckpointer> checkpointer = std::move(*started);
  std::mt19937 rng(11);
  std::uintmax_t largest = 0;
  for (int commit = 0; commit < 1500; ++commit) {
    ASSERT_TRUE(sqlite::exec(writer.get(), "BEGIN").ok());
    for (int row = 0; row < 2; ++row) {
      std::string v(3000, 'a');
      for (char& c : v) c = static_cast<char>('a' + rng() % 26);
      ASSERT_TRUE(sqlite::exec(writer.get(), "INSERT INTO t(v) VALUES ('" + v + "')").ok());
    }
    ASSERT_TRUE(sqlite::exec(writer.get(), "COMMIT").ok());
    std::error_code ec;
    largest = std::max(largest, std::filesystem::file_size(path.string() + "-wal", ec));
  }
  // Each commit adds two or three pages; twice the threshold and a commit, with frame headers.
  const std::uintmax_t bound = (WalCheckpointer::kWriterCheckpointFactor * kThresholdPages + 8) * (4096 + 24) + 32;
  EXPECT_LE(largest, bound) << "the WAL grew to " << largest << " bytes";
  EXPECT_GT(checkpointer->writer_checkpoints(), 0);
  EXPECT_EQ(raw_query(path, "SELECT count(*) FROM t"), "3000");
  checkpointer.reset();
}

}  // namespace
}  // namespace am::coord
