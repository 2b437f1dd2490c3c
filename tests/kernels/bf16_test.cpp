#include "kernels/formats/bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace am::kernels {
namespace {

TEST(Bf16, DecodingAppendsSixteenZeroBits) {
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_to_fp32(0x1234)), 0x12340000u);
}

TEST(Bf16, RoundsToNearestEvenOnTiesAndNearestOtherwise) {
  // 1 + 2^-8 is exactly between 1.0 (0x3F80, even) and 1 + 2^-7 (0x3F81): ties to even.
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);
  // Between 0x3F81 (odd) and 0x3F82: the tie goes up to even.
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3F807FFFu)), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(-1.0f), 0xBF80);
}

TEST(Bf16, RandomFloatsRoundToTheNearestRepresentable) {
  std::mt19937 gen(5);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7F7F0000u);  // finite, below the top binade
  for (int i = 0; i < 100000; ++i) {
    const float f = std::bit_cast<float>(bits(gen));
    const uint16_t h = fp32_to_bf16(f);
    const double down = bf16_to_fp32(h);
    ASSERT_LE(std::fabs(down - f), std::fabs(static_cast<double>(bf16_to_fp32(h + 1)) - f));
    if (h > 0) {
      ASSERT_LE(std::fabs(down - f), std::fabs(static_cast<double>(bf16_to_fp32(h - 1)) - f));
    }
  }
}

TEST(Bf16, HandlesSpecialsSubnormalsAndOverflow) {
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7F800001u)), 0x7FC0);  // signalling -> quiet
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0xFFC12345u)), 0xFFC1);  // sign and payload kept
  // The largest finite float rounds past the largest bf16 to inf.
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  // Subnormals round like any value (no flush to zero).
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x00018000u)), 0x0002);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x00010001u)), 0x0001);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, RowFunctionsMatchScalar) {
  std::vector<float> x = {1.0f, 3.14159f, -2.5e-40f, 65504.0f, -7.0e30f, 0.0f, 1e-3f};
  std::vector<uint16_t> h(x.size());
  fp32_to_bf16_row(x.data(), h.data(), static_cast<int64_t>(x.size()));
  std::vector<float> back(x.size());
  bf16_to_fp32_row(h.data(), back.data(), static_cast<int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], fp32_to_bf16(x[i]));
    EXPECT_EQ(back[i], round_to_bf16(x[i]));
  }
}

}  // namespace
}  // namespace am::kernels
