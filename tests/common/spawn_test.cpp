// common/spawn.h: what a spawned child inherits (only stdin/stdout/stderr, default signals) and
// what its parent learns (exit code, signal, output).
#include "common/spawn.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace am {
namespace {

constexpr const char* kSh = "/bin/sh";

// Runs `script` under /bin/sh with output on a pipe; returns everything it printed.
std::string run_sh(const std::string& script, const SpawnOptions& options = {},
                   ExitInfo* exit = nullptr) {
  auto child = ChildProcess::spawn({kSh, "-c", script}, options);
  EXPECT_TRUE(child.ok()) << child.status().message();
  if (!child.ok()) return {};
  std::string out;
  while (child->read_output(out)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto info = child->wait();
  EXPECT_TRUE(info.ok());
  if (exit != nullptr && info.ok()) *exit = *info;
  return out;
}

// A signal-state field of /proc/self/status ("SigBlk", "SigIgn") for the process reading it.
std::string proc_status_field(const std::string& text, const std::string& field) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "missing";
}

TEST(Spawn, ChildDoesNotInheritDescriptorsWithoutCloexec) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);  // deliberately without O_CLOEXEC
  // Fixed high numbers, so the shell's own descriptors cannot be mistaken for ours.
  ASSERT_EQ(dup2(fds[0], 50), 50);
  ASSERT_EQ(dup2(fds[1], 51), 51);
  ASSERT_EQ(fcntl(51, F_GETFD) & FD_CLOEXEC, 0);
  const std::string out = run_sh(
      "for fd in 0 1 2 50 51; do if [ -e /proc/self/fd/$fd ]; then echo $fd:open; "
      "else echo $fd:closed; fi; done");
  close(fds[0]);
  close(fds[1]);
  close(50);
  close(51);
  EXPECT_EQ(out, "0:open\n1:open\n2:open\n50:closed\n51:closed\n");
}

TEST(Spawn, ChildStartsWithDefaultSignalsWhateverTheParentSet) {
  struct sigaction ignore {}, old_term {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &old_term), 0);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);

  auto child = ChildProcess::spawn({"/bin/cat", "/proc/self/status"});
  ASSERT_TRUE(child.ok()) << child.status().message();
  std::string out;
  while (child->read_output(out)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(child->wait().ok());

  // A second child, spawned while SIGTERM is still ignored here, must die of SIGTERM.
  auto sleeper = ChildProcess::spawn({"/bin/sleep", "30"});
  ASSERT_TRUE(sleeper.ok());
  sleeper->signal(SIGTERM);
  auto ended = sleeper->wait();

  sigaction(SIGTERM, &old_term, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);

  // Signals 32 and 33 are glibc's own (thread cancellation, setxid): no program can see or
  // reset them, so only the standard and the application's real-time signals are checked.
  const uint64_t blocked = std::stoull(proc_status_field(out, "SigBlk"), nullptr, 16);
  const uint64_t ignored = std::stoull(proc_status_field(out, "SigIgn"), nullptr, 16);
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (sig >= 32 && sig < SIGRTMIN) continue;
    const uint64_t bit = uint64_t{1} << (sig - 1);
    EXPECT_EQ(blocked & bit, 0u) << "signal " << sig << " blocked in the child";
    EXPECT_EQ(ignored & bit, 0u) << "signal " << sig << " ignored in the child";
  }
  ASSERT_TRUE(ended.ok());
  EXPECT_FALSE(ended->exited);
  EXPECT_EQ(ended->signal, SIGTERM);
}

TEST(Spawn, ReportsExitCode) {
  ExitInfo exit;
  run_sh("exit 7", {}, &exit);
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.code, 7);
  EXPECT_EQ(exit.shell_code(), 7);
}

TEST(Spawn, ReportsTheKillingSignal) {
  ExitInfo exit;
  run_sh("kill -SEGV $$", {}, &exit);
  EXPECT_FALSE(exit.exited);
  EXPECT_EQ(exit.signal, SIGSEGV);
  EXPECT_EQ(exit.shell_code(), 128 + SIGSEGV);
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
}

TEST(Spawn, MergesStdoutAndStderrAndReadsStdinFromDevNull) {
  EXPECT_EQ(run_sh("echo out; echo err >&2; cat; echo done"), "out\nerr\ndone\n");
}

TEST(Spawn, WritesOutputToAFileTruncatingOrAppending) {
  char dir_template[] = "/tmp/am-spawn-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path log = std::filesystem::path(dir_template) / "out.log";
  SpawnOptions options;
  options.output = SpawnOptions::Output::kFile;
  options.output_file = log;
  for (const char* word : {"one", "two"}) {
    auto child = ChildProcess::spawn({kSh, "-c", std::string("echo ") + word + "; echo e >&2"}, options);
    ASSERT_TRUE(child.ok()) << child.status().message();
    EXPECT_EQ(child->output_fd(), -1);
    ASSERT_TRUE(child->wait().ok());
  }
  auto read_log = [&] {
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(read_log(), "two\ne\n");
  options.append = true;
  auto child = ChildProcess::spawn({kSh, "-c", "echo three"}, options);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->wait().ok());
  EXPECT_EQ(read_log(), "two\ne\nthree\n");
  std::filesystem::remove_all(dir_template);
}

TEST(Spawn, AddsAndReplacesEnvironmentVariables) {
  ASSERT_EQ(setenv("AM_SPAWN_TEST_KEEP", "kept", 1), 0);
  ASSERT_EQ(setenv("AM_SPAWN_TEST_REPLACE", "old", 1), 0);
  SpawnOptions options;
  options.env = {"AM_SPAWN_TEST_REPLACE=new", "AM_SPAWN_TEST_ADDED=added"};
  const std::string out = run_sh(
      "echo $AM_SPAWN_TEST_KEEP $AM_SPAWN_TEST_REPLACE $AM_SPAWN_TEST_ADDED; "
      "env | grep -c '^AM_SPAWN_TEST_REPLACE='",
      options);
  unsetenv("AM_SPAWN_TEST_KEEP");
  unsetenv("AM_SPAWN_TEST_REPLACE");
  EXPECT_EQ(out, "kept new added\n1\n");
}

TEST(Spawn, NewProcessGroupIsSignalledAsAWhole) {
  // The shell starts a grandchild; signalling the group must stop both, so the pipe closes.
  auto child = ChildProcess::spawn({kSh, "-c", "sleep 30 & wait"});
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(getpgid(child->pid()), child->pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  child->signal(SIGKILL);
  auto exit = child->wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->signal, SIGKILL);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (child->read_output(out) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(child->output_fd(), -1) << "the grandchild still holds the pipe";
}

TEST(Spawn, WithoutANewGroupTheChildSharesOurs) {
  SpawnOptions options;
  options.new_process_group = false;
  auto child = ChildProcess::spawn({"/bin/sleep", "30"}, options);
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(getpgid(child->pid()), getpgrp());
  child->signal(SIGTERM);  // the child alone, not our group
  auto exit = child->wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->signal, SIGTERM);
}

TEST(Spawn, TryWaitReapsOnlyAnExitedChild) {
  auto child = ChildProcess::spawn({"/bin/sleep", "30"});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->try_wait().has_value());
  child->signal(SIGKILL);
  std::optional<ExitInfo> exit;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!(exit = child->try_wait()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(child->pid(), -1);
}

TEST(Spawn, MissingProgramIsAnError) {
  auto child = ChildProcess::spawn({"/nonexistent/program"});
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.status().message().find("/nonexistent/program"), std::string::npos);
  EXPECT_FALSE(ChildProcess::spawn({}).ok());
}

TEST(Spawn, DestructorKillsAndReapsARunningChild) {
  pid_t pid = -1;
  {
    auto child = ChildProcess::spawn({"/bin/sleep", "30"});
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  // Reaped: no child with that pid is left to wait for.
  errno = 0;
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace am
