// common/exit_codes.h: the exit-code table and the statuses -> exit code rule (DECISIONS.md).
#include <gtest/gtest.h>

#include "common/exit_codes.h"

namespace am {
namespace {

TEST(ExitCodes, TheTableMatchesDecisions) {
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitJobsFailed, 1);
  EXPECT_EQ(kExitUsage, 2);
  EXPECT_EQ(kExitInterrupted, 3);
  EXPECT_EQ(kExitInfrastructure, 4);
  const std::string help = exit_code_help();
  for (const char* line : {"  0  ", "  1  ", "  2  ", "  3  ", "  4  "}) {
    EXPECT_NE(help.find(line), std::string::npos) << line;
  }
}

TEST(ExitCodes, AcceptedStatusesExitZero) {
  const FailOnSet def = default_fail_on();
  EXPECT_EQ(exit_code_for_statuses({}, def), kExitOk);
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kPass, 3},
                                    {ResultStatus::kDegraded, 1},
                                    {ResultStatus::kUnsupported, 2},
                                    {ResultStatus::kSkipped, 4}},
                                   def),
            kExitOk);
}

TEST(ExitCodes, EachTestFailureStatusExitsOneByDefault) {
  const FailOnSet def = default_fail_on();
  for (ResultStatus s : {ResultStatus::kFail, ResultStatus::kCrash, ResultStatus::kTimeout, ResultStatus::kOom,
                         ResultStatus::kError}) {
    EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kPass, 5}, {s, 1}}, def), kExitJobsFailed) << s;
  }
  EXPECT_EQ(def.size(), 5u);
}

TEST(ExitCodes, LostExitsFourEvenBesideFailures) {
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kLost, 1}}, default_fail_on()), kExitInfrastructure);
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kFail, 3}, {ResultStatus::kLost, 1}}, default_fail_on()),
            kExitInfrastructure);
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kLost, 0}}, default_fail_on()), kExitOk);
}

TEST(ExitCodes, FailOnChoosesTheStatusesThatExitOne) {
  auto only_fail = parse_fail_on("fail");
  ASSERT_TRUE(only_fail.ok()) << only_fail.status().message();
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kOom, 2}}, *only_fail), kExitOk);
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kFail, 1}}, *only_fail), kExitJobsFailed);
  auto strict = parse_fail_on(" degraded , skipped,unsupported, ");
  ASSERT_TRUE(strict.ok()) << strict.status().message();
  EXPECT_EQ(*strict, (FailOnSet{ResultStatus::kDegraded, ResultStatus::kSkipped, ResultStatus::kUnsupported}));
  EXPECT_EQ(exit_code_for_statuses({{ResultStatus::kSkipped, 1}}, *strict), kExitJobsFailed);
}

TEST(ExitCodes, FailOnRefusesUnknownEmptyAndInfrastructureNames) {
  for (const char* bad : {"", "passed", "fail,,crash", "fail,bogus", "lost", "interrupted"}) {
    auto r = parse_fail_on(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--fail-on"), std::string::npos);
    EXPECT_NE(r.status().message().find("pass, degraded, fail"), std::string::npos) << r.status().message();
  }
  EXPECT_NE(parse_fail_on("fail,bogus").status().message().find("'bogus'"), std::string::npos);
  EXPECT_NE(parse_fail_on("lost").status().message().find("exits 4"), std::string::npos);
}

TEST(ExitCodes, InputErrorsAreUsageAndTheRestInfrastructure) {
  EXPECT_EQ(exit_code_for_error(invalid_argument("x")), kExitUsage);
  EXPECT_EQ(exit_code_for_error(not_found("x")), kExitUsage);
  EXPECT_EQ(exit_code_for_error(failed_precondition("x")), kExitUsage);
  EXPECT_EQ(exit_code_for_error(io_error("x")), kExitInfrastructure);
  EXPECT_EQ(exit_code_for_error(unavailable("x")), kExitInfrastructure);
  EXPECT_EQ(exit_code_for_error(internal_error("x")), kExitInfrastructure);
}

}  // namespace
}  // namespace am
