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
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace am::kernels {

int default_thread_count();

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

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serializes parallel_for callers
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  int busy_workers_ = 0;
  bool stop_ = false;
};

}  // namespace am::kernels
