// PROTOCOL §5.3: the real worker answers a coordinator HEARTBEAT at once when its own last one
// is half an interval old or more, and restarts its interval from there; it does not answer a
// second one that follows soon after. A bare ROUTER plays the coordinator, so the test sees
// every message the worker sends and when.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kIntervalMs = 3000;   // long, so the worker's own timer stays out of the way

// The next HEARTBEAT from `peer` within `timeout_ms`: the steady time it arrived, or nullopt.
std::optional<int64_t> next_heartbeat(RouterEndpoint& router, const std::string& peer, int64_t timeout_ms) {
  const int64_t deadline = steady_ms() + timeout_ms;
  for (int64_t left = timeout_ms; left > 0; left = deadline - steady_ms()) {
    auto msg = router.recv(static_cast<int>(left));
    if (!msg.ok() || !msg->has_value()) continue;
    if ((*msg)->peer == peer && std::holds_alternative<proto::Heartbeat>((*msg)->message.body)) return steady_ms();
  }
  return std::nullopt;
}

TEST(Heartbeats, AWorkerAnswersTheCoordinatorsHeartbeatOnceHalfAnIntervalHasPassed) {
  ScratchDir dir("heartbeat-answer");
  auto router = RouterEndpoint::bind("tcp://127.0.0.1:*");
  ASSERT_TRUE(router.ok()) << router.status().to_string();
  Process worker({worker_binary().string(), "--coordinator", router->bound_endpoint(), "--id", "hb-w",
                  "--state-dir", (dir / "state").string()},
                 dir / "worker.log");

  std::string peer;
  ASSERT_TRUE(wait_until([&] {
    auto msg = router->recv(100);
    if (msg.ok() && msg->has_value() && std::holds_alternative<proto::Hello>((*msg)->message.body)) {
      peer = (*msg)->peer;
    }
    return !peer.empty();
  }, 60s)) << worker.log();
  proto::Welcome welcome;
  welcome.heartbeat_interval_ms = kIntervalMs;
  welcome.heartbeat_liveness = 5;
  welcome.lease_grace_ms = 30000;
  welcome.run_id = "hb";
  ASSERT_TRUE(router->send(peer, proto::Message{welcome}).ok());

  // Registered: the worker's timer beats at once (its last beat is long ago).
  const std::optional<int64_t> first = next_heartbeat(*router, peer, kIntervalMs + 2000);
  ASSERT_TRUE(first.has_value()) << worker.log();

  // Past half an interval, a coordinator HEARTBEAT is answered at once — long before the
  // worker's own timer would beat at first + 3000 ms.
  std::this_thread::sleep_until(SteadyClock::time_point(std::chrono::milliseconds(*first + kIntervalMs / 2 + 200)));
  ASSERT_TRUE(router->send(peer, proto::Message{proto::Heartbeat{}}).ok());
  const int64_t asked = steady_ms();
  const std::optional<int64_t> answer = next_heartbeat(*router, peer, 800);
  ASSERT_TRUE(answer.has_value()) << "no answer within 800 ms";
  EXPECT_LT(*answer - asked, 800);
  EXPECT_LT(*answer - *first, kIntervalMs - 400);

  // A second one right after is not answered: the last beat is fresh.
  ASSERT_TRUE(router->send(peer, proto::Message{proto::Heartbeat{}}).ok());
  const std::optional<int64_t> none = next_heartbeat(*router, peer, 1000);
  EXPECT_FALSE(none.has_value()) << "answered " << (*none - *answer) << " ms after the last beat";

  // The interval restarted at the answer: the timer's next beat comes a whole interval after it,
  // not at first + 3000 ms.
  const std::optional<int64_t> timer = next_heartbeat(*router, peer, kIntervalMs + 1500);
  ASSERT_TRUE(timer.has_value()) << worker.log();
  EXPECT_GE(*timer - *answer, kIntervalMs - 300);
  worker.terminate();
  EXPECT_GE(worker.wait(20s), 0);
}

}  // namespace
}  // namespace am::testing
