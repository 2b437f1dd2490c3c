// The peak resident set of a process as Linux keeps it for its current address space.
//
// Why not getrusage()/wait4()'s ru_maxrss: Linux folds the high-water mark of the address space
// a process *leaves* at exec into it, and posix_spawn's child leaves its parent's (CLONE_VM). A
// job process spawned by an 80 MB worker reported at least 80 MB, whatever it used itself.
// VmHWM in /proc/PID/status belongs to the address space the process runs in now.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace am {

// VmHWM of `pid` (0: this process) in bytes; nullopt where /proc has no such line (not Linux,
// the process is gone or a zombie, or /proc is not mounted).
std::optional<int64_t> vm_hwm_bytes(pid_t pid = 0);

}  // namespace am
