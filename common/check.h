// Always-on invariant checks.
//
// Contract: AM_CHECK(cond, msg) aborts the process with file, line, the condition and `msg` when
// `cond` is false, in every build type (the default build defines NDEBUG, which removes
// `assert`). Use it for invariants whose violation would store a wrong result or corrupt state:
// mismatched shapes or out-of-range indices inside kernels, a job-state transition the state
// machine forbids, an enum value outside its table. It is not for input from users or peers,
// which is validated with Status before it reaches such code. In a job process an abort becomes
// a stored `crash` with this message in the log tail; in the coordinator it stops the process
// before a wrong row is written.
// AM_UNREACHABLE(msg) is the same failure for a point control must never reach: after a switch
// that names every value of an enum, where a fallback value would turn a corrupt enum into a
// plausible-looking word in a stored result or report.
// `assert` stays only for hot-loop debugging aids whose cost matters in release builds.
#pragma once

namespace am::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* msg);
}  // namespace am::detail

#define AM_CHECK(cond, msg)                                                    \
  do {                                                                         \
    if (!(cond)) ::am::detail::check_failed(__FILE__, __LINE__, #cond, msg);   \
  } while (0)

#define AM_UNREACHABLE(msg) ::am::detail::check_failed(__FILE__, __LINE__, "unreachable", msg)
