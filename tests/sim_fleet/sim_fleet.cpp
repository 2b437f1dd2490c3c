#include "tests/sim_fleet/sim_fleet.h"

#include <algorithm>
#include <cmath>

#include <zmq.h>

#include "common/clock.h"
#include "common/hash.h"

namespace am::sim {
namespace {

// Drivers look at their timers at least this often and at the stop flag and reconnect requests
// at least every kMaxPollMs.
constexpr int64_t kTimerGranularityMs = 2;
constexpr int64_t kMaxPollMs = 20;

}  // namespace

struct SimFleet::Driver {
  std::vector<SimWorker*> workers;
  std::vector<int64_t> next_due;
  std::thread thread;
};

SimFleet::SimFleet(const FleetOptions& options) : opt_(options) {}

Result<std::unique_ptr<SimFleet>> SimFleet::start(const FleetOptions& options) {
  if (options.workers < 1) return invalid_argument("sim fleet: workers must be >= 1");
  if (options.slots < 1 || options.slots > 1024) return invalid_argument("sim fleet: slots must be 1..1024");
  if (options.threads < 1) return invalid_argument("sim fleet: threads must be >= 1");
  if (options.endpoint.empty()) return invalid_argument("sim fleet: no coordinator endpoint");
  std::unique_ptr<SimFleet> fleet(new SimFleet(options));
  const int threads = std::min(options.threads, options.workers);
  for (int t = 0; t < threads; ++t) fleet->drivers_.push_back(std::make_unique<Driver>());
  for (int i = 0; i < options.workers; ++i) {
    SimWorkerOptions w;
    w.endpoint = options.endpoint;
    w.worker_id = "sim-" + options.prefix + "-" + std::to_string(i);
    w.host_id = "simhost-" + options.prefix + "-" + std::to_string(i);
    // A stable secret per worker id, like the one a real worker keeps in its state dir.
    w.secret = hex64(fnv1a64(w.worker_id + "/a")) + hex64(fnv1a64(w.worker_id + "/b")) +
               hex64(fnv1a64(w.worker_id + "/c")) + hex64(fnv1a64(w.worker_id + "/d"));
    w.slots = options.slots;
    w.capabilities = sim_capabilities(w.worker_id, w.host_id, options.hardware_class);
    w.metrics = sim_metrics(static_cast<uint64_t>(i) + 1);
    w.send_progress = options.send_progress;
    w.job_ms = options.job_ms;
    w.heartbeat_interval_ms = options.heartbeat_interval_ms;
    w.record_latencies = options.record_latencies;
    w.on_assign = options.on_assign;
    fleet->workers_.push_back(std::make_unique<SimWorker>(std::move(w), &fleet->counters_));
    Driver& d = *fleet->drivers_[static_cast<std::size_t>(i % threads)];
    d.workers.push_back(fleet->workers_.back().get());
    d.next_due.push_back(0);
  }
  for (auto& d : fleet->drivers_) {
    Driver* driver = d.get();
    SimFleet* self = fleet.get();
    driver->thread = std::thread([self, driver] { self->run_driver(*driver); });
  }
  return fleet;
}

SimFleet::~SimFleet() { stop(); }

void SimFleet::stop() {
  stop_.store(true);
  for (auto& d : drivers_) {
    if (d->thread.joinable()) d->thread.join();
  }
}

void SimFleet::reconnect_all() { reconnect_epoch_.fetch_add(1); }

void SimFleet::run_driver(Driver& d) {
  std::vector<zmq_pollitem_t> items;
  std::vector<std::size_t> owner;   // items[k] belongs to d.workers[owner[k]]
  bool rebuild = true;
  uint64_t seen_epoch = reconnect_epoch_.load();
  int64_t now = steady_ms();
  for (std::size_t i = 0; i < d.workers.size(); ++i) {
    d.workers[i]->connect(now);
    d.next_due[i] = now;
  }
  int64_t next_scan = now;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (const uint64_t epoch = reconnect_epoch_.load(); epoch != seen_epoch) {
      seen_epoch = epoch;
      now = steady_ms();
      for (std::size_t i = 0; i < d.workers.size(); ++i) d.workers[i]->reconnect_now(now);
      rebuild = true;
    }
    if (rebuild) {
      items.clear();
      owner.clear();
      for (std::size_t i = 0; i < d.workers.size(); ++i) {
        if (void* s = d.workers[i]->pollable()) {
          items.push_back(zmq_pollitem_t{s, 0, ZMQ_POLLIN, 0});
          owner.push_back(i);
        }
      }
      rebuild = false;
    }
    now = steady_ms();
    const long wait_ms = static_cast<long>(std::clamp<int64_t>(next_scan - now, 0, kMaxPollMs));
    const int ready = zmq_poll(items.data(), static_cast<int>(items.size()), wait_ms);
    now = steady_ms();
    if (ready > 0) {
      for (std::size_t k = 0; k < items.size(); ++k) {
        if (!(items[k].revents & ZMQ_POLLIN)) continue;
        SimWorker& w = *d.workers[owner[k]];
        const uint64_t gen = w.socket_generation();
        w.on_readable(now);
        d.next_due[owner[k]] = w.tick(now);
        next_scan = std::min(next_scan, d.next_due[owner[k]]);
        if (w.socket_generation() != gen) rebuild = true;
      }
    }
    if (now >= next_scan) {
      int64_t soonest = now + kMaxPollMs;
      for (std::size_t i = 0; i < d.workers.size(); ++i) {
        if (d.next_due[i] <= now) {
          SimWorker& w = *d.workers[i];
          const uint64_t gen = w.socket_generation();
          d.next_due[i] = w.tick(now);
          if (w.socket_generation() != gen) rebuild = true;
        }
        soonest = std::min(soonest, d.next_due[i]);
      }
      next_scan = std::max(soonest, now + kTimerGranularityMs);
    }
  }
}

FleetStats SimFleet::stats() const {
  const SimCounters& c = counters_;
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  FleetStats s;
  s.hellos = ld(c.hellos);
  s.welcomes = ld(c.welcomes);
  s.rejects_retry = ld(c.rejects_retry);
  s.rejects_final = ld(c.rejects_final);
  s.assigns = ld(c.assigns);
  s.health_assigns = ld(c.health_assigns);
  s.assigns_ignored = ld(c.assigns_ignored);
  s.results = ld(c.results);
  s.results_resent = ld(c.results_resent);
  s.acks = ld(c.acks);
  s.acks_duplicate = ld(c.acks_duplicate);
  s.cancels = ld(c.cancels);
  s.heartbeats_sent = ld(c.heartbeats_sent);
  s.heartbeats_received = ld(c.heartbeats_received);
  s.reconnects = ld(c.reconnects);
  s.send_failures = ld(c.send_failures);
  s.byes = ld(c.byes);
  s.first_assign_ms = c.first_assign_ms.load(std::memory_order_relaxed);
  s.last_ack_ms = c.last_ack_ms.load(std::memory_order_relaxed);
  return s;
}

std::vector<int64_t> SimFleet::take_latencies() {
  std::vector<int64_t> all;
  for (auto& w : workers_) {
    std::vector<int64_t> part = w->take_latencies();
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::vector<std::string> SimFleet::worker_ids() const {
  std::vector<std::string> ids;
  for (const auto& w : workers_) ids.push_back(w->worker_id());
  return ids;
}

bool SimFleet::wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (!pred()) {
    if (SteadyClock::now() >= deadline) return false;
    std::this_thread::sleep_for(Millis(5));
  }
  return true;
}

int64_t percentile(std::vector<int64_t>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const std::size_t index = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[index];
}

}  // namespace am::sim
