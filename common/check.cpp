#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace am::detail {

void check_failed(const char* file, int line, const char* cond, const char* msg) {
  // stderr directly: the logger may itself be in a bad state, and the message must reach the
  // log tail the executor captures before the abort.
  std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", file, line, cond, msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace am::detail
