// Encoding then decoding gives back exactly what was sent, for every message type.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "common/msgpack_json.h"
#include "common/protocol.h"
#include "tests/common/sample_messages.h"

namespace am::proto {
namespace {

using testing::messages_equal;
using testing::sample_messages;

TEST(ProtocolNames, EveryTypeNameRoundTrips) {
  const std::vector<std::string> expected = {"HELLO", "WELCOME", "REJECT", "HEARTBEAT",
                                             "READY", "ASSIGN", "PROGRESS", "RESULT",
                                             "ACK", "CANCEL", "DRAIN", "BYE"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto t = static_cast<MsgType>(i);
    EXPECT_EQ(msg_type_name(t), expected[i]);
    auto back = msg_type_from_name(expected[i]);
    ASSERT_TRUE(back.has_value()) << expected[i];
    EXPECT_EQ(*back, t);
  }
  EXPECT_FALSE(msg_type_from_name("hello").has_value());
  EXPECT_FALSE(msg_type_from_name("HELLO ").has_value());
  EXPECT_FALSE(msg_type_from_name("").has_value());
}

TEST(ProtocolNames, MessageTypeFollowsTheBodyAlternative) {
  const auto msgs = sample_messages(7);
  // One of each type in enum order, then a second REPLY (a refusal).
  ASSERT_EQ(msgs.size(), 15u);
  EXPECT_EQ(msgs.back().type(), MsgType::kReply);
  for (std::size_t i = 0; i + 1 < msgs.size(); ++i) {
    EXPECT_EQ(msgs[i].type(), static_cast<MsgType>(i));
    EXPECT_EQ(encode(msgs[i]).type, msg_type_name(static_cast<MsgType>(i)));
  }
  EXPECT_EQ(Message{JobResult{}}.type(), MsgType::kResult);
}

TEST(ProtocolStatus, ParsesExactlyTheTwelveStatusNames) {
  for (const char* s : {"pass", "degraded", "fail", "crash", "timeout", "oom", "error",
                        "unsupported", "skipped", "lost", "cancelled", "interrupted"}) {
    const std::optional<am::ResultStatus> parsed = am::parse_result_status(s);
    ASSERT_TRUE(parsed.has_value()) << s;
    EXPECT_EQ(am::to_string(*parsed), s);
  }
  EXPECT_EQ(am::all_result_statuses().size(), 12u);
  for (const char* s : {"", "PASS", "passed", "ok", "pass ", "lost\n", "cancel"}) {
    EXPECT_FALSE(am::parse_result_status(s).has_value()) << s;
  }
}

TEST(ProtocolVersion, OnlyTheSameMajorIsCompatible) {
  EXPECT_TRUE(version_compatible(kVersionMajor));
  EXPECT_FALSE(version_compatible(kVersionMajor + 1));
  EXPECT_FALSE(version_compatible(kVersionMajor - 1));
  EXPECT_FALSE(version_compatible(-1));
}

TEST(ProtocolRoundTrip, EveryMessageTypeSurvivesEncodeDecode) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    for (const Message& m : sample_messages(seed)) {
      const Frames f = encode(m);
      Result<Message> back = decode(f.type, f.body);
      ASSERT_TRUE(back.ok()) << f.type << ": " << back.status().to_string();
      EXPECT_TRUE(messages_equal(m, *back));
    }
  }
}

TEST(ProtocolRoundTrip, BodyIsAMapWithSnakeCaseFieldNames) {
  const auto msgs = sample_messages(11);
  auto fields = [](const Message& m) {
    auto doc = msgpack_to_json(encode(m).body);
    EXPECT_TRUE(doc.ok());
    std::vector<std::string> names;
    for (const auto& [k, v] : doc->items()) names.push_back(k);
    return names;
  };
  EXPECT_EQ(fields(msgs[0]), (std::vector<std::string>{"build", "capabilities", "held", "hostname",
                                                       "slots", "tags", "version_major", "version_minor",
                                                       "worker_id"}));
  EXPECT_EQ(fields(msgs[1]), (std::vector<std::string>{"heartbeat_interval_ms", "heartbeat_liveness",
                                                       "lease_grace_ms", "run_id", "version_major",
                                                       "version_minor"}));
  EXPECT_EQ(fields(msgs[3]), std::vector<std::string>{});
  EXPECT_EQ(fields(msgs[7]), (std::vector<std::string>{"attempt", "finished_at_ms", "job_id",
                                                       "log_tail", "metrics", "reason",
                                                       "started_at_ms", "status"}));
  // A HEARTBEAT is the empty msgpack map, one byte.
  EXPECT_EQ(encode(msgs[3]).body, std::string("\x80", 1));
}

TEST(ProtocolRoundTrip, NestedNumbersKeepTheirKindAndValue) {
  JobResult r;
  r.job_id = "j1";
  r.attempt = 1;
  r.status = am::ResultStatus::kPass;
  r.metrics = {{"neg", std::numeric_limits<int64_t>::min()},
               {"umax", std::numeric_limits<uint64_t>::max()},
               {"pi", 3.141592653589793},
               {"tiny", 4.9e-324},
               {"nan", std::numeric_limits<double>::quiet_NaN()},
               {"inf", -std::numeric_limits<double>::infinity()}};
  const Frames f = encode(Message{r});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  // Decoded, the metrics are JSON text; read back, every number keeps its kind and value, and
  // NaN and infinities are null as JSON text has them.
  const auto& decoded = std::get<JobResult>(back->body);
  EXPECT_TRUE(decoded.metrics.empty());
  const nlohmann::json m = nlohmann::json::parse(decoded.metrics_json);
  EXPECT_EQ(m["neg"].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(m["umax"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(m["pi"].is_number_float());
  EXPECT_EQ(m["pi"].get<double>(), 3.141592653589793);
  EXPECT_EQ(m["tiny"].get<double>(), 4.9e-324);
  EXPECT_TRUE(m["nan"].is_null());
  EXPECT_TRUE(m["inf"].is_null());
  // Encoded again, the decoded message sends the same metrics.
  const Frames again = encode(*back);
  auto twice = decode(again.type, again.body);
  ASSERT_TRUE(twice.ok()) << twice.status().to_string();
  EXPECT_EQ(std::get<JobResult>(twice->body).metrics_json, decoded.metrics_json);
}

TEST(ProtocolRoundTrip, LogTailLongerThanTheLimitKeepsItsEnd) {
  JobResult r;
  r.job_id = "j1";
  r.attempt = 1;
  r.status = am::ResultStatus::kCrash;
  std::string tail;
  for (std::size_t i = 0; tail.size() < kMaxLogTailBytes + 5000; ++i) tail += "line " + std::to_string(i) + "\n";
  r.log_tail = tail;
  const Frames f = encode(Message{r});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const std::string& got = std::get<JobResult>(back->body).log_tail;
  EXPECT_EQ(got.size(), kMaxLogTailBytes);
  EXPECT_EQ(got, tail.substr(tail.size() - kMaxLogTailBytes));
}

TEST(ProtocolRoundTrip, LogTailCutInsideACharacterStaysWithinTheLimit) {
  JobResult r;
  r.job_id = "j1";
  r.attempt = 1;
  r.status = am::ResultStatus::kCrash;
  // 3-byte characters after one ASCII byte: the byte limit falls inside a character, and
  // invalid bytes grow threefold when repaired; the decoder's limit must still hold.
  r.log_tail = "x";
  while (r.log_tail.size() < kMaxLogTailBytes + 100) r.log_tail += "\xe2\x82\xac\xff";
  const Frames f = encode(Message{r});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const std::string& got = std::get<JobResult>(back->body).log_tail;
  EXPECT_LE(got.size(), kMaxLogTailBytes);
  EXPECT_EQ(got.substr(got.size() - 6), "\xe2\x82\xac\xEF\xBF\xBD");
}

TEST(ProtocolRoundTrip, InvalidUtf8IsRepairedNotRejected) {
  Bye bye{std::string("bad \xff byte and cut \xe2\x9c")};
  const Frames f = encode(Message{bye});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(std::get<Bye>(back->body).reason, "bad \xEF\xBF\xBD byte and cut \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ProtocolRoundTrip, OptionalFieldsMayBeLeftOutOrNil) {
  // RESULT with its required fields only, built by hand as another implementation would.
  const nlohmann::json body = {{"job_id", "abc"}, {"attempt", 3}, {"status", "oom"},
                               {"reason", nullptr}};
  auto back = decode("RESULT", json_to_msgpack(body));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const auto& r = std::get<JobResult>(back->body);
  EXPECT_EQ(r.job_id, "abc");
  EXPECT_EQ(r.attempt, 3);
  EXPECT_EQ(r.status, am::ResultStatus::kOom);
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.metrics_json, "{}");
  EXPECT_EQ(r.started_at_ms, 0);

  auto hello = decode("HELLO", json_to_msgpack({{"version_major", 1}, {"version_minor", 0},
                                                {"worker_id", "w1"}, {"slots", 2}}));
  ASSERT_TRUE(hello.ok()) << hello.status().to_string();
  EXPECT_EQ(std::get<Hello>(hello->body).slots, 2);
  EXPECT_TRUE(std::get<Hello>(hello->body).tags.empty());
}

TEST(ProtocolRoundTrip, UnknownFieldsAreIgnored) {
  const nlohmann::json body = {{"job_id", "abc"}, {"attempt", 1}, {"future_field", {1, 2, 3}},
                               {"x", {{"deep", true}}}};
  auto back = decode("ACK", json_to_msgpack(body));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(std::get<Ack>(back->body).job_id, "abc");
}

TEST(ProtocolRoundTrip, HelloOfAnotherMajorVersionDecodesItsVersionOnly) {
  // A v2 worker may have dropped v1's required fields; the coordinator must still learn its
  // version to refuse it with a reason.
  auto back = decode("HELLO", json_to_msgpack({{"version_major", 2}, {"version_minor", 5},
                                               {"worker_id", 42}}));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const auto& h = std::get<Hello>(back->body);
  EXPECT_EQ(h.version_major, 2);
  EXPECT_EQ(h.version_minor, 5);
  EXPECT_TRUE(h.worker_id.empty());
  EXPECT_FALSE(version_compatible(h.version_major));

  auto no_version = decode("HELLO", json_to_msgpack({{"worker_id", "w"}, {"slots", 1}}));
  ASSERT_FALSE(no_version.ok());
  EXPECT_EQ(no_version.status().message(), "HELLO.version_major: missing required field");
}

TEST(ProtocolRoundTrip, MinorVersionMayDiffer) {
  auto back = decode("HELLO", json_to_msgpack({{"version_major", kVersionMajor},
                                               {"version_minor", kVersionMinor + 7},
                                               {"worker_id", "w1"}, {"slots", 1}}));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(std::get<Hello>(back->body).version_minor, kVersionMinor + 7);
}

TEST(ProtocolRoundTrip, HelloCommandsIsSentOnlyWhenTrue) {
  // 1.4: a worker started with --allow-commands says so; an older one sends nothing (= false).
  Hello h;
  h.worker_id = "w1";
  h.commands = true;
  const Frames f = encode(Message{h});
  auto doc = msgpack_to_json(f.body);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["commands"], true);
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(std::get<Hello>(back->body).commands);

  h.commands = false;
  doc = msgpack_to_json(encode(Message{h}).body);
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE(doc->contains("commands"));

  auto wrong = decode("HELLO", json_to_msgpack({{"version_major", 1}, {"version_minor", 4},
                                                {"worker_id", "w1"}, {"slots", 1}, {"commands", "yes"}}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("HELLO.commands"), std::string::npos) << wrong.status().message();
}

TEST(ProtocolRoundTrip, HelloDrainingIsSentOnlyWhenTrue) {
  // 1.6: a draining worker that re-registers says so; otherwise nothing is sent (= false).
  Hello h;
  h.worker_id = "w1";
  h.draining = true;
  const Frames f = encode(Message{h});
  auto doc = msgpack_to_json(f.body);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["draining"], true);
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(std::get<Hello>(back->body).draining);
  h.draining = false;
  doc = msgpack_to_json(encode(Message{h}).body);
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE(doc->contains("draining"));
  auto wrong = decode("HELLO", json_to_msgpack({{"version_major", 1}, {"version_minor", 6},
                                                {"worker_id", "w1"}, {"slots", 1}, {"draining", 1}}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("HELLO.draining"), std::string::npos) << wrong.status().message();
}

TEST(ProtocolRoundTrip, WelcomeRunIdMayBeEmpty) {
  Welcome w;
  w.heartbeat_interval_ms = 1000;
  w.heartbeat_liveness = 5;
  const Frames f = encode(Message{w});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(std::get<Welcome>(back->body).run_id, "");
}

}  // namespace
}  // namespace am::proto
