#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#if !defined(__GLIBC__)
#error "common/spawn.cpp needs glibc >= 2.34 (posix_spawn_file_actions_addclosefrom_np)"
#elif !__GLIBC_PREREQ(2, 34)
// Closing every inherited descriptor relies on posix_spawn_file_actions_addclosefrom_np
// (glibc 2.34; Debian 12 ships 2.36). POSIX_SPAWN_CLOEXEC_DEFAULT exists on Solaris/macOS only.
#error "common/spawn.cpp needs glibc >= 2.34 (posix_spawn_file_actions_addclosefrom_np)"
#endif

extern char** environ;

namespace am {
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

// The parent's environment with `additions` ("NAME=value") replacing same-named variables.
std::vector<std::string> merged_environment(const std::vector<std::string>& additions) {
  auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& a : additions) replaced = replaced || name_of(a) == name_of(entry);
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), additions.begin(), additions.end());
  return env;
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                         const SpawnOptions& options) {
  if (argv.empty() || argv[0].empty()) return invalid_argument("spawn: empty command line");
  using Output = SpawnOptions::Output;
  if (options.output == Output::kFile && options.output_file.empty()) {
    return invalid_argument("spawn: output to a file without a file name");
  }

  UniqueFd read_end, write_end;
  if (options.output == Output::kPipe) {
    int fds[2];
    // O_CLOEXEC at creation, atomically: another thread spawning at the same moment must not
    // inherit this pipe, or our reader would never see end of file.
    if (pipe2(fds, O_CLOEXEC) != 0) return io_error("pipe2: " + errno_text(errno));
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
  }

  SpawnActions actions;
  SpawnAttr attr;
  if (!actions.ok() || !attr.ok()) return resource_exhausted("posix_spawn attribute setup failed");

  int rc = 0;
  posix_spawn_file_actions_t* fa = actions.get();
  // dup2 onto 1 and 2 clears CLOEXEC on the copies; glibc also clears it when the pipe already
  // sits on fd 1 or 2. A file is opened in the child straight onto fd 1 (a failure to open it
  // fails the spawn). Then everything from 3 up is closed, whether or not it was CLOEXEC.
  if (options.output == Output::kPipe) {
    if ((rc = posix_spawn_file_actions_adddup2(fa, write_end.get(), STDOUT_FILENO)) == 0) {
      rc = posix_spawn_file_actions_adddup2(fa, write_end.get(), STDERR_FILENO);
    }
  } else if (options.output == Output::kFile) {
    const int mode = O_WRONLY | O_CREAT | (options.append ? O_APPEND : O_TRUNC);
    if ((rc = posix_spawn_file_actions_addopen(fa, STDOUT_FILENO, options.output_file.c_str(), mode,
                                               0644)) == 0) {
      rc = posix_spawn_file_actions_adddup2(fa, STDOUT_FILENO, STDERR_FILENO);
    }
  }
  if (rc == 0) rc = posix_spawn_file_actions_addopen(fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(fa, STDERR_FILENO + 1);
  if (rc != 0) return internal_error("posix_spawn file actions: " + errno_text(rc));

  // A parent may block or ignore signals (SIGPIPE, SIGTERM handling threads); the child must
  // start with defaults, or a SIGTERM on timeout would be ignored.
  sigset_t empty_mask, default_signals;
  sigemptyset(&empty_mask);
  sigfillset(&default_signals);
  sigdelset(&default_signals, SIGKILL);
  sigdelset(&default_signals, SIGSTOP);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.new_process_group) flags |= POSIX_SPAWN_SETPGROUP;
  if ((rc = posix_spawnattr_setsigmask(attr.get(), &empty_mask)) != 0 ||
      (rc = posix_spawnattr_setsigdefault(attr.get(), &default_signals)) != 0 ||
      (rc = posix_spawnattr_setpgroup(attr.get(), 0)) != 0 ||
      (rc = posix_spawnattr_setflags(attr.get(), flags)) != 0) {
    return internal_error("posix_spawn attributes: " + errno_text(rc));
  }

  const std::vector<char*> args = c_strings(argv);
  std::vector<std::string> env_strings;
  std::vector<char*> env_ptrs;
  char** envp = environ;
  if (!options.env.empty()) {
    env_strings = merged_environment(options.env);
    env_ptrs = c_strings(env_strings);
    envp = env_ptrs.data();
  }

  pid_t pid = -1;
  // glibc reports exec failures (missing binary, no permission, an output file it cannot open)
  // as posix_spawn's return value.
  rc = posix_spawn(&pid, argv[0].c_str(), fa, attr.get(), args.data(), envp);
  if (rc != 0) return io_error("cannot start " + argv[0] + ": " + errno_text(rc));

  // Only the child writes; holding our copy of the write end would hide end of file.
  write_end.reset();
  if (read_end.valid()) {
    const int fl = fcntl(read_end.get(), F_GETFL);
    if (fl < 0 || fcntl(read_end.get(), F_SETFL, fl | O_NONBLOCK) != 0) {
      const int err = errno;
      ChildProcess doomed(pid, std::move(read_end), options.new_process_group);  // killed, reaped
      return io_error("fcntl O_NONBLOCK on output pipe: " + errno_text(err));
    }
  }
  return ChildProcess(pid, std::move(read_end), options.new_process_group);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), out_(std::move(other.out_)), group_(other.group_) {}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    signal(SIGKILL);
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

void ChildProcess::signal(int sig) {
  if (pid_ > 0) ::kill(group_ ? -pid_ : pid_, sig);
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

std::optional<ExitInfo> ChildProcess::try_wait() {
  if (pid_ <= 0) return ExitInfo{};
  if (!exited()) return std::nullopt;
  Result<ExitInfo> info = wait();
  if (!info.ok()) return ExitInfo{};
  return *info;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

}  // namespace am
