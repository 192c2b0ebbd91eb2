#include "kiln/base/status.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(Status, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
}

TEST(Status, ContextPrefixesTheMessage) {
  Status status = out_of_memory("no room").with_context("allocate");
  EXPECT_EQ(status.code(), StatusCode::kOutOfMemory);
  EXPECT_EQ(status.message(), "allocate: no room");
}

TEST(StatusOr, HoldsValueOrStatus) {
  StatusOr<int> value(7);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value.value(), 7);
  StatusOr<int> failure(invalid_argument("bad"));
  EXPECT_FALSE(failure.ok());
  EXPECT_EQ(failure.status().message(), "bad");
}

}  // namespace
}  // namespace kiln
