// The fields of /proc/PID/stat that accelmatrix reads: whether a process is a zombie (a pid
// that kill(pid, 0) still finds but that runs nothing) and its parent (whose children a
// subreaper must end).
//
// Contract: read_proc_stat() returns nullopt when the process is gone or /proc has no such
// file. Fields are counted from the last ')' of the line, since a command name may hold spaces
// and parentheses.
#pragma once

#include <sys/types.h>

#include <optional>

namespace am {

struct ProcStat {
  char state = '?';     // R, S, D, Z, T, ...
  pid_t parent = -1;
};

std::optional<ProcStat> read_proc_stat(pid_t pid);

}  // namespace am
