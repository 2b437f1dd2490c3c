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

// Text from peers shown on a terminal: no escape sequence survives, whatever its kind.
TEST(Utf8, TerminalSafeTextCarriesNoControlCharacter) {
  const std::string hostile = "ok\x1b]0;pwned\x07\x1b[2J\rFAKE\x7f\xc2\x9b" "31m\tend\nnext";
  const std::string one_line = terminal_safe(hostile);
  const std::string lines = terminal_safe(hostile, true);
  for (const std::string* s : {&one_line, &lines}) {
    EXPECT_TRUE(is_valid_utf8(*s));
    for (std::size_t i = 0; i < s->size(); ++i) {
      const auto b = static_cast<unsigned char>((*s)[i]);
      EXPECT_FALSE(b < 0x20 && b != '\n' && b != '\t') << "control byte " << int(b) << " at " << i;
      EXPECT_NE(b, 0x7F);
      if (b == 0xC2 && i + 1 < s->size()) EXPECT_GT(static_cast<unsigned char>((*s)[i + 1]), 0x9F);
    }
  }
  EXPECT_EQ(one_line.find('\n'), std::string::npos);
  EXPECT_NE(lines.find("end\nnext"), std::string::npos) << lines;
  EXPECT_NE(one_line.find("]0;pwned"), std::string::npos);   // the text stays readable
  EXPECT_EQ(terminal_safe("plain text é ✓"), "plain text é ✓");
}

}  // namespace
}  // namespace am
