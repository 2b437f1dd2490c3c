#include "kernels/formats/weight_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/formats/weight_matrix.h"
#include "test_util.h"

namespace am::kernels {
namespace {

TEST(WeightFormat, EveryPrecisionNameMapsToItsFormatAndBack) {
  const std::pair<const char*, WeightFormat> names[] = {
      {"f32", WeightFormat::kF32},   {"f16", WeightFormat::kF16},   {"bf16", WeightFormat::kBF16},
      {"q8_0", WeightFormat::kQ8_0}, {"q4_0", WeightFormat::kQ4_0}, {"q4_1", WeightFormat::kQ4_1},
      {"q3_k", WeightFormat::kQ3_K}, {"q2_k", WeightFormat::kQ2_K}};
  for (const auto& [name, format] : names) {
    const std::optional<Precision> p = jobs::parse_precision(name);
    ASSERT_TRUE(p.has_value()) << name;
    const Result<WeightFormat> f = single_format(*p);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ(*f, format);
    EXPECT_EQ(weight_format_name(format), name);
    EXPECT_EQ(jobs::parse_weight_format(name), format);
  }
  EXPECT_EQ(all_weight_formats().size(), 8u);
  EXPECT_EQ(jobs::all_weight_formats().size(), 8u);
}

TEST(WeightFormat, UnknownNamesDoNotParse) {
  for (const char* name : {"q5_k", "F32", "", "q4_0 ", "int3"}) {
    EXPECT_FALSE(jobs::parse_precision(name).has_value()) << name;
    EXPECT_FALSE(jobs::parse_weight_format(name).has_value()) << name;
  }
  EXPECT_FALSE(jobs::parse_weight_format("mixed").has_value());   // a policy, not a format
}

TEST(WeightFormat, MixedIsARolePolicyNotAFormat) {
  const Result<WeightFormat> f = single_format(Precision::kMixed);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("format_for_role"), std::string::npos);

  auto role = [](TensorRole r) { return jobs::format_for_role(Precision::kMixed, r); };
  EXPECT_EQ(role(TensorRole::kAttention), WeightFormat::kQ8_0);
  EXPECT_EQ(role(TensorRole::kFeedForward), WeightFormat::kQ4_0);
  EXPECT_EQ(role(TensorRole::kEmbedding), WeightFormat::kQ8_0);
  EXPECT_EQ(role(TensorRole::kOutput), WeightFormat::kQ8_0);
  EXPECT_EQ(role(TensorRole::kOther), WeightFormat::kQ8_0);
  EXPECT_EQ(jobs::formats_of(Precision::kMixed),
            (std::vector<WeightFormat>{WeightFormat::kQ8_0, WeightFormat::kQ4_0}));
}

TEST(WeightFormat, UniformPrecisionsGiveEveryRoleTheSameFormat) {
  for (TensorRole r : jobs::all_tensor_roles()) {
    EXPECT_EQ(jobs::format_for_role(Precision::kQ4_1, r), WeightFormat::kQ4_1) << tensor_role_name(r);
    EXPECT_EQ(jobs::format_for_role(Precision::kBF16, r), WeightFormat::kBF16);
  }
  EXPECT_EQ(jobs::formats_of(Precision::kQ2_K), std::vector<WeightFormat>{WeightFormat::kQ2_K});
}

TEST(WeightFormat, GeometryMatchesGguf) {
  struct Row {
    WeightFormat f;
    int64_t block;
    std::size_t bytes;
    double bits;
  };
  for (const Row& r : {Row{WeightFormat::kF32, 1, 4, 32.0}, Row{WeightFormat::kF16, 1, 2, 16.0},
                       Row{WeightFormat::kBF16, 1, 2, 16.0}, Row{WeightFormat::kQ8_0, 32, 34, 8.5},
                       Row{WeightFormat::kQ4_0, 32, 18, 4.5}, Row{WeightFormat::kQ4_1, 32, 20, 5.0},
                       Row{WeightFormat::kQ2_K, 256, 84, 2.625},
                       Row{WeightFormat::kQ3_K, 256, 110, 3.4375}}) {
    EXPECT_EQ(weight_format_block_size(r.f), r.block) << weight_format_name(r.f);
    EXPECT_EQ(weight_format_block_bytes(r.f), r.bytes) << weight_format_name(r.f);
    EXPECT_DOUBLE_EQ(weight_format_bits_per_weight(r.f), r.bits) << weight_format_name(r.f);
    EXPECT_EQ(weight_format_is_block_quantized(r.f), r.block > 1);
  }
  EXPECT_EQ(weight_format_row_bytes(WeightFormat::kQ4_0, 33), 36u);   // padded to 2 blocks
  EXPECT_EQ(weight_format_row_bytes(WeightFormat::kQ3_K, 257), 220u);
  EXPECT_EQ(weight_format_row_bytes(WeightFormat::kBF16, 7), 14u);
}

TEST(WeightMatrix, FromBytesChecksTheSizeAndKeepsTheBytes) {
  std::vector<uint8_t> bytes(3 * 2 * 18);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  const Result<WeightMatrix> m = WeightMatrix::from_bytes(WeightFormat::kQ4_0, 3, 40, bytes);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->row_bytes(), 36u);
  EXPECT_EQ(m->q4_0_blocks().size(), 6u);
  EXPECT_EQ(std::memcmp(m->data(), bytes.data(), bytes.size()), 0);
  for (std::size_t i = 0; i < kWeightReadSlackBytes; ++i) EXPECT_EQ(m->data()[bytes.size() + i], 0);
  const Result<WeightMatrix> bad = WeightMatrix::from_bytes(WeightFormat::kQ4_0, 3, 65, bytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(WeightMatrix, QuantizedRowsEqualTheRowQuantizersOnEveryPath) {
  const Tensor w = testing::random_tensor(Shape{5, 300}, 8, 0.05f);
  for (WeightFormat f : all_weight_formats()) {
    const WeightMatrix ref = WeightMatrix::quantize(w.view(), f, ExecContext{KernelPath::kScalar, nullptr});
    ThreadPool pool(2);
    const WeightMatrix got = WeightMatrix::quantize(w.view(), f, ExecContext{best_kernel_path(), &pool});
    ASSERT_EQ(got.size_bytes(), 5 * weight_format_row_bytes(f, 300));
    EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size_bytes()), 0) << weight_format_name(f);
    std::vector<float> row(300);
    got.dequantize_row(2, row.data());
    double err = 0.0, sig = 0.0;
    for (int i = 0; i < 300; ++i) {
      err += std::pow(row[i] - w.row(2)[i], 2);
      sig += std::pow(w.row(2)[i], 2);
    }
    EXPECT_LT(err / sig, 0.2) << weight_format_name(f);
  }
}

}  // namespace
}  // namespace am::kernels
