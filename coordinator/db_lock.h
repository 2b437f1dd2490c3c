// One coordinator per database: `accelmatrix run` and `serve` hold an exclusive lock on a
// sidecar file `<db>.lock` for their whole lifetime, and write who they are into it.
//
// Contract:
// - acquire() takes an open-file-description lock (fcntl F_OFD_SETLK, write lock over the whole
//   file) without waiting. When another process holds it, it fails at once with kUnavailable and
//   a message naming the holder from the file: host, pid, command, endpoint, since when. The
//   lock file is opened O_CLOEXEC, so neither local workers nor job processes inherit it.
// - A holder that died (crash, SIGKILL, power loss of this host) holds no lock: the kernel
//   releases it with the process's last descriptor. acquire() then succeeds and reports the dead
//   holder's record in previous_holder(), so the caller can log the takeover. The record of a
//   holder that exited cleanly is erased on release, so previous_holder() is empty after one.
// - The lock file is never unlinked (unlinking a lock file lets two processes lock two different
//   inodes under one name). Deleting it by hand while a coordinator runs defeats the lock.
// - The database path is made canonical first (symlinks resolved), so `x.db`, `./x.db` and a
//   symlink to it share one lock file. Hard links to one database have lock files of their own,
//   so an existing database file is also locked itself, by inode: an OFD write lock on one byte
//   far past anything SQLite locks (kInodeLockOffset), which conflicts with no SQLite lock. That
//   descriptor must outlive the process's SQLite connections to the file (closing any descriptor
//   of a file drops the process's POSIX locks on it, SQLite's included): the CLI destroys its
//   Server before its DbLock.
// - NFS: the lock is an fcntl lock, which Linux forwards to the server (NLM for NFSv3, NFSv4
//   locks), so two coordinators on different hosts exclude each other when the mount supports
//   locking. With `nolock` mounts it is local to each host and does not protect the database.
//   A crashed holder's lock is released when its NFS lease runs out (about 90 s on NFSv4), not
//   at once. The pid in the record names a process on the holder's host; it is not checked
//   from another host.
// - Taken by the CLI (cmd_run, cmd_serve in coordinator/commands.cpp) before Server::create();
//   Server itself takes none, so a program that embeds a Server (benchmarks) takes a DbLock
//   itself if it shares a database.
// - `report` and other readers take no lock: they only read the database (SQLite WAL).
// - Move-only RAII; release happens in the destructor. Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/unique_fd.h"

namespace am::coord {

// Who holds (or held) a database, as written in its lock file.
struct DbHolder {
  std::string host;
  int64_t pid = 0;
  std::string command;          // "run" or "serve"
  std::string endpoint;         // empty until the coordinator has bound its socket
  int64_t started_at_ms = 0;    // epoch milliseconds

  // "pid 1234 on host box1 (accelmatrix serve, endpoint tcp://127.0.0.1:7450, since
  // 2026-11-24 07:50:01 UTC)"
  std::string describe() const;
};

class DbLock {
 public:
  static std::filesystem::path lock_path_for(const std::filesystem::path& db_path);

  // Takes the database for this process. kUnavailable (naming the holder) when another process
  // holds it; kIoError when the lock file cannot be created, locked or written.
  static Result<DbLock> acquire(const std::filesystem::path& db_path, std::string_view command);

  DbLock(DbLock&& other) noexcept;
  DbLock& operator=(DbLock&& other) noexcept;
  ~DbLock();

  // Adds the bound endpoint to the record other processes see.
  Status set_endpoint(const std::string& endpoint);

  const std::filesystem::path& lock_path() const { return path_; }
  const DbHolder& holder() const { return self_; }
  // The record left by a holder that died without releasing (crash, kill): a takeover.
  const std::optional<DbHolder>& previous_holder() const { return previous_; }

 private:
  DbLock() = default;
  Status write_record();
  void release();

  UniqueFd fd_;
  UniqueFd db_fd_;              // the database file, for the lock by inode (absent for a new database)
  bool held_ = false;           // the lock was taken through fd_ (a refused attempt must not erase the record)
  std::filesystem::path path_;
  DbHolder self_;
  std::optional<DbHolder> previous_;
};

// The record in a database's lock file, or nullopt when there is none (never used, released).
// Does not say whether the lock is held; for messages and tests.
std::optional<DbHolder> read_db_holder(const std::filesystem::path& db_path);

}  // namespace am::coord
