#include "kernels/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace am::kernels {
namespace {

// More chunks than threads lets fast threads pick up slack from slow ones (another process on
// the core, a cold cache) without making the chunks so small that hand-out cost shows.
constexpr int64_t kChunksPerThread = 4;

thread_local bool t_inside_pool_task = false;

}  // namespace

int default_thread_count() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return std::max(1u, std::thread::hardware_concurrency());
  }
  // Count distinct (package, core) pairs among the CPUs we may use: SMT siblings share the
  // execution units the int8 kernels saturate, so they add little and cost cache.
  std::set<std::pair<std::string, std::string>> cores;
  int cpus = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    ++cpus;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(base + "physical_package_id");
    std::ifstream core(base + "core_id");
    std::string p, c;
    if (!(pkg >> p) || !(core >> c)) {
      p = "cpu";
      c = std::to_string(cpu);  // no topology: count the CPU itself
    }
    cores.emplace(p, c);
  }
  if (cores.empty()) return std::max(1, cpus);
  return static_cast<int>(cores.size());
}

struct ThreadPool::Job {
  const RangeFn* fn = nullptr;
  int64_t n = 0;
  int64_t chunk = 1;
  std::atomic<int64_t> next{0};
  std::mutex error_mu;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int threads) {
  const int workers = std::max(1, threads) - 1;
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks(Job& job) {
  const bool was_inside = t_inside_pool_task;
  t_inside_pool_task = true;
  for (;;) {
    const int64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.n) break;
    const int64_t end = std::min(job.n, begin + job.chunk);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard lock(job.error_mu);
      if (!job.error) job.error = std::current_exception();
      job.next.store(job.n, std::memory_order_relaxed);  // skip what is left
    }
  }
  t_inside_pool_task = was_inside;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      // A late waker may find the job already finished and withdrawn.
      if (job == nullptr) continue;
      ++busy_workers_;
    }
    run_chunks(*job);
    {
      std::lock_guard lock(mu_);
      --busy_workers_;
    }
    done_cv_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (workers_.empty() || t_inside_pool_task || n <= grain) {
    fn(0, n);
    return;
  }
  std::lock_guard call_lock(call_mu_);
  const int64_t max_chunks = static_cast<int64_t>(size()) * kChunksPerThread;
  const int64_t chunks = std::min(max_chunks, (n + grain - 1) / grain);
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = (n + chunks - 1) / chunks;
  {
    std::lock_guard lock(mu_);
    job_ = &job;
    ++generation_;
  }
  work_cv_.notify_all();
  run_chunks(job);
  {
    // The job lives on this stack frame: wait until no worker can still touch it. A worker that
    // wakes after this point sees the next generation (or none) and never this job.
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return busy_workers_ == 0; });
    job_ = nullptr;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace am::kernels
