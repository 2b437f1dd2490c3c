#include "coordinator/wal_checkpointer.h"

#include <sqlite3.h>

#include <utility>

#include "common/log.h"

namespace am::coord {
namespace {

std::shared_ptr<spdlog::logger> logger() { return get_logger("coordinator/store"); }

}  // namespace

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::start(sqlite3* writer, const std::filesystem::path& db_path,
                                                                 int64_t threshold_pages) {
  AM_ASSIGN_OR_RETURN(auto db, sqlite::SqliteDb::open_existing(db_path));
  // A connection learns that the file is in WAL mode (and opens its WAL) at its first read; a
  // checkpoint before that does nothing and says SQLITE_OK.
  AM_RETURN_IF_ERROR(sqlite::exec(db.get(), "SELECT count(*) FROM sqlite_master"));
  std::unique_ptr<WalCheckpointer> c(new WalCheckpointer(std::move(db), db_path, threshold_pages));
  c->writer_ = writer;
  c->thread_ = std::thread([raw = c.get()] { raw->run(); });
  // Replaces the automatic checkpoint (which SQLite implements as this same hook).
  sqlite3_wal_hook(writer, &WalCheckpointer::on_commit, c.get());
  return c;
}

WalCheckpointer::WalCheckpointer(sqlite::SqliteDb db, std::filesystem::path path, int64_t threshold_pages)
    : db_(std::move(db)), path_(std::move(path)), threshold_pages_(threshold_pages) {}

WalCheckpointer::~WalCheckpointer() {
  if (writer_ != nullptr) sqlite3_wal_hook(writer_, nullptr, nullptr);
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

int WalCheckpointer::on_commit(void* self, sqlite3* writer, const char*, int wal_pages) {
  auto* c = static_cast<WalCheckpointer*>(self);
  if (wal_pages < c->threshold_pages_) return SQLITE_OK;
  if (wal_pages >= kWriterCheckpointFactor * c->threshold_pages_) {
    // A writer that never pauses keeps the thread's checkpoints from ever reaching the WAL's end,
    // and the WAL starts over only once one has: here, between two of its commits, the writer
    // waits for a checkpoint of the thread's under way (only one runs at a time) and copies what
    // is left itself, so the WAL stays bounded. The writer waits only when the thread falls behind.
    {
      std::unique_lock lock(c->mu_);
      c->idle_.wait(lock, [c] { return !c->running_; });
      c->due_ = false;
    }
    int log = 0, copied = 0;
    if (sqlite3_wal_checkpoint_v2(writer, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) == SQLITE_OK) {
      c->writer_checkpoints_.fetch_add(1);
    }
    return SQLITE_OK;
  }
  {
    std::lock_guard lock(c->mu_);
    c->due_ = true;
  }
  c->wake_.notify_one();
  return SQLITE_OK;
}

void WalCheckpointer::run() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return due_ || stop_; });
    if (stop_) return;
    due_ = false;
    running_ = true;
    lock.unlock();
    int wal_pages = 0, copied = 0;
    const int rc = sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_pages, &copied);
    if (rc == SQLITE_OK) {
      if (copied > 0) checkpoints_.fetch_add(1);
      logger()->debug("{}: checkpoint copied {} of {} WAL page(s)", path_.string(), copied, wal_pages);
    } else if (rc != SQLITE_BUSY) {
      logger()->warn("{}: checkpoint failed: {}", path_.string(), sqlite3_errmsg(db_.get()));
    }
    lock.lock();
    running_ = false;
    idle_.notify_all();
  }
}

}  // namespace am::coord
