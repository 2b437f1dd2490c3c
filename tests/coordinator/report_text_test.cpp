// Markdown cells and code spans made of text that peers and plans choose.
#include <gtest/gtest.h>

#include "common/utf8.h"
#include "coordinator/report_text.h"

namespace am::coord {
namespace {

TEST(MarkdownText, ACellIsOneInertLineWhoseMarkupCharactersAreEntities) {
  const std::string cell = markdown_cell("<img src=x onerror=alert(3)> R&D | x\n\x1b[2Jy\x07\xc2\x9bz", 160);
  EXPECT_EQ(cell, "&lt;img src=x onerror=alert(3)&gt; R&amp;D \\| x \xEF\xBF\xBD\\[2Jy\xEF\xBF\xBD\xEF\xBF\xBDz");
  EXPECT_TRUE(is_valid_utf8(cell));
  // No link or image a renderer would fetch, no code span, and a backslash cannot undo the
  // pipe's escape.
  EXPECT_EQ(markdown_cell("![](https://x/p.png) [go](https://e) `c` a\\|b", 160),
            "!\\[\\](https://x/p.png) \\[go\\](https://e) \\`c\\` a\\\\\\|b");
}

TEST(MarkdownText, ACodeSpanIsFencedBeyondTheBackticksOfItsText) {
  EXPECT_EQ(markdown_code("plain", 160), "`plain`");
  EXPECT_EQ(markdown_code("fn`p`q|r <i>x.toml", 160), "``fn`p`q\\|r <i>x.toml``");   // no entities in code
  EXPECT_EQ(markdown_code("`a``", 160), "``` `a`` ```");
  EXPECT_EQ(markdown_code("esc\x1b]0;t\x07", 160), "`esc\xEF\xBF\xBD]0;t\xEF\xBF\xBD`");
}

}  // namespace
}  // namespace am::coord
