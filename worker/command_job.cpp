// The command runner stays between the executor and the command for one reason: the executor
// sees one output stream (stdout and stderr together, for the log tail), but a reader needs the
// command's stdout alone. Everything else (limits, kills) passes through it unchanged: the
// memory limit set on this process is inherited across exec, the command stays in this process
// group, and its death by a signal is repeated on this process. It also ends what the command
// leaves behind, in any process group (worker/descendants.h).
#include "worker/command_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/proc_memory.h"
#include "common/reliability.h"
#include "common/unique_fd.h"
#include "worker/command_output.h"
#include "worker/descendants.h"
#include "worker/executor.h"

extern char** environ;

namespace am::worker {
namespace {

constexpr int kExitNoResult = 1;
constexpr std::size_t kReadChunkBytes = 64 * 1024;

Status write_result(const std::filesystem::path& file, ResultStatus status, const std::string& reason,
                    const nlohmann::json& metrics) {
  const nlohmann::json doc = {{"status", std::string(to_string(status))}, {"reason", reason}, {"metrics", metrics}};
  return write_file_atomically(file, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::vector<std::string> command_env(const CommandContext& ctx, const std::filesystem::path& result_path) {
  const std::string names[] = {"ACCELMATRIX_JOB_ID=", "ACCELMATRIX_ATTEMPT=", "ACCELMATRIX_DEVICE=",
                               "ACCELMATRIX_RESULT_FILE="};
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    bool ours = false;
    for (const std::string& n : names) ours = ours || std::strncmp(*e, n.c_str(), n.size()) == 0;
    if (!ours) env.emplace_back(*e);
  }
  env.push_back(names[0] + ctx.job_id);
  env.push_back(names[1] + std::to_string(ctx.attempt));
  env.push_back(names[2] + ctx.device);
  env.push_back(names[3] + result_path.string());
  return env;
}

// Reads the whole file when it exists; nullopt when it does not.
std::optional<std::string> read_if_present(const std::filesystem::path& path, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxCommandStdoutBytes) {
    error = "$ACCELMATRIX_RESULT_FILE is unreadable or larger than 16 MiB";
    return std::string();
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The executor's SIGTERM at the job's time limit (or a cancel): set here, acted on by the loops
// below, which end the command's whole tree first (worker/descendants.h).
volatile sig_atomic_t g_terminate = 0;
void on_terminate(int) { g_terminate = 1; }

[[noreturn]] void die_like(int sig) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::kill(::getpid(), sig);
  // Only signals whose default is not to terminate get here (SIGCHLD-like): call it a crash.
  ::_exit(128 + sig);
}

}  // namespace

std::filesystem::path command_result_path(const std::filesystem::path& work_dir) {
  return std::filesystem::absolute(work_dir / "accelmatrix-result.json");
}

int run_command_job(const jobs::JobSpec& spec, const CommandContext& ctx,
                    const std::filesystem::path& result_file) {
  const jobs::CommandSpec& cmd = *spec.command;
  nlohmann::json metrics = {{"command", {{"name", cmd.name}, {"output", cmd.output}}}};
  auto error = [&](const std::string& reason) {
    return write_result(result_file, ResultStatus::kError, reason, metrics).ok() ? 0 : kExitResultUnwritable;
  };
  const std::filesystem::path result_path = command_result_path(ctx.work_dir);

  // Orphans of the command's tree become this process's children, whatever group or session
  // they moved to, so that none outlives the job.
  become_subreaper();
  struct sigaction term {};
  term.sa_handler = on_terminate;   // no SA_RESTART: a waiting poll() returns at once
  sigemptyset(&term.sa_mask);
  ::sigaction(SIGTERM, &term, nullptr);
  // A worker that dies, however, makes this runner end the command's tree as a time limit does
  // (the job process's SIGKILL on the parent's death would orphan the tree instead). A parent
  // gone before this line is seen by its pid.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const auto parent_gone = [&ctx] { return ctx.parent_pid > 0 && static_cast<int64_t>(::getppid()) != ctx.parent_pid; };
  if (parent_gone()) g_terminate = 1;
  // The SIGTERM reached the command too (it is in this group); it gets most of the executor's
  // grace to finish (flush, shut a server down), and whatever is left is ended before the
  // executor's SIGKILL, which this process would not survive to act on.
  int64_t end_tree_at_ms = 0;
  const auto stop_if_told = [&end_tree_at_ms, &parent_gone] {
    if (!g_terminate) return;
    if (end_tree_at_ms == 0) {
      end_tree_at_ms = steady_ms() + kTreeGraceAfterTermMs;
      // The executor's SIGTERM went to the whole group; the parent-death one only to this
      // runner, so it goes on to the group here (this runner's handler only sets the flag again).
      // Only as the leader of its own group (the executor spawns it so): never the worker's.
      if (parent_gone() && ::getpgrp() == ::getpid()) ::kill(0, SIGTERM);
      signal_all_children(SIGTERM);   // those that left the group did not get it
    }
    if (steady_ms() < end_tree_at_ms) return;
    end_all_children();
    die_like(SIGTERM);
  };

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return error(std::string("pipe: ") + std::strerror(errno));
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, ctx.work_dir.c_str());
  std::vector<std::string> env = command_env(ctx, result_path);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (rc != 0) return error("cannot start '" + cmd.argv[0] + "': " + std::strerror(rc));

  std::string captured;
  bool truncated = false;
  char buf[kReadChunkBytes];
  // The command's own peak resident set, read from its address space while it runs (the
  // executor sees only this runner's; ru_maxrss would carry this runner's over the exec:
  // common/proc_memory.h). At most one reading a tick, whether output arrives or not (a command
  // that prints fast is not slowed by /proc reads), and none in the first tick: right after the
  // spawn the command's program is not loaded yet, and its few KiB then would be no measurement.
  std::optional<int64_t> command_peak;
  int64_t next_sample_ms = steady_ms() + reliability::kPollTickMs;
  const auto sample_peak = [&] {
    if (steady_ms() < next_sample_ms) return;
    next_sample_ms = steady_ms() + reliability::kPollTickMs;
    if (std::optional<int64_t> hwm = vm_hwm_bytes(pid)) command_peak = std::max(command_peak.value_or(0), *hwm);
  };
  // Output is read until its end or, once the command has exited, for kOutputAfterExitMs more:
  // a background child the command left holding its stdout (`server &`) would otherwise keep
  // the job waiting for end-of-file until its time limit, and a finished job would end `timeout`.
  int wstatus = 0;
  rusage usage{};
  bool exited = false;
  int64_t stop_reading_at_ms = 0;
  const auto reap = [&]() -> bool {
    const pid_t r = ::wait4(pid, &wstatus, WNOHANG, &usage);
    if (r == pid) {
      exited = true;
      stop_reading_at_ms = steady_ms() + kOutputAfterExitMs;
    }
    return r >= 0 || errno == EINTR;
  };
  while (true) {
    stop_if_told();
    if (!exited) {
      sample_peak();
      if (!reap()) return error(std::string("waitpid: ") + std::strerror(errno));
    }
    int64_t wait_ms = reliability::kPollTickMs;
    if (exited) {
      wait_ms = std::min<int64_t>(wait_ms, stop_reading_at_ms - steady_ms());
      if (wait_ms <= 0) break;
    }
    pollfd pfd{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(wait_ms));
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::fwrite(buf, 1, static_cast<std::size_t>(n), stdout);
    std::fflush(stdout);
    if (captured.size() + static_cast<std::size_t>(n) <= kMaxCommandStdoutBytes) {
      captured.append(buf, static_cast<std::size_t>(n));
    } else {
      truncated = true;
    }
  }
  // The command may live on after closing its stdout: its peak is read until it ends.
  while (!exited) {
    stop_if_told();
    sample_peak();
    if (!reap()) return error(std::string("waitpid: ") + std::strerror(errno));
    if (!exited) ::poll(nullptr, 0, static_cast<int>(reliability::kPollTickMs));
  }
  if (g_terminate) {
    // The command ended within the grace: its time is up all the same.
    end_all_children();
    die_like(SIGTERM);
  }
  // A command that wraps its workload (a shell script, a launcher) holds little itself; wait4's
  // figure covers the processes it waited for too. It also carries this runner's own peak over
  // the exec, so it counts only when it is above that (then it came from the command's tree).
  const int64_t tree_peak = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  if (tree_peak > vm_hwm_bytes().value_or(INT64_MAX)) command_peak = std::max(command_peak.value_or(0), tree_peak);
  if (command_peak) metrics["memory"]["peak_rss_bytes"] = *command_peak;
  // What the command left behind (a background child, a daemon in a session of its own) ends
  // with it.
  if (const int left = end_all_children(); left > 0) {
    std::fprintf(stderr, "accelmatrix-worker --run-job: ended %d process(es) the command left running\n", left);
  }
  if (WIFSIGNALED(wstatus)) die_like(WTERMSIG(wstatus));
  const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : kExitNoResult;
  metrics["command"]["exit_code"] = code;
  if (code == kExitOutOfMemory) return kExitOutOfMemory;
  if (code != 0) return error("command exited with code " + std::to_string(code));
  // Only a reader of stdout needs all of it: a result written to $ACCELMATRIX_RESULT_FILE stands
  // however much the command printed.
  const std::string too_much = "command stdout exceeded " + std::to_string(kMaxCommandStdoutBytes >> 20) +
                               " MiB, the most a result is read from";

  Result<CommandResult> parsed = invalid_argument("no reader");
  if (cmd.output == jobs::kOutputLlamaBench) {
    if (truncated) return error(too_much);
    parsed = read_llama_bench(captured);
    if (!parsed.ok()) parsed = parsed.status().with_context("llama-bench reader");
  } else {
    std::string file_error;
    std::optional<std::string> file_text = read_if_present(result_path, file_error);
    if (!file_error.empty()) return error("malformed command result: " + file_error);
    if (file_text) {
      parsed = read_result_document(*file_text);
      if (!parsed.ok()) parsed = parsed.status().with_context("$ACCELMATRIX_RESULT_FILE");
    } else {
      if (truncated) return error(too_much);
      parsed = read_result_from_stdout(captured);
    }
  }
  if (!parsed.ok()) return error("malformed command result: " + parsed.status().message());
  nlohmann::json out = std::move(parsed->metrics);
  out["command"] = metrics["command"];
  // The command's resident peak as the worker measured it (a figure the command reports of its
  // own is its device memory, `memory.peak_bytes`: docs/PLANS.md).
  if (metrics.contains("memory")) {
    if (!out.contains("memory") || !out["memory"].is_object()) out["memory"] = nlohmann::json::object();
    out["memory"]["peak_rss_bytes"] = metrics["memory"]["peak_rss_bytes"];
  }
  return write_result(result_file, parsed->status, parsed->reason, out).ok() ? 0 : kExitResultUnwritable;
}

}  // namespace am::worker
