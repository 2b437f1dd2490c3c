#include "tests/sim_fleet/sim_worker.h"

#include <algorithm>
#include <chrono>

#include "common/clock.h"
#include "tests/sim_fleet/sim_records.h"

namespace am::sim {
namespace {

std::string attempt_key(const std::string& job_id, int attempt) {
  return job_id + "#" + std::to_string(attempt);
}

bool is_health_job(const std::string& job_id) { return job_id.rfind("health-", 0) == 0; }

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now().time_since_epoch()).count();
}

// Sets `slot` to `value` when it is still 0 (the first event of its kind).
void set_once(std::atomic<int64_t>& slot, int64_t value) {
  int64_t zero = 0;
  slot.compare_exchange_strong(zero, value, std::memory_order_relaxed);
}

}  // namespace

SimWorker::SimWorker(SimWorkerOptions options, SimCounters* counters)
    : opt_(std::move(options)),
      counters_(counters),
      credit_window_({"cpu:0"}),
      interval_ms_(opt_.heartbeat_interval_ms),
      liveness_(opt_.heartbeat_liveness),
      backoff_ms_(opt_.reconnect_initial_ms) {
  if (opt_.capabilities.is_null()) opt_.capabilities = sim_capabilities(opt_.worker_id, opt_.host_id);
  if (opt_.metrics.is_null()) opt_.metrics = sim_metrics(std::hash<std::string>{}(opt_.worker_id));
  // The window names the devices the record lists as schedulable, as the real client does.
  std::vector<std::string> keys;
  if (auto d = opt_.capabilities.find("devices"); d != opt_.capabilities.end() && d->is_array()) {
    for (const auto& dev : *d) {
      if (dev.is_object() && dev.value("schedulable", true) && dev.contains("key")) {
        keys.push_back(dev["key"].get<std::string>());
      }
    }
  }
  credit_window_ = worker::CreditWindow(keys);
}

void* SimWorker::pollable() const { return endpoint_ ? endpoint_->pollable() : nullptr; }

void SimWorker::send(proto::Body body) {
  if (!endpoint_) return;
  if (!endpoint_->send(proto::Message{std::move(body)}).ok()) counters_->send_failures.fetch_add(1, std::memory_order_relaxed);
}

void SimWorker::connect(int64_t now_ms) {
  auto ep = DealerEndpoint::connect(opt_.endpoint);
  if (!ep.ok()) {
    schedule_reconnect(now_ms);
    return;
  }
  if (ever_connected_) counters_->reconnects.fetch_add(1, std::memory_order_relaxed);
  ever_connected_ = true;
  endpoint_.emplace(std::move(ep).value());
  ++socket_generation_;
  registered_ = false;
  awaiting_welcome_ = false;
  last_heard_ms_ = now_ms;
  send_hello();
}

void SimWorker::send_hello() {
  proto::Hello h;
  h.worker_id = opt_.worker_id;
  h.hostname = opt_.worker_id;
  h.build = "accelmatrix sim-fleet";
  h.capabilities = opt_.capabilities;
  h.slots = opt_.slots;
  h.secret = opt_.secret;
  h.host_id = opt_.host_id;
  // Running jobs and un-ACKed results are held (PROTOCOL §5.5): the coordinator keeps those
  // leases and reclaims the rest.
  auto hold = [&](const std::string& key) {
    const auto hash = key.rfind('#');
    int& a = h.held[key.substr(0, hash)];
    a = std::max(a, std::stoi(key.substr(hash + 1)));
  };
  for (const auto& [key, job] : running_) hold(key);
  for (const auto& [key, result] : outbox_) hold(key);
  awaiting_welcome_ = true;
  counters_->hellos.fetch_add(1, std::memory_order_relaxed);
  send(std::move(h));
}

void SimWorker::schedule_reconnect(int64_t now_ms) {
  endpoint_.reset();
  ++socket_generation_;
  registered_ = false;
  awaiting_welcome_ = false;
  next_connect_ms_ = now_ms + backoff_ms_;
  backoff_ms_ = std::min(backoff_ms_ * 2, opt_.reconnect_max_ms);
}

void SimWorker::reconnect_now(int64_t now_ms) {
  if (finished_) return;
  endpoint_.reset();
  connect(now_ms);
}

void SimWorker::send_ready(bool force) {
  if (!registered_ || draining_) return;
  if (auto ready = credit_window_.ready(free_slots(), force)) {
    const bool had = endpoint_.has_value();
    send(std::move(*ready));
    if (!had) credit_window_.forget_last_sent();
  }
}

void SimWorker::on_readable(int64_t now_ms) {
  while (endpoint_) {
    auto msg = endpoint_->recv(0);
    if (!msg.ok() || !msg->has_value()) return;
    handle(**msg, now_ms);
  }
}

void SimWorker::handle(const proto::Message& msg, int64_t now_ms) {
  last_heard_ms_ = now_ms;
  const auto& body = msg.body;
  if (const auto* w = std::get_if<proto::Welcome>(&body)) {
    if (!proto::version_compatible(w->version_major)) {
      finished_ = true;
      endpoint_.reset();
      return;
    }
    registered_ = true;
    awaiting_welcome_ = false;
    backoff_ms_ = opt_.reconnect_initial_ms;
    if (w->heartbeat_interval_ms > 0) interval_ms_ = w->heartbeat_interval_ms;
    if (w->heartbeat_liveness > 0) liveness_ = w->heartbeat_liveness;
    counters_->welcomes.fetch_add(1, std::memory_order_relaxed);
    credit_window_.on_welcome();
    for (const auto& [key, result] : outbox_) {
      counters_->results_resent.fetch_add(1, std::memory_order_relaxed);
      send(result);
    }
    send_ready(true);
  } else if (const auto* r = std::get_if<proto::Reject>(&body)) {
    if (!r->retry) {
      counters_->rejects_final.fetch_add(1, std::memory_order_relaxed);
      finished_ = true;
      endpoint_.reset();
      ++socket_generation_;
      return;
    }
    counters_->rejects_retry.fetch_add(1, std::memory_order_relaxed);
    if (!awaiting_welcome_) {   // one HELLO per connection (PROTOCOL §5.1)
      registered_ = false;
      send_hello();
    }
  } else if (const auto* a = std::get_if<proto::Assign>(&body)) {
    if (registered_) on_assign(*a, now_ms);
  } else if (const auto* ack = std::get_if<proto::Ack>(&body)) {
    const std::string key = attempt_key(ack->job_id, ack->attempt);
    if (outbox_.erase(key) > 0) {
      if (!is_health_job(ack->job_id)) {
        counters_->acks.fetch_add(1, std::memory_order_relaxed);
        counters_->last_ack_ms.store(now_ms, std::memory_order_relaxed);
        if (auto at = assigned_at_.find(key); at != assigned_at_.end()) {
          if (opt_.record_latencies) {
            std::lock_guard lock(latencies_mu_);
            latencies_us_.push_back(steady_us() - at->second);
          }
          assigned_at_.erase(at);
        }
      }
    } else {
      counters_->acks_duplicate.fetch_add(1, std::memory_order_relaxed);
    }
    send_ready(true);   // PROTOCOL §5.2: a READY follows every ACK
  } else if (const auto* c = std::get_if<proto::Cancel>(&body)) {
    const std::string key = attempt_key(c->job_id, c->attempt);
    if (running_.erase(key) > 0) {
      counters_->cancels.fetch_add(1, std::memory_order_relaxed);
      finish(key, c->job_id, c->attempt, ResultStatus::kCancelled, "cancelled: " + c->reason, now_ms);
    }
  } else if (std::holds_alternative<proto::Drain>(body)) {
    if (!draining_) {
      draining_ = true;
      drain_started_ms_ = now_ms;
    }
  } else if (std::holds_alternative<proto::Heartbeat>(body)) {
    counters_->heartbeats_received.fetch_add(1, std::memory_order_relaxed);
    // As the real worker (worker/client.cpp answer_heartbeat, PROTOCOL §5.3).
    if (registered_ && now_ms - last_beat_ms_ >= interval_ms_ / 2) {
      last_beat_ms_ = now_ms;
      counters_->heartbeats_sent.fetch_add(1, std::memory_order_relaxed);
      send(proto::Heartbeat{});
    }
  }
}

void SimWorker::on_assign(const proto::Assign& a, int64_t now_ms) {
  const std::string key = attempt_key(a.job_id, a.attempt);
  credit_window_.on_assign();   // every ASSIGN of the session counts, even one ignored here
  if (running_.count(key) || outbox_.count(key) || draining_ || free_slots() <= 0 || a.device != "cpu:0") {
    counters_->assigns_ignored.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const bool health = is_health_job(a.job_id);
  if (health) {
    counters_->health_assigns.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters_->assigns.fetch_add(1, std::memory_order_relaxed);
    set_once(counters_->first_assign_ms, now_ms);
    assigned_at_[key] = steady_us();
    if (opt_.on_assign) opt_.on_assign(a);
  }
  if (opt_.send_progress) send(proto::Progress{a.job_id, a.attempt, "started"});
  if (opt_.job_ms <= 0) {
    finish(key, a.job_id, a.attempt, ResultStatus::kPass, "", now_ms);
    send_ready(false);
    return;
  }
  running_[key] = Running{now_ms + opt_.job_ms, health};
}

void SimWorker::finish(const std::string& key, const std::string& job_id, int attempt, ResultStatus status,
                       const std::string& reason, int64_t now_ms) {
  proto::JobResult r;
  r.job_id = job_id;
  r.attempt = attempt;
  r.status = status;
  r.reason = reason;
  r.metrics = opt_.metrics;
  r.log_tail = opt_.log_tail;
  r.finished_at_ms = now_epoch_ms();
  r.started_at_ms = r.finished_at_ms - std::max<int64_t>(opt_.job_ms, 0);
  counters_->results.fetch_add(1, std::memory_order_relaxed);
  if (registered_) send(r);
  outbox_.emplace(key, std::move(r));
}

int64_t SimWorker::tick(int64_t now_ms) {
  if (finished_) return now_ms + 1000;
  if (!endpoint_) {
    if (now_ms >= next_connect_ms_) connect(now_ms);
    if (!endpoint_) return next_connect_ms_;
  }
  int64_t next = now_ms + interval_ms_;
  if (!running_.empty()) {
    bool any_done = false;
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->second.due_ms > now_ms) {
        next = std::min(next, it->second.due_ms);
        ++it;
        continue;
      }
      const std::string key = it->first;
      const auto hash = key.rfind('#');
      it = running_.erase(it);
      finish(key, key.substr(0, hash), std::stoi(key.substr(hash + 1)), ResultStatus::kPass, "", now_ms);
      any_done = true;
    }
    if (any_done) send_ready(false);
  }
  if (registered_ && now_ms - last_beat_ms_ >= interval_ms_) {
    last_beat_ms_ = now_ms;
    counters_->heartbeats_sent.fetch_add(1, std::memory_order_relaxed);
    send(proto::Heartbeat{});
    send_ready(false);
  }
  next = std::min(next, last_beat_ms_ + interval_ms_);
  if (now_ms - last_heard_ms_ > interval_ms_ * liveness_) {
    schedule_reconnect(now_ms);
    return next_connect_ms_;
  }
  next = std::min(next, last_heard_ms_ + interval_ms_ * liveness_ + 1);
  // As the real worker: the wait for the last ACKs counts from when the worker went idle.
  if (draining_ && !running_.empty()) drain_started_ms_ = now_ms;
  if (draining_ && running_.empty() && (outbox_.empty() || now_ms - drain_started_ms_ > opt_.drain_wait_ms)) {
    send(proto::Bye{"drained"});
    counters_->byes.fetch_add(1, std::memory_order_relaxed);
    finished_ = true;
  }
  return next;
}

std::vector<int64_t> SimWorker::take_latencies() {
  std::lock_guard lock(latencies_mu_);
  std::vector<int64_t> out;
  out.swap(latencies_us_);
  return out;
}

}  // namespace am::sim
