#include "kernels/formats/quantized_activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/formats/bf16.h"
#include "test_util.h"

namespace am::kernels {
namespace {

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum;
  std::vector<int16_t> bsum;
};

Quantized quantize(const std::vector<float>& x, int64_t block, KernelPath path) {
  const int64_t k = static_cast<int64_t>(x.size());
  const int64_t blocks = (k + block - 1) / block;
  Quantized r{std::vector<int8_t>(blocks * block, 99), std::vector<float>(blocks, -1.0f),
              std::vector<int32_t>(blocks, -1), std::vector<int16_t>(blocks * block / 16, -1)};
  quantize_activation_row(x.data(), k, block, r.q.data(), r.d.data(), r.sum.data(),
                          block == kActBlock256 ? r.bsum.data() : nullptr, path);
  return r;
}

std::vector<float> edge_case_row() {
  std::vector<float> row = testing::random_normal(256 * 2, 12);
  // Exact ties at +-(n + 0.5) with d = 1: round half away from zero.
  row[3] = 127.0f;
  row[4] = 2.5f;
  row[5] = -2.5f;
  // A block of zeros and a subnormal block (1/d overflows; 0 * inf must give 0).
  for (int j = 256; j < 288; ++j) row[j] = 0.0f;
  for (int j = 288; j < 320; ++j) row[j] = j % 3 == 0 ? 0.0f : (j - 300) * 1e-40f;
  row.push_back(std::numeric_limits<float>::quiet_NaN());  // a partial, non-finite last block
  for (int j = 0; j < 20; ++j) row.push_back(0.1f * j);
  return row;
}

TEST(ActivationQuantization, EveryPathGivesIdenticalBytes) {
  const std::vector<float> row = edge_case_row();
  for (int64_t block : {kActBlock32, kActBlock256}) {
    const Quantized ref = quantize(row, block, KernelPath::kScalar);
    for (KernelPath path : available_kernel_paths()) {
      const Quantized got = quantize(row, block, path);
      EXPECT_EQ(got.q, ref.q) << kernel_path_name(path) << " block " << block;
      EXPECT_EQ(got.sum, ref.sum) << kernel_path_name(path);
      EXPECT_EQ(got.bsum, ref.bsum) << kernel_path_name(path);
      ASSERT_EQ(got.d.size(), ref.d.size());
      for (std::size_t b = 0; b < ref.d.size(); ++b) {
        if (std::isnan(ref.d[b])) {
          EXPECT_TRUE(std::isnan(got.d[b]));
        } else {
          EXPECT_EQ(got.d[b], ref.d[b]) << kernel_path_name(path) << " block " << b;
        }
      }
    }
  }
}

TEST(ActivationQuantization, ScalesSumsAndPaddingFollowTheDefinition) {
  std::vector<float> x(40);
  for (int j = 0; j < 40; ++j) x[j] = static_cast<float>(j - 20) * 0.25f;
  const Quantized r = quantize(x, kActBlock32, KernelPath::kScalar);
  // Block 0: amax 5 -> d = 5 / 127; block 1 (8 values, 24 zero pads): amax 4.75.
  EXPECT_EQ(r.d[0], 5.0f / 127.0f);
  EXPECT_EQ(r.d[1], 4.75f / 127.0f);
  EXPECT_EQ(r.q[0], -127);
  EXPECT_EQ(r.q[39], 127);
  for (int j = 40; j < 64; ++j) EXPECT_EQ(r.q[j], 0) << "padding must quantize to 0";
  int32_t s0 = 0, s1 = 0;
  for (int j = 0; j < 32; ++j) s0 += r.q[j];
  for (int j = 32; j < 64; ++j) s1 += r.q[j];
  EXPECT_EQ(r.sum[0], s0);
  EXPECT_EQ(r.sum[1], s1);
  for (int j = 0; j < 40; ++j) {
    EXPECT_LE(std::fabs(r.d[j / 32] * r.q[j] - x[j]), r.d[j / 32] / 2 * 1.0001f) << j;
  }
}

TEST(ActivationQuantization, NonFiniteBlocksGetNanScaleAndZeroQuants) {
  const std::vector<float> row = edge_case_row();
  const Quantized r = quantize(row, kActBlock32, KernelPath::kScalar);
  const std::size_t last = r.d.size() - 1;
  EXPECT_TRUE(std::isnan(r.d[last]));
  EXPECT_EQ(r.sum[last], 0);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(r.q[last * 32 + j], 0);
  EXPECT_EQ(r.d[256 / 32], 0.0f);  // the zero block
}

TEST(PreparedActivations, Bf16KindRoundsRowsToNearestEven) {
  const Tensor x = testing::random_tensor(Shape{3, 17}, 13);
  PreparedActivations a;
  a.prepare(x.view(), WeightFormat::kBF16, ExecContext{});
  ASSERT_EQ(a.kind(), ActivationKind::kBf16);
  for (int64_t m = 0; m < 3; ++m) {
    const ActRow r = a.row(m);
    for (int64_t i = 0; i < 17; ++i) EXPECT_EQ(r.bf16[i], fp32_to_bf16(x.row(m)[i]));
  }
}

}  // namespace
}  // namespace am::kernels
