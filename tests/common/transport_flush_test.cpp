// What a process queues just before it exits (a worker's BYE after a drain) reaches its peer
// when the endpoint was closed with flush_on_close and the process called finish_pending_sends;
// without them ZeroMQ drops it. The peer binds only after the sender has closed its endpoint,
// so every message is still queued when the sender starts to leave.
#include <chrono>
#include <string>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/spawn.h"
#include "common/transport.h"

namespace am {
namespace {

constexpr int kMessages = 25;

std::string fresh_ipc_endpoint() {
  return "ipc:///tmp/am-flush-" + std::to_string(::getpid()) + "-" + std::to_string(steady_ms());
}

// Messages that reach a router bound at `endpoint` within `wait_ms`.
int received_at(const std::string& endpoint, int64_t wait_ms) {
  auto router = RouterEndpoint::bind(endpoint);
  EXPECT_TRUE(router.ok()) << router.status().to_string();
  if (!router.ok()) return -1;
  int got = 0;
  const int64_t deadline = steady_ms() + wait_ms;
  while (got < kMessages && steady_ms() < deadline) {
    auto msg = router->recv(100);
    if (msg.ok() && msg->has_value()) ++got;
  }
  return got;
}

Result<ChildProcess> start_helper(const std::string& endpoint, const char* mode) {
  SpawnOptions options;
  options.output = SpawnOptions::Output::kInherit;
  return ChildProcess::spawn({ACCELMATRIX_FLUSH_HELPER, endpoint, std::to_string(kMessages), mode}, options);
}

TEST(TransportFlush, MessagesQueuedBeforeExitReachAPeerThatBindsLater) {
  const std::string endpoint = fresh_ipc_endpoint();
  auto helper = start_helper(endpoint, "flush");
  ASSERT_TRUE(helper.ok()) << helper.status().to_string();
  // The helper has queued and closed by now; it waits in finish_pending_sends.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(helper->exited()) << "the helper left without waiting for its messages to go";
  EXPECT_EQ(received_at(endpoint, 30'000), kMessages);
  auto exit = helper->wait();
  ASSERT_TRUE(exit.ok()) << exit.status().to_string();
  EXPECT_EQ(exit->shell_code(), 0);
}

// The control: the same process without flush_on_close loses them, so the test above measures
// the flush and not a lucky schedule.
TEST(TransportFlush, WithoutFlushOnCloseTheQueuedMessagesAreLost) {
  const std::string endpoint = fresh_ipc_endpoint();
  auto helper = start_helper(endpoint, "noflush");
  ASSERT_TRUE(helper.ok()) << helper.status().to_string();
  auto exit = helper->wait();
  ASSERT_TRUE(exit.ok()) << exit.status().to_string();
  EXPECT_EQ(exit->shell_code(), 0);
  EXPECT_EQ(received_at(endpoint, 500), 0);
}

}  // namespace
}  // namespace am
