// usage_error_text(): the command, what was wrong, the option meant, and where the help is.
#include "jobs/usage_error.h"

#include <gtest/gtest.h>

namespace am::jobs {
namespace {

const UsageCommand kRun{"accelmatrix run", {"--plan", "--workers", "--db", "-q", "--quiet", "-v", "--help", "-h"},
                        {"--exit-with-parent"}};

TEST(UsageError, AnUnknownOptionIsNamedWithTheClosestOptionOfItsCommand) {
  const std::string text = usage_error_text("The following arguments were not expected: x --plna", kRun,
                                            {"--plna", "x", "--workers", "2"});
  EXPECT_EQ(text, "error: accelmatrix run: unknown option '--plna' (did you mean '--plan'?)\n"
                  "see 'accelmatrix run --help'");
}

TEST(UsageError, AnOptionWithItsValueAfterAnEqualsSignIsNamedWithoutTheValue) {
  const std::string text =
      usage_error_text("The following argument was not expected: --dbb=x.db", kRun, {"--dbb=x.db"});
  EXPECT_NE(text.find("unknown option '--dbb' (did you mean '--db'?)"), std::string::npos) << text;
}

TEST(UsageError, KnownBundledShortFlagsAndHiddenOptionsAreNotCalledUnknown) {
  const std::string text = usage_error_text("The following arguments were not expected: --wrkers 3", kRun,
                                            {"-vq", "--exit-with-parent", "7", "--wrkers", "3"});
  EXPECT_NE(text.find("unknown option '--wrkers' (did you mean '--workers'?)"), std::string::npos) << text;
  EXPECT_EQ(text.find("-vq"), std::string::npos) << text;
  EXPECT_EQ(text.find("exit-with-parent"), std::string::npos) << text;
}

TEST(UsageError, AHiddenOptionIsNeverSuggested) {
  const std::string text =
      usage_error_text("The following argument was not expected: --exit-with-parnt", kRun, {"--exit-with-parnt"});
  EXPECT_EQ(text.find("did you mean"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown option '--exit-with-parnt'"), std::string::npos) << text;
}

TEST(UsageError, SurplusWordsAreListedAsUnexpectedArguments) {
  const UsageCommand plan{"accelmatrix plan", {"--json", "--catalog"}, {}};
  const std::string text =
      usage_error_text("The following argument was not expected: b.toml", plan, {"a.toml", "b.toml"});
  EXPECT_EQ(text, "error: accelmatrix plan: unexpected argument: b.toml\nsee 'accelmatrix plan --help'");
}

TEST(UsageError, WordsAfterADoubleDashAreNotOptions) {
  const std::string text =
      usage_error_text("The following argument was not expected: --plna", kRun, {"--", "--plna"});
  EXPECT_EQ(text.find("unknown option"), std::string::npos) << text;
  EXPECT_NE(text.find("unexpected argument: --plna"), std::string::npos) << text;
}

TEST(UsageError, OtherParseErrorsKeepTheirMessageUnderTheCommand) {
  EXPECT_EQ(usage_error_text("--workers: Value 0 not in range 1 to 64", kRun, {"--workers", "0"}),
            "error: accelmatrix run: --workers: Value 0 not in range 1 to 64\nsee 'accelmatrix run --help'");
}

}  // namespace
}  // namespace am::jobs
