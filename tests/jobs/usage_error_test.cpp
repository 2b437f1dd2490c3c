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
  EXPECT_EQ(usage_error_text("--db is required", kRun, {}),
            "error: accelmatrix run: --db is required\nsee 'accelmatrix run --help'");
}

TEST(UsageError, AMistypedOptionIsNamedBesideTheRequiredOneCli11ReportsFirst) {
  const UsageCommand serve{"accelmatrix serve", {"--plan", "--expect-workers"}, {}};
  EXPECT_EQ(usage_error_text("--plan is required", serve, {"--expect-worker", "1"}),
            "error: accelmatrix serve: --plan is required; unknown option '--expect-worker' (did you mean "
            "'--expect-workers'?)\nsee 'accelmatrix serve --help'");
}

TEST(UsageError, ANegativeNumberGivenAsAValueIsNotCalledAnUnknownOption) {
  const std::string text = usage_error_text("--workers: Value -1 not in range 1 to 64", kRun, {"--workers", "-1"});
  EXPECT_EQ(text, "error: accelmatrix run: --workers: -1 is out of range (1 to 64)\nsee 'accelmatrix run --help'");
  EXPECT_EQ(usage_error_text("x", kRun, {"--workers", "-.5"}).find("unknown option"), std::string::npos);
  // A word that only starts like a number after its dash is still an option.
  EXPECT_NE(usage_error_text("x", kRun, {"-x1"}).find("unknown option '-x1'"), std::string::npos);
}

TEST(UsageError, ARangeErrorSaysWhetherTheValueIsNoNumberOrOutOfItsRange) {
  EXPECT_EQ(usage_error_text("--workers: Value 0 not in range 1 to 64", kRun, {"--workers", "0"}),
            "error: accelmatrix run: --workers: 0 is out of range (1 to 64)\nsee 'accelmatrix run --help'");
  EXPECT_NE(usage_error_text("--workers: Value abc not in range 1 to 64", kRun, {}).find(
                "--workers: 'abc' is not a number (1 to 64)"),
            std::string::npos);
  const std::string huge = "--fail-on-regression: Value -5 not in range 0.000000 to 1797693134862315708145274237317043"
                           "56798070567525844996598917476803157260780028538760589558632766878171540458953514382464234"
                           "321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942"
                           "304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124"
                           "858368.000000";
  EXPECT_NE(usage_error_text(huge, kRun, {}).find("--fail-on-regression: -5 is out of range (at least 0)"),
            std::string::npos);
  EXPECT_NE(usage_error_text("--alpha: Value 0.9 not in range 0.000000 to 0.500000", kRun, {}).find(
                "--alpha: 0.9 is out of range (0 to 0.5)"),
            std::string::npos);
}

}  // namespace
}  // namespace am::jobs
