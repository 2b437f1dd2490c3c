#include "coordinator/db_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/clock.h"

namespace am::coord {
namespace {

// The byte of the database file locked by inode. SQLite's own locks are on the bytes from 1 GiB
// (its pending byte) to 1 GiB + 512; this one is far past them and past any real file size.
constexpr off_t kInodeLockOffset = off_t{1} << 62;

// A record is a few hundred bytes; anything larger is not ours.
constexpr std::size_t kMaxRecordBytes = 64 * 1024;

std::string errno_text(int err) { return std::strerror(err); }

std::string this_host() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf) != 0) return "unknown-host";
  buf[HOST_NAME_MAX] = '\0';
  return buf;
}

std::string utc_time(int64_t epoch_ms) {
  const std::time_t t = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::optional<DbHolder> parse_record(const std::string& text) {
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  DbHolder h;
  h.host = doc.value("host", std::string());
  h.pid = doc.value("pid", int64_t{0});
  h.command = doc.value("command", std::string());
  h.endpoint = doc.value("endpoint", std::string());
  h.started_at_ms = doc.value("started_at_ms", int64_t{0});
  if (h.host.empty() && h.pid == 0) return std::nullopt;
  return h;
}

std::optional<DbHolder> read_record(int fd) {
  std::string text;
  char buf[4096];
  off_t off = 0;
  while (text.size() < kMaxRecordBytes) {
    const ssize_t n = pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  return parse_record(text);
}

std::filesystem::path canonical_db(const std::filesystem::path& db_path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(db_path, ec);
  if (ec) p = std::filesystem::absolute(db_path, ec);
  return ec ? db_path : p;
}

}  // namespace

std::string DbHolder::describe() const {
  std::string out = "pid " + std::to_string(pid) + " on host " + (host.empty() ? "?" : host) + " (accelmatrix " +
                    (command.empty() ? "?" : command) + ", endpoint " +
                    (endpoint.empty() ? "not bound yet" : endpoint);
  if (started_at_ms > 0) out += ", since " + utc_time(started_at_ms);
  return out + ")";
}

std::filesystem::path DbLock::lock_path_for(const std::filesystem::path& db_path) {
  std::filesystem::path p = canonical_db(db_path);
  p += ".lock";
  return p;
}

Result<DbLock> DbLock::acquire(const std::filesystem::path& db_path, std::string_view command) {
  DbLock lock;
  lock.path_ = lock_path_for(db_path);
  std::error_code ec;
  if (lock.path_.has_parent_path()) std::filesystem::create_directories(lock.path_.parent_path(), ec);
  const int fd = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return io_error("cannot open lock file " + lock.path_.string() + ": " + errno_text(errno));
  lock.fd_.reset(fd);

  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;   // the whole file, however long it grows
  if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EACCES) {
      const std::optional<DbHolder> holder = read_record(fd);
      return unavailable("database " + db_path.string() + " is in use by another coordinator: " +
                         (holder ? holder->describe() : std::string("a process that has not written its record yet")) +
                         "; stop it, or use another --db (lock file " + lock.path_.string() + ")");
    }
    return io_error("cannot lock " + lock.path_.string() + ": " + errno_text(err));
  }
  lock.held_ = true;
  lock.previous_ = read_record(fd);

  // The same file under another name (a hard link) has another lock file: lock the file itself.
  const std::filesystem::path db_file = canonical_db(db_path);
  if (const int dfd = ::open(db_file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW); dfd >= 0) {
    lock.db_fd_.reset(dfd);
    struct flock inode_lock {};
    inode_lock.l_type = F_WRLCK;
    inode_lock.l_whence = SEEK_SET;
    inode_lock.l_start = kInodeLockOffset;
    inode_lock.l_len = 1;
    if (fcntl(dfd, F_OFD_SETLK, &inode_lock) != 0) {
      const int err = errno;
      if (err == EAGAIN || err == EACCES) {
        return unavailable("database " + db_path.string() +
                           " is in use by another coordinator that opened it under another name (a hard link "
                           "to the same file); stop it, or use another --db");
      }
      return io_error("cannot lock " + db_file.string() + ": " + errno_text(err));
    }
  }
  // A database that cannot be opened for writing (or does not exist yet) is left to the store,
  // which says what is wrong with it.

  lock.self_.host = this_host();
  lock.self_.pid = static_cast<int64_t>(getpid());
  lock.self_.command = std::string(command);
  lock.self_.started_at_ms = now_epoch_ms();
  AM_RETURN_IF_ERROR(lock.write_record());
  return lock;
}

Status DbLock::write_record() {
  const nlohmann::json doc = {{"host", self_.host},
                              {"pid", self_.pid},
                              {"command", self_.command},
                              {"endpoint", self_.endpoint},
                              {"started_at_ms", self_.started_at_ms}};
  const std::string text = doc.dump() + "\n";
  // Readers may see the file between truncate and write: they then print "has not written its
  // record yet", which is true enough; the lock, not the record, decides.
  if (ftruncate(fd_.get(), 0) != 0) return io_error("cannot write " + path_.string() + ": " + errno_text(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = pwrite(fd_.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error("cannot write " + path_.string() + ": " + errno_text(errno));
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

Status DbLock::set_endpoint(const std::string& endpoint) {
  self_.endpoint = endpoint;
  return write_record();
}

DbLock::DbLock(DbLock&& other) noexcept
    : fd_(std::move(other.fd_)),
      db_fd_(std::move(other.db_fd_)),
      held_(std::exchange(other.held_, false)),
      path_(std::move(other.path_)),
      self_(std::move(other.self_)),
      previous_(std::move(other.previous_)) {}

DbLock& DbLock::operator=(DbLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::move(other.fd_);
    db_fd_ = std::move(other.db_fd_);
    held_ = std::exchange(other.held_, false);
    path_ = std::move(other.path_);
    self_ = std::move(other.self_);
    previous_ = std::move(other.previous_);
  }
  return *this;
}

DbLock::~DbLock() { release(); }

void DbLock::release() {
  // Erase our record so that the next coordinator does not report a takeover; closing the
  // descriptor releases the lock. Only the holder may erase: a refused acquire() shares the file.
  if (held_ && fd_.valid()) (void)ftruncate(fd_.get(), 0);
  held_ = false;
  fd_.reset();
}

std::optional<DbHolder> read_db_holder(const std::filesystem::path& db_path) {
  const std::filesystem::path path = DbLock::lock_path_for(db_path);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  return read_record(fd.get());
}

}  // namespace am::coord
