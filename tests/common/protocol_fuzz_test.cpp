// decode() survives arbitrary input: seeded random buffers and random mutations of valid
// encodings either decode or return an error; whatever decodes re-encodes and decodes again.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "common/protocol.h"
#include "tests/common/sample_messages.h"

namespace am::proto {
namespace {

constexpr int kRandomBuffers = 20000;
constexpr int kMutationsPerMessage = 2000;

std::string random_bytes(std::mt19937_64& rng, std::size_t len) {
  std::string s(len, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// Whatever decode() accepts must be a fully valid message: encoding it again must decode.
void expect_stable(const Result<Message>& r) {
  if (!r.ok()) {
    EXPECT_FALSE(r.status().message().empty());
    return;
  }
  const Frames again = encode(*r);
  auto second = decode(again.type, again.body);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_TRUE(testing::messages_equal(*r, *second));
}

TEST(ProtocolFuzz, RandomBuffersNeverCrashTheDecoder) {
  std::mt19937_64 rng(0xA11CE);
  int decoded = 0;
  for (int i = 0; i < kRandomBuffers; ++i) {
    const auto type = msg_type_name(static_cast<MsgType>(rng() % 12));
    // Mostly short buffers, some starting with a map header so parsing gets further in.
    std::string body = random_bytes(rng, rng() % 300);
    if (i % 2 == 0) body.insert(body.begin(), static_cast<char>(0x80 | (rng() % 16)));
    auto r = decode(type, body);
    decoded += r.ok();
    expect_stable(r);
  }
  // A random buffer almost never forms a valid body; HEARTBEAT with a lucky map is the exception.
  EXPECT_LT(decoded, kRandomBuffers / 10);
}

TEST(ProtocolFuzz, RandomTypeFramesAreRejected) {
  std::mt19937_64 rng(99);
  const std::string body = encode(Message{Heartbeat{}}).body;
  for (int i = 0; i < 1000; ++i) {
    auto r = decode(random_bytes(rng, 1 + rng() % 12), body);
    EXPECT_FALSE(r.ok());
  }
}

TEST(ProtocolFuzz, MutatedValidEncodingsNeverCrashTheDecoder) {
  std::mt19937_64 rng(0xBEEF);
  int accepted = 0;
  int total = 0;
  for (const Message& m : testing::sample_messages(21)) {
    const Frames f = encode(m);
    for (int i = 0; i < kMutationsPerMessage; ++i) {
      std::string body = f.body;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !body.empty(); ++e) {
        const std::size_t pos = rng() % body.size();
        switch (rng() % 5) {
          case 0: body[pos] = static_cast<char>(rng() & 0xFF); break;            // replace
          case 1: body[pos] = static_cast<char>(body[pos] ^ (1 << (rng() % 8))); break;  // bit flip
          case 2: body.erase(pos, 1 + rng() % 8); break;                           // delete
          case 3: body.insert(pos, random_bytes(rng, 1 + rng() % 8)); break;       // insert
          case 4: body.resize(pos); break;                                         // truncate
        }
      }
      auto r = decode(f.type, body);
      accepted += r.ok();
      ++total;
      expect_stable(r);
    }
  }
  // Sanity: the mutations are not all fatal (string bytes can change harmlessly) nor all benign.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, total);
}

}  // namespace
}  // namespace am::proto
