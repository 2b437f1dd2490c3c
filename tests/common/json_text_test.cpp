// JSON text written without nlohmann's serializer (common/json_text.h): read back, it is the
// same document, value types included; where dump() has one spelling, it is that spelling.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "common/json_text.h"
#include "tests/common/json_same.h"

namespace am {
namespace {

using nlohmann::json;

json random_value(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 3 ? 6 : 8)) {
    case 0: return nullptr;
    case 1: return (rng() & 1) != 0;
    case 2: return -static_cast<int64_t>(rng() >> 1);
    case 3: return static_cast<uint64_t>(rng());
    case 4: return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 300) - 200);
    case 5: {
      static const char* kPieces[] = {"plain", "q\"b\\s", "\t\n\r\b\f", "\x01\x1f\x7f", "ü漢🚀", ""};
      return std::string(kPieces[rng() % 6]) + std::to_string(rng() % 100);
    }
    case 6: {
      json a = json::array();
      for (int i = 0, n = static_cast<int>(rng() % 5); i < n; ++i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = 0, n = static_cast<int>(rng() % 5); i < n; ++i) o["k\"" + std::to_string(rng() % 30)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

TEST(JsonText, ReadsBackAsTheSameDocumentWithTheSameTypes) {
  std::mt19937_64 rng(1128);
  for (int i = 0; i < 2000; ++i) {
    const json doc = random_value(rng, 0);
    const std::string text = to_json_text(doc);
    json back;
    ASSERT_NO_THROW(back = json::parse(text)) << text;
    testing::expect_same_json(doc, back, "doc " + std::to_string(i));
  }
}

TEST(JsonText, SpellsWhatDumpSpellsOneWay) {
  // Integers, strings with every escape, booleans, null, integral and ordinary doubles.
  const json doc = {{"i", -42}, {"u", 18446744073709551615ull}, {"s", "a\"b\\c\x01\x1f\b\f\n\r\t ü"},
                    {"t", true}, {"n", nullptr}, {"d", 12.331231503445618}, {"whole", 5.0},
                    {"small", 0.001}, {"list", {1, 2.5, "x"}}, {"nested", {{"b", 1}, {"a", 2}}}};
  EXPECT_EQ(to_json_text(doc), doc.dump());
}

TEST(JsonText, WritesNullForWhatJsonCannotHoldAndRepairsInvalidUtf8) {
  const json doc = {{"nan", std::numeric_limits<double>::quiet_NaN()},
                    {"inf", std::numeric_limits<double>::infinity()},
                    {"bad", std::string("ok\xff\xfe")}};
  const std::string text = to_json_text(doc);
  const json back = json::parse(text);   // would throw on invalid UTF-8
  EXPECT_TRUE(back["nan"].is_null());
  EXPECT_TRUE(back["inf"].is_null());
  EXPECT_EQ(back["bad"].get<std::string>().substr(0, 2), "ok");
  EXPECT_NE(back["bad"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace am
