// The scheduler's queue of jobs that one device may take: job indexes in submission order, so that
// "the first queued job that fits" is found without walking every job of the run (a million-job
// run would otherwise cost a million steps per ASSIGN). The coordinator keeps one per pool of jobs
// (an `any` job's backend, a hardware class, a device: coordinator/server.cpp).
//
// Contract:
// - The owner decides what is queued: scan() takes a `queued(job)` predicate and skips entries
//   that no longer are (they are removed lazily), so leaving the queue costs nothing.
// - append(job) for a job never seen by this queue, with an index above every job appended
//   before; requeue(job) for a job that is queued again (a lease ended without a result), in any
//   order. A job must be queued (per the predicate) when either is called.
// - scan(queued, visit) calls visit(job) for the queued jobs in ascending index order until visit
//   returns false. Each job is visited once per scan.
// - Memory: 4 bytes per job appended, plus a set node per job requeued behind the scan head.
//   Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace am::coord {

class JobQueue {
 public:
  void append(uint32_t job) { appended_.push_back(job); }

  void requeue(uint32_t job) {
    // Still ahead of the scan head in appended_: it will be visited there.
    if (head_ < appended_.size() && job >= appended_[head_] &&
        std::binary_search(appended_.begin() + static_cast<std::ptrdiff_t>(head_), appended_.end(), job)) {
      return;
    }
    requeued_.insert(job);
  }

  template <typename Queued, typename Visit>
  void scan(Queued&& queued, Visit&& visit) {
    // Entries at the head that are gone stay gone: move past them once, for every later scan.
    while (head_ < appended_.size() && !queued(appended_[head_])) ++head_;
    compact();
    std::size_t a = head_;
    auto r = requeued_.begin();
    while (a < appended_.size() || r != requeued_.end()) {
      uint32_t job;
      if (r == requeued_.end() || (a < appended_.size() && appended_[a] < *r)) {
        job = appended_[a++];
      } else {
        job = *r;
        if (!queued(job)) {
          r = requeued_.erase(r);
          continue;
        }
        ++r;
        if (a < appended_.size() && appended_[a] == job) ++a;   // listed in both: visit once
      }
      if (!queued(job)) continue;
      if (!visit(job)) return;
    }
  }

 private:
  // Drops the consumed prefix once it is most of the vector, so memory follows the queue.
  void compact() {
    if (head_ < 4096 || head_ < appended_.size() / 2) return;
    appended_.erase(appended_.begin(), appended_.begin() + static_cast<std::ptrdiff_t>(head_));
    appended_.shrink_to_fit();
    head_ = 0;
  }

  std::vector<uint32_t> appended_;   // ascending; entries before head_ have left the queue
  std::size_t head_ = 0;
  std::set<uint32_t> requeued_;      // queued again while behind the head (or never appended)
};

}  // namespace am::coord
