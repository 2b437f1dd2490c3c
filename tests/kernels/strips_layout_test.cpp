// The kStrips64 execution layout of f16 and bf16 weights (kernels/formats/strips_layout.h): an
// exact permutation of the GGUF bytes, convertible back, and read in place by the AVX-512 GEMM
// with the bits of the rows layout's GEMM for every M from the GEMM's row count, and near the
// scalar reference for every M, a decode's single row included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "kernels/formats/strips_layout.h"
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
// f16 strips take any K: odd ones, and one past a chunk.
constexpr Shape3 kOddKShapes[] = {{1, 63, 64}, {9, 2049, 130}, {2, 1, 65}};

constexpr WeightFormat kFormats[] = {WeightFormat::kF16, WeightFormat::kBF16};

std::string describe(WeightFormat f, const Shape3& s) {
  return std::string(weight_format_name(f)) + " M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
         " N=" + std::to_string(s.n);
}

std::vector<Shape3> shapes_of(WeightFormat f) {
  std::vector<Shape3> out(std::begin(kShapes), std::end(kShapes));
  if (f == WeightFormat::kF16) out.insert(out.end(), std::begin(kOddKShapes), std::end(kOddKShapes));
  return out;
}

std::vector<uint8_t> gguf_bytes(const WeightMatrix& w) {
  std::vector<uint8_t> out(w.size_bytes());
  w.gguf_rows(out.data());
  return out;
}

bool strips_gemm_available(WeightFormat f) {
  return kernel_path_available(KernelPath::kAvx512) && (f == WeightFormat::kF16 || cpu_features().avx512bf16);
}

TEST(StripsLayout, StripsAreExactPermutationsOfAnyBytes) {
  std::mt19937 gen(17);
  for (WeightFormat f : kFormats) {
    const std::size_t unit = strip_unit_bytes(f);
    for (int64_t cols : {2, 10, 300}) {
      const std::size_t bytes = static_cast<std::size_t>(cols) * 2 * kStripRows;
      std::vector<uint8_t> rows(bytes), strip(bytes), back(bytes);
      for (uint8_t& b : rows) b = static_cast<uint8_t>(gen());
      to_strip(f, rows.data(), cols, strip.data());
      from_strip(f, strip.data(), cols, back.data(), static_cast<std::size_t>(cols) * 2);
      EXPECT_EQ(back, rows) << cols;
      if (static_cast<std::size_t>(cols) * 2 == unit) {
        EXPECT_EQ(strip, rows) << "one unit per row: the strip is the rows";
        continue;
      }
      EXPECT_NE(strip, rows) << "it does move bytes";
      // Row 5's unit 1 is unit 5 of the strip's second run of 64 units.
      EXPECT_EQ(std::memcmp(strip.data() + (1 * kStripRows + 5) * unit, rows.data() + 5 * cols * 2 + unit, unit), 0)
          << weight_format_name(f);
    }
  }
  EXPECT_EQ(strip_unit_bytes(WeightFormat::kBF16), 4u) << "a pair of k-values for vdpbf16ps";
  EXPECT_EQ(strip_unit_bytes(WeightFormat::kF16), 2u);
  EXPECT_EQ(strip_unit_bytes(WeightFormat::kQ8_0), 0u);
  EXPECT_TRUE(strips_supported(WeightFormat::kBF16, 64));
  EXPECT_FALSE(strips_supported(WeightFormat::kBF16, 65)) << "odd K: no whole pairs";
  EXPECT_TRUE(strips_supported(WeightFormat::kF16, 65));
  EXPECT_FALSE(strips_supported(WeightFormat::kQ8_0, 64));
}

TEST(StripsLayout, QuantizedAndAdoptedMatricesKeepGgufBytes) {
  ThreadPool pool(2);
  const ExecContext ctx{KernelPath::kScalar, &pool};
  for (WeightFormat f : kFormats) {
    for (const Shape3& s : shapes_of(f)) {
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 31, 0.02f);
      const WeightMatrix rows = WeightMatrix::quantize(w.view(), f, ctx);
      const WeightMatrix strips = WeightMatrix::quantize(w.view(), f, ctx, WeightLayout::kStrips64);
      ASSERT_EQ(strips.layout(), WeightLayout::kStrips64);
      ASSERT_EQ(strips.size_bytes(), rows.size_bytes()) << "the layout keeps the size";
      EXPECT_EQ(strips.grouped_rows(), s.n / kStripRows * kStripRows);
      const std::vector<uint8_t> want(rows.data(), rows.data() + rows.size_bytes());
      EXPECT_EQ(gguf_bytes(strips), want) << describe(f, s);
      if (strips.grouped_rows() > 0 && static_cast<std::size_t>(s.k) * 2 > strip_unit_bytes(f)) {
        EXPECT_NE(std::memcmp(strips.data(), rows.data(), rows.size_bytes()), 0) << describe(f, s);
      }
      const Result<WeightMatrix> adopted = WeightMatrix::from_bytes(f, s.n, s.k, want, WeightLayout::kStrips64);
      ASSERT_TRUE(adopted.ok()) << adopted.status().to_string();
      EXPECT_EQ(std::memcmp(adopted->data(), strips.data(), strips.size_bytes()), 0) << describe(f, s);
      const Tensor a = rows.dequantize(), b = strips.dequantize();
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << describe(f, s);
      for (int64_t r : {int64_t{0}, s.n / 2, s.n - 1}) {
        std::vector<uint8_t> row(rows.row_bytes());
        strips.gguf_row(r, row.data());
        EXPECT_EQ(std::memcmp(row.data(), want.data() + rows.row_bytes() * r, row.size()), 0)
            << describe(f, s) << " row " << r;
      }
    }
  }
}

TEST(StripsLayout, TheGemmReadsItInPlaceWithTheBitsOfTheRowsLayout) {
  ThreadPool pool(2);
  const ExecContext ctx{KernelPath::kAvx512, &pool};
  uint32_t seed = 900;
  int formats_run = 0;
  for (WeightFormat f : kFormats) {
    if (!strips_gemm_available(f)) continue;
    ++formats_run;
    for (const Shape3& s : shapes_of(f)) {
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, seed++);
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, seed++, 0.02f);
      const Tensor bias = testing::random_tensor(Shape{s.n}, seed++, 0.02f);
      const WeightMatrix rows = WeightMatrix::quantize(w.view(), f, ctx);
      const WeightMatrix strips = WeightMatrix::quantize(w.view(), f, ctx, WeightLayout::kStrips64);
      Tensor want(Shape{s.m, s.n}), got(Shape{s.m, s.n}), ref(Shape{s.m, s.n});
      testing::poison(got.view());
      matmul(x.view(), strips, bias.data(), got.view(), ctx);
      ASSERT_TRUE(testing::all_finite(got.view())) << describe(f, s);
      matmul_reference(x.view(), rows, bias.data(), ref.view());
      // The same exact products (bf16 pairs; f16 widened x f32), summed in another order than
      // the scalar reference's.
      const Tensor wd = rows.dequantize();
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          double mag = std::fabs(bias.data()[j]);
          for (int64_t p = 0; p < s.k; ++p) mag += std::fabs(static_cast<double>(x.row(i)[p]) * wd.row(j)[p]);
          ASSERT_NEAR(got.row(i)[j], ref.row(i)[j], 2e-5 * mag + 1e-6) << describe(f, s) << " at " << i << "," << j;
        }
      }
      // From the GEMM's row count on, the rows layout runs the same arithmetic on a panel built
      // from GGUF rows: the same bits.
      if (s.m >= kGemmMinRows) {
        matmul(x.view(), rows, bias.data(), want.view(), ctx);
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.bytes()), 0) << describe(f, s);
      }
      // The scalar reference reads the layout through its GGUF rows, and so does matmul() called
      // on another path than the layout's (the scalar row kernel: the reference's bits).
      matmul_reference(x.view(), strips, bias.data(), want.view());
      EXPECT_EQ(std::memcmp(want.data(), ref.data(), want.bytes()), 0) << describe(f, s);
      testing::poison(want.view());
      matmul(x.view(), strips, bias.data(), want.view(), ExecContext{KernelPath::kScalar, &pool});
      EXPECT_EQ(std::memcmp(want.data(), ref.data(), want.bytes()), 0) << describe(f, s) << " on the scalar path";
    }
  }
  if (formats_run == 0) GTEST_SKIP() << "needs a CPU with AVX-512";
}

TEST(StripsLayout, TheCpuBackendPicksItOnTheAvx512PathAndDevicesGetGgufRows) {
  const bool avx512 = kernel_path_available(KernelPath::kAvx512);
  const bool bf16_path = avx512 && cpu_features().avx512bf16;
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx512, 128),
            bf16_path ? WeightLayout::kStrips64 : WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx512, 129), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx2, 128), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kF16, KernelPath::kAvx512, 129), WeightLayout::kStrips64);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kF16, KernelPath::kAvx2, 128), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kF16, KernelPath::kScalar, 128), WeightLayout::kRows);
  if (!avx512) GTEST_SKIP() << "needs a CPU with AVX-512 for the layer half";
  for (WeightFormat f : kFormats) {
    if (!strips_gemm_available(f)) continue;
    const Tensor w = testing::random_tensor(Shape{70, 200}, 7, 0.02f);
    ExecContext cpu{KernelPath::kAvx512, nullptr};
    ExecContext device = cpu;
    device.cpu_weights = false;
    const Linear on_cpu = Linear::create(w.clone(), Tensor(), f, cpu);
    const Linear on_device = Linear::create(w.clone(), Tensor(), f, device);
    EXPECT_EQ(on_cpu.weight_layout(), WeightLayout::kStrips64);
    ASSERT_EQ(on_device.weight_layout(), WeightLayout::kRows);
    const auto* raw = static_cast<const uint8_t*>(on_device.weight_data());
    EXPECT_EQ(gguf_bytes(*on_cpu.quantized_weight()), std::vector<uint8_t>(raw, raw + on_device.weight_data_bytes()));
    EXPECT_EQ(on_cpu.weight_bytes(), on_device.weight_bytes()) << "one copy, the size of the GGUF rows";
  }
}

}  // namespace
}  // namespace am::kernels
