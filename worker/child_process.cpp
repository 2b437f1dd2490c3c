#include "worker/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace am::worker {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// posix_spawn's attribute and file-action objects, released on every path.
class SpawnAttr {
 public:
  SpawnAttr() { ok_ = posix_spawnattr_init(&attr_) == 0; }
  ~SpawnAttr() {
    if (ok_) posix_spawnattr_destroy(&attr_);
  }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
  bool ok() const { return ok_; }
  posix_spawnattr_t* get() { return &attr_; }

 private:
  posix_spawnattr_t attr_;
  bool ok_ = false;
};

class SpawnActions {
 public:
  SpawnActions() { ok_ = posix_spawn_file_actions_init(&actions_) == 0; }
  ~SpawnActions() {
    if (ok_) posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  bool ok() const { return ok_; }
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
  bool ok_ = false;
};

constexpr std::size_t kReadChunkBytes = 64u << 10;

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() { return std::exchange(fd_, -1); }

void UniqueFd::reset(int fd) {
  // close() is not retried on EINTR: on Linux the descriptor is released either way.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return invalid_argument("spawn: empty command line");

  int fds[2];
  // O_CLOEXEC at creation, atomically: another thread spawning at the same moment must not
  // inherit this pipe, or our reader would never see end of file.
  if (pipe2(fds, O_CLOEXEC) != 0) return io_error("pipe2: " + errno_text(errno));
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);

  SpawnActions actions;
  SpawnAttr attr;
  if (!actions.ok() || !attr.ok()) return resource_exhausted("posix_spawn attribute setup failed");

  int rc = 0;
  // dup2 onto 1 and 2 clears CLOEXEC on the copies; glibc also clears it when the pipe already
  // sits on fd 1 or 2. Then everything from 3 up is closed, whether or not it was CLOEXEC: no
  // ZeroMQ socket, database or other job's pipe can leak into the job.
  if ((rc = posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), STDOUT_FILENO)) != 0 ||
      (rc = posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), STDERR_FILENO)) != 0 ||
      (rc = posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY,
                                             0)) != 0 ||
      (rc = posix_spawn_file_actions_addclosefrom_np(actions.get(), STDERR_FILENO + 1)) != 0) {
    return internal_error("posix_spawn file actions: " + errno_text(rc));
  }

  // A worker may block or ignore signals (SIGPIPE, SIGTERM handling threads); the job must start
  // with defaults, or a SIGTERM on timeout would be ignored.
  sigset_t empty_mask, default_signals;
  sigemptyset(&empty_mask);
  sigfillset(&default_signals);
  sigdelset(&default_signals, SIGKILL);
  sigdelset(&default_signals, SIGSTOP);
  if ((rc = posix_spawnattr_setsigmask(attr.get(), &empty_mask)) != 0 ||
      (rc = posix_spawnattr_setsigdefault(attr.get(), &default_signals)) != 0 ||
      (rc = posix_spawnattr_setpgroup(attr.get(), 0)) != 0 ||
      (rc = posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                     POSIX_SPAWN_SETSIGDEF)) != 0) {
    return internal_error("posix_spawn attributes: " + errno_text(rc));
  }

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  // glibc reports exec failures (missing binary, no permission) as posix_spawn's return value.
  rc = posix_spawn(&pid, argv[0].c_str(), actions.get(), attr.get(), args.data(), environ);
  if (rc != 0) return io_error("cannot start " + argv[0] + ": " + errno_text(rc));

  // Only the child writes; holding our copy of the write end would hide end of file.
  write_end.reset();
  const int flags = fcntl(read_end.get(), F_GETFL);
  if (flags < 0 || fcntl(read_end.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    ChildProcess doomed(pid, std::move(read_end));  // its destructor kills and reaps
    return io_error("fcntl O_NONBLOCK on output pipe: " + errno_text(errno));
  }
  return ChildProcess(pid, std::move(read_end));
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), out_(std::move(other.out_)) {}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    signal_group(SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

bool ChildProcess::read_output(std::string& sink) {
  if (!out_.valid()) return false;
  char buf[kReadChunkBytes];
  while (true) {
    const ssize_t n = ::read(out_.get(), buf, sizeof buf);
    if (n > 0) {
      sink.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) {
      out_.reset();
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    // Any other read error ends the stream just like end of file.
    out_.reset();
    return false;
  }
}

void ChildProcess::signal_group(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

bool ChildProcess::exited() {
  if (pid_ <= 0) return true;
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  while (true) {
    // WNOWAIT leaves the zombie in place: the process group id cannot be recycled meanwhile.
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
      return info.si_pid == pid_;
    }
    if (errno != EINTR) return true;  // ECHILD: someone else reaped it
  }
}

Result<ExitInfo> ChildProcess::wait() {
  if (pid_ <= 0) return failed_precondition("child already reaped");
  ExitInfo info;
  int status = 0;
  pid_t r;
  while ((r = wait4(pid_, &status, 0, &info.usage)) < 0 && errno == EINTR) {
  }
  const int err = errno;
  pid_ = -1;
  if (r < 0) return io_error("wait4: " + errno_text(err));
  if (WIFEXITED(status)) {
    info.exited = true;
    info.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
  }
  return info;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

}  // namespace am::worker
