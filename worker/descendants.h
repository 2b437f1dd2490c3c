// Processes a command job started and that left its process group (`setsid`, a new session,
// `set -m` in a shell, Python's start_new_session) escape the executor's kill of the job's
// group and would outlive the job, its run and the worker. The command runner makes itself their
// subreaper, so every orphan of the command's tree becomes its child, and ends them all before
// it leaves: after the command, and when its time limit's SIGTERM reaches it.
//
// Contract:
// - become_subreaper(): PR_SET_CHILD_SUBREAPER on this process; false where the kernel refuses.
// - end_all_children(): SIGKILLs and reaps every child of this process, and again every process
//   that became its child meanwhile (ending one reparents its orphans here), until none is left
//   or kMaxEndRounds rounds have passed. Returns how many it ended. Reads /proc; only for a
//   process whose children are all to go (the runner, once its command is done).
// - end_children_with_env(): the same for the children whose environment holds an entry.
#pragma once

#include <string>

namespace am::worker {

inline constexpr int kMaxEndRounds = 64;

bool become_subreaper();
int end_all_children();
// Sends `sig` once to every child of this process (no waiting): the SIGTERM a command's time
// limit brings, for the processes that left the command's group and so did not get it.
void signal_all_children(int sig);
// SIGKILLs and reaps every child of this process whose environment holds `entry` ("NAME=value",
// a whole item), round after round as ending one reparents its own children here, at most
// kMaxEndRounds rounds. Returns how many it ended. The worker's side of a runner that died
// without ending its command's tree (SIGKILLed: the OOM killer): with the worker a subreaper,
// what the tree left became the worker's children, and they carry the job's
// ACCELMATRIX_RESULT_FILE. The environment identifies them among the worker's other children
// (the runners of other jobs); a process that cleared its environment is not found.
int end_children_with_env(const std::string& entry);

}  // namespace am::worker
