// The real worker facing a coordinator that sends what it should not: specs of the wrong type or
// out of range, an ASSIGN for a device it does not have, job ids that differ only in characters
// a file name cannot hold, and a WELCOME of another major version; and a drain whose last result
// comes long after the DRAIN. A bare ROUTER plays the coordinator, so the test sees every answer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "jobs/job_spec.h"
#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

// A bare ROUTER with one real worker registered on it.
class FakeCoordinator {
 public:
  FakeCoordinator(const ScratchDir& dir, std::vector<std::string> extra_args = {}) {
    auto r = RouterEndpoint::bind("tcp://127.0.0.1:*");
    if (!r.ok()) throw std::runtime_error(r.status().to_string());
    router_.emplace(std::move(r).value());
    std::vector<std::string> argv = {worker_binary().string(), "--coordinator", router_->bound_endpoint(),
                                     "--id", "w1", "--state-dir", (dir / "state").string()};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    worker_.emplace(argv, dir / "worker.log");
  }

  // Waits for HELLO; returns the first device key it declares ("" on timeout).
  std::string await_hello() {
    std::string device;
    wait_until([&] {
      auto msg = router_->recv(100);
      if (!msg.ok() || !msg->has_value()) return false;
      if (const auto* h = std::get_if<proto::Hello>(&(*msg)->message.body)) {
        peer_ = (*msg)->peer;
        device = h->capabilities.at("devices").at(0).at("key").get<std::string>();
        return true;
      }
      return false;
    }, 60s);
    return device;
  }

  bool send(proto::Body body) { return router_->send(peer_, proto::Message{std::move(body)}).ok(); }

  void welcome(int major = proto::kVersionMajor) {
    proto::Welcome w;
    w.version_major = major;
    w.heartbeat_interval_ms = 1000;
    w.heartbeat_liveness = 5;
    w.lease_grace_ms = 30000;
    w.run_id = "hostile";
    send(w);
  }

  // The RESULTs that arrive within `timeout`, by job id, until `count` have come.
  std::map<std::string, proto::JobResult> results(std::size_t count, std::chrono::milliseconds timeout) {
    std::map<std::string, proto::JobResult> got;
    int64_t next_beat = 0;
    wait_until([&] {
      // Beating as a coordinator does: a worker that hears nothing for its liveness (5 s) takes
      // the coordinator for gone, and a job that slow on a loaded machine would end the test.
      if (steady_ms() >= next_beat) {
        send(proto::Heartbeat{});
        next_beat = steady_ms() + 300;
      }
      auto msg = router_->recv(100);
      if (msg.ok() && msg->has_value()) {
        if (auto* r = std::get_if<proto::JobResult>(&(*msg)->message.body)) {
          got[r->job_id] = *r;
          send(proto::Ack{r->job_id, r->attempt});
        }
      }
      return got.size() >= count;
    }, timeout);
    return got;
  }

  // Feeds every message from the worker to `seen` until it returns true or `timeout` passes,
  // beating meanwhile as a coordinator does (a silent one is taken for gone).
  bool until(const std::function<bool(const proto::Message&)>& seen, std::chrono::milliseconds timeout) {
    const int64_t deadline = steady_ms() + timeout.count();
    int64_t next_beat = 0;
    while (steady_ms() < deadline) {
      if (steady_ms() >= next_beat) {
        send(proto::Heartbeat{});
        next_beat = steady_ms() + 300;
      }
      auto msg = router_->recv(50);
      if (msg.ok() && msg->has_value() && seen((*msg)->message)) return true;
    }
    return false;
  }

  Process& worker() { return *worker_; }

 private:
  std::optional<RouterEndpoint> router_;
  std::optional<Process> worker_;
  std::string peer_;
};

nlohmann::json selftest_spec(const std::string& mode) {
  jobs::JobSpec spec;
  spec.model = "selftest:" + mode;
  spec.architecture = "encoder-only";
  spec.mode = "accuracy";
  spec.timeout_s = 30;
  return jobs::to_json(spec);
}

proto::Assign assign(const std::string& job_id, const std::string& device, nlohmann::json spec) {
  proto::Assign a;
  a.job_id = job_id;
  a.attempt = 1;
  a.lease_ms = 60'000;
  a.device = device;
  a.spec = std::move(spec);
  return a;
}

TEST(HostileCoordinator, AnAssignTheWorkerCannotRunIsAnsweredWithAnErrorNamingWhyAndTheWorkerGoesOn) {
  ScratchDir dir("hostile-coord");
  FakeCoordinator c(dir);
  const std::string device = c.await_hello();
  ASSERT_FALSE(device.empty()) << c.worker().log();
  c.welcome();

  std::map<std::string, nlohmann::json> bad;
  bad["string-timeout"] = selftest_spec("pass");
  bad["string-timeout"]["timeout_s"] = "30";
  bad["string-memory"] = selftest_spec("pass");
  bad["string-memory"]["memory_limit_mb"] = "100";
  bad["number-model"] = selftest_spec("pass");
  bad["number-model"]["model"] = 123;
  bad["array-backend"] = selftest_spec("pass");
  bad["array-backend"]["backend"] = nlohmann::json::array({"cpu"});
  bad["negative-timeout"] = selftest_spec("pass");
  bad["negative-timeout"]["timeout_s"] = -5.0;
  for (const auto& [id, spec] : bad) ASSERT_TRUE(c.send(assign(id, device, spec)));
  ASSERT_TRUE(c.send(assign("elsewhere", "cuda:7", selftest_spec("pass"))));
  const auto answers = c.results(bad.size() + 1, 60s);
  ASSERT_EQ(answers.size(), bad.size() + 1) << c.worker().log();
  for (const auto& [id, spec] : bad) {
    const proto::JobResult& r = answers.at(id);
    EXPECT_EQ(r.status, ResultStatus::kError) << id;
    EXPECT_NE(r.reason.find("invalid job spec: "), std::string::npos) << id << ": " << r.reason;
  }
  EXPECT_NE(answers.at("string-timeout").reason.find("timeout_s"), std::string::npos);
  EXPECT_EQ(answers.at("elsewhere").status, ResultStatus::kError);
  EXPECT_NE(answers.at("elsewhere").reason.find("'cuda:7' is not one of this worker's"), std::string::npos)
      << answers.at("elsewhere").reason;

  // Still serving: a valid job runs.
  ASSERT_TRUE(c.send(assign("good", device, selftest_spec("pass"))));
  const auto good = c.results(1, 60s);
  ASSERT_EQ(good.count("good"), 1u) << c.worker().log();
  EXPECT_EQ(good.at("good").status, ResultStatus::kPass) << good.at("good").reason;
  EXPECT_TRUE(c.worker().running());
}

// "k/1" and "k_1" made the same scratch file names: each attempt read and removed the other's.
TEST(HostileCoordinator, JobIdsThatDifferOnlyInCharactersAFileNameCannotHoldKeepTheirOwnFiles) {
  ScratchDir dir("hostile-ids");
  FakeCoordinator c(dir, {"--slots", "2"});
  const std::string device = c.await_hello();
  ASSERT_FALSE(device.empty()) << c.worker().log();
  c.welcome();
  for (int round = 0; round < 3; ++round) {
    const std::string a = "k/" + std::to_string(round), b = "k_" + std::to_string(round);
    ASSERT_TRUE(c.send(assign(a, device, selftest_spec("fail"))));
    ASSERT_TRUE(c.send(assign(b, device, selftest_spec("pass"))));
    const auto got = c.results(2, 60s);
    ASSERT_EQ(got.size(), 2u) << c.worker().log();
    EXPECT_EQ(got.at(a).status, ResultStatus::kFail) << got.at(a).reason;
    EXPECT_EQ(got.at(b).status, ResultStatus::kPass) << got.at(b).reason;
  }
}

// PROTOCOL §4: a WELCOME of another major version ends the worker (exit 2), as a REJECT without
// retry does, instead of leaving it connected and unregistered for good.
TEST(HostileCoordinator, AWelcomeOfAnotherMajorVersionEndsTheWorkerWithExitTwo) {
  ScratchDir dir("hostile-version");
  FakeCoordinator c(dir);
  ASSERT_FALSE(c.await_hello().empty()) << c.worker().log();
  c.welcome(proto::kVersionMajor + 1);
  EXPECT_EQ(c.worker().wait(30s), 2) << c.worker().log();
  EXPECT_NE(c.worker().log().find("coordinator speaks protocol " + std::to_string(proto::kVersionMajor + 1)),
            std::string::npos)
      << c.worker().log();
}

// PROTOCOL §5.7: a drained worker leaves when it is idle and its RESULTs are ACKed (or after
// drain_wait_ms, 10 s, counted from when it went idle). The wait was counted from the DRAIN: a
// job running longer than that was followed by BYE in the same millisecond as its RESULT.
TEST(HostileCoordinator, ADrainedWorkerWaitsForTheAckOfAResultThatCameLongAfterTheDrain) {
  ScratchDir dir("drain-ack");
  FakeCoordinator c(dir);
  const std::string device = c.await_hello();
  ASSERT_FALSE(device.empty()) << c.worker().log();
  c.welcome();
  nlohmann::json spec = selftest_spec("hang");
  spec["timeout_s"] = 11.0;   // outlives the 10 s wait for ACKs
  ASSERT_TRUE(c.send(assign("long", device, spec)));
  ASSERT_TRUE(c.send(proto::Drain{"test drain"}));
  // The RESULT arrives after the job's limit; it is not ACKed for a second, and no BYE may come
  // meanwhile.
  std::optional<proto::JobResult> result;
  bool bye_before_ack = false;
  ASSERT_TRUE(c.until([&](const proto::Message& m) {
    if (auto* r = std::get_if<proto::JobResult>(&m.body)) result = *r;
    return result.has_value();
  }, 60s)) << c.worker().log();
  EXPECT_EQ(result->status, ResultStatus::kTimeout);
  c.until([&](const proto::Message& m) {
    bye_before_ack = bye_before_ack || std::holds_alternative<proto::Bye>(m.body);
    return false;
  }, 1000ms);
  EXPECT_FALSE(bye_before_ack) << c.worker().log();
  ASSERT_TRUE(c.send(proto::Ack{result->job_id, result->attempt}));
  EXPECT_TRUE(c.until([&](const proto::Message& m) { return std::holds_alternative<proto::Bye>(m.body); }, 10s))
      << c.worker().log();
  EXPECT_EQ(c.worker().wait(15s), 0) << c.worker().log();
}

}  // namespace
}  // namespace am::testing
