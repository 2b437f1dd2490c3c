// The job process's side of an external command job (docs/PLANS.md, "External commands").
//
// Contract: run_command_job() runs in the job process that execute_job() spawned (so the
// executor's timeout, memory limit, log tail and process-group kill apply to the command too):
// it starts spec.command->argv with posix_spawnp (PATH searched, no shell) in `work_dir` with
// ACCELMATRIX_JOB_ID, ACCELMATRIX_ATTEMPT, ACCELMATRIX_DEVICE and ACCELMATRIX_RESULT_FILE set,
// copies the command's stdout to its own (the log tail keeps it) while keeping up to
// kMaxCommandStdoutBytes for the reader (a result file is read whatever the command printed),
// and waits for it; once it has exited, its stdout is read for kOutputAfterExitMs more at most
// (a background child holding the pipe does not hold the job). Then:
// The runner is the subreaper of the command's tree (worker/descendants.h): once the command has
// ended, and kTreeGraceAfterTermMs after the executor's SIGTERM (which the command gets too, and
// the processes that left its group get from the runner), every process the command left
// running is ended, those that moved to a process group or session of their own included. A
// worker that dies (even by SIGKILL) sends the runner SIGTERM (PR_SET_PDEATHSIG), which then sends
// it to its whole group and ends the tree the same way. Then:
//   - killed by signal S: re-raises S on itself, so the executor classifies it exactly as a
//     model job's death (crash, or oom for SIGKILL);
//   - exited kExitOutOfMemory: exits with it too (oom);
//   - exited non-zero otherwise: result `error`, "command exited with code N";
//   - exited 0: the reader named by spec.command->output turns the output into the result; a
//     document that does not parse is `error` naming what was wrong.
// The result document goes to `result_file` and the return value is the job process's exit code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "jobs/job_spec.h"

namespace am::worker {

inline constexpr std::size_t kMaxCommandStdoutBytes = 16u << 20;
// Once the command has exited, how long its stdout is still read: what it printed last arrives,
// and a background child it left holding the pipe does not hold the job.
inline constexpr int64_t kOutputAfterExitMs = 500;
// After the executor's SIGTERM (time limit, cancel), how long the command may take to finish
// before the runner ends its whole tree: within the executor's 2 s before SIGKILL, with room
// for the runner to act.
inline constexpr int64_t kTreeGraceAfterTermMs = 1500;

struct CommandContext {
  std::string job_id;
  int attempt = 0;
  std::string device;
  std::filesystem::path work_dir;      // fresh and empty; the command's working directory
  int64_t parent_pid = 0;              // the worker that spawned this runner (0: not checked)
};

// Where the command writes its result ($ACCELMATRIX_RESULT_FILE) for a job run in `work_dir`.
// The variable also marks every process of the command's tree that kept its environment: the
// worker ends those left behind by a runner that died (end_children_with_env).
std::filesystem::path command_result_path(const std::filesystem::path& work_dir);

int run_command_job(const jobs::JobSpec& spec, const CommandContext& ctx,
                    const std::filesystem::path& result_file);

}  // namespace am::worker
