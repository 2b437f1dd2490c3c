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
#include <fstream>
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

// Whether /proc/PID/environ holds `entry` as one of its NUL-separated items. False when it
// cannot be read (gone, a zombie, another user's).
bool environ_holds(pid_t pid, const std::string& entry) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  std::string item;
  while (std::getline(in, item, '\0')) {
    if (item == entry) return true;
  }
  return false;
}

}  // namespace

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

void signal_all_children(int sig) {
  for (pid_t pid : children()) ::kill(pid, sig);
}

namespace {

// SIGKILLs and reaps the children `chosen` picks, round after round (ending one reparents its
// own children here), at most kMaxEndRounds rounds; returns how many it ended.
template <typename Pick>
int end_children_where(Pick chosen) {
  int ended = 0;
  for (int round = 0; round < kMaxEndRounds; ++round) {
    std::vector<pid_t> found;
    for (pid_t pid : children()) {
      if (chosen(pid)) found.push_back(pid);
    }
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

}  // namespace

int end_all_children() {
  return end_children_where([](pid_t) { return true; });
}

int end_children_with_env(const std::string& entry) {
  return end_children_where([&entry](pid_t pid) { return environ_holds(pid, entry); });
}

}  // namespace am::worker
