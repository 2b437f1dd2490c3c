#include "worker/worker_id_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace am::worker {

Result<WorkerIdLock> WorkerIdLock::acquire(const std::filesystem::path& state_dir, const std::string& worker_id) {
  WorkerIdLock lock;
  lock.path_ = state_dir / ("worker-" + worker_id + ".lock");
  const int fd = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot open " + lock.path_.string() + ": " + std::strerror(errno));
  lock.fd_ = UniqueFd(fd);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    if (err != EAGAIN && err != EACCES) return io_error("cannot lock " + lock.path_.string() + ": " + std::strerror(err));
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return failed_precondition("worker '" + worker_id + "' is already running from state dir " + state_dir.string() +
                               (pid.empty() ? std::string() : " (pid " + pid + ")") +
                               "; give each worker its own --state-dir, or its own --id");
  }
  const std::string self = std::to_string(getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, self.data(), self.size(), 0) != static_cast<ssize_t>(self.size())) {
    return io_error("cannot write " + lock.path_.string() + ": " + std::strerror(errno));
  }
  return lock;
}

}  // namespace am::worker
