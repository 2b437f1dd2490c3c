// CURVE keys, and CURVE-secured endpoints with a ZAP allow-list of client keys.
#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <zmq.hpp>

#include "common/clock.h"
#include "common/curve.h"
#include "common/transport.h"

namespace am {
namespace {

constexpr int kRecvTimeoutMs = 5000;
// Long enough for a CURVE handshake and a delivery on loopback, several times over.
constexpr int kAbsenceWaitMs = 500;

#define AM_REQUIRE_CURVE()                                             \
  if (!curve_available()) GTEST_SKIP() << "libzmq built without CURVE"

CurveKeyPair keypair() {
  auto kp = generate_curve_keypair();
  EXPECT_TRUE(kp.ok()) << kp.status().to_string();
  return kp.ok() ? *kp : CurveKeyPair{};
}

TEST(CurveKeys, GeneratedPairsAreValidDistinctAndConsistent) {
  AM_REQUIRE_CURVE();
  CurveKeyPair a = keypair();
  CurveKeyPair b = keypair();
  EXPECT_EQ(a.public_key.size(), kCurveKeyZ85Chars);
  EXPECT_EQ(a.secret_key.size(), kCurveKeyZ85Chars);
  EXPECT_TRUE(validate_curve_key(a.public_key, "pk").ok());
  EXPECT_TRUE(validate_curve_key(a.secret_key, "sk").ok());
  EXPECT_NE(a.public_key, b.public_key);
  EXPECT_NE(a.secret_key, b.secret_key);
  auto derived = curve_public_key_from_secret(a.secret_key);
  ASSERT_TRUE(derived.ok());
  EXPECT_EQ(*derived, a.public_key);
}

TEST(CurveKeys, ValidationNamesTheProblem) {
  Status st = validate_curve_key("short", "curve.public_key");
  EXPECT_EQ(st.message(),
            "curve.public_key: expected a 40-character Z85 CURVE key, got 5 characters");
  st = validate_curve_key(std::string(40, '~'), "k");  // '~' is not in the Z85 alphabet
  EXPECT_EQ(st.message(), "k: not valid Z85 text");
  EXPECT_FALSE(validate_curve_key(std::string(39, 'a') + " ", "k").ok());
}

struct CurveSetup {
  CurveKeyPair server = keypair();
  CurveKeyPair allowed = keypair();
  CurveKeyPair stranger = keypair();
};

RouterEndpoint curve_router(const CurveSetup& s, std::vector<std::string> allowed) {
  CurveServerConfig cfg{s.server.public_key, s.server.secret_key, std::move(allowed)};
  auto r = RouterEndpoint::bind("tcp://127.0.0.1:*", &cfg);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return std::move(r).value();
}

DealerEndpoint curve_dealer(const std::string& endpoint, const std::string& server_key,
                            const CurveKeyPair& client) {
  CurveClientConfig cfg{server_key, client.public_key, client.secret_key};
  auto d = DealerEndpoint::connect(endpoint, &cfg);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return std::move(d).value();
}

proto::Message bye(const std::string& reason) { return {proto::Bye{reason}}; }

std::optional<Envelope> recv_within(RouterEndpoint& router, int ms) {
  auto got = router.recv(ms);
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  return got.ok() ? std::move(*got) : std::nullopt;
}

// A peer whose handshake is refused may find its send failing (libzmq can tear the connection
// down before the message is queued) or succeeding (queued, then dropped); either is fine. What
// the tests assert is that nothing it sends ever reaches the server.
void send_from_refused_peer(DealerEndpoint& d, const proto::Message& m) {
  Status ignored = d.send(m);
  (void)ignored;
}

TEST(CurveTransport, AllowListedClientIsServedAndStrangerIsRefused) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  RouterEndpoint router = curve_router(s, {s.allowed.public_key});
  DealerEndpoint stranger = curve_dealer(router.bound_endpoint(), s.server.public_key, s.stranger);
  send_from_refused_peer(stranger, bye("from stranger"));
  DealerEndpoint friendly = curve_dealer(router.bound_endpoint(), s.server.public_key, s.allowed);
  ASSERT_TRUE(friendly.send(bye("from friend")).ok());

  auto env = recv_within(router, kRecvTimeoutMs);
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(std::get<proto::Bye>(env->message.body).reason, "from friend");
  // Replies travel encrypted back to the allowed client.
  ASSERT_TRUE(router.send(env->peer, bye("reply")).ok());
  auto reply = friendly.recv(kRecvTimeoutMs);
  ASSERT_TRUE(reply.ok() && reply->has_value());
  EXPECT_EQ(std::get<proto::Bye>((*reply)->body).reason, "reply");

  EXPECT_FALSE(recv_within(router, kAbsenceWaitMs).has_value()) << "stranger got through";
}

TEST(CurveTransport, ClientWithTheWrongServerKeyNeverConnects) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  RouterEndpoint router = curve_router(s, {s.allowed.public_key});
  const CurveKeyPair impostor = keypair();
  DealerEndpoint d = curve_dealer(router.bound_endpoint(), impostor.public_key, s.allowed);
  send_from_refused_peer(d, bye("wrong server key"));
  EXPECT_FALSE(recv_within(router, kAbsenceWaitMs).has_value());
}

TEST(CurveTransport, PlainClientCannotTalkToACurveServer) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  RouterEndpoint router = curve_router(s, {});
  auto plain = DealerEndpoint::connect(router.bound_endpoint());
  ASSERT_TRUE(plain.ok());
  send_from_refused_peer(*plain, bye("plain text"));
  EXPECT_FALSE(recv_within(router, kAbsenceWaitMs).has_value());
}

TEST(CurveTransport, EmptyAllowListAdmitsAnyClientThatKnowsTheServerKey) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  RouterEndpoint router = curve_router(s, {});
  DealerEndpoint d = curve_dealer(router.bound_endpoint(), s.server.public_key, s.stranger);
  ASSERT_TRUE(d.send(bye("anyone")).ok());
  auto env = recv_within(router, kRecvTimeoutMs);
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(std::get<proto::Bye>(env->message.body).reason, "anyone");
}

TEST(CurveTransport, TwoServersInOneProcessKeepSeparateAllowLists) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  const CurveKeyPair second_client = keypair();
  RouterEndpoint r1 = curve_router(s, {s.allowed.public_key});
  RouterEndpoint r2 = curve_router(s, {second_client.public_key});
  // Each client is allowed on one server only.
  DealerEndpoint a_to_2 = curve_dealer(r2.bound_endpoint(), s.server.public_key, s.allowed);
  DealerEndpoint b_to_1 = curve_dealer(r1.bound_endpoint(), s.server.public_key, second_client);
  DealerEndpoint a_to_1 = curve_dealer(r1.bound_endpoint(), s.server.public_key, s.allowed);
  DealerEndpoint b_to_2 = curve_dealer(r2.bound_endpoint(), s.server.public_key, second_client);
  send_from_refused_peer(a_to_2, bye("a->2"));
  send_from_refused_peer(b_to_1, bye("b->1"));
  ASSERT_TRUE(a_to_1.send(bye("a->1")).ok());
  ASSERT_TRUE(b_to_2.send(bye("b->2")).ok());
  auto at1 = recv_within(r1, kRecvTimeoutMs);
  auto at2 = recv_within(r2, kRecvTimeoutMs);
  ASSERT_TRUE(at1.has_value() && at2.has_value());
  EXPECT_EQ(std::get<proto::Bye>(at1->message.body).reason, "a->1");
  EXPECT_EQ(std::get<proto::Bye>(at2->message.body).reason, "b->2");
  EXPECT_FALSE(recv_within(r1, kAbsenceWaitMs).has_value());
  EXPECT_FALSE(recv_within(r2, kAbsenceWaitMs).has_value());
}

TEST(CurveTransport, HandlerRestartsAfterTheLastServerCloses) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  for (int round = 0; round < 3; ++round) {
    RouterEndpoint router = curve_router(s, {s.allowed.public_key});
    DealerEndpoint stranger = curve_dealer(router.bound_endpoint(), s.server.public_key, s.stranger);
    DealerEndpoint friendly = curve_dealer(router.bound_endpoint(), s.server.public_key, s.allowed);
    send_from_refused_peer(stranger, bye("stranger"));
    ASSERT_TRUE(friendly.send(bye("friend")).ok());
    auto env = recv_within(router, kRecvTimeoutMs);
    ASSERT_TRUE(env.has_value()) << "round " << round;
    EXPECT_EQ(std::get<proto::Bye>(env->message.body).reason, "friend");
    EXPECT_FALSE(recv_within(router, kAbsenceWaitMs / 2).has_value()) << "round " << round;
  }
}

TEST(CurveTransport, MismatchedOrMalformedKeysAreRefusedAtSetUp) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  CurveServerConfig mismatched{s.allowed.public_key, s.server.secret_key, {}};
  auto r = RouterEndpoint::bind("tcp://127.0.0.1:*", &mismatched);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "curve.public_key does not belong to curve.secret_key");

  CurveServerConfig bad_allow{s.server.public_key, s.server.secret_key, {"not-a-key"}};
  r = RouterEndpoint::bind("tcp://127.0.0.1:*", &bad_allow);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::StartsWith("allowed_client_keys[0]: "));

  CurveClientConfig bad_client{"short", s.allowed.public_key, s.allowed.secret_key};
  auto d = DealerEndpoint::connect("tcp://127.0.0.1:1", &bad_client);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), ::testing::StartsWith("curve.server_public_key: "));
}

TEST(ZapAllowList, DomainsAreUniqueAndKeysValidated) {
  AM_REQUIRE_CURVE();
  auto a = ZapAllowList::create({});
  auto b = ZapAllowList::create({});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->domain(), b->domain());
  EXPECT_EQ(a->denied(), 0u);
  auto bad = ZapAllowList::create({"x"});
  EXPECT_FALSE(bad.ok());
}

TEST(ZapAllowList, CountsRefusedHandshakesOnItsDomain) {
  AM_REQUIRE_CURVE();
  CurveSetup s;
  auto list = ZapAllowList::create({s.allowed.public_key});
  ASSERT_TRUE(list.ok()) << list.status().to_string();
  // Sockets after the allow-list so they close before it.
  zmq::socket_t server(zmq_context(), zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  server.set(zmq::sockopt::curve_server, true);
  server.set(zmq::sockopt::curve_secretkey, s.server.secret_key);
  server.set(zmq::sockopt::zap_domain, list->domain());
  server.bind("tcp://127.0.0.1:*");
  zmq::socket_t client(zmq_context(), zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.set(zmq::sockopt::curve_serverkey, s.server.public_key);
  client.set(zmq::sockopt::curve_publickey, s.stranger.public_key);
  client.set(zmq::sockopt::curve_secretkey, s.stranger.secret_key);
  client.connect(server.get(zmq::sockopt::last_endpoint));
  client.send(zmq::str_buffer("hi"), zmq::send_flags::none);
  const int64_t deadline = steady_ms() + kRecvTimeoutMs;
  while (list->denied() == 0 && steady_ms() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(list->denied(), 1u);
}

}  // namespace
}  // namespace am
