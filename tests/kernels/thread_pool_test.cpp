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

// Both sides of the hand-off: a worker still polling (back-to-back calls) and one that gave up
// polling and blocked (a pause longer than kSpinBeforeSleep) must each join the next call.
TEST(ThreadPool, WorkersJoinCallsWhetherPollingOrAsleep) {
  ThreadPool pool(2);
  auto two_threads_met = [&] {
    std::atomic<int> arrived{0};
    std::mutex mu;
    std::set<std::thread::id> ids;
    pool.parallel_for(2, 1, [&](int64_t, int64_t) {
      {
        std::lock_guard lock(mu);
        ids.insert(std::this_thread::get_id());
      }
      arrived.fetch_add(1);
      for (int i = 0; i < 2000 && arrived.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    return ids.size() == 2;
  };
  EXPECT_TRUE(two_threads_met()) << "first call";
  EXPECT_TRUE(two_threads_met()) << "back-to-back call (worker polling)";
  std::this_thread::sleep_for(kSpinBeforeSleep * 20);
  EXPECT_TRUE(two_threads_met()) << "call after a pause (worker blocked)";
}

// Many short calls from two caller threads at once, with pauses either side of the spin window:
// every index of every call is visited exactly once, so no call returns while a worker is still
// inside it and no worker runs a withdrawn call.
TEST(ThreadPool, ConcurrentCallersOfShortCallsEachSeeEveryIndexOnce) {
  ThreadPool pool(3);
  std::atomic<int> failures{0};
  auto caller = [&](int seed) {
    for (int round = 0; round < 400; ++round) {
      const int64_t n = 1 + (round * 7 + seed) % 37;
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
      });
      for (auto& h : hits) {
        if (h.load() != 1) failures.fetch_add(1);
      }
      if (round % 50 == seed) std::this_thread::sleep_for(kSpinBeforeSleep * 2);
    }
  };
  std::thread a(caller, 0), b(caller, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
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
