// common/utf8.h: the one repair policy for text from peers and child processes.
#include "common/utf8.h"

#include <string>

#include <gtest/gtest.h>

namespace am {
namespace {

TEST(Utf8, ValidatesStrictly) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));          // U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));         // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));                 // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));             // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));             // surrogate
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));                 // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));                     // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xff"));
}

TEST(Utf8, RepairReplacesEachInvalidByte) {
  EXPECT_EQ(repair_utf8("ok"), "ok");
  EXPECT_EQ(repair_utf8("a\xff" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(repair_utf8("\xe2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(repair_utf8("\xc3\xa9\x80"), "\xc3\xa9\xEF\xBF\xBD");
  EXPECT_TRUE(is_valid_utf8(repair_utf8("\xc0\xaf\xed\xa0\x80 tail")));
}

TEST(Utf8, RepairKeepsValidTextAndNulBytes) {
  const std::string text = "plain \xc3\xa9\xe2\x9c\x85\xf0\x9f\x98\x80";
  EXPECT_EQ(repair_utf8(text), text);
  EXPECT_EQ(repair_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_EQ(repair_utf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(Utf8, TailKeepsShortTextWhole) {
  EXPECT_EQ(utf8_tail("short", 10), "short");
  EXPECT_EQ(utf8_tail("short", 10, kUtf8Ellipsis), "short");
  EXPECT_EQ(utf8_tail("a\xff", 10), "a\xEF\xBF\xBD");
}

TEST(Utf8, TailNeverSplitsACharacterAndMarksTheCut) {
  // The last 4 bytes start inside é: its remainder is dropped, not replaced.
  EXPECT_EQ(utf8_tail("abc\xc3\xa9xyz", 4), "xyz");
  EXPECT_EQ(utf8_tail("abc\xc3\xa9xyz", 4, kUtf8Ellipsis), "\xE2\x80\xA6xyz");
  EXPECT_EQ(utf8_tail("abc\xc3\xa9xyz", 5), "\xc3\xa9xyz");
}

TEST(Utf8, TailStaysWithinTheLimitAfterRepair) {
  // Each invalid byte grows to three; the limit applies to the repaired text.
  const std::string text = "head " + std::string(100, '\xff');
  const std::string tail = utf8_tail(text, 64);
  EXPECT_LE(tail.size(), 64u);
  EXPECT_TRUE(is_valid_utf8(tail));
  EXPECT_EQ(tail.size() % 3, 0u);
}

}  // namespace
}  // namespace am
