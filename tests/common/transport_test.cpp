// ROUTER and DEALER endpoints over real sockets in one process.
#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/transport.h"
#include "tests/common/sample_messages.h"

namespace am {
namespace {

using proto::testing::messages_equal;
using proto::testing::sample_messages;

// Generous: delivery on loopback takes microseconds, but CI machines stall.
constexpr int kRecvTimeoutMs = 5000;
// How long to wait for a message that must NOT arrive.
constexpr int kAbsenceWaitMs = 200;

RouterEndpoint bind_router(const std::string& endpoint = "tcp://127.0.0.1:*") {
  auto r = RouterEndpoint::bind(endpoint);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return std::move(r).value();
}

DealerEndpoint connect_dealer(const std::string& endpoint) {
  auto d = DealerEndpoint::connect(endpoint);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return std::move(d).value();
}

Envelope recv_envelope(RouterEndpoint& router) {
  auto got = router.recv(kRecvTimeoutMs);
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(got->has_value()) << "nothing arrived at the ROUTER";
  return got->has_value() ? std::move(**got) : Envelope{};
}

proto::Message recv_message(DealerEndpoint& dealer) {
  auto got = dealer.recv(kRecvTimeoutMs);
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(got->has_value()) << "nothing arrived at the DEALER";
  return got->has_value() ? std::move(**got) : proto::Message{};
}

proto::Message hello_from(const std::string& worker_id) {
  proto::Hello h;
  h.worker_id = worker_id;
  h.hostname = "host-" + worker_id;
  return {h};
}

TEST(Transport, BindsAnEphemeralPortAndReportsIt) {
  RouterEndpoint router = bind_router();
  EXPECT_TRUE(std::regex_match(router.bound_endpoint(), std::regex(R"(tcp://127\.0\.0\.1:\d+)")))
      << router.bound_endpoint();
}

TEST(Transport, RouterAndDealerExchangeEveryMessageBothWays) {
  RouterEndpoint router = bind_router();
  DealerEndpoint dealer = connect_dealer(router.bound_endpoint());
  const auto msgs = sample_messages(77);
  for (const auto& m : msgs) ASSERT_TRUE(dealer.send(m).ok());
  std::string peer;
  for (const auto& m : msgs) {
    Envelope env = recv_envelope(router);
    EXPECT_TRUE(messages_equal(m, env.message));
    EXPECT_FALSE(env.peer.empty());
    if (peer.empty()) peer = env.peer;
    EXPECT_EQ(env.peer, peer) << "one DEALER keeps one identity";
  }
  for (const auto& m : msgs) ASSERT_TRUE(router.send(peer, m).ok());
  for (const auto& m : msgs) EXPECT_TRUE(messages_equal(m, recv_message(dealer)));
  EXPECT_EQ(router.rejections().total(), 0u);
  EXPECT_EQ(dealer.rejections().total(), 0u);
}

TEST(Transport, RoutesRepliesByIdentityBetweenTwoDealers) {
  RouterEndpoint router = bind_router();
  DealerEndpoint a = connect_dealer(router.bound_endpoint());
  DealerEndpoint b = connect_dealer(router.bound_endpoint());
  ASSERT_TRUE(a.send(hello_from("worker-a")).ok());
  ASSERT_TRUE(b.send(hello_from("worker-b")).ok());
  std::map<std::string, std::string> peer_of;
  for (int i = 0; i < 2; ++i) {
    Envelope env = recv_envelope(router);
    ASSERT_EQ(env.message.type(), proto::MsgType::kHello);
    peer_of[std::get<proto::Hello>(env.message.body).worker_id] = env.peer;
  }
  ASSERT_EQ(peer_of.size(), 2u);
  ASSERT_NE(peer_of["worker-a"], peer_of["worker-b"]);

  for (const auto& [worker, peer] : peer_of) {
    proto::Assign assign;
    assign.job_id = "job-for-" + worker;
    assign.attempt = 1;
    assign.lease_ms = 1000;
    assign.device = "cpu:0";
    ASSERT_TRUE(router.send(peer, {assign}).ok());
  }
  proto::Message at_a = recv_message(a);
  proto::Message at_b = recv_message(b);
  EXPECT_EQ(std::get<proto::Assign>(at_a.body).job_id, "job-for-worker-a");
  EXPECT_EQ(std::get<proto::Assign>(at_b.body).job_id, "job-for-worker-b");
  auto extra = a.recv(kAbsenceWaitMs);
  ASSERT_TRUE(extra.ok());
  EXPECT_FALSE(extra->has_value()) << "worker-a got a message meant for someone else";
}

TEST(Transport, GarbageMultipartIsDroppedAndCountedAndValidInputStillArrives) {
  RouterEndpoint router = bind_router();
  zmq::socket_t raw(zmq_context(), zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(router.bound_endpoint());
  auto send_parts = [&](const std::vector<std::string>& parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      raw.send(zmq::buffer(parts[i]), i + 1 < parts.size() ? zmq::send_flags::sndmore
                                                           : zmq::send_flags::none);
    }
  };
  send_parts({"NOT-A-TYPE", "\x81\xa1x\x01"});                 // unknown type
  send_parts({"HELLO"});                                         // one frame only
  send_parts({"HELLO", std::string("\xc1\xff\x00", 3)});         // undecodable body
  send_parts({"ACK", "\x92\x01\x02"});                           // body not a map
  send_parts({"BYE", "\x80", "extra"});                          // three frames
  const proto::Frames valid = proto::encode({proto::Bye{"valid after garbage"}});
  send_parts({valid.type, valid.body});

  Envelope env = recv_envelope(router);
  ASSERT_EQ(env.message.type(), proto::MsgType::kBye);
  EXPECT_EQ(std::get<proto::Bye>(env.message.body).reason, "valid after garbage");
  EXPECT_EQ(router.rejections().malformed, 5u);
  EXPECT_EQ(router.rejections().oversized, 0u);
}

TEST(Transport, OversizedFrameIsDroppedAndCounted) {
  // inproc skips libzmq's ZMQ_MAXMSGSIZE, so this exercises the endpoint's own size check.
  RouterEndpoint router = bind_router("inproc://transport-test-oversized");
  zmq::socket_t raw(zmq_context(), zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect("inproc://transport-test-oversized");
  const std::string huge(proto::kMaxFrameBytes + 1, 'x');
  raw.send(zmq::buffer(std::string("RESULT")), zmq::send_flags::sndmore);
  raw.send(zmq::buffer(huge), zmq::send_flags::none);
  const proto::Frames valid = proto::encode({proto::Heartbeat{}});
  raw.send(zmq::buffer(valid.type), zmq::send_flags::sndmore);
  raw.send(zmq::buffer(valid.body), zmq::send_flags::none);

  Envelope env = recv_envelope(router);
  EXPECT_EQ(env.message.type(), proto::MsgType::kHeartbeat);
  EXPECT_EQ(router.rejections().oversized, 1u);
  EXPECT_EQ(router.rejections().malformed, 0u);
}

TEST(Transport, OversizedFrameOverTcpNeverReachesTheRouterWhichKeepsServing) {
  RouterEndpoint router = bind_router();
  {
    zmq::socket_t raw(zmq_context(), zmq::socket_type::dealer);
    raw.set(zmq::sockopt::linger, 0);
    raw.connect(router.bound_endpoint());
    raw.send(zmq::buffer(std::string("RESULT")), zmq::send_flags::sndmore);
    raw.send(zmq::buffer(std::string(proto::kMaxFrameBytes + 1, 'x')), zmq::send_flags::none);
    auto nothing = router.recv(kAbsenceWaitMs);
    ASSERT_TRUE(nothing.ok());
    EXPECT_FALSE(nothing->has_value());
  }
  DealerEndpoint dealer = connect_dealer(router.bound_endpoint());
  ASSERT_TRUE(dealer.send({proto::Heartbeat{}}).ok());
  EXPECT_EQ(recv_envelope(router).message.type(), proto::MsgType::kHeartbeat);
}

TEST(Transport, DealerDropsGarbageFromTheRouterSide) {
  DealerEndpoint dealer = connect_dealer("inproc://transport-test-dealer-garbage");
  zmq::socket_t raw(zmq_context(), zmq::socket_type::router);
  raw.set(zmq::sockopt::linger, 0);
  raw.bind("inproc://transport-test-dealer-garbage");
  ASSERT_TRUE(dealer.send(hello_from("w1")).ok());
  zmq::message_t identity;
  ASSERT_TRUE(raw.recv(identity));
  for (bool more = identity.more(); more;) {
    zmq::message_t part;
    ASSERT_TRUE(raw.recv(part));
    more = part.more();
  }
  auto send_to_dealer = [&](const std::vector<std::string>& parts) {
    raw.send(zmq::buffer(identity.to_string()), zmq::send_flags::sndmore);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      raw.send(zmq::buffer(parts[i]), i + 1 < parts.size() ? zmq::send_flags::sndmore
                                                           : zmq::send_flags::none);
    }
  };
  send_to_dealer({"WELCOME", "\x80"});              // missing every required field
  send_to_dealer({"WELCOME"});                      // one frame
  const proto::Frames valid = proto::encode({proto::Drain{"stop"}});
  send_to_dealer({valid.type, valid.body});
  proto::Message m = recv_message(dealer);
  ASSERT_EQ(m.type(), proto::MsgType::kDrain);
  EXPECT_EQ(dealer.rejections().malformed, 2u);
}

TEST(Transport, RecvTimesOutWithNothing) {
  RouterEndpoint router = bind_router();
  const int64_t start = steady_ms();
  auto got = router.recv(100);
  const int64_t waited = steady_ms() - start;
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_GE(waited, 95);
  EXPECT_LT(waited, 2000);
  auto immediate = router.recv(0);
  ASSERT_TRUE(immediate.ok());
  EXPECT_FALSE(immediate->has_value());
}

TEST(Transport, SendToAnUnknownPeerIsSilentlyDropped) {
  RouterEndpoint router = bind_router();
  EXPECT_TRUE(router.send("no-such-peer", {proto::Heartbeat{}}).ok());
  EXPECT_EQ(router.send("", {proto::Heartbeat{}}).code(), StatusCode::kInvalidArgument);
}

TEST(Transport, DealerQueueFullIsReportedNotBlocking) {
  // Nothing listens on port 1, so messages pile up in the DEALER's queue until its HWM.
  DealerEndpoint dealer = connect_dealer("tcp://127.0.0.1:1");
  Status last;
  int sent = 0;
  for (int i = 0; i < 5000 && last.ok(); ++i) {
    last = dealer.send({proto::Heartbeat{}});
    sent += last.ok();
  }
  EXPECT_EQ(last.code(), StatusCode::kUnavailable) << last.to_string();
  EXPECT_GE(sent, 100);
  EXPECT_LT(sent, 5000);
}

TEST(Transport, RefusesToSendAnOversizedMessage) {
  RouterEndpoint router = bind_router();
  DealerEndpoint dealer = connect_dealer(router.bound_endpoint());
  proto::JobResult r;
  r.job_id = "j";
  r.attempt = 1;
  r.status = am::ResultStatus::kPass;
  for (int i = 0; i < 80; ++i) r.metrics["k" + std::to_string(i)] = std::string(60000, 'm');
  Status st = dealer.send({r});
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
}

TEST(Transport, BadEndpointsAreErrorsNotExceptions) {
  auto r = RouterEndpoint::bind("nonsense://x");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::StartsWith("bind nonsense://x: "));
  auto r2 = RouterEndpoint::bind("tcp://127.0.0.1:notaport");
  EXPECT_FALSE(r2.ok());
  auto d = DealerEndpoint::connect("tcp://");
  EXPECT_FALSE(d.ok());
  // The same port twice.
  RouterEndpoint first = bind_router();
  auto second = RouterEndpoint::bind(first.bound_endpoint());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

TEST(Transport, EndpointsMoveWithTheirConnection) {
  RouterEndpoint router = bind_router();
  DealerEndpoint dealer = connect_dealer(router.bound_endpoint());
  DealerEndpoint moved = std::move(dealer);
  RouterEndpoint moved_router = std::move(router);
  ASSERT_TRUE(moved.send({proto::Heartbeat{}}).ok());
  EXPECT_EQ(recv_envelope(moved_router).message.type(), proto::MsgType::kHeartbeat);
  EXPECT_EQ(dealer.send({proto::Heartbeat{}}).code(), StatusCode::kFailedPrecondition);  // NOLINT
}

}  // namespace
}  // namespace am
