#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/formats/fp16.h"
#include "kernels/formats/blocks.h"
#include "test_util.h"

namespace am::kernels {
namespace {

template <typename Block>
std::vector<uint8_t> bytes_of(const std::vector<Block>& blocks) {
  std::vector<uint8_t> out(blocks.size() * sizeof(Block));
  std::memcpy(out.data(), blocks.data(), out.size());
  return out;
}

// GGUF packs element j in the low nibble of byte j and element j + 16 in the high nibble.
std::vector<uint8_t> pack(const std::vector<int>& q) {
  std::vector<uint8_t> qs(16);
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  return qs;
}

void append(std::vector<uint8_t>& out, std::initializer_list<uint8_t> header, const std::vector<int>& q) {
  out.insert(out.end(), header);
  const std::vector<uint8_t> qs = pack(q);
  out.insert(out.end(), qs.begin(), qs.end());
}

TEST(Q4Formats, BlocksHaveGgufSizesAndOffsets) {
  EXPECT_EQ(sizeof(BlockQ4_0), 18u);
  EXPECT_EQ(offsetof(BlockQ4_0, qs), 2u);
  EXPECT_EQ(sizeof(BlockQ4_1), 20u);
  EXPECT_EQ(offsetof(BlockQ4_1, m), 2u);
  EXPECT_EQ(offsetof(BlockQ4_1, qs), 4u);
}

TEST(Q4_0, QuantizesKnownRowToHandComputedBytes) {
  std::vector<float> row;
  std::vector<uint8_t> expected;
  // Block 0: the largest magnitude is -8 (first), so d = -8 / -8 = 1 (0x3C00) and
  // q = min(15, trunc(x + 8.5)).
  for (int j = 0; j < 16; ++j) row.push_back(static_cast<float>(j - 8));
  for (float v : {0.49f, 0.5f, -0.5f, -0.51f, 2.5f, 3.5f, 7.4f, 7.6f, -7.6f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, -1.f}) {
    row.push_back(v);
  }
  append(expected, {0x00, 0x3C},
         {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
          8, 9, 8, 7, 11, 12, 15, 15, 0, 9, 10, 11, 12, 13, 14, 7});
  // Block 1: the largest magnitude is +16 (its first occurrence, before -16), so d = -2
  // (0xC000), id = -0.5 and the positive extreme lands on quant 0; -15 and -16 clamp at 15.
  const std::vector<float> b1 = {1, -1, 3, -3, 0, 16, 2.9f, -15, 0, 0, 0, 0, 0, 0, 0, 0,
                                 15, -16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  row.insert(row.end(), b1.begin(), b1.end());
  append(expected, {0x00, 0xC0},
         {8, 9, 7, 10, 8, 0, 7, 15, 8, 8, 8, 8, 8, 8, 8, 8,
          1, 15, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8});
  // Block 2: zeros: max stays 0, d = 0 / -8 = -0 (half 0x8000, as in GGUF) and every quant is
  // the zero point 8.
  row.insert(row.end(), 32, 0.0f);
  append(expected, {0x00, 0x80}, std::vector<int>(32, 8));
  // Block 3: a partial block of 4 (K = 100), zero-padded: max -4 -> d = 0.5 (0x3800), id = 2.
  row.insert(row.end(), {2.0f, -4.0f, 1.0f, 0.5f});
  std::vector<int> q3(32, 8);
  q3[0] = 12;  // 4 + 8.5
  q3[1] = 0;   // -8 + 8.5
  q3[2] = 10;  // 2 + 8.5
  q3[3] = 9;   // 1 + 8.5
  append(expected, {0x00, 0x38}, q3);
  ASSERT_EQ(row.size(), 100u);

  std::vector<BlockQ4_0> blocks(4);
  quantize_row_q4_0(row.data(), blocks.data(), 100);
  EXPECT_EQ(bytes_of(blocks), expected);

  std::vector<float> back(101, 42.0f);
  dequantize_row_q4_0(blocks.data(), back.data(), 100);
  EXPECT_EQ(back[0], -8.0f);
  EXPECT_EQ(back[32 + 5], 16.0f);   // quant 0 -> (0 - 8) * -2
  EXPECT_EQ(back[96 + 1], -4.0f);
  EXPECT_EQ(back[100], 42.0f) << "decoding must not write past k";
}

TEST(Q4_1, QuantizesKnownRowToHandComputedBytes) {
  // min -1, max 2: d = 3 / 15 = 0.2 (half 0x3266), m = -1 (0xBC00), id = 5 and
  // q = min(15, trunc((x + 1) * 5 + 0.5)); the values sit at x = -1 + t / 5.
  const std::vector<float> t = {0,   15,  5,   7.3f, 2.2f, 11.9f, 0.4f, 14.6f, 3.6f,  9.1f, 12.45f,
                                1.05f, 6.7f, 10.2f, 13.8f, 8.3f, 4.4f, 0.6f, 2.7f,  14.2f, 5.3f, 7.7f,
                                9.9f, 11.2f, 12.8f, 3.2f, 6.1f, 8.8f, 10.6f, 13.3f, 1.9f, 0.2f};
  std::vector<float> row;
  for (float v : t) row.push_back(static_cast<float>(-1.0 + 0.2 * v));
  std::vector<uint8_t> expected;
  append(expected, {0x66, 0x32, 0x00, 0xBC},
         {0, 15, 5, 7, 2, 12, 0, 15, 4, 9, 12, 1, 7, 10, 14, 8,
          4, 1, 3, 14, 5, 8, 10, 11, 13, 3, 6, 9, 11, 13, 2, 0});
  // A partial second block (K = 40): 8 values and 24 zero pads. min -3, max 0 (a pad):
  // d = 0.2 (0x3266), m = -3 (0xC200), q = trunc((x + 3) * 5 + 0.5).
  const std::vector<float> tail = {-3.0f, -2.0f, -1.0f, -0.5f, -2.95f, -1.75f, -0.1f, -2.5f};
  row.insert(row.end(), tail.begin(), tail.end());
  std::vector<int> q(32, 15);  // the pads: (0 + 3) * 5 + 0.5 = 15.5
  const std::vector<int> tq = {0, 5, 10, 13, 0, 6, 15, 3};  // -2.95 -> 0.75, -1.75 -> 6.75, -0.1 -> 15
  std::copy(tq.begin(), tq.end(), q.begin());
  append(expected, {0x66, 0x32, 0x00, 0xC2}, q);

  std::vector<BlockQ4_1> blocks(2);
  quantize_row_q4_1(row.data(), blocks.data(), 40);
  EXPECT_EQ(bytes_of(blocks), expected);

  std::vector<float> back(40);
  dequantize_row_q4_1(blocks.data(), back.data(), 40);
  EXPECT_EQ(back[0], -1.0f);
  EXPECT_FLOAT_EQ(back[1], 15 * fp16_to_fp32(0x3266) - 1.0f);
}

TEST(Q4Formats, RoundTripErrorStaysWithinOneStep) {
  const int64_t k = 32 * 7 + 5;
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<float> x = testing::random_normal(k, seed);
    x[40] = -6.0f;  // an outlier in one block
    std::vector<BlockQ4_0> q0((k + 31) / 32);
    std::vector<BlockQ4_1> q1((k + 31) / 32);
    quantize_row_q4_0(x.data(), q0.data(), k);
    quantize_row_q4_1(x.data(), q1.data(), k);
    std::vector<float> r0(k), r1(k);
    dequantize_row_q4_0(q0.data(), r0.data(), k);
    dequantize_row_q4_1(q1.data(), r1.data(), k);
    for (int64_t i = 0; i < k; ++i) {
      const float d0 = std::fabs(fp16_to_fp32(q0[i / 32].d));
      const float d1 = fp16_to_fp32(q1[i / 32].d);
      // Nearest of 16 levels (half a step), except that the side opposite the extreme ends at
      // 7 steps and clamps (a full step); the half-precision scale adds <= 8 * 2^-11 d.
      ASSERT_LE(std::fabs(x[i] - r0[i]), d0 * (1.0f + 8.0f / 2048.0f) + 1e-6f) << i;
      // Asymmetric: half a step plus the half-precision rounding of d and m.
      const float m = std::fabs(fp16_to_fp32(q1[i / 32].m));
      ASSERT_LE(std::fabs(x[i] - r1[i]), d1 * 0.5f + d1 * 15.0f / 2048.0f + m / 2048.0f + 1e-6f) << i;
    }
  }
}

TEST(Q4Formats, NonFiniteBlocksDecodeToNaN) {
  std::vector<float> x(64, 1.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[40] = -std::numeric_limits<float>::infinity();
  std::vector<BlockQ4_0> q0(2);
  std::vector<BlockQ4_1> q1(2);
  quantize_row_q4_0(x.data(), q0.data(), 64);
  quantize_row_q4_1(x.data(), q1.data(), 64);
  std::vector<float> r(64);
  dequantize_row_q4_0(q0.data(), r.data(), 64);
  for (float v : r) EXPECT_TRUE(std::isnan(v));
  dequantize_row_q4_1(q1.data(), r.data(), 64);
  for (float v : r) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace am::kernels
