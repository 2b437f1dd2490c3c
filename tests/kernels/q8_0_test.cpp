#include "kernels/formats/q8_0.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/formats/fp16.h"
#include "kernels/formats/weight_matrix.h"
#include "test_util.h"

namespace am::kernels {
namespace {

std::vector<uint8_t> bytes_of(const std::vector<BlockQ8_0>& blocks) {
  std::vector<uint8_t> out(blocks.size() * sizeof(BlockQ8_0));
  std::memcpy(out.data(), blocks.data(), out.size());
  return out;
}

// Appends one block's bytes: the little-endian half scale, then the 32 int8 values.
void append_block(std::vector<uint8_t>& out, uint8_t d_lo, uint8_t d_hi, std::vector<int> q) {
  q.resize(32, 0);
  out.push_back(d_lo);
  out.push_back(d_hi);
  for (int v : q) out.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
}

TEST(Q8_0, BlockIs34BytesLikeGguf) {
  EXPECT_EQ(sizeof(BlockQ8_0), 34u);
  EXPECT_EQ(offsetof(BlockQ8_0, qs), 2u);
  EXPECT_EQ(q8_0_blocks_per_row(32), 1);
  EXPECT_EQ(q8_0_blocks_per_row(33), 2);
  EXPECT_EQ(q8_0_row_bytes(100), 4u * 34u);
}

TEST(Q8_0, QuantizesKnownRowToHandComputedBytes) {
  // Block 0: amax 127 -> d = 1.0 (half 0x3C00), q = round-half-away(x).
  const std::vector<float> b0 = {127, -127, 2.5f, -2.5f, 0.49f, -0.5f, 1.5f, 0,  3.2f, -3.7f, -10,
                                 -9,  -8,   -7,   -6,    -5,    -4,    -3,   -2, -1,   0,     1,
                                 2,   3,    4,    5,     6,     7,     8,    9,  10,   11};
  const std::vector<int> q0 = {127, -127, 3,  -3, 0, -1, 2, 0, 3, -4, -10, -9, -8, -7, -6, -5,
                               -4,  -3,   -2, -1, 0, 1,  2, 3, 4, 5,  6,   7,  8,  9,  10, 11};
  std::vector<float> row = b0;
  // Block 1: the same values halved -> amax 63.5, d = 0.5 (0x3800), identical q.
  for (float v : b0) row.push_back(v / 2);
  // Block 2: all zeros -> d = 0, q = 0.
  row.insert(row.end(), 32, 0.0f);
  // Block 3: a partial block of 5 (K = 101), zero-padded: amax 15.875 -> d = 0.125 (0x3000),
  // q = round(8x) = {127, -8.5 -> -9, 0.5 -> 1, 24, -1.5 -> -2}.
  row.insert(row.end(), {15.875f, -1.0625f, 0.0625f, 3.0f, -0.1875f});
  ASSERT_EQ(row.size(), 101u);

  std::vector<uint8_t> expected;
  append_block(expected, 0x00, 0x3C, q0);
  append_block(expected, 0x00, 0x38, q0);
  append_block(expected, 0x00, 0x00, {});
  append_block(expected, 0x00, 0x30, {127, -9, 1, 24, -2});

  for (KernelPath path : available_kernel_paths()) {
    std::vector<BlockQ8_0> blocks(4);
    quantize_row_q8_0(row.data(), blocks.data(), 101, path);
    EXPECT_EQ(bytes_of(blocks), expected) << kernel_path_name(path);
  }
  std::vector<BlockQ8_0> ref(4);
  quantize_row_q8_0_ref(row.data(), ref.data(), 101);
  EXPECT_EQ(bytes_of(ref), expected);
}

TEST(Q8_0, PartialLastBlockEqualsZeroPaddedRow) {
  const std::vector<float> x = testing::random_normal(45, 7);
  std::vector<float> padded = x;
  padded.resize(64, 0.0f);
  std::vector<BlockQ8_0> a(2), b(2);
  quantize_row_q8_0_ref(x.data(), a.data(), 45);
  quantize_row_q8_0_ref(padded.data(), b.data(), 64);
  EXPECT_EQ(bytes_of(a), bytes_of(b));
  std::vector<float> decoded(64, 42.0f);
  dequantize_row_q8_0(a.data(), decoded.data(), 45);
  EXPECT_EQ(decoded[45], 42.0f) << "decoding must not write past k";
}

TEST(Q8_0, RoundTripErrorIsHalfAStepPlusScaleRounding) {
  const int64_t k = 257;
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<float> x = testing::random_normal(k, seed, 0.5f);
    x[17] = 9.0f;  // an outlier widens one block's step
    std::vector<BlockQ8_0> q(q8_0_blocks_per_row(k));
    quantize_row_q8_0_ref(x.data(), q.data(), k);
    std::vector<float> xr(k);
    dequantize_row_q8_0(q.data(), xr.data(), k);
    for (int64_t i = 0; i < k; ++i) {
      const int64_t b = i / 32;
      float amax = 0.0f;
      for (int64_t j = b * 32; j < std::min(k, b * 32 + 32); ++j)
        amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127.0f;           // the exact step
      const float d16 = fp16_to_fp32(q[b].d);  // the stored step
      const int qi = q[b].qs[i % 32];
      // q is the nearest integer to x / d (half a step of rounding error)...
      ASSERT_LE(std::fabs(x[i] - d * qi), d / 2 * (1 + 1e-5f)) << "i=" << i;
      // ...and storing d in half precision adds at most |q| * |d - d16| <= 127 * 2^-11 * d.
      ASSERT_LE(std::fabs(x[i] - xr[i]), d16 / 2 + 127.0f * std::ldexp(d, -11) + 1e-7f)
          << "i=" << i;
    }
  }
}

TEST(Q8_0, EveryPathQuantizesByteIdenticallyIncludingEdgeCases) {
  std::vector<float> row;
  const std::vector<float> normal = testing::random_normal(32 * 3, 11);
  row.insert(row.end(), normal.begin(), normal.end());
  // Exact ties at every integer + 0.5 (d = 1): round half away from zero.
  row.push_back(127.0f);
  for (int j = 1; j < 32; ++j) row.push_back(static_cast<float>(j * 8 - 128) + 0.5f);
  // Zeros, signed zero.
  for (int j = 0; j < 32; ++j) row.push_back(j % 2 ? -0.0f : 0.0f);
  // Subnormal amax: 1/d overflows to inf; zeros give 0 * inf and must become 0.
  for (int j = 0; j < 32; ++j) row.push_back(j % 3 == 0 ? 0.0f : (j - 16) * 1e-40f);
  // NaN and Inf blocks.
  for (int j = 0; j < 32; ++j)
    row.push_back(j == 5 ? std::numeric_limits<float>::quiet_NaN() : 1.0f);
  for (int j = 0; j < 32; ++j)
    row.push_back(j == 9 ? -std::numeric_limits<float>::infinity() : 1.0f);
  // Huge: the scale overflows half precision (a format limit GGUF shares).
  for (int j = 0; j < 32; ++j) row.push_back((j - 16) * 1e30f);
  // Partial tail.
  for (int j = 0; j < 19; ++j) row.push_back(static_cast<float>(j) * 0.37f - 3.0f);
  const int64_t k = static_cast<int64_t>(row.size());

  std::vector<BlockQ8_0> ref(q8_0_blocks_per_row(k));
  quantize_row_q8_0_ref(row.data(), ref.data(), k);
  for (KernelPath path : available_kernel_paths()) {
    std::vector<BlockQ8_0> got(ref.size());
    std::memset(got.data(), 0xAB, got.size() * sizeof(BlockQ8_0));
    quantize_row_q8_0(row.data(), got.data(), k, path);
    const std::vector<uint8_t> rb = bytes_of(ref), gb = bytes_of(got);
    for (std::size_t i = 0; i < rb.size(); ++i) {
      ASSERT_EQ(rb[i], gb[i]) << kernel_path_name(path) << " byte " << i << " (block " << i / 34
                              << ")";
    }
  }
  // The tie block, by hand: -127.5 is below amax so it cannot occur; check two entries.
  EXPECT_EQ(ref[3].qs[1], -120);  // -119.5 -> -120
  EXPECT_EQ(ref[3].qs[20], 33);   // 32.5 -> 33
  // The NaN and Inf blocks poison their scale so a dot product through them is NaN.
  EXPECT_EQ(ref[6].d, 0x7E00);
  EXPECT_EQ(ref[7].d, 0x7E00);
  std::vector<float> decoded(32);
  dequantize_row_q8_0(&ref[6], decoded.data(), 32);
  EXPECT_TRUE(std::isnan(decoded[0]));
  // Subnormal block: finite, within range.
  for (int j = 0; j < 32; ++j) EXPECT_LE(std::abs(ref[5].qs[j]), 127);
}

TEST(Q8_0, MatrixQuantizesEveryRowAndDequantizesBack) {
  Tensor w = testing::random_tensor(Shape{9, 70}, 5, 0.02f);
  ThreadPool pool(3);
  const WeightMatrix q =
      WeightMatrix::quantize(w.view(), WeightFormat::kQ8_0, ExecContext{best_kernel_path(), &pool});
  EXPECT_EQ(q.rows(), 9);
  EXPECT_EQ(q.cols(), 70);
  EXPECT_EQ(q.row_bytes(), 3u * 34u);
  EXPECT_EQ(q.size_bytes(), 9u * 3u * 34u);
  ASSERT_EQ(q.q8_0_blocks().size(), 27u);
  EXPECT_TRUE(q.q4_0_blocks().empty());
  for (int64_t r = 0; r < 9; ++r) {
    std::vector<BlockQ8_0> ref(3);
    quantize_row_q8_0_ref(w.row(r), ref.data(), 70);
    EXPECT_EQ(std::memcmp(ref.data(), q.row_data(r), 3 * sizeof(BlockQ8_0)), 0) << "row " << r;
    EXPECT_EQ(std::memcmp(ref.data(), &q.q8_0_blocks()[3 * r], 3 * sizeof(BlockQ8_0)), 0);
  }
  const Tensor back = q.dequantize();
  ASSERT_EQ(back.shape(), w.shape());
  double err = 0.0, ref = 0.0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    err += std::pow(back.data()[i] - w.data()[i], 2);
    ref += std::pow(w.data()[i], 2);
  }
  EXPECT_GT(err, 0.0);
  EXPECT_LT(err / ref, 1e-4);  // 8-bit blocks of Gaussian data: ~3e-5
}

}  // namespace
}  // namespace am::kernels
