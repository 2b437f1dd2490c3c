// A small reusable pool of worker threads for data-parallel kernels.
//
// Contract:
//   - ThreadPool(n) runs work on n threads in total: n-1 workers it owns plus the thread that
//     calls parallel_for(), which takes part. n < 1 is treated as 1 (everything runs inline).
//   - parallel_for(n, grain, fn) splits [0, n) into contiguous chunks of at least `grain` items,
//     calls fn(begin, end) once per chunk on some thread, and returns when every chunk is done.
//     Chunks are handed out dynamically, so uneven chunks balance. fn must be safe to call
//     concurrently on disjoint ranges.
//   - If fn throws, the first exception is rethrown from parallel_for() on the calling thread
//     after all chunks have finished or been skipped.
//   - parallel_for() may be called from several threads: calls are serialized. A nested call
//     from inside fn runs inline on that thread (no deadlock).
//   - The destructor joins the workers; no parallel_for() may be running then.
//   - default_thread_count() is the number of physical cores this process may run on (sibling
//     hyper-threads counted once), at least 1.
//   - Hand-off: after a call, workers keep polling for the next one for kSpinBeforeSleep, then
//     block on a condition variable. Decode issues hundreds of small calls per token; waking a
//     blocked thread costs tens of microseconds on a VM, about a GEMV's whole run, so a worker
//     that is still polling picks the next call up at once. The caller waits for stragglers the
//     same way (poll, then yield). Idle pools cost no CPU beyond the spin window.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace am::kernels {

int default_thread_count();

// How long an idle worker polls for the next call before blocking.
inline constexpr std::chrono::microseconds kSpinBeforeSleep{200};

class ThreadPool {
 public:
  using RangeFn = std::function<void(int64_t begin, int64_t end)>;

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

 private:
  struct Job;
  void worker_loop();
  static void run_chunks(Job& job);

  bool wait_for_call(uint64_t& seen);

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serializes parallel_for callers
  std::mutex sleep_mu_;  // guards the blocking part of the hand-off only
  std::condition_variable work_cv_;
  // Sequentially consistent throughout: a worker announces itself in active_ before it reads
  // job_, and a caller withdraws job_ before it waits for active_ to drain, so no worker can
  // touch a job after its caller returned.
  std::atomic<Job*> job_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace am::kernels
