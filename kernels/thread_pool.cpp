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
constexpr int64_t kChunksPerThread = 16;

// Polls of active_ before the caller starts yielding its core to a worker that was preempted.
constexpr int kCallerSpinsBeforeYield = 4096;

thread_local bool t_inside_pool_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

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
  stop_.store(true);
  {
    std::lock_guard lock(sleep_mu_);  // a worker between its predicate check and wait() holds it
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

// Returns false when the pool is stopping; otherwise `seen` is advanced to a new generation.
bool ThreadPool::wait_for_call(uint64_t& seen) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (int spins = 0;; ++spins) {
    if (stop_.load()) return false;
    const uint64_t g = generation_.load();
    if (g != seen) {
      seen = g;
      return true;
    }
    cpu_relax();
    // The clock is read every few dozen polls: cheap, and fine-grained enough for the window.
    if (spins % 64 == 63 && std::chrono::steady_clock::now() >= deadline) break;
  }
  std::unique_lock lock(sleep_mu_);
  sleepers_.fetch_add(1);
  work_cv_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
  sleepers_.fetch_sub(1);
  if (stop_.load()) return false;
  seen = generation_.load();
  return true;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (wait_for_call(seen)) {
    active_.fetch_add(1);
    // The job may already be finished and withdrawn (null), or be a newer call's: both are fine,
    // since active_ was raised before the read.
    if (Job* job = job_.load(); job != nullptr) run_chunks(*job);
    active_.fetch_sub(1);
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
  job_.store(&job);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    // A worker that saw the old generation under sleep_mu_ is waiting or about to: taking the
    // lock orders this notify after its wait() began.
    { std::lock_guard lock(sleep_mu_); }
    work_cv_.notify_all();
  }
  run_chunks(job);
  // Every chunk has been handed out; withdraw the job, then wait out workers still inside it.
  job_.store(nullptr);
  for (int spins = 0; active_.load() != 0; ++spins) {
    if (spins < kCallerSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();  // a preempted worker: give its core back
    }
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace am::kernels
