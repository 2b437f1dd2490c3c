#include "worker/descendants.h"

#include "common/proc_stat.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace am::worker {
namespace {

std::vector<pid_t> children() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    if (auto stat = read_proc_stat(pid); stat && stat->parent == self) out.push_back(pid);
  }
  return out;
}

}  // namespace

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

void signal_all_children(int sig) {
  for (pid_t pid : children()) ::kill(pid, sig);
}

int end_all_children() {
  int ended = 0;
  for (int round = 0; round < kMaxEndRounds; ++round) {
    const std::vector<pid_t> found = children();
    if (found.empty()) break;
    for (pid_t pid : found) {
      if (::kill(pid, SIGKILL) == 0) ++ended;
    }
    for (pid_t pid : found) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  return ended;
}

}  // namespace am::worker
