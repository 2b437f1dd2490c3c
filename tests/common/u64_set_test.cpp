// common/u64_set.h against std::unordered_set on seeded random values, and the edge values.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_set>

#include "common/u64_set.h"

namespace am {
namespace {

TEST(U64Set, AgreesWithUnorderedSetOnRandomValuesWithRepeats) {
  std::mt19937_64 rng(20261128);
  U64Set set;
  std::unordered_set<uint64_t> reference;
  for (int i = 0; i < 200000; ++i) {
    // Draws from a small range repeat often; the rest are fresh.
    const uint64_t v = (i % 3 == 0) ? rng() % 5000 : rng();
    EXPECT_EQ(set.insert(v), reference.insert(v).second) << "value " << v << " at " << i;
  }
  EXPECT_EQ(set.size(), reference.size());
  for (const uint64_t v : reference) EXPECT_TRUE(set.contains(v)) << v;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = rng();
    EXPECT_EQ(set.contains(v), reference.count(v) == 1) << v;
  }
}

TEST(U64Set, ZeroAndAllOnesAreValuesLikeAnyOther) {
  U64Set set;
  EXPECT_FALSE(set.contains(0));
  EXPECT_TRUE(set.insert(0));
  EXPECT_FALSE(set.insert(0));
  EXPECT_TRUE(set.contains(0));
  EXPECT_TRUE(set.insert(~uint64_t{0}));
  EXPECT_FALSE(set.insert(~uint64_t{0}));
  EXPECT_EQ(set.size(), 2u);
  EXPECT_FALSE(set.contains(1));
}

// Values that differ only in their high bits (multiples of 2^40), through several doublings of
// the table: every one kept once, none found twice.
TEST(U64Set, ValuesSharingTheirLowBitsAreAllKept) {
  U64Set set;
  for (uint64_t i = 1; i <= 50000; ++i) ASSERT_TRUE(set.insert(i << 40)) << i;
  for (uint64_t i = 1; i <= 50000; ++i) ASSERT_FALSE(set.insert(i << 40)) << i;
  EXPECT_EQ(set.size(), 50000u);
}

}  // namespace
}  // namespace am
