#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace am::kernels {
namespace {

TEST(ThreadPool, VisitsEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  for (int64_t n : {1, 7, 100, 10007}) {
    for (int64_t grain : {1, 3, 64}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        ASSERT_LT(b, e);
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPool, IsReusableAcrossManyCalls) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(10, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  }
  EXPECT_EQ(total.load(), 20000);
}

TEST(ThreadPool, UsesMoreThanOneThread) {
  ThreadPool pool(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> arrived{0};
  // Each chunk waits (bounded) until both have started: only possible on two threads.
  pool.parallel_for(2, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    for (int i = 0; i < 2000 && arrived.load() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, RethrowsTheFirstExceptionOnTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100, 1,
                                 [](int64_t b, int64_t e) {
                                   if (b <= 42 && 42 < e) throw std::runtime_error("item 42");
                                 }),
               std::runtime_error);
  // Still usable afterwards.
  std::atomic<int64_t> n{0};
  pool.parallel_for(50, 1, [&](int64_t b, int64_t e) { n.fetch_add(e - b); });
  EXPECT_EQ(n.load(), 50);
}

TEST(ThreadPool, NestedCallRunsInlineWithoutDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> n{0};
  pool.parallel_for(8, 1, [&](int64_t, int64_t) {
    pool.parallel_for(10, 1, [&](int64_t b, int64_t e) { n.fetch_add(e - b); });
  });
  EXPECT_EQ(n.load(), 80);
}

TEST(ThreadPool, SingleThreadPoolRunsInline) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  const auto caller = std::this_thread::get_id();
  pool.parallel_for(100, 1,
                    [&](int64_t, int64_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
}

TEST(ThreadPool, DefaultThreadCountIsAtLeastOneAndAtMostCpus) {
  const int n = default_thread_count();
  EXPECT_GE(n, 1);
  EXPECT_LE(static_cast<unsigned>(n), std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace am::kernels
