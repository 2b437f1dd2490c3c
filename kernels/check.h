// Always-on invariant checks for the inference core.
//
// Contract: AM_KERNEL_CHECK(cond, msg) aborts the process with file, line and `msg` when `cond` is
// false, in every build type. It guards programmer errors (mismatched shapes, out-of-range
// indices) inside kernels, where a Status would cost a branch per call site and a wrong answer
// would be worse than a crash: the worker runs each job in a child process and reports an abort
// as "crash" with this message in the log tail. User input (configs, specs) is validated with
// Status before it ever reaches a kernel.
#pragma once

namespace am::kernels::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* msg);
}  // namespace am::kernels::detail

#define AM_KERNEL_CHECK(cond, msg)                                                    \
  do {                                                                                \
    if (!(cond)) ::am::kernels::detail::check_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
