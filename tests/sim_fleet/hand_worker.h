// Test helpers over the real protocol: a worker driven by hand over a real DEALER socket, and a
// coordinator (coord::Server) serving on a thread of the test. For tests that need to say
// exactly what a peer sends and when (tests/sim_fleet).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "coordinator/server.h"
#include "jobs/plan.h"
#include "tests/sim_fleet/sim_records.h"

namespace am::sim {

// A worker driven by hand over a real DEALER socket: one cpu device, one slot.
class HandWorker {
 public:
  // `capabilities`: the HELLO's record; null for sim_capabilities() (one cpu device).
  HandWorker(const std::string& endpoint, const std::string& worker_id, const std::string& host_id,
             const nlohmann::json& capabilities = nullptr) {
    auto ep = DealerEndpoint::connect(endpoint);
    EXPECT_TRUE(ep.ok()) << ep.status().to_string();
    if (!ep.ok()) return;
    ep_.emplace(std::move(ep).value());
    proto::Hello h;
    h.worker_id = worker_id;
    h.hostname = worker_id;
    h.capabilities = capabilities.is_null() ? sim_capabilities(worker_id, host_id) : capabilities;
    h.slots = 1;
    h.host_id = host_id;
    EXPECT_TRUE(ep_->send(proto::Message{h}).ok());
    EXPECT_TRUE(next_assign_or<proto::Welcome>(std::chrono::milliseconds(3000)).has_value()) << worker_id << ": no WELCOME";
  }

  // Says HELLO again on the same connection under another worker id.
  void register_as(const std::string& worker_id, const std::string& host_id) {
    proto::Hello h;
    h.worker_id = worker_id;
    h.hostname = worker_id;
    h.capabilities = sim_capabilities(worker_id, host_id);
    h.slots = 1;
    h.host_id = host_id;
    EXPECT_TRUE(ep_->send(proto::Message{h}).ok());
    EXPECT_TRUE(next_assign_or<proto::Welcome>(std::chrono::milliseconds(3000)).has_value()) << worker_id << ": no WELCOME";
    assigns_.clear();
  }

  void grant(int window) {
    proto::Ready r;
    r.window = std::map<std::string, int>{{"cpu:0", window}};
    r.seen = static_cast<int>(assigns_.size());
    EXPECT_TRUE(ep_->send(proto::Message{r}).ok());
  }

  void pass(const proto::Assign& a) { report(a, ResultStatus::kPass); }

  void report(const proto::Assign& a, ResultStatus status) {
    proto::JobResult r;
    r.job_id = a.job_id;
    r.attempt = a.attempt;
    r.status = status;
    r.finished_at_ms = now_epoch_ms();
    r.started_at_ms = r.finished_at_ms;
    EXPECT_TRUE(ep_->send(proto::Message{r}).ok());
  }

  // Reads until the coordinator CANCELs something (or `within` passes).
  bool cancelled_within(std::chrono::milliseconds within) { return next_assign_or<proto::Cancel>(within).has_value(); }

  std::optional<proto::Assign> next_assign(std::chrono::milliseconds within) {
    const std::size_t before = assigns_.size();
    next_assign_or<proto::Assign>(within);
    if (assigns_.size() == before) return std::nullopt;
    return assigns_[before];
  }

 private:
  // Reads messages until a T arrives or `within` passes; every ASSIGN read is kept.
  template <class T>
  std::optional<T> next_assign_or(std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (ep_ && std::chrono::steady_clock::now() < until) {
      auto m = ep_->recv(10);
      if (!m.ok() || !m->has_value()) continue;
      if (const auto* a = std::get_if<proto::Assign>(&(**m).body)) assigns_.push_back(*a);
      if (const auto* t = std::get_if<T>(&(**m).body)) return *t;
    }
    return std::nullopt;
  }

  std::optional<DealerEndpoint> ep_;
  std::vector<proto::Assign> assigns_;
};

// bert-tiny on the cpu at f32, batch 1, at each of `seq_lens` (a TOML array): one plan job
// placed each-class per sequence length.
inline jobs::Plan bert_plan(const std::string& name, const std::string& seq_lens) {
  auto plan = jobs::load_plan_text("[plan]\nname = \"" + name + "\"\nmode = \"accuracy\"\n\n[defaults]\n"
                                   "backends = [\"cpu\"]\nprecisions = [\"f32\"]\nbatch = [1]\nseq_len = " + seq_lens +
                                   "\n\n[[models]]\nname = \"bert-tiny\"\n",
                                   name + ".toml", std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models");
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? *plan : jobs::Plan{};
}

// A coordinator on a free loopback port with its database c.db in `dir`, no health jobs, and the
// first worker completing the fleet (as `serve` by default).
inline coord::ServerOptions serving_options(const std::filesystem::path& dir) {
  coord::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.db_path = dir / "c.db";
  o.health_interval_ms = 0;
  o.expect_workers = 1;
  return o;
}

class ServingCoordinator {
 public:
  explicit ServingCoordinator(const coord::ServerOptions& o) {
    auto server = coord::Server::create(o);
    EXPECT_TRUE(server.ok()) << server.status().to_string();
    if (server.ok()) server_ = std::move(server).value();
  }
  ~ServingCoordinator() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  coord::Server& server() { return *server_; }
  void start() {
    thread_ = std::thread([this] { status_ = server_->serve(stop_); });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::unique_ptr<coord::Server> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  Status status_ = Status::Ok();
};

}  // namespace am::sim
