#include "common/atomic_file.h"

#include <fcntl.h>   // sync_file_range (_GNU_SOURCE: g++ defines it)
#include <climits>
#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "common/unique_fd.h"

namespace am {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Names tried for a temporary before giving up (each a fresh random suffix beside the writer's
// pid, so a second try already means someone else's files are in the way).
constexpr int kTemporaryNameAttempts = 16;
// A temporary whose writer is gone (killed between create and rename: SIGKILL, the OOM killer)
// and that nothing wrote for this long is removed by the next writer of the same path, so they
// do not pile up. A live writer on another host (a shared file system) keeps its mtime recent.
constexpr auto kStaleTemporaryAge = std::chrono::seconds(60);
// The longest suffix a temporary adds: "." pid "-" 8 hex ".tmp".
constexpr std::size_t kTemporarySuffixBytes = 1 + 10 + 1 + 8 + 4;

// What a temporary of `path` is named after: its file name, or, where that name plus the
// suffix would pass NAME_MAX (a name of 235 bytes and more fitted before), a hidden name of
// our own beside it.
std::string temporary_stem(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.size() + kTemporarySuffixBytes <= NAME_MAX ? name : std::string(".accelmatrix-output");
}

// Removes "<stem>.<pid>-<8 hex>.tmp" files in `dir` whose pid runs no process here and that
// were not written for kStaleTemporaryAge. Best effort: errors are ignored.
void remove_stale_temporaries(const std::filesystem::path& dir, const std::string& stem) noexcept try {
  std::error_code ec;
  const std::filesystem::path where = dir.empty() ? std::filesystem::path(".") : dir;
  const auto now = std::filesystem::file_time_type::clock::now();
  // (The range-for's increment throws when the directory changes under it: caught below.)
  for (const auto& entry : std::filesystem::directory_iterator(where, ec)) {
    const std::string f = entry.path().filename().string();
    if (f.size() <= stem.size() + 1 || f.compare(0, stem.size() + 1, stem + ".") != 0) continue;
    const std::string rest = f.substr(stem.size() + 1);   // "<pid>-<hex>.tmp"
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.size() != dash + 1 + 8 + 4 ||
        rest.compare(rest.size() - 4, 4, ".tmp") != 0 ||
        rest.find_first_not_of("0123456789") != dash ||
        rest.substr(dash + 1, 8).find_first_not_of("0123456789abcdef") != std::string::npos) {
      continue;
    }
    const long pid = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code time_ec;
    const auto written = std::filesystem::last_write_time(entry.path(), time_ec);
    if (time_ec || now - written < kStaleTemporaryAge) continue;
    std::filesystem::remove(entry.path(), time_ec);
  }
} catch (const std::exception&) {
  // Best effort: a directory that cannot be walked leaves its stale temporaries for next time.
}

// Whether `path` names an open descriptor of some process (/dev/stdout, /dev/fd/N, /proc/PID/fd/N,
// directly or through symlinks): whatever it resolves to, it is written where the descriptor
// points. Renaming a temporary over such a name replaced the link (/dev/stdout, as root) and the
// output went nowhere.
bool names_a_descriptor(std::filesystem::path path) {
  const auto through_fd = [](const std::string& s) {
    return s.rfind("/dev/fd/", 0) == 0 || s.rfind("/dev/std", 0) == 0 ||
           (s.rfind("/proc/", 0) == 0 && s.find("/fd/") != std::string::npos);
  };
  for (int hop = 0; hop < 16; ++hop) {
    if (through_fd(path.string())) return true;
    std::error_code ec;
    if (!std::filesystem::is_symlink(path, ec)) return false;
    const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
    if (ec) return false;
    path = target.is_absolute() ? target : path.parent_path() / target;
  }
  return false;
}

}  // namespace

Result<AtomicFileWriter> AtomicFileWriter::create(const std::filesystem::path& path, mode_t mode) {
  struct stat existing {};
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  const bool descriptor = exists && names_a_descriptor(path);
  if (exists && (descriptor || (!S_ISREG(existing.st_mode) && !S_ISDIR(existing.st_mode)))) {
    // Appending: a descriptor's file (`> out`, `>> log`) keeps what its opener put there.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | (descriptor ? O_APPEND : 0)));
    if (!fd.valid()) return io_error("cannot open " + path.string() + " for writing: " + errno_text());
    AtomicFileWriter writer(path, path, fd.release());
    writer.direct_ = true;
    return writer;
  }
  // Replacing a file never widens who else may read it (a private report stays private); the
  // owner's own bits are the ones asked for (a secret left unreadable by mistake is readable
  // again, as it must be for its owner).
  if (exists && S_ISREG(existing.st_mode)) mode = (mode & ~mode_t{077}) | (mode & existing.st_mode & 077);
  // A temporary of our own, never an existing file: a fixed "<path>.tmp" was truncated or
  // unlinked whatever it held (another database named so, another writer's temporary).
  const std::string stem = temporary_stem(path);
  remove_stale_temporaries(path.parent_path(), stem);
  std::random_device entropy;
  std::filesystem::path tmp;
  UniqueFd fd;
  for (int attempt = 0; attempt < kTemporaryNameAttempts && !fd.valid(); ++attempt) {
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".%ld-%08x.tmp", static_cast<long>(::getpid()), entropy());
    tmp = path.parent_path() / (stem + suffix);
    fd = UniqueFd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!fd.valid() && errno != EEXIST) break;
  }
  if (!fd.valid()) return io_error("cannot create " + tmp.string() + ": " + errno_text());
  AtomicFileWriter writer(path, tmp, fd.release());
  if (::fchmod(writer.fd_, mode) != 0) return writer.fail("cannot set permissions of");
  return writer;
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, std::filesystem::path tmp, int fd)
    : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      tmp_(std::move(other.tmp_)),
      fd_(std::exchange(other.fd_, -1)),
      direct_(other.direct_),
      failed_(other.failed_),
      reader_gone_(other.reader_gone_),
      synced_to_(other.synced_to_),
      unsynced_(other.unsynced_) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  if (!direct_) ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::fail(const std::string& what) {
  const std::string message = what + " " + tmp_.string() + ": " + errno_text();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  failed_ = true;
  if (!direct_) ::unlink(tmp_.c_str());
  return io_error(message);
}

Status AtomicFileWriter::append(std::string_view content) {
  if (fd_ < 0) return failed_precondition(tmp_.string() + ": " + (failed_ ? "an earlier write failed" : "already committed"));
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd_, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE && direct_) reader_gone_ = true;
    if (n <= 0) return fail("cannot write");
    written += static_cast<std::size_t>(n);
  }
  // Start writing back what is written so far without waiting for it, so that commit()'s fsync
  // does not find gigabytes of a large report still dirty. Advisory: its failure changes nothing.
  unsynced_ += content.size();
  if (!direct_ && unsynced_ >= kWritebackBytes) {
    ::sync_file_range(fd_, static_cast<off64_t>(synced_to_), static_cast<off64_t>(unsynced_), SYNC_FILE_RANGE_WRITE);
    synced_to_ += unsynced_;
    unsynced_ = 0;
  }
  return Status::Ok();
}

Status AtomicFileWriter::commit() {
  if (fd_ < 0) return failed_precondition(tmp_.string() + ": " + (failed_ ? "an earlier write failed" : "already committed"));
  if (direct_) {
    // A pipe or a device has nothing to flush or rename; its close may still report an error.
    if (::close(std::exchange(fd_, -1)) != 0) {
      failed_ = true;
      return io_error("cannot close " + path_.string() + ": " + errno_text());
    }
    return Status::Ok();
  }
  if (::fsync(fd_) != 0) return fail("cannot flush");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    failed_ = true;
    const std::string message = "cannot close " + tmp_.string() + ": " + errno_text();
    ::unlink(tmp_.c_str());
    return io_error(message);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    failed_ = true;
    const std::string message = "cannot rename " + tmp_.string() + " to " + path_.string() + ": " + errno_text();
    ::unlink(tmp_.c_str());
    return io_error(message);
  }
  return Status::Ok();
}

Status write_file_atomically(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  AM_ASSIGN_OR_RETURN(auto writer, AtomicFileWriter::create(path, mode));
  AM_RETURN_IF_ERROR(writer.append(content));
  return writer.commit();
}

}  // namespace am
