#include "proximity/core/base/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

namespace proximity::core {
namespace {

TEST(ErrorCodeName, StableLowerCaseNames) {
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kInvalidArgument), "invalid_argument");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kNotFound), "not_found");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kParseError), "parse_error");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kResourceExhausted), "resource_exhausted");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kInternal), "internal");
}

TEST(ErrorCodeName, OutOfRangeValueDoesNotCrash) {
  EXPECT_NE(ErrorCodeName(static_cast<ErrorCode>(99)), nullptr);
  const std::set<std::string> names = {
      ErrorCodeName(ErrorCode::kInvalidArgument), ErrorCodeName(ErrorCode::kNotFound),
      ErrorCodeName(ErrorCode::kParseError),      ErrorCodeName(ErrorCode::kResourceExhausted),
      ErrorCodeName(ErrorCode::kInternal),        ErrorCodeName(static_cast<ErrorCode>(99))};
  EXPECT_EQ(names.size(), 6u);
}

TEST(Status, OkByDefault) {
  const Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "ok");
}

TEST(Status, ErrorToString) {
  const Status s = NotFound("mesh file not found: /a/b.stl");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not_found: mesh file not found: /a/b.stl");
  EXPECT_EQ(Status(InvalidArgument("x < 0")).ToString(), "invalid_argument: x < 0");
  EXPECT_EQ(Status(ParseError("")).ToString(), "parse_error: ");
  EXPECT_EQ(Status(Error{ErrorCode::kResourceExhausted, "too big"}).ToString(), "resource_exhausted: too big");
  EXPECT_EQ(Status(Error{}).ToString(), "internal: ");
}

TEST(Error, Helpers) {
  EXPECT_EQ(InvalidArgument("a").code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(NotFound("b").code, ErrorCode::kNotFound);
  EXPECT_EQ(ParseError("c").code, ErrorCode::kParseError);
  EXPECT_EQ(ParseError("c").message, "c");
}

TEST(Result, HoldsValueOrError) {
  Result<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), 42);
  EXPECT_TRUE(good.status().ok());
  good.value() = 7;
  EXPECT_EQ(good.value(), 7);

  const Result<int> bad = InvalidArgument("negative radius -1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "negative radius -1");
  EXPECT_EQ(bad.status().ToString(), "invalid_argument: negative radius -1");
}

TEST(Result, MovesValueOut) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

TEST(Result, ValueOrFallsBackOnError) {
  const Result<int> good = 3;
  EXPECT_EQ(good.value_or(-1), 3);
  const Result<int> bad = NotFound("no");
  EXPECT_EQ(bad.value_or(-1), -1);
  Result<std::unique_ptr<int>> moved = std::make_unique<int>(9);
  const std::unique_ptr<int> p = std::move(moved).value_or(nullptr);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 9);
  EXPECT_EQ(Result<std::unique_ptr<int>>(NotFound("no")).value_or(nullptr), nullptr);
}

TEST(Result, ErrorOfStringResultIsNotAValue) {
  const Result<std::string> r = Error{ErrorCode::kNotFound, "nothing"};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "nothing");
}

}  // namespace
}  // namespace proximity::core
