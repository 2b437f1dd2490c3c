// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cpp) and their corpus replay tests.
//
// Each target defines LLVMFuzzerTestOneInput (and may define LLVMFuzzerInitialize). A target must
// return 0 for every input; a property violation calls fuzz_check_failed(), which aborts so that
// libFuzzer records the input as a crash. Targets are single-threaded (libFuzzer's default).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <unistd.h>

#include "common/log.h"

namespace am::fuzz {

[[noreturn]] inline void fuzz_check_failed(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz property violated: %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

#define AM_FUZZ_CHECK(cond, detail)                                 \
  do {                                                              \
    if (!(cond)) ::am::fuzz::fuzz_check_failed(#cond, (detail));    \
  } while (0)

// Loggers off: a rejected input is the common case and must not flood the fuzzer's output.
inline void quiet_logs() { (void)set_log_level("off"); }

// A private scratch directory for targets that read files, on tmpfs when there is one (a file
// per execution on a disk would cost more than the parsing under test). Removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    std::filesystem::path base = "/dev/shm";
    if (!std::filesystem::is_directory(base, ec) || access(base.c_str(), W_OK) != 0) {
      base = std::filesystem::temp_directory_path();
    }
    std::filesystem::path d = base / ("am-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d, ec);
    std::atexit([] {
      std::error_code e;
      std::filesystem::remove_all(scratch_dir(), e);
    });
    return d;
  }();
  return dir;
}

inline std::string_view as_view(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace am::fuzz
