// Status/Result: the error currency at module boundaries.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "common/status.h"

namespace am {
namespace {

TEST(Status, DefaultIsOkWithEmptyMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.to_string(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = invalid_argument("plan.toml:3: unknown precision 'q5'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "InvalidArgument: plan.toml:3: unknown precision 'q5'");
  EXPECT_EQ(resource_exhausted("x").to_string(), "ResourceExhausted: x");
  EXPECT_EQ(unavailable("x").code(), StatusCode::kUnavailable);
  EXPECT_EQ(timeout_error("x").code(), StatusCode::kTimeout);
}

TEST(Status, WithContextPrefixesOnlyErrors) {
  Status s = not_found("model 'x'").with_context("plan.toml:7");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "plan.toml:7: model 'x'");
  EXPECT_TRUE(Status::Ok().with_context("ignored").ok());
  EXPECT_EQ(Status::Ok().with_context("ignored").message(), "");
}

TEST(Status, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    EXPECT_NE(status_code_name(static_cast<StatusCode>(c)), "Unknown") << c;
  }
  EXPECT_EQ(status_code_name(StatusCode::kIoError), "IoError");
}

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Result<int> doubled(int v) {
  AM_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  AM_RETURN_IF_ERROR(parse_positive(a).status());
  AM_RETURN_IF_ERROR(parse_positive(b).status());
  return Status::Ok();
}

TEST(Result, HoldsValueOrError) {
  Result<int> ok = parse_positive(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  EXPECT_TRUE(ok.status().ok());
  Result<int> bad = parse_positive(-2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "not positive: -2");
}

TEST(Result, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*doubled(21), 42);
  EXPECT_EQ(doubled(0).status().message(), "not positive: 0");
  EXPECT_TRUE(check_both(1, 2).ok());
  EXPECT_EQ(check_both(1, -5).message(), "not positive: -5");
  EXPECT_EQ(check_both(-1, -5).message(), "not positive: -1");
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
  EXPECT_EQ(r->get(), nullptr);  // NOLINT: moved-from is valid and empty for unique_ptr
}

}  // namespace
}  // namespace am
