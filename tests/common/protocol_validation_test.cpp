// decode() refuses malformed input with an error that names the message type and the field.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/msgpack_json.h"
#include "common/protocol.h"
#include "tests/common/sample_messages.h"

namespace am::proto {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

template <std::size_t N>
std::string bytes_of(const char (&s)[N]) {
  return std::string(s, N - 1);
}

// The body of a valid sample message of `type`, as a document to tamper with.
nlohmann::json body_doc(MsgType type) {
  const auto msgs = testing::sample_messages(5);
  auto doc = msgpack_to_json(encode(msgs[static_cast<std::size_t>(type)]).body);
  EXPECT_TRUE(doc.ok());
  return *doc;
}

Status decode_doc(MsgType type, const nlohmann::json& doc) {
  auto r = decode(msg_type_name(type), json_to_msgpack(doc));
  return r.ok() ? Status::Ok() : r.status();
}

TEST(ProtocolValidation, RejectsUnknownTypeFrame) {
  const std::string body = json_to_msgpack({{"job_id", "a"}, {"attempt", 1}});
  for (const std::string& name : {std::string("ack"), std::string("ACKX"), std::string(),
                                  std::string("HEARTBEAT\0", 10), std::string(" ACK")}) {
    auto r = decode(name, body);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), StartsWith("unknown message type '"));
  }
  auto r = decode(std::string("AC\x01K\xff", 5), body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unknown message type 'AC\\x01K\\xff'");
}

TEST(ProtocolValidation, RejectsBodyThatIsNotAMap) {
  for (const nlohmann::json& body : {nlohmann::json::array({1, 2}), nlohmann::json("str"),
                                     nlohmann::json(7), nlohmann::json(nullptr)}) {
    auto r = decode("HEARTBEAT", json_to_msgpack(body));
    ASSERT_FALSE(r.ok()) << body.dump();
    EXPECT_THAT(r.status().message(), StartsWith("HEARTBEAT: body must be a msgpack map, got "));
  }
  auto r = decode("RESULT", json_to_msgpack(nlohmann::json::array()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "RESULT: body must be a msgpack map, got array");
}

TEST(ProtocolValidation, RejectsEveryMissingRequiredField) {
  const std::vector<std::pair<MsgType, std::vector<std::string>>> required = {
      {MsgType::kHello, {"version_major", "version_minor", "worker_id", "slots"}},
      {MsgType::kWelcome, {"version_major", "version_minor", "heartbeat_interval_ms",
                           "heartbeat_liveness", "lease_grace_ms"}},
      {MsgType::kReject, {"reason"}},
      {MsgType::kReady, {"credits"}},
      {MsgType::kAssign, {"job_id", "attempt", "lease_ms", "device", "spec"}},
      {MsgType::kProgress, {"job_id", "attempt", "phase"}},
      {MsgType::kResult, {"job_id", "attempt", "status"}},
      {MsgType::kAck, {"job_id", "attempt"}},
      {MsgType::kCancel, {"job_id", "attempt"}},
  };
  for (const auto& [type, fields] : required) {
    const nlohmann::json full = body_doc(type);
    ASSERT_TRUE(decode_doc(type, full).ok()) << msg_type_name(type);
    for (const auto& field : fields) {
      nlohmann::json doc = full;
      ASSERT_EQ(doc.erase(field), 1u) << field;
      Status st = decode_doc(type, doc);
      EXPECT_EQ(st.message(), std::string(msg_type_name(type)) + "." + field + ": missing required field");
      // nil is as good as absent.
      doc[field] = nullptr;
      EXPECT_EQ(decode_doc(type, doc).message(), st.message());
    }
  }
}

TEST(ProtocolValidation, EveryOptionalFieldMayBeOmitted) {
  const std::vector<std::pair<MsgType, std::vector<std::string>>> optional = {
      {MsgType::kHello, {"hostname", "build", "capabilities", "tags", "held"}},
      {MsgType::kWelcome, {"run_id"}},
      {MsgType::kReject, {"retry"}},
      {MsgType::kResult, {"reason", "metrics", "log_tail", "started_at_ms", "finished_at_ms"}},
      {MsgType::kCancel, {"reason"}},
      {MsgType::kDrain, {"reason"}},
      {MsgType::kBye, {"reason"}},
  };
  for (const auto& [type, fields] : optional) {
    nlohmann::json doc = body_doc(type);
    for (const auto& field : fields) ASSERT_EQ(doc.erase(field), 1u) << field;
    EXPECT_TRUE(decode_doc(type, doc).ok()) << msg_type_name(type) << ": "
                                            << decode_doc(type, doc).message();
  }
}

TEST(ProtocolValidation, RejectsWrongFieldTypes) {
  struct Case {
    MsgType type;
    std::string field;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {MsgType::kResult, "attempt", "1", "RESULT.attempt: expected integer >= 1, got string"},
      {MsgType::kResult, "attempt", 1.0, "RESULT.attempt: expected integer >= 1, got float"},
      {MsgType::kResult, "status", 3, "RESULT.status: expected string, got integer"},
      {MsgType::kResult, "metrics", nlohmann::json::array(), "RESULT.metrics: expected map, got array"},
      {MsgType::kResult, "job_id", true, "RESULT.job_id: expected id string, got bool"},
      {MsgType::kHello, "tags", "x", "HELLO.tags: expected map, got string"},
      {MsgType::kHello, "tags", {{"rack", 3}}, "HELLO.tags.rack: expected string, got integer"},
      {MsgType::kHello, "capabilities", "none", "HELLO.capabilities: expected map, got string"},
      {MsgType::kReject, "retry", 1, "REJECT.retry: expected bool, got integer"},
      {MsgType::kReady, "credits", {{"cpu:0", "2"}}, "READY.credits.cpu:0: expected integer in [0, 1024], got string"},
      {MsgType::kAssign, "spec", nlohmann::json::array({1}), "ASSIGN.spec: expected map, got array"},
      {MsgType::kWelcome, "heartbeat_liveness", -1, "WELCOME.heartbeat_liveness: expected integer in [1, 1000], got -1"},
  };
  for (const auto& c : cases) {
    nlohmann::json doc = body_doc(c.type);
    doc[c.field] = c.value;
    Status st = decode_doc(c.type, doc);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(st.message(), c.message);
  }
}

TEST(ProtocolValidation, RejectsAttemptZeroWherever) {
  for (MsgType type : {MsgType::kAssign, MsgType::kProgress, MsgType::kResult, MsgType::kAck,
                       MsgType::kCancel}) {
    nlohmann::json doc = body_doc(type);
    doc["attempt"] = 0;
    EXPECT_EQ(decode_doc(type, doc).message(),
              std::string(msg_type_name(type)) + ".attempt: expected integer >= 1, got 0");
    doc["attempt"] = -3;
    EXPECT_FALSE(decode_doc(type, doc).ok());
    doc["attempt"] = 1;
    EXPECT_TRUE(decode_doc(type, doc).ok());
  }
}

TEST(ProtocolValidation, RejectsIntegersOutOfRange) {
  nlohmann::json doc = body_doc(MsgType::kResult);
  doc["attempt"] = int64_t{1} << 31;
  EXPECT_EQ(decode_doc(MsgType::kResult, doc).message(),
            "RESULT.attempt: expected integer >= 1, got 2147483648 (above the maximum 2147483647)");
  doc = body_doc(MsgType::kResult);
  doc["started_at_ms"] = std::numeric_limits<uint64_t>::max();
  EXPECT_THAT(decode_doc(MsgType::kResult, doc).message(), StartsWith("RESULT.started_at_ms: "));
  doc["started_at_ms"] = -1;
  EXPECT_THAT(decode_doc(MsgType::kResult, doc).message(), StartsWith("RESULT.started_at_ms: "));

  doc = body_doc(MsgType::kHello);
  for (int slots : {0, 1025}) {
    doc["slots"] = slots;
    EXPECT_EQ(decode_doc(MsgType::kHello, doc).message(),
              "HELLO.slots: expected integer in [1, 1024], got " + std::to_string(slots));
  }
  doc = body_doc(MsgType::kReady);
  doc["credits"] = {{"cpu:0", -1}};
  EXPECT_THAT(decode_doc(MsgType::kReady, doc).message(), StartsWith("READY.credits.cpu:0: "));
  doc = body_doc(MsgType::kAssign);
  doc["lease_ms"] = 0;
  EXPECT_THAT(decode_doc(MsgType::kAssign, doc).message(), StartsWith("ASSIGN.lease_ms: "));
}

TEST(ProtocolValidation, RejectsMalformedIds) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "must not be empty"},
      {"has space", "must be printable ASCII without whitespace"},
      {"tab\there", "must be printable ASCII without whitespace"},
      {"caf\xc3\xa9", "must be printable ASCII without whitespace"},
      {std::string(kMaxIdBytes + 1, 'a'), "id of 129 bytes exceeds the limit of 128"},
  };
  for (const auto& [id, why] : bad) {
    nlohmann::json doc = body_doc(MsgType::kAck);
    doc["job_id"] = id;
    EXPECT_EQ(decode_doc(MsgType::kAck, doc).message(), "ACK.job_id: " + why);
  }
  nlohmann::json doc = body_doc(MsgType::kHello);
  doc["worker_id"] = std::string(kMaxIdBytes, 'w');
  EXPECT_TRUE(decode_doc(MsgType::kHello, doc).ok());
  doc["worker_id"] = "bad id";
  EXPECT_EQ(decode_doc(MsgType::kHello, doc).message(),
            "HELLO.worker_id: must be printable ASCII without whitespace");
  doc = body_doc(MsgType::kAssign);
  doc["device"] = "cpu 0";
  EXPECT_THAT(decode_doc(MsgType::kAssign, doc).message(), StartsWith("ASSIGN.device: "));
  doc = body_doc(MsgType::kReady);
  doc["credits"] = {{"cpu 0", 1}};
  EXPECT_THAT(decode_doc(MsgType::kReady, doc).message(), StartsWith("READY.credits key: "));
  // WELCOME.run_id is free text, not an id.
  doc = body_doc(MsgType::kWelcome);
  doc["run_id"] = "nightly run 1";
  EXPECT_TRUE(decode_doc(MsgType::kWelcome, doc).ok());
  doc["run_id"] = 17;
  EXPECT_EQ(decode_doc(MsgType::kWelcome, doc).message(), "WELCOME.run_id: expected string, got integer");
}

TEST(ProtocolValidation, RejectsInvalidResultStatus) {
  nlohmann::json doc = body_doc(MsgType::kResult);
  doc["status"] = "passed";
  Status st = decode_doc(MsgType::kResult, doc);
  EXPECT_THAT(st.message(), StartsWith("RESULT.status: expected one of pass, degraded, "));
  EXPECT_THAT(st.message(), HasSubstr("got 'passed'"));
  doc["status"] = "";
  EXPECT_FALSE(decode_doc(MsgType::kResult, doc).ok());
}

TEST(ProtocolValidation, RejectsOversizedStrings) {
  nlohmann::json doc = body_doc(MsgType::kHello);
  doc["hostname"] = std::string(kMaxStringBytes, 'h');
  EXPECT_TRUE(decode_doc(MsgType::kHello, doc).ok());
  doc["hostname"] = std::string(kMaxStringBytes + 1, 'h');
  Status st = decode_doc(MsgType::kHello, doc);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(), "HELLO.hostname: string of 65537 bytes exceeds the limit of 65536");

  doc = body_doc(MsgType::kResult);
  doc["log_tail"] = std::string(kMaxLogTailBytes + 1, 'x');
  EXPECT_THAT(decode_doc(MsgType::kResult, doc).message(), StartsWith("RESULT.log_tail: string of"));

  // Far beyond the field limits msgpack's own bound stops it before any field check.
  doc["log_tail"] = std::string(1u << 20, 'x');
  st = decode_doc(MsgType::kResult, doc);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), StartsWith("RESULT: "));

  doc = body_doc(MsgType::kHello);
  doc["capabilities"]["host"]["os"] = std::string(kMaxStringBytes + 1, 'o');
  EXPECT_THAT(decode_doc(MsgType::kHello, doc).message(),
              StartsWith("HELLO.capabilities.host.os: string of 65537 bytes"));
  doc = body_doc(MsgType::kHello);
  doc["tags"] = {{"k", std::string(kMaxStringBytes + 1, 'v')}};
  EXPECT_THAT(decode_doc(MsgType::kHello, doc).message(), StartsWith("HELLO.tags.k: string of"));
}

TEST(ProtocolValidation, RejectsOversizedFrame) {
  std::string body = json_to_msgpack(body_doc(MsgType::kBye));
  body.resize(kMaxFrameBytes + 1, '\0');
  auto r = decode("BYE", body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "BYE: body of 4194305 bytes exceeds the frame limit of 4194304");
}

TEST(ProtocolValidation, RejectsEveryTruncationOfAValidBody) {
  for (const Message& m : testing::sample_messages(9)) {
    const Frames f = encode(m);
    for (std::size_t len = 0; len < f.body.size(); ++len) {
      auto r = decode(f.type, std::string_view(f.body).substr(0, len));
      ASSERT_FALSE(r.ok()) << f.type << " truncated to " << len;
    }
  }
  const Frames f = encode(Message{Ack{"job", 1}});
  auto r = decode(f.type, std::string_view(f.body).substr(0, f.body.size() - 1));
  EXPECT_EQ(r.status().message(), "ACK: truncated msgpack");
}

TEST(ProtocolValidation, RejectsTrailingBytes) {
  const Frames f = encode(Message{Ack{"job", 1}});
  auto r = decode(f.type, f.body + std::string("\xc0", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "ACK: 1 trailing bytes after the msgpack value");
}

nlohmann::json nested_maps(int depth) {
  nlohmann::json doc = {{"leaf", 1}};
  for (int i = 1; i < depth; ++i) doc = {{"a", doc}};
  return doc;
}

TEST(ProtocolValidation, RejectsDocumentsNestedTooDeep) {
  nlohmann::json doc = body_doc(MsgType::kAssign);
  doc["spec"] = nested_maps(kMaxNestingDepth);
  ASSERT_TRUE(decode_doc(MsgType::kAssign, doc).ok()) << decode_doc(MsgType::kAssign, doc).message();
  doc["spec"] = nested_maps(kMaxNestingDepth + 1);
  Status st = decode_doc(MsgType::kAssign, doc);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  std::string path = "ASSIGN.spec";
  for (int i = 1; i < kMaxNestingDepth + 1; ++i) path += ".a";
  EXPECT_EQ(st.message(), path + ": nested deeper than 16 levels");

  // A raw msgpack bomb (100000 nested arrays) is stopped by the unpacker's depth bound.
  std::string bomb("\x81\xa4spec", 6);
  bomb += std::string(100000, '\x91');
  bomb += '\xc0';
  auto r = decode("ASSIGN", bomb);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nested deeper than"));
}

TEST(ProtocolValidation, RejectsNonStringAndDuplicateKeys) {
  // {1: "x"} as a body.
  auto r = decode("BYE", bytes_of("\x81\x01\xa1x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "BYE: field names must be strings, got integer");
  // {"reason": "a", "reason": "b"}
  r = decode("BYE", bytes_of("\x82\xa6reason\xa1" "a\xa6reason\xa1" "b"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "BYE.reason: duplicate field");
  // HELLO.capabilities = {"devices": [{7: true}]}
  nlohmann::json body = body_doc(MsgType::kHello);
  body.erase("capabilities");
  std::string bytes = json_to_msgpack(body);
  // Patch the map size (fixmap) and append the field by hand: non-string keys cannot be
  // expressed in json.
  ASSERT_EQ(static_cast<unsigned char>(bytes[0]) & 0xF0, 0x80);
  bytes[0] = static_cast<char>(bytes[0] + 1);
  bytes += bytes_of("\xac" "capabilities" "\x81\xa7" "devices" "\x91\x81\x07\xc3");
  r = decode("HELLO", bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "HELLO.capabilities.devices[0]: map keys must be strings, got integer");
}

TEST(ProtocolValidation, RejectsBinaryValuesInDocuments) {
  nlohmann::json doc = body_doc(MsgType::kResult);
  doc["metrics"] = {{"blob", nlohmann::json::binary({1, 2, 3})}};
  EXPECT_EQ(decode_doc(MsgType::kResult, doc).message(),
            "RESULT.metrics.blob: binary values are not supported in documents");
}

TEST(ProtocolValidation, RejectsMapsWithTooManyEntries) {
  nlohmann::json doc = body_doc(MsgType::kResult);
  nlohmann::json big = nlohmann::json::object();
  for (std::size_t i = 0; i <= kMaxMapEntries; ++i) big["k" + std::to_string(i)] = i;
  doc["metrics"] = big;
  Status st = decode_doc(MsgType::kResult, doc);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  big.erase("k0");
  doc["metrics"] = big;
  EXPECT_TRUE(decode_doc(MsgType::kResult, doc).ok());
}

}  // namespace
}  // namespace am::proto

namespace am::proto {
namespace {

TEST(ProtocolValidation, RejectsHeldAttemptsThatAreNotPositive) {
  auto doc = testing::sample_messages(5)[0];
  auto body = msgpack_to_json(encode(doc).body);
  ASSERT_TRUE(body.ok());
  (*body)["held"] = {{"0123456789abcdef", 0}};
  auto r = decode("HELLO", json_to_msgpack(*body));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HELLO.held"), std::string::npos) << r.status().message();
  (*body)["held"] = {{"0123456789abcdef", "two"}};
  EXPECT_FALSE(decode("HELLO", json_to_msgpack(*body)).ok());
  (*body)["held"] = {{"0123456789abcdef", 7}};
  auto ok = decode("HELLO", json_to_msgpack(*body));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(std::get<Hello>(ok->body).held.at("0123456789abcdef"), 7);
}

TEST(ProtocolValidation, ReadyWindowAndSeenSince12AreValidatedAndRoundTrip) {
  Ready r;
  r.window = std::map<std::string, int>{{"cpu:0", 2}, {"opencl:1", 0}};
  r.seen = 41;
  const Frames f = encode(Message{r});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const Ready& got = std::get<Ready>(back->body);
  EXPECT_EQ(got.window, r.window);
  EXPECT_EQ(got.seen, 41);
  EXPECT_TRUE(got.credits.empty());   // a 1.2 READY needs no credits

  auto body = msgpack_to_json(f.body);
  ASSERT_TRUE(body.ok());
  auto bad = *body;
  bad["seen"] = -1;
  EXPECT_THAT(decode_doc(MsgType::kReady, bad).message(), StartsWith("READY.seen: "));
  bad = *body;
  bad["window"] = {{"cpu:0", 1025}};
  EXPECT_THAT(decode_doc(MsgType::kReady, bad).message(), StartsWith("READY.window.cpu:0: "));
  bad = *body;
  bad["window"] = {{"not an id", 1}};
  EXPECT_THAT(decode_doc(MsgType::kReady, bad).message(), StartsWith("READY.window key: "));
  // Neither window nor credits: the legacy field is required again.
  EXPECT_THAT(decode_doc(MsgType::kReady, nlohmann::json::object()).message(), StartsWith("READY.credits: "));
}

TEST(ProtocolValidation, HelloSecretSince12IsAnIdOfAtLeast32Characters) {
  auto hello = std::get<Hello>(testing::sample_messages(5)[0].body);
  hello.secret = std::string(64, 'a');
  const Frames f = encode(Message{hello});
  auto back = decode(f.type, f.body);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(std::get<Hello>(back->body).secret, hello.secret);
  auto body = msgpack_to_json(f.body);
  ASSERT_TRUE(body.ok());
  (*body)["secret"] = "short";
  EXPECT_THAT(decode_doc(MsgType::kHello, *body).message(), StartsWith("HELLO.secret: "));
  (*body)["secret"] = std::string(40, ' ');
  EXPECT_THAT(decode_doc(MsgType::kHello, *body).message(), StartsWith("HELLO.secret: "));
  (*body)["secret"] = 12345;
  EXPECT_THAT(decode_doc(MsgType::kHello, *body).message(), StartsWith("HELLO.secret: "));
}

}  // namespace
}  // namespace am::proto
