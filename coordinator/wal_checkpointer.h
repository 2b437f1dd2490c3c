// Copies the writer's WAL back into the database on a thread of its own, so that the commit that
// crosses the WAL's size threshold does not do it (and its fsync) on the coordinator's loop.
//
// SQLite's automatic checkpoint runs inside the commit of whichever transaction makes the WAL
// reach wal_autocheckpoint pages: at dispatch rate that was a fifth of the lease batches' time
// and a pause of the serving loop (docs/SCALE.md). With this, the writer connection keeps no
// automatic checkpoint; its WAL hook (sqlite3_wal_hook, called after every commit with the WAL's
// size in pages) wakes the thread once the WAL holds `threshold_pages`, and the thread runs a
// PASSIVE checkpoint on a connection of its own: it copies what no reader still needs and never
// blocks the writer, which starts the WAL over at its next commit once everything was copied.
//
// Contract:
// - start() opens the second connection (the file must exist) and the thread; it then installs
//   the hook on `writer`, replacing SQLite's automatic checkpoint there. Not thread-safe with the
//   writer's own use; call it before the writer commits from another thread.
// - The hook only signals (no SQL, no locks beyond a mutex): it is safe inside a commit.
// - The destructor stops the thread (a checkpoint under way finishes first) and closes the
//   second connection; destroy it before the writer is closed, so the writer, as the last
//   connection, still checkpoints and removes the WAL at its close.
// - checkpoints() counts the checkpoints that copied pages; failures are logged, never fatal (the next commit
//   past the threshold tries again, and the writer's close checkpoints whatever is left).
// - The WAL stays bounded: a PASSIVE checkpoint copies only what was committed when it began, and
//   the WAL starts over only after one copied everything, which a writer that never pauses never
//   lets the thread do. Past kWriterCheckpointFactor × threshold the hook itself checkpoints on
//   the writer, between two of its commits, after waiting for a checkpoint of the thread's under
//   way (SQLite's own automatic checkpoint does the same, at the threshold): the WAL then starts
//   over at the next commit. writer_checkpoints() counts those.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "coordinator/sqlite_db.h"

struct sqlite3;

namespace am::coord {

class WalCheckpointer {
 public:
  static Result<std::unique_ptr<WalCheckpointer>> start(sqlite3* writer, const std::filesystem::path& db_path,
                                                         int64_t threshold_pages);
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  int64_t checkpoints() const { return checkpoints_.load(); }
  int64_t writer_checkpoints() const { return writer_checkpoints_.load(); }
  static constexpr int64_t kWriterCheckpointFactor = 2;

 private:
  WalCheckpointer(sqlite::SqliteDb db, std::filesystem::path path, int64_t threshold_pages);
  static int on_commit(void* self, sqlite3* db, const char* schema, int wal_pages);
  void run();

  sqlite::SqliteDb db_;
  std::filesystem::path path_;
  const int64_t threshold_pages_;
  sqlite3* writer_ = nullptr;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;   // a checkpoint of the thread's ended
  bool due_ = false;
  bool running_ = false;           // the thread is checkpointing
  bool stop_ = false;
  std::atomic<int64_t> checkpoints_{0};
  std::atomic<int64_t> writer_checkpoints_{0};
  std::thread thread_;
};

}  // namespace am::coord
