// The msgpack <-> json bridge: exact round trips, bounds, and UTF-8 handling.
#include <cmath>
#include <limits>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/json_text.h"
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

// ---- msgpack_object_to_json_text: the tree's to_json_text() bytes, without the tree ----

// A random msgpack value packed by hand as another sender would: map members in any order,
// float32 and float64, both integer kinds, strings and keys with invalid UTF-8, quotes and
// control bytes, maps small and large (the converter scans small maps for repeated keys and
// hashes large ones), and now and then a repeated key.
void pack_random(msgpack::packer<msgpack::sbuffer>& pk, std::mt19937_64& rng, int depth) {
  auto random_text = [&] {
    static const char* const kPieces[] = {"a", "z", "k1", "\xff", "\"", "\\", "\n", "\x01", "\xe2\x82\xac",
                                          "\xe2\x82", "\xc3\xa9", "0", "_", " "};
    std::string t;
    const std::size_t n = rng() % 5;
    for (std::size_t i = 0; i < n; ++i) t += kPieces[rng() % std::size(kPieces)];
    return t;
  };
  const int kind = static_cast<int>(rng() % (depth > 0 ? 10 : 8));
  switch (kind) {
    case 0: pk.pack_nil(); return;
    case 1:
      if (rng() & 1) {
        pk.pack_true();
      } else {
        pk.pack_false();
      }
      return;
    case 2: pk.pack_int64(-static_cast<int64_t>(rng() >> 1) - 1); return;
    case 3: pk.pack_uint64(rng() >> (rng() % 64)); return;
    case 4: pk.pack_double(std::ldexp(static_cast<double>(rng() % 2000001) - 1000000.0, static_cast<int>(rng() % 120) - 60)); return;
    case 5: pk.pack_float(static_cast<float>(rng() % 100001) / 64.0f - 700.0f); return;
    case 6: {
      const std::string t = random_text();
      pk.pack_str(static_cast<uint32_t>(t.size()));
      pk.pack_str_body(t.data(), static_cast<uint32_t>(t.size()));
      return;
    }
    case 7: pk.pack_double(rng() % 2 ? 3.0 : -0.0); return;
    case 8: {
      const uint32_t n = static_cast<uint32_t>(rng() % 5);
      pk.pack_array(n);
      for (uint32_t i = 0; i < n; ++i) pack_random(pk, rng, depth - 1);
      return;
    }
    default: {
      const uint32_t n = static_cast<uint32_t>(rng() % 4 == 0 ? 17 + rng() % 30 : rng() % 6);
      pk.pack_map(n);
      for (uint32_t i = 0; i < n; ++i) {
        // Keys from a pool small enough that a large map repeats one now and then.
        std::string key = rng() % 3 == 0 ? random_text() : "m" + std::to_string(rng() % 400);
        pk.pack_str(static_cast<uint32_t>(key.size()));
        pk.pack_str_body(key.data(), static_cast<uint32_t>(key.size()));
        pack_random(pk, rng, depth - 1);
      }
      return;
    }
  }
}

// Both conversions of the same bytes: the same status, and on success the tree's text.
void expect_text_matches_tree(std::string_view bytes, const DocLimits& limits = {}) {
  // Unpacked under the default bounds, so the converters' own checks are what refuses.
  auto handle = unpack_bounded(bytes, unpack_limits_for({}, 0, kMaxStringBytes), "document");
  ASSERT_TRUE(handle.ok()) << handle.status().to_string();
  nlohmann::json tree;
  const Status via_tree = msgpack_object_to_json(handle->get(), "doc", tree, limits);
  std::string text;
  const Status direct = msgpack_object_to_json_text(handle->get(), "doc", text, limits);
  ASSERT_EQ(direct.code(), via_tree.code()) << direct.to_string() << " vs " << via_tree.to_string();
  ASSERT_EQ(direct.message(), via_tree.message());
  if (via_tree.ok()) {
    EXPECT_EQ(text, to_json_text(tree));
  }
}

TEST(MsgpackJsonText, SeededRandomDocumentsGiveTheTextOfTheirTree) {
  std::mt19937_64 rng(20261207);
  int failures = 0, successes = 0;
  for (int i = 0; i < 3000; ++i) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pack_random(pk, rng, 5);
    expect_text_matches_tree(std::string_view(buf.data(), buf.size()));
    if (::testing::Test::HasFatalFailure()) return;
    auto whole = msgpack_to_json(std::string_view(buf.data(), buf.size()));
    (whole.ok() ? successes : failures) += 1;
  }
  // Both outcomes were exercised: documents converted, and repeated keys refused.
  EXPECT_GT(successes, 1000);
  EXPECT_GT(failures, 10);
}

TEST(MsgpackJsonText, MembersComeOutSortedAsTheTreeHoldsThem) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(4);
  for (const char* k : {"zeta", "\xc3\xa9", "alpha", "Beta"}) {
    pk.pack(std::string(k));
    pk.pack(1);
  }
  auto handle = unpack_bounded(std::string_view(buf.data(), buf.size()), unpack_limits_for({}, 0, 64), "document");
  ASSERT_TRUE(handle.ok());
  std::string text;
  ASSERT_TRUE(msgpack_object_to_json_text(handle->get(), "doc", text).ok());
  EXPECT_EQ(text, "{\"Beta\":1,\"alpha\":1,\"zeta\":1,\"\xc3\xa9\":1}");
}

TEST(MsgpackJsonText, RefusesWhatTheTreeRefusesWithTheSameError) {
  DocLimits limits;
  limits.max_depth = 3;
  limits.max_string_bytes = 8;
  limits.max_entries = 20;
  const std::vector<std::string> bad = {
      std::string("\x82\xa1k\x01\xa1k\x02", 7),                      // repeated key, small map
      std::string("\x81\xa1x\xc4\x01\x00", 6),                         // bin value
      std::string("\x81\x01\x02", 3),                                   // integer key
      json_to_msgpack({{"a", {{"b", {{"c", {1}}}}}}}),                 // 4 levels
      json_to_msgpack({{"k", "123456789"}}),                           // long string
      json_to_msgpack({{"123456789", 1}}),                             // long key
      std::string("\x81\xa1k\x81\xa2\xff\xfe\x01", 8),                // invalid key, fine
      std::string("\x81\xa1k\x82\xa1\xff\x01\xa1\xfe\x02", 10),         // two keys repaired to one
  };
  for (const std::string& b : bad) {
    SCOPED_TRACE(::testing::PrintToString(b));
    expect_text_matches_tree(b, limits);
  }
  // A map past max_entries, and a large map repeating a key after its 16th member.
  nlohmann::json wide = nlohmann::json::object();
  for (int i = 0; i < 21; ++i) wide["k" + std::to_string(i)] = i;
  expect_text_matches_tree(json_to_msgpack(wide), limits);
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(19);
  for (int i = 0; i < 19; ++i) {
    pk.pack(i == 18 ? std::string("k3") : "k" + std::to_string(i));
    pk.pack(i);
  }
  expect_text_matches_tree(std::string_view(buf.data(), buf.size()), limits);
  // Either side of the scan/set boundary (16 members), the repeat at the end and in the middle.
  for (uint32_t n : {15u, 16u, 17u}) {
    for (uint32_t at : {n - 1, n / 2}) {
      msgpack::sbuffer b;
      msgpack::packer<msgpack::sbuffer> p(b);
      p.pack_map(n);
      for (uint32_t i = 0; i < n; ++i) {
        p.pack(i == at ? std::string("k0") : "k" + std::to_string(i));
        p.pack(i);
      }
      SCOPED_TRACE(::testing::Message() << n << " members, repeat at " << at);
      DocLimits roomy;
      expect_text_matches_tree(std::string_view(b.data(), b.size()), roomy);
    }
  }
  // Arrays are nesting levels too: map > array > array is 3, one more array is 4.
  expect_text_matches_tree(json_to_msgpack({{"a", {{1}}}}), limits);
  expect_text_matches_tree(json_to_msgpack({{"a", {{{1}}}}}), limits);
  expect_text_matches_tree(json_to_msgpack({{"a", {1, {{{2}}}}}}), limits);
}

}  // namespace
}  // namespace am::proto
