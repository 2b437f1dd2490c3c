// The msgpack <-> json bridge: exact round trips, bounds, and UTF-8 handling.
#include <cmath>
#include <limits>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/msgpack_json.h"

namespace am::proto {
namespace {

using ::testing::StartsWith;

// A random document of bounded depth with every supported kind of value.
nlohmann::json random_doc(std::mt19937_64& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 0 ? 9 : 7));
  switch (kind) {
    case 0: return nullptr;
    case 1: return (rng() & 1) != 0;
    case 2: return static_cast<int64_t>(rng());                    // any sign
    case 3: return rng();                                          // unsigned, full range
    case 4: return std::ldexp(static_cast<double>(rng() % 1000000) - 500000.0,
                              static_cast<int>(rng() % 80) - 40);
    case 5: {
      std::string s;
      const std::size_t len = rng() % 12;
      for (std::size_t i = 0; i < len; ++i) s += static_cast<char>('a' + rng() % 26);
      if (rng() % 3 == 0) s += "\xe2\x82\xac";  // U+20AC
      return s;
    }
    case 6: return "";
    case 7: {
      nlohmann::json arr = nlohmann::json::array();
      const std::size_t n = rng() % 5;
      for (std::size_t i = 0; i < n; ++i) arr.push_back(random_doc(rng, depth - 1));
      return arr;
    }
    default: {
      nlohmann::json obj = nlohmann::json::object();
      const std::size_t n = rng() % 5;
      for (std::size_t i = 0; i < n; ++i) obj["k" + std::to_string(rng() % 100)] = random_doc(rng, depth - 1);
      return obj;
    }
  }
}

TEST(MsgpackJson, SeededRandomDocumentsRoundTripExactly) {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 500; ++i) {
    const nlohmann::json doc = random_doc(rng, 6);
    auto back = msgpack_to_json(json_to_msgpack(doc));
    ASSERT_TRUE(back.ok()) << back.status().to_string() << " for " << doc.dump();
    EXPECT_EQ(*back, doc) << doc.dump();
    EXPECT_EQ(back->dump(), doc.dump());
  }
}

TEST(MsgpackJson, EncodesCompactStandardMsgpack) {
  EXPECT_EQ(json_to_msgpack(nullptr), "\xc0");
  EXPECT_EQ(json_to_msgpack(true), "\xc3");
  EXPECT_EQ(json_to_msgpack(5), "\x05");
  EXPECT_EQ(json_to_msgpack(-1), "\xff");
  EXPECT_EQ(json_to_msgpack("ab"), "\xa2" "ab");
  EXPECT_EQ(json_to_msgpack({{"a", 1}}), "\x81\xa1" "a\x01");
  EXPECT_EQ(json_to_msgpack(1.5), std::string("\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00", 9));
  EXPECT_EQ(json_to_msgpack(nlohmann::json::array()), "\x90");
}

TEST(MsgpackJson, DecodesFloat32AsDouble) {
  // 0xca = float32, 1.5f
  auto back = msgpack_to_json(std::string("\xca\x3f\xc0\x00\x00", 5));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->get<double>(), 1.5);
}

TEST(MsgpackJson, DepthLimitCountsContainerLevels) {
  DocLimits limits;
  limits.max_depth = 3;
  nlohmann::json ok = {{"a", {{"b", {1, 2}}}}};   // map > map > array: 3 levels
  EXPECT_TRUE(msgpack_to_json(json_to_msgpack(ok), limits).ok());
  nlohmann::json deep = {{"a", {{"b", {{"c", {1}}}}}}};  // 4 levels
  auto r = msgpack_to_json(json_to_msgpack(deep), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), StartsWith("document: nested deeper than 3"));
}

TEST(MsgpackJson, ErrorsNameThePathInsideTheDocument) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(1);
  pk.pack(std::string("list"));
  pk.pack_array(2);
  pk.pack(1);
  pk.pack_map(1);
  pk.pack(std::string("x"));
  pk.pack_bin(2);
  pk.pack_bin_body("\x01\x02", 2);
  auto r = msgpack_to_json(std::string_view(buf.data(), buf.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "document.list[1].x: binary values are not supported in documents");
}

TEST(MsgpackJson, RejectsDuplicateKeysInDocuments) {
  auto r = msgpack_to_json(std::string("\x82\xa1k\x01\xa1k\x02", 7));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "document.k: duplicate key");
}

TEST(MsgpackJson, RejectsExtValues) {
  auto r = msgpack_to_json(std::string("\xd4\x01\x00", 3));  // fixext1
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "document: ext values are not supported in documents");
}

TEST(MsgpackJson, RejectsLongStringsAndKeys) {
  DocLimits limits;
  limits.max_string_bytes = 8;
  EXPECT_TRUE(msgpack_to_json(json_to_msgpack({{"k", "12345678"}}), limits).ok());
  auto r = msgpack_to_json(json_to_msgpack({{"k", "123456789"}}), limits);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  r = msgpack_to_json(json_to_msgpack({{"123456789", 1}}), limits);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(MsgpackJson, RejectsHugeDeclaredSizesWithoutAllocatingThem) {
  // array32 / map32 claiming 4 billion entries: refused on the header by the size bound.
  for (const std::string& bytes : {std::string("\xdd\xff\xff\xff\xff", 5),
                                   std::string("\xdf\xff\xff\xff\xff", 5)}) {
    auto r = msgpack_to_json(bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().to_string();
  }
  // str32 claiming 4 GiB: the parser wants the bytes before it looks at the length.
  auto r = msgpack_to_json(std::string("\xdb\xff\xff\xff\xff", 5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "document: truncated msgpack");
}

TEST(MsgpackJson, IntegralDoublesStayFloats) {
  EXPECT_EQ(json_to_msgpack(2.0), std::string("\xcb\x40\x00\x00\x00\x00\x00\x00\x00", 9));
  auto back = msgpack_to_json(json_to_msgpack({{"t", 120.0}}));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)["t"].is_number_float());
  EXPECT_EQ(back->dump(), "{\"t\":120.0}");
}

TEST(MsgpackJson, InvalidUtf8InJsonIsRepairedOnEncode) {
  const nlohmann::json doc = {{"s", std::string("x\xffy")}};
  auto back = msgpack_to_json(json_to_msgpack(doc));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)["s"], "x\xEF\xBF\xBDy");
  EXPECT_NO_THROW((void)back->dump());
}

}  // namespace
}  // namespace am::proto
