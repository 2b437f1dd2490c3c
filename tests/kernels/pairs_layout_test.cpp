// The kPairs64 execution layout of bf16 weights (kernels/formats/pairs_layout.h): an exact
// permutation of the GGUF bytes, convertible back, and read in place by the AVX-512 BF16 GEMM
// with the bits of the rows layout's GEMM for every M, including a decode's single row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "kernels/formats/pairs_layout.h"
#include "kernels/formats/weight_matrix.h"
#include "test_util.h"

namespace am::kernels {
namespace {

struct Shape3 {
  int64_t m, k, n;
};

// N below, at and past a strip (GGUF tail rows 0, 2, 6, 63); K past one chunk of the GEMM
// (2048 values) with a partial last chunk; M of a decode, under the GEMM's tile, at it and past.
constexpr Shape3 kShapes[] = {{1, 64, 64},   {3, 130, 66},   {1, 4200, 134}, {7, 4200, 200},
                              {8, 96, 127},  {70, 2050, 70}, {13, 4, 128},   {6, 2, 1}};

std::string describe(const Shape3& s) {
  return "M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n);
}

std::vector<uint8_t> gguf_bytes(const WeightMatrix& w) {
  std::vector<uint8_t> out(w.size_bytes());
  w.gguf_rows(out.data());
  return out;
}

TEST(PairsLayout, StripsAreExactPermutationsOfAnyBytes) {
  std::mt19937 gen(17);
  for (int64_t cols : {2, 10, 300}) {
    const std::size_t bytes = static_cast<std::size_t>(cols) * 2 * kPairsStripRows;
    std::vector<uint8_t> rows(bytes), strip(bytes), back(bytes);
    for (uint8_t& b : rows) b = static_cast<uint8_t>(gen());
    pair_strip(rows.data(), cols, strip.data());
    unpair_strip(strip.data(), cols, back.data(), static_cast<std::size_t>(cols) * 2);
    EXPECT_EQ(back, rows) << cols;
    if (cols == 2) {
      EXPECT_EQ(strip, rows) << "one pair per row: the strip is the rows";
      continue;
    }
    EXPECT_NE(strip, rows) << "it does move bytes";
    // Row 5's pair 1 is dword 5 of the strip's second unit.
    EXPECT_EQ(std::memcmp(strip.data() + (1 * kPairsStripRows + 5) * 4, rows.data() + 5 * cols * 2 + 4, 4), 0);
  }
  EXPECT_TRUE(pairs_supported(WeightFormat::kBF16, 64));
  EXPECT_FALSE(pairs_supported(WeightFormat::kBF16, 65)) << "odd K: no whole pairs";
  EXPECT_FALSE(pairs_supported(WeightFormat::kF16, 64));
}

TEST(PairsLayout, QuantizedAndAdoptedMatricesKeepGgufBytes) {
  ThreadPool pool(2);
  const ExecContext ctx{KernelPath::kScalar, &pool};
  for (const Shape3& s : kShapes) {
    const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 31, 0.02f);
    const WeightMatrix rows = WeightMatrix::quantize(w.view(), WeightFormat::kBF16, ctx);
    const WeightMatrix pairs = WeightMatrix::quantize(w.view(), WeightFormat::kBF16, ctx, WeightLayout::kPairs64);
    ASSERT_EQ(pairs.layout(), WeightLayout::kPairs64);
    ASSERT_EQ(pairs.size_bytes(), rows.size_bytes()) << "the layout keeps the size";
    EXPECT_EQ(pairs.grouped_rows(), s.n / kPairsStripRows * kPairsStripRows);
    const std::vector<uint8_t> want(rows.data(), rows.data() + rows.size_bytes());
    EXPECT_EQ(gguf_bytes(pairs), want) << describe(s);
    if (pairs.grouped_rows() > 0 && s.k > 2) {
      EXPECT_NE(std::memcmp(pairs.data(), rows.data(), rows.size_bytes()), 0) << describe(s);
    }
    const Result<WeightMatrix> adopted =
        WeightMatrix::from_bytes(WeightFormat::kBF16, s.n, s.k, want, WeightLayout::kPairs64);
    ASSERT_TRUE(adopted.ok()) << adopted.status().to_string();
    EXPECT_EQ(std::memcmp(adopted->data(), pairs.data(), pairs.size_bytes()), 0) << describe(s);
    const Tensor a = rows.dequantize(), b = pairs.dequantize();
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << describe(s);
    for (int64_t r : {int64_t{0}, s.n / 2, s.n - 1}) {
      std::vector<uint8_t> row(rows.row_bytes());
      pairs.gguf_row(r, row.data());
      EXPECT_EQ(std::memcmp(row.data(), want.data() + rows.row_bytes() * r, row.size()), 0) << describe(s) << " row " << r;
    }
  }
}

TEST(PairsLayout, TheBf16GemmReadsItInPlaceWithTheBitsOfTheRowsLayout) {
  if (!kernel_path_available(KernelPath::kAvx512) || !cpu_features().avx512bf16) {
    GTEST_SKIP() << "needs a CPU with AVX-512 BF16";
  }
  ThreadPool pool(2);
  const ExecContext ctx{KernelPath::kAvx512, &pool};
  uint32_t seed = 900;
  for (const Shape3& s : kShapes) {
    const Tensor x = testing::random_tensor(Shape{s.m, s.k}, seed++);
    const Tensor w = testing::random_tensor(Shape{s.n, s.k}, seed++, 0.02f);
    const Tensor bias = testing::random_tensor(Shape{s.n}, seed++, 0.02f);
    const WeightMatrix rows = WeightMatrix::quantize(w.view(), WeightFormat::kBF16, ctx);
    const WeightMatrix pairs = WeightMatrix::quantize(w.view(), WeightFormat::kBF16, ctx, WeightLayout::kPairs64);
    Tensor want(Shape{s.m, s.n}), got(Shape{s.m, s.n}), ref(Shape{s.m, s.n});
    testing::poison(got.view());
    matmul(x.view(), pairs, bias.data(), got.view(), ctx);
    ASSERT_TRUE(testing::all_finite(got.view())) << describe(s);
    matmul_reference(x.view(), rows, bias.data(), ref.view());
    // The same products of bf16 pairs, summed in another order than the scalar reference's.
    const Tensor wd = rows.dequantize();
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double mag = std::fabs(bias.data()[j]);
        for (int64_t p = 0; p < s.k; ++p) mag += std::fabs(static_cast<double>(x.row(i)[p]) * wd.row(j)[p]);
        ASSERT_NEAR(got.row(i)[j], ref.row(i)[j], 2e-5 * mag + 1e-6) << describe(s) << " at " << i << "," << j;
      }
    }
    // From the GEMM's row count on, the rows layout runs the same kernel on a panel built from
    // GGUF rows: the same bits.
    if (s.m >= kGemmMinRows) {
      matmul(x.view(), rows, bias.data(), want.view(), ctx);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.bytes()), 0) << describe(s);
    }
    // The scalar reference reads the layout through its GGUF rows, and so does matmul() called
    // on another path than the layout's (the scalar row kernel: the reference's bits).
    matmul_reference(x.view(), pairs, bias.data(), want.view());
    EXPECT_EQ(std::memcmp(want.data(), ref.data(), want.bytes()), 0) << describe(s);
    testing::poison(want.view());
    matmul(x.view(), pairs, bias.data(), want.view(), ExecContext{KernelPath::kScalar, &pool});
    EXPECT_EQ(std::memcmp(want.data(), ref.data(), want.bytes()), 0) << describe(s) << " on the scalar path";
  }
}

TEST(PairsLayout, TheCpuBackendPicksItForEvenKOnTheBf16PathAndDevicesGetGgufRows) {
  const bool bf16_path = kernel_path_available(KernelPath::kAvx512) && cpu_features().avx512bf16;
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx512, 128),
            bf16_path ? WeightLayout::kPairs64 : WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx512, 129), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx2, 128), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kF16, KernelPath::kAvx512, 128), WeightLayout::kRows);
  if (!bf16_path) GTEST_SKIP() << "needs a CPU with AVX-512 BF16 for the layer half";
  const Tensor w = testing::random_tensor(Shape{70, 200}, 7, 0.02f);
  ExecContext cpu{KernelPath::kAvx512, nullptr};
  ExecContext device = cpu;
  device.cpu_weights = false;
  const Linear on_cpu = Linear::create(w.clone(), Tensor(), WeightFormat::kBF16, cpu);
  const Linear on_device = Linear::create(w.clone(), Tensor(), WeightFormat::kBF16, device);
  EXPECT_EQ(on_cpu.weight_layout(), WeightLayout::kPairs64);
  ASSERT_EQ(on_device.weight_layout(), WeightLayout::kRows);
  const auto* raw = static_cast<const uint8_t*>(on_device.weight_data());
  EXPECT_EQ(gguf_bytes(*on_cpu.quantized_weight()), std::vector<uint8_t>(raw, raw + on_device.weight_data_bytes()));
  EXPECT_EQ(on_cpu.weight_bytes(), on_device.weight_bytes()) << "one copy, the size of the GGUF rows";
}

}  // namespace
}  // namespace am::kernels
