// Markdown cells and code spans made of text that peers and plans choose.
#include <gtest/gtest.h>

#include "common/utf8.h"
#include "coordinator/report_text.h"
#include "coordinator/status_text.h"

#include <algorithm>

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

namespace am::coord {
namespace {

// `runs` printed the run id and plan name as stored: a database edited to hold ESC sequences
// retitled the terminal and cleared it, and a newline forged a table row.
TEST(RunsText, StoredNamesAreOneInertLineEach) {
  RunRecord r;
  r.run_id = "r\n1";
  r.plan_name = "p\x1b]0;PWNED\x07\x1b[2J\nfake-run  fake";
  r.created_at_ms = 1'700'000'000'000;
  RunCounts c;
  c.run_id = r.run_id;
  c.total = 1;
  c.by_status["pass"] = 1;
  const std::string text = render_runs_text({r}, {c});
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;   // the header and one run
  EXPECT_NE(text.find("1 pass"), std::string::npos) << text;
}

TEST(StatusText, AnUnknownEtaSaysWhyNoWorkerOrNothingMeasured) {
  nlohmann::json status = {{"coordinator", nlohmann::json::object()},
                           {"runs", {{{"run_id", "r"}, {"done", 1}, {"total", 12}, {"running", 0}, {"queued", 11},
                                      {"by_status", {{"pass", 1}}}, {"eta_s", nullptr},
                                      {"eta_unknown_because", "no connected worker takes jobs"}}}},
                           {"workers", nlohmann::json::array()}};
  std::string text = render_status_text(status);
  EXPECT_NE(text.find("ETA unknown (no connected worker takes jobs)"), std::string::npos) << text;
  status["runs"][0].erase("eta_unknown_because");   // a coordinator before the field
  text = render_status_text(status);
  EXPECT_NE(text.find("ETA unknown (no job measured yet)"), std::string::npos) << text;
}

}  // namespace
}  // namespace am::coord
