// Runs one job in a fresh child process and turns whatever happens to it into a result.
//
// Contract: execute_job() spawns `<worker_binary> --run-job SPEC --result-file OUT
// [--memory-limit-mb N]` with posix_spawn (exec, never a bare fork of a process that holds a
// ZeroMQ context), captures the child's stdout+stderr (the last reliability::kLogTailBytes are
// kept), enforces `timeout_s` (SIGTERM, then SIGKILL after a short grace) and returns:
//   - the child's own result document when it exited 0 and wrote one;
//   - status "timeout" when it ran past its time limit;
//   - status "oom" when it died of the memory limit (allocation failure exit code or SIGKILL by
//     the kernel's OOM killer);
//   - status "crash" with the signal name when it died on a signal;
//   - status "error" with the exit code when it exited non-zero or wrote no result.
// If `cancel` becomes true the child is killed and status "cancelled" returned.
// Never throws. Thread-safe: several jobs may execute at once from different threads.
// The outcome's metrics also carry "process": {"wall_s", "cpu_user_s", "cpu_sys_s",
// "peak_rss_bytes", "output_bytes"} — the parent's view of the job process (wait4's times; the
// peak resident set read from /proc while it ran, not wait4's, which holds the worker's own:
// common/proc_memory.h), whatever the status — and, for a job whose mode measures latency (perf, both) on a host that exposes
// /proc, "host": the host's load and steal time over the job (worker/host_load.h).
//
// External command jobs (spec.command set): the job process is the command runner
// (worker/command_job.h); it starts the command in a fresh, empty working directory
// <scratch_dir>/<job>-<attempt>.work that is removed afterwards, whatever happened.
// Diagnostic jobs: a spec whose model is "selftest:<mode>" (pass, fail, noisy, fds, segv, abort,
// sigkill, hang, stubborn, exit3, noresult, alloc) makes the job process misbehave on purpose
// instead of running the inference core — see worker/selftest_job.h. Tests and the integration
// suite use it to provoke crashes, hangs and OOMs through the whole system.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result_status.h"
#include "worker/command_job.h"

namespace am::worker {

struct ExecRequest {
  std::string job_id;
  int attempt = 0;
  nlohmann::json spec;                      // jobs::JobSpec document
  double timeout_s = 120.0;
  int64_t memory_limit_mb = 0;              // 0 = none
  std::filesystem::path worker_binary;      // path of accelmatrix-worker
  std::filesystem::path scratch_dir;        // where spec/result files go (created if needed)
  std::string device;                       // the device key of the ASSIGN (command jobs see it)
  // "NAME=value" set in the job process only: which device it opens (device_selection.h).
  std::vector<std::string> env;
};

struct ExecOutcome {
  ResultStatus status = ResultStatus::kError;
  std::string reason;
  nlohmann::json metrics = nlohmann::json::object();
  std::string log_tail;
  int64_t started_at_ms = 0;
  int64_t finished_at_ms = 0;
  int exit_code = -1;                       // when it exited
  int signal = 0;                           // when it was killed by a signal
  // The worker could not run the job or keep its result (its state dir unusable): no outcome of
  // the job. The client reports no result for it and stops (exit 4); the lease goes back.
  bool worker_fault = false;
  bool runner_unstartable = false;          // the fault was starting the job process (spawn)
};

ExecOutcome execute_job(const ExecRequest& req, const std::atomic<bool>* cancel = nullptr);

// Whether `scratch_dir` takes a job's files now: it is made when missing, and a small file is
// written there and removed. A worker_fault outcome counts as the worker's only when this fails
// afterwards: a job that filled the disk (its own files are gone once it ended) or a fork that
// failed for a moment is the job's `error`, not a reason to stop a healthy worker.
bool scratch_dir_usable(const std::filesystem::path& scratch_dir);

// Job mode: the child side. Reads the spec, applies the memory limit (RLIMIT_AS), runs
// kernels::run_job(), writes the result document {"status","reason","metrics"} to result_file.
// Returns the process exit code: 0 when a result was written, kExitOutOfMemory when an
// allocation failed, 2 for a bad spec file.
inline constexpr int kExitOutOfMemory = 75;
// A file the job had mapped (its weights) was truncated or replaced while it read it: the
// process said which on its last line of output (kernels/weights/mapped_file.h).
inline constexpr int kExitMappedFileChanged = 76;
// The job ran but its result file could not be written (the worker's state dir is full, gone or
// read-only): the worker's fault, not the job's (ExecOutcome::worker_fault).
inline constexpr int kExitResultUnwritable = 77;
// `command` (job id, attempt, device, working directory) is read by command jobs only.
int run_job_mode(const std::filesystem::path& spec_file, const std::filesystem::path& result_file,
                 int64_t memory_limit_mb, const CommandContext& command = {});

}  // namespace am::worker
