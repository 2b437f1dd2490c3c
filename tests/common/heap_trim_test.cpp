// Freed heap handed back to the system (common/heap_trim.h).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "common/heap_trim.h"

namespace am {
namespace {

std::size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

TEST(HeapTrim, ThreadsReleasingAtOnceInAFreshProcessAllFinish) {
  // The coordinator trims from its main thread and from a releaser thread at the same moment
  // (coordinator/commands.cpp). Under AddressSanitizer glibc's arenas are first set up by that
  // trim, and two threads racing through glibc's set-up crashed one run in seven (a SEGV at
  // 0x8). Each fork starts from the state this process has, so in a sanitizer build every child
  // is such a first trim.
  constexpr int kChildren = 100;
  constexpr int kThreads = 4;
  int failed = 0;
  for (int child = 0; child < kChildren; ++child) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int null_fd = open("/dev/null", O_WRONLY);
      if (null_fd >= 0) dup2(null_fd, STDERR_FILENO);  // a crash report would flood the log
      std::atomic<int> ready{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&ready] {
          ready.fetch_add(1);
          while (ready.load() < kThreads) {
          }
          release_free_heap();
        });
      }
      for (std::thread& t : threads) t.join();
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  EXPECT_EQ(failed, 0) << failed << " of " << kChildren << " children crashed trimming the heap";
}

TEST(HeapTrim, FreedSmallBlocksBelowALiveOneLeaveTheResidentSet) {
  if (!release_free_heap_is_effective()) GTEST_SKIP() << "the heap is not glibc's in this build";
  // 96 MiB in 1 KiB blocks, then one block above them that stays live: glibc cannot shrink the
  // heap's top past it, and freed small blocks stay resident until they are trimmed.
  constexpr std::size_t kBlock = 1024;
  constexpr std::size_t kBlocks = 96 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.emplace_back(new char[kBlock]);
    for (std::size_t b = 0; b < kBlock; b += 256) blocks.back()[b] = static_cast<char>(i + b);
  }
  auto pin = std::make_unique<char[]>(kBlock);
  pin[0] = 1;
  blocks.clear();
  blocks.shrink_to_fit();
  const std::size_t before = resident_bytes();
  release_free_heap();
  const std::size_t after = resident_bytes();
  ASSERT_GT(before, after);
  EXPECT_GT(before - after, std::size_t{64} << 20) << "before " << before << " after " << after;
  EXPECT_EQ(pin[0], 1);
}

}  // namespace
}  // namespace am
