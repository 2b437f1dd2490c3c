// A model of the credit/lease state machine (PROTOCOL §5.2, §5.5), run over random seeded
// interleavings of HELLO / WELCOME / READY / ASSIGN / RESULT / ACK, store flushes, worker
// restarts and coordinator restarts. Both ends use the production bookkeeping
// (coord::CreditLedger, worker::CreditWindow); the model supplies what the server and the
// client loop do around it. Messages travel in FIFO queues per worker; a coordinator restart
// drops both queues (the connections die) and everything not in the "store".
//
// Checked on every step: the coordinator never holds more leases on a worker than it has slots,
// and never sends an ASSIGN the worker has no free slot for. Checked at the end: once the chaos
// stops and every queued message, finished job and flush is processed fairly, every job is done
// (no deadlock: work left and a live worker with free slots always leads to an ASSIGN).
//
// The same model with the pre-1.2 rules (additive credits capped when READY arrives, granted
// before un-ACKed RESULTs are re-sent) must find the restart stall: that proves the model can
// see the bug it guards against.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "coordinator/credit_ledger.h"
#include "worker/credit_window.h"

namespace am::coord {
namespace {

constexpr const char* kDevice = "cpu:0";

struct Hello { std::map<int, int> held; };      // job -> attempt
struct Welcome {};
struct Reject {};
struct Ready { std::optional<std::map<std::string, int>> window; int64_t seen = 0; int legacy = 0; };
struct Assign { int job; int attempt; };
struct Result { int job; int attempt; };
struct Ack { int job; int attempt; };
using Msg = std::variant<Hello, Welcome, Reject, Ready, Assign, Result, Ack>;

enum class Rules { kCurrent, kLegacyClampAtReady };

struct Job {
  bool done = false;
  int attempts = 0;
  int lease_worker = -1;          // -1 = queued (when not done)
  int lease_attempt = 0;
  bool result_pending = false;
};

struct Session {
  bool live = false;
  CreditLedger ledger{1};
  int legacy_credits = 0;         // kLegacyClampAtReady only
};

struct WorkerModel {
  int slots = 1;
  bool registered = false;
  bool hello_out = false;
  std::set<std::pair<int, int>> running;       // (job, attempt)
  std::map<std::pair<int, int>, bool> outbox;  // un-ACKed results
  worker::CreditWindow window{{kDevice}};
  int legacy_granted = 0;
  std::deque<Msg> to_coord, to_worker;
};

class Model {
 public:
  Model(uint64_t seed, int workers, int slots, int jobs, Rules rules)
      : rng_(seed), rules_(rules), jobs_(static_cast<std::size_t>(jobs)),
        sessions_(static_cast<std::size_t>(workers)), workers_(static_cast<std::size_t>(workers)) {
    for (auto& w : workers_) w.slots = slots;
  }

  // Random interleaving with up to `restarts` coordinator restarts and `worker_restarts`
  // worker restarts; returns false (with a message) on an invariant violation.
  bool chaos(int steps, int restarts, int worker_restarts) {
    for (int i = 0; i < steps && error_.empty(); ++i) {
      const int w = pick(static_cast<int>(workers_.size()));
      switch (pick(100)) {
        case 0: if (restarts > 0) { --restarts; restart_coordinator(); } break;
        case 1: if (worker_restarts > 0) { --worker_restarts; restart_worker(w); } break;
        default: {
          const int what = pick(7);
          if (what == 0) deliver_to_coord(w);
          else if (what == 1) deliver_to_worker(w);
          else if (what == 2) finish_one(w);
          else if (what == 3) flush();
          else if (what == 4) connect(w);
          else if (what == 5) heartbeat(w);
          else assign();
        }
      }
    }
    return error_.empty();
  }

  // Fair, chaos-free rounds until nothing changes. True when every job is done.
  bool settle(int max_rounds) {
    for (int round = 0; round < max_rounds && error_.empty(); ++round) {
      for (std::size_t w = 0; w < workers_.size(); ++w) {
        connect(static_cast<int>(w));
        while (deliver_to_coord(static_cast<int>(w))) {}
        while (deliver_to_worker(static_cast<int>(w))) {}
        while (finish_one(static_cast<int>(w))) {}
        heartbeat(static_cast<int>(w));
      }
      flush();
      assign();
      if (all_done()) return true;
    }
    return false;
  }

  bool all_done() const {
    for (const auto& j : jobs_) if (!j.done) return false;
    return true;
  }
  const std::string& error() const { return error_; }
  std::string describe() const {
    std::string out;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const Job& j = jobs_[i];
      if (j.done) continue;
      out += " job" + std::to_string(i) + (j.lease_worker < 0 ? "=queued" : "=leased@w" + std::to_string(j.lease_worker));
    }
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      const auto& wm = workers_[w];
      out += " | w" + std::to_string(w) + " reg=" + std::to_string(wm.registered) + " running=" +
             std::to_string(wm.running.size()) + " outbox=" + std::to_string(wm.outbox.size()) +
             " avail=" + std::to_string(available(static_cast<int>(w)));
    }
    return out;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  // ---- coordinator ------------------------------------------------------------------------
  int leases_held(int w) const {
    int n = 0;
    for (const auto& j : jobs_) n += (!j.done && j.lease_worker == w && !j.result_pending);
    return n;
  }
  int available(int w) const {
    const Session& s = sessions_[static_cast<std::size_t>(w)];
    if (!s.live) return 0;
    if (rules_ == Rules::kLegacyClampAtReady) return s.legacy_credits;
    return s.ledger.available(kDevice, leases_held(w));
  }

  void restart_coordinator() {
    for (auto& s : sessions_) s = Session{};
    for (auto& j : jobs_) j.result_pending = false;   // the unflushed batch is gone
    pending_.clear();
    for (auto& w : workers_) {                        // connections die with the process
      w.to_coord.clear();
      w.to_worker.clear();
      w.registered = false;
      w.hello_out = false;
    }
  }

  void coord_receive(int w, const Msg& m) {
    Session& s = sessions_[static_cast<std::size_t>(w)];
    if (const auto* h = std::get_if<Hello>(&m)) {
      s = Session{};
      s.live = true;
      s.ledger = CreditLedger(workers_[static_cast<std::size_t>(w)].slots);
      for (auto& j : jobs_) {   // leases the worker does not hold are reclaimed (§5.5)
        if (j.done || j.lease_worker != w) continue;
        auto it = h->held.find(static_cast<int>(&j - jobs_.data()));
        if (it == h->held.end() || it->second != j.lease_attempt) {
          j.lease_worker = -1;
          j.result_pending = false;
        }
      }
      send_worker(w, Welcome{});
      return;
    }
    if (!s.live) {
      send_worker(w, Reject{});
      return;
    }
    if (const auto* r = std::get_if<Ready>(&m)) {
      if (rules_ == Rules::kLegacyClampAtReady) {
        const int cap = std::max(0, workers_[static_cast<std::size_t>(w)].slots - leases_held(w));
        s.legacy_credits = std::min(s.legacy_credits + r->legacy, cap);
      } else if (r->window) {
        s.ledger.on_window(*r->window, r->seen);
      }
    } else if (const auto* res = std::get_if<Result>(&m)) {
      Job& j = jobs_[static_cast<std::size_t>(res->job)];
      if (j.lease_worker == w && j.lease_attempt == res->attempt) j.result_pending = true;
      pending_.push_back({w, *res});
    }
  }

  void flush() {
    for (const auto& [w, r] : pending_) {
      Job& j = jobs_[static_cast<std::size_t>(r.job)];
      j.done = true;
      if (j.lease_worker == w && j.lease_attempt == r.attempt) {
        j.lease_worker = -1;
        j.result_pending = false;
      }
      send_worker(w, Ack{r.job, r.attempt});
    }
    pending_.clear();
  }

  void assign() {
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      Session& s = sessions_[w];
      if (!s.live) continue;
      for (std::size_t i = 0; i < jobs_.size() && available(static_cast<int>(w)) > 0; ++i) {
        Job& j = jobs_[i];
        if (j.done || j.lease_worker >= 0) continue;
        j.lease_worker = static_cast<int>(w);
        j.lease_attempt = ++j.attempts;
        if (rules_ == Rules::kLegacyClampAtReady) --s.legacy_credits;
        else s.ledger.on_assign(kDevice);
        if (leases_held(static_cast<int>(w)) > workers_[w].slots) {
          error_ = "coordinator holds more leases than slots on w" + std::to_string(w);
        }
        send_worker(static_cast<int>(w), Assign{static_cast<int>(i), j.lease_attempt});
      }
    }
  }

  void send_worker(int w, Msg m) { workers_[static_cast<std::size_t>(w)].to_worker.push_back(std::move(m)); }

  // ---- worker -----------------------------------------------------------------------------
  int free_slots(const WorkerModel& wm) const { return wm.slots - static_cast<int>(wm.running.size()); }

  void send_coord(int w, Msg m) { workers_[static_cast<std::size_t>(w)].to_coord.push_back(std::move(m)); }

  void send_ready(int w, bool force) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    if (!wm.registered) return;
    if (rules_ == Rules::kLegacyClampAtReady) {
      const int top_up = free_slots(wm) - wm.legacy_granted;
      if (top_up > 0) {
        wm.legacy_granted += top_up;
        Ready r;
        r.legacy = top_up;
        send_coord(w, r);
      }
      return;
    }
    if (auto r = wm.window.ready(free_slots(wm), force)) {
      Ready m;
      m.window = r->window;
      m.seen = r->seen;
      send_coord(w, m);
    }
  }

  void connect(int w) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    if (wm.registered || wm.hello_out) return;
    Hello h;
    for (const auto& [job, attempt] : wm.running) h.held[job] = attempt;
    for (const auto& [key, _] : wm.outbox) h.held[key.first] = key.second;
    wm.hello_out = true;
    send_coord(w, h);
  }

  void restart_worker(int w) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    wm.running.clear();
    wm.outbox.clear();
    wm.registered = false;
    wm.hello_out = false;
    wm.to_coord.clear();
    wm.to_worker.clear();
    sessions_[static_cast<std::size_t>(w)].live = false;   // its connection is gone
  }

  void worker_receive(int w, const Msg& m) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    if (std::holds_alternative<Welcome>(m)) {
      wm.registered = true;
      wm.hello_out = false;
      wm.window.on_welcome();
      wm.legacy_granted = 0;
      if (rules_ == Rules::kLegacyClampAtReady) {
        send_ready(w, true);                                        // the old order: credits first,
        for (const auto& [key, _] : wm.outbox) send_coord(w, Result{key.first, key.second});
      } else {
        for (const auto& [key, _] : wm.outbox) send_coord(w, Result{key.first, key.second});
        send_ready(w, true);
      }
    } else if (std::holds_alternative<Reject>(m)) {
      if (!wm.hello_out) {
        wm.registered = false;
        connect(w);
      }
    } else if (const auto* a = std::get_if<Assign>(&m)) {
      if (!wm.registered) return;
      wm.window.on_assign();
      if (wm.legacy_granted > 0) --wm.legacy_granted;
      const std::pair<int, int> key{a->job, a->attempt};
      if (wm.running.count(key) || wm.outbox.count(key)) return;
      if (free_slots(wm) <= 0) {
        error_ = "ASSIGN beyond the free slots of w" + std::to_string(w);
        return;
      }
      wm.running.insert(key);
    } else if (const auto* ack = std::get_if<Ack>(&m)) {
      wm.outbox.erase({ack->job, ack->attempt});
      send_ready(w, true);
    }
  }

  bool finish_one(int w) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    if (wm.running.empty()) return false;
    auto it = wm.running.begin();
    std::advance(it, pick(static_cast<int>(wm.running.size())));
    const auto key = *it;
    wm.running.erase(it);
    wm.outbox[key] = true;
    if (wm.registered) send_coord(w, Result{key.first, key.second});
    send_ready(w, false);
    return true;
  }

  void heartbeat(int w) { send_ready(w, false); }

  bool deliver_to_coord(int w) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    if (wm.to_coord.empty()) return false;
    Msg m = std::move(wm.to_coord.front());
    wm.to_coord.pop_front();
    coord_receive(w, m);
    return true;
  }
  bool deliver_to_worker(int w) {
    WorkerModel& wm = workers_[static_cast<std::size_t>(w)];
    if (wm.to_worker.empty()) return false;
    Msg m = std::move(wm.to_worker.front());
    wm.to_worker.pop_front();
    worker_receive(w, m);
    return true;
  }

  std::mt19937_64 rng_;
  Rules rules_;
  std::vector<Job> jobs_;
  std::vector<Session> sessions_;
  std::vector<WorkerModel> workers_;
  std::vector<std::pair<int, Result>> pending_;
  std::string error_;
};

TEST(CreditModel, RandomInterleavingsWithRestartsNeverDeadlockOrOverlease) {
  int seeds = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const int workers = 1 + static_cast<int>(seed % 3);
    const int slots = 1 + static_cast<int>((seed / 3) % 3);
    Model m(seed, workers, slots, 12, Rules::kCurrent);
    ASSERT_TRUE(m.chaos(600, 3, 2)) << "seed " << seed << ": " << m.error();
    ASSERT_TRUE(m.settle(200)) << "seed " << seed << ": deadlock or violation: " << m.error()
                               << m.describe();
    ++seeds;
  }
  EXPECT_EQ(seeds, 400);
}

TEST(CreditLedger, WindowDiscountsAssignsInFlightAndSlotCapAppliesAtAssignTime) {
  CreditLedger l(2);
  EXPECT_EQ(l.available(kDevice, 0), 0);       // nothing granted yet
  l.on_window({{kDevice, 2}}, 0);
  EXPECT_EQ(l.available(kDevice, 0), 2);
  l.on_assign(kDevice);
  EXPECT_EQ(l.available(kDevice, 1), 1);       // one in flight
  l.on_window({{kDevice, 2}}, 0);              // a READY written before that ASSIGN arrived
  EXPECT_EQ(l.available(kDevice, 1), 1);
  l.on_window({{kDevice, 1}}, 1);              // the worker saw it and runs it
  EXPECT_EQ(l.available(kDevice, 1), 1);
  // A lease counted against the worker (an un-ACKed result the worker no longer runs) holds
  // the credit back only while it lasts: no new READY is needed afterwards.
  l.on_window({{kDevice, 2}}, 1);
  EXPECT_EQ(l.available(kDevice, 1), 1);
  EXPECT_EQ(l.available(kDevice, 0), 2);
  EXPECT_EQ(l.available(kDevice, 5), 0);       // never below zero
  EXPECT_EQ(l.available("gpu:0", 0), 0);       // no window for that device

  // A window below the slots (a worker with fewer free slots than `slots`) is what bounds the
  // coordinator, and ASSIGNs on the wire count against it.
  CreditLedger wide(4);
  wide.on_window({{kDevice, 2}}, 0);
  wide.on_assign(kDevice);
  EXPECT_EQ(wide.available(kDevice, 1), 1);
  wide.on_assign(kDevice);
  EXPECT_EQ(wide.available(kDevice, 2), 0);
}

TEST(CreditLedger, SeenBeyondSentIsClampedAndLegacyCreditsStillWork) {
  CreditLedger l(1);
  l.on_window({{kDevice, 1}}, 99);             // a confused peer
  EXPECT_EQ(l.in_flight(), 0);
  EXPECT_EQ(l.available(kDevice, 0), 1);
  CreditLedger legacy(2);
  legacy.on_legacy_credits(kDevice, 5);        // capped at slots
  EXPECT_EQ(legacy.available(kDevice, 0), 2);
  legacy.on_assign(kDevice);
  EXPECT_EQ(legacy.available(kDevice, 1), 1);
}

TEST(CreditModel, FindsTheRestartStallOfThePre12Rules) {
  // The old rules stall for some interleaving with a coordinator restart; the model must see it.
  int stalled = 0;
  for (uint64_t seed = 1; seed <= 200 && stalled == 0; ++seed) {
    Model m(seed, 1, 1, 12, Rules::kLegacyClampAtReady);
    if (!m.chaos(600, 3, 0)) continue;
    if (!m.settle(200)) ++stalled;
  }
  EXPECT_GT(stalled, 0);
}

}  // namespace
}  // namespace am::coord
