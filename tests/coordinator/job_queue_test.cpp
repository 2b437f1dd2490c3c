// The scheduler's queue (coordinator/job_queue.h) against a reference model: a std::set of the
// jobs queued now. Random seeded sequences of appends, leases (leaving the queue), requeues and
// scans; every scan must visit exactly the queued jobs, in ascending order, each once — including
// jobs requeued behind and ahead of the scan head and after compaction.
#include "coordinator/job_queue.h"

#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace am::coord {
namespace {

std::vector<uint32_t> scan_all(JobQueue& q, const std::set<uint32_t>& queued) {
  std::vector<uint32_t> seen;
  q.scan([&](uint32_t j) { return queued.count(j) > 0; },
         [&](uint32_t j) {
           seen.push_back(j);
           return true;
         });
  return seen;
}

TEST(JobQueue, ScansVisitExactlyTheQueuedJobsInOrderUnderRandomOperations) {
  for (uint32_t seed : {1u, 2u, 3u, 20261127u}) {
    std::mt19937 rng(seed);
    JobQueue q;
    std::set<uint32_t> queued;     // the model
    std::set<uint32_t> out;        // appended, not queued now (leased or done)
    uint32_t next = 0;
    for (int step = 0; step < 4000; ++step) {
      const unsigned op = rng() % 10;
      if (op < 4) {                                   // a new job
        q.append(next);
        queued.insert(next++);
      } else if (op < 7 && !queued.empty()) {         // the first queued job leaves (leased)
        auto it = queued.begin();
        if (rng() % 3 == 0) std::advance(it, static_cast<long>(rng() % queued.size()));
        out.insert(*it);
        queued.erase(it);
      } else if (op < 9 && !out.empty()) {            // a lease ends without a result: queued again
        auto it = out.begin();
        std::advance(it, static_cast<long>(rng() % out.size()));
        q.requeue(*it);
        queued.insert(*it);
        out.erase(it);
      } else {
        const std::vector<uint32_t> seen = scan_all(q, queued);
        ASSERT_EQ(seen, std::vector<uint32_t>(queued.begin(), queued.end())) << "seed " << seed << " step " << step;
      }
    }
    const std::vector<uint32_t> seen = scan_all(q, queued);
    EXPECT_EQ(seen, std::vector<uint32_t>(queued.begin(), queued.end())) << "seed " << seed;
  }
}

TEST(JobQueue, JobsRequeuedAfterTheConsumedPrefixWasCompactedAreFoundAgain) {
  JobQueue q;
  std::set<uint32_t> queued;
  for (uint32_t j = 0; j < 20000; ++j) {
    q.append(j);
    queued.insert(j);
  }
  for (uint32_t j = 0; j < 15000; ++j) queued.erase(j);   // leased
  EXPECT_EQ(scan_all(q, queued).size(), 5000u);            // the head moves past them and compacts
  for (uint32_t j : {7u, 14999u, 3u}) {                     // three leases end without a result
    q.requeue(j);
    queued.insert(j);
  }
  const std::vector<uint32_t> seen = scan_all(q, queued);
  EXPECT_EQ(seen, std::vector<uint32_t>(queued.begin(), queued.end()));
  EXPECT_EQ(seen.front(), 3u);
}

TEST(JobQueue, AScanStopsWhenTheVisitorSaysSoAndTheNextScanStartsAgain) {
  JobQueue q;
  std::set<uint32_t> queued;
  for (uint32_t j = 0; j < 10; ++j) {
    q.append(j);
    queued.insert(j);
  }
  std::vector<uint32_t> seen;
  q.scan([&](uint32_t j) { return queued.count(j) > 0; },
         [&](uint32_t j) {
           seen.push_back(j);
           return j < 3;
         });
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2, 3}));
  queued.erase(0);
  queued.erase(1);
  EXPECT_EQ(scan_all(q, queued), (std::vector<uint32_t>{2, 3, 4, 5, 6, 7, 8, 9}));
  // A job that left and came back behind the head is found again, in order.
  q.requeue(0);
  queued.insert(0);
  EXPECT_EQ(scan_all(q, queued), (std::vector<uint32_t>{0, 2, 3, 4, 5, 6, 7, 8, 9}));
}

}  // namespace
}  // namespace am::coord
