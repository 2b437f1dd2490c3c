// The cpu backend's row-interleaved execution layout (kernels/formats/interleaved_layout.h):
// the bytes it stores are GGUF's blocks moved, never changed; its kernels give the products of the
// GGUF rows (the scalar reference bit for bit, AVX2 within the summation-order tolerance); and a
// layer built in it holds one copy of its weight.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "kernels/formats/interleaved_layout.h"
#include "kernels/formats/weight_matrix.h"
#include "test_util.h"
#include "tests/common/under_asan.h"

namespace am::kernels {
namespace {

constexpr WeightFormat kInterleavedFormats[] = {WeightFormat::kQ8_0, WeightFormat::kQ4_0, WeightFormat::kQ4_1};
// Same tolerance as matmul_test.cpp: same exact int32 block sums, another f32 order (FMA).
constexpr double kReorderRelTol = 2e-5;

struct Shape3 {
  int64_t m, k, n;
};

// Odd shapes: N below, at and past a group of 8 with GGUF tail rows; K a whole block, a partial
// last block (100 = 3 blocks + 4), many blocks with a partial one; M around the 4-row tile and
// past one 64-row task (70 = 17 tiles of 4 + 2); K past one K-slice of the driver (600 = 19
// blocks, the last partial, over two slices of 16) with more rows of X than one kernel call.
constexpr Shape3 kShapes[] = {{1, 32, 1},  {1, 100, 7},  {3, 32, 8},   {5, 100, 13},
                              {4, 273, 40}, {9, 64, 16},  {70, 96, 29}, {1, 1024, 301},
                              {20, 600, 17}};

std::string describe(WeightFormat f, const Shape3& s) {
  return std::string(weight_format_name(f)) + " M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
         " N=" + std::to_string(s.n);
}

std::vector<uint8_t> gguf_bytes(const WeightMatrix& w) {
  std::vector<uint8_t> out(w.size_bytes());
  w.gguf_rows(out.data());
  return out;
}

TEST(InterleavedLayout, GroupsAreExactPermutationsOfAnyBytes) {
  std::mt19937 gen(11);
  for (WeightFormat f : kInterleavedFormats) {
    for (int64_t blocks : {1, 3, 7}) {
      const std::size_t rb = weight_format_block_bytes(f) * static_cast<std::size_t>(blocks);
      std::vector<uint8_t> rows(rb * kInterleaveRows), group(rows.size()), back(rows.size());
      for (uint8_t& b : rows) b = static_cast<uint8_t>(gen());
      interleave_group(f, rows.data(), rb, blocks, group.data());
      EXPECT_NE(group, rows) << weight_format_name(f);  // it does move bytes
      std::vector<uint8_t> sorted_in = rows, sorted_group = group;
      std::sort(sorted_in.begin(), sorted_in.end());
      std::sort(sorted_group.begin(), sorted_group.end());
      EXPECT_EQ(sorted_in, sorted_group) << "a permutation keeps every byte";
      deinterleave_group(f, group.data(), rb, blocks, back.data(), rb);
      EXPECT_EQ(back, rows) << weight_format_name(f) << " blocks " << blocks;
    }
  }
}

TEST(InterleavedLayout, QuantizedAndAdoptedMatricesKeepGgufBlocks) {
  ThreadPool pool(2);
  const ExecContext ctx{KernelPath::kScalar, &pool};
  for (WeightFormat f : kInterleavedFormats) {
    for (const Shape3& s : kShapes) {
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 21, 0.02f);
      const WeightMatrix rows = WeightMatrix::quantize(w.view(), f, ctx);
      const WeightMatrix inter = WeightMatrix::quantize(w.view(), f, ctx, WeightLayout::kInterleaved8);
      ASSERT_EQ(inter.layout(), WeightLayout::kInterleaved8);
      ASSERT_EQ(inter.size_bytes(), rows.size_bytes()) << "the layout keeps the size";
      EXPECT_EQ(inter.grouped_rows(), s.n / kInterleaveRows * kInterleaveRows);
      const std::vector<uint8_t> want(rows.data(), rows.data() + rows.size_bytes());
      EXPECT_EQ(gguf_bytes(inter), want) << describe(f, s);
      if (inter.grouped_rows() > 0) {
        EXPECT_NE(std::memcmp(inter.data(), rows.data(), rows.size_bytes()), 0) << describe(f, s);
        EXPECT_TRUE(inter.q4_0_blocks().empty() && inter.q8_0_blocks().empty() && inter.q4_1_blocks().empty())
            << "typed GGUF block views are for GGUF rows only";
      }
      // A file loader's path: GGUF bytes adopted into the execution layout give the same matrix.
      const Result<WeightMatrix> adopted = WeightMatrix::from_bytes(f, s.n, s.k, want, WeightLayout::kInterleaved8);
      ASSERT_TRUE(adopted.ok()) << adopted.status().to_string();
      EXPECT_EQ(std::memcmp(adopted->data(), inter.data(), inter.size_bytes()), 0) << describe(f, s);
      // Decoding reads through the layout.
      const Tensor a = rows.dequantize(), b = inter.dequantize();
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << describe(f, s);
      std::vector<uint8_t> row(rows.row_bytes());
      inter.gguf_row(s.n - 1, row.data());
      EXPECT_EQ(std::memcmp(row.data(), want.data() + rows.row_bytes() * (s.n - 1), row.size()), 0);
    }
  }
}

TEST(InterleavedLayout, ScalarReferenceGivesTheBitsOfTheGgufRowReference) {
  for (WeightFormat f : kInterleavedFormats) {
    uint32_t seed = 100;
    for (const Shape3& s : kShapes) {
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, seed++);
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, seed++, 0.02f);
      const Tensor bias = testing::random_tensor(Shape{s.n}, seed++, 0.02f);
      const ExecContext scalar{KernelPath::kScalar, nullptr};
      const WeightMatrix rows = WeightMatrix::quantize(w.view(), f, scalar);
      const WeightMatrix inter = WeightMatrix::quantize(w.view(), f, scalar, WeightLayout::kInterleaved8);
      Tensor want(Shape{s.m, s.n}), got(Shape{s.m, s.n});
      testing::poison(got.view());
      matmul_reference(x.view(), rows, bias.data(), want.view());
      matmul_reference(x.view(), inter, bias.data(), got.view());
      ASSERT_TRUE(testing::all_finite(got.view())) << describe(f, s);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.bytes()), 0) << describe(f, s);
      // matmul() on the scalar path runs the same reference kernels through the tiled driver.
      ThreadPool pool(2);
      testing::poison(got.view());
      matmul(x.view(), inter, bias.data(), got.view(), ExecContext{KernelPath::kScalar, &pool});
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.bytes()), 0) << describe(f, s);
    }
  }
}

TEST(InterleavedLayout, SimdKernelsMatchTheScalarReference) {
  ThreadPool pool(2);
  for (KernelPath path : {KernelPath::kAvx2, KernelPath::kAvx512}) {
    if (!kernel_path_available(path)) continue;
    const ExecContext ctx{path, &pool};
    for (WeightFormat f : kInterleavedFormats) {
      uint32_t seed = 300;
      for (const Shape3& s : kShapes) {
        const Tensor x = testing::random_tensor(Shape{s.m, s.k}, seed++);
        const Tensor w = testing::random_tensor(Shape{s.n, s.k}, seed++, 0.02f);
        const WeightMatrix rows = WeightMatrix::quantize(w.view(), f, ctx);
        const WeightMatrix inter = WeightMatrix::quantize(w.view(), f, ctx, WeightLayout::kInterleaved8);
        Tensor want(Shape{s.m, s.n}), got(Shape{s.m, s.n});
        testing::poison(got.view());
        matmul_reference(x.view(), rows, nullptr, want.view());
        matmul(x.view(), inter, nullptr, got.view(), ctx);
        const Tensor wd = rows.dequantize();
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            double mag = 0.0;
            for (int64_t p = 0; p < s.k; ++p) mag += std::fabs(static_cast<double>(x.row(i)[p]) * wd.row(j)[p]);
            ASSERT_NEAR(got.row(i)[j], want.row(i)[j], kReorderRelTol * mag)
                << describe(f, s) << " " << kernel_path_name(path) << " at " << i << "," << j;
          }
        }
      }
    }
  }
}

TEST(InterleavedLayout, Avx512KernelsGiveTheBitsOfTheAvx2Kernels) {
  // Same exact int32 block sums and the same f32 expression per block in the same order: the
  // AVX-512 packed-tile kernels (every M, K in slices for many rows) and their 512-bit 4-group
  // form must agree with AVX2 bit for bit. M = 70, 20 and 7 take several packed tiles (6 rows per
  // tile, a partial last one); M = 1, 2 and 4 one partial tile (decode, small batches; 1 and 2
  // rows prefetch further ahead); N = 301, 40 and 56 give 4-group passes with 1 or 3 groups left
  // over (a 2-group and a 1-group call). M = 530, K = 4196 (131 blocks and a partial one) cross
  // the packed path's row task (516 rows) and its K slices (64 blocks of q8_0, 112-128 of
  // q4_0/q4_1), the last slice partial; M = 1 at that K walks it in one call.
  if (!kernel_path_available(KernelPath::kAvx512) || !kernel_path_available(KernelPath::kAvx2)) {
    GTEST_SKIP() << "needs a CPU with AVX-512 VNNI";
  }
  ThreadPool pool(2);
  const Shape3 shapes[] = {{70, 1024, 301}, {20, 600, 40}, {7, 100, 29}, {1, 1024, 301}, {64, 32, 56},
                           {530, 4196, 40},  {1, 4196, 40},  {2, 600, 56},  {4, 1024, 301}};
  for (WeightFormat f : kInterleavedFormats) {
    uint32_t seed = 700;
    for (const Shape3& s : shapes) {
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, seed++);
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, seed++, 0.02f);
      const ExecContext avx2{KernelPath::kAvx2, &pool};
      const ExecContext avx512{KernelPath::kAvx512, &pool};
      const WeightMatrix inter = WeightMatrix::quantize(w.view(), f, avx2, WeightLayout::kInterleaved8);
      Tensor want(Shape{s.m, s.n}), got(Shape{s.m, s.n});
      matmul(x.view(), inter, nullptr, want.view(), avx2);
      testing::poison(got.view());
      matmul(x.view(), inter, nullptr, got.view(), avx512);
      // The grouped rows; the GGUF tail rows (n % 8) run each path's own row-dot kernel.
      const int64_t grouped = s.n / kInterleaveRows * kInterleaveRows;
      for (int64_t i = 0; i < s.m; ++i) {
        ASSERT_EQ(std::memcmp(want.row(i), got.row(i), static_cast<std::size_t>(grouped) * sizeof(float)), 0)
            << describe(f, s) << " row " << i;
      }
    }
  }
}

TEST(InterleavedLayout, NonFiniteWeightsPoisonExactlyTheirOwnOutputs) {
  ThreadPool pool(2);
  const Shape3 s{6, 96, 21};
  for (KernelPath path : available_kernel_paths()) {
    const ExecContext ctx{path, &pool};
    for (WeightFormat f : kInterleavedFormats) {
      Tensor w = testing::random_tensor(Shape{s.n, s.k}, 40, 0.02f);
      w.row(5)[40] = std::numeric_limits<float>::infinity();  // inside group 0
      w.row(19)[3] = std::numeric_limits<float>::quiet_NaN();  // a GGUF tail row
      const WeightMatrix inter = WeightMatrix::quantize(w.view(), f, ctx, WeightLayout::kInterleaved8);
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 41);
      Tensor y(Shape{s.m, s.n});
      matmul(x.view(), inter, nullptr, y.view(), ctx);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          EXPECT_EQ(std::isnan(y.row(i)[j]), j == 5 || j == 19)
              << describe(f, s) << " " << kernel_path_name(path) << " at " << i << "," << j;
        }
      }
    }
  }
}

// Resident set size of this process, from /proc/self/statm.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

TEST(LinearWeights, CpuLayerInTheExecutionLayoutHoldsOneCopyOfItsWeight) {
  // 4096 x 4096: 64 MiB of f32, 9 MiB of q4_0. The f32 tensor is released by create(); what the
  // process keeps is the layer. A layer that kept the GGUF rows beside the interleaved ones (or the
  // f32 source) would grow the resident set by 2x (or 8x) its stored size.
#if defined(AM_TEST_UNDER_ASAN)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps the released f32 weight resident";
#endif
  constexpr int64_t kRows = 4096, kCols = 4096;
  const ExecContext ctx{KernelPath::kAvx2, nullptr, /*cpu_weights=*/true};  // the layout only; no AVX2 runs
  malloc_trim(0);  // free heap pages of earlier tests in this process must not absorb the layer
  const std::size_t before = resident_bytes();
  Tensor w(Shape{kRows, kCols});
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = dist(gen);
  Linear layer = Linear::create(std::move(w), Tensor(), WeightFormat::kQ4_0, ctx);
  const std::size_t after = resident_bytes();
  ASSERT_EQ(layer.weight_layout(), WeightLayout::kInterleaved8);
  const std::size_t stored = weight_format_row_bytes(WeightFormat::kQ4_0, kCols) * kRows;
  EXPECT_EQ(layer.weight_bytes(), stored);
  const double growth = static_cast<double>(after) - static_cast<double>(before);
  EXPECT_GT(growth, 0.8 * static_cast<double>(stored)) << "the measurement must see the layer's weight";
  EXPECT_LT(growth, 1.5 * static_cast<double>(stored)) << "one resident copy: " << growth / stored << "x";
}

TEST(LinearWeights, DeviceLayersGetGgufRowsAndCpuLayersTheSameBlocksInterleaved) {
  const Tensor w = testing::random_tensor(Shape{27, 200}, 7, 0.02f);
  for (WeightFormat f : kInterleavedFormats) {
    ExecContext cpu{KernelPath::kAvx2, nullptr};
    ExecContext device = cpu;
    device.cpu_weights = false;
    const Linear on_cpu = Linear::create(w.clone(), Tensor(), f, cpu);
    const Linear on_device = Linear::create(w.clone(), Tensor(), f, device);
    EXPECT_EQ(on_cpu.weight_layout(), WeightLayout::kInterleaved8);
    ASSERT_EQ(on_device.weight_layout(), WeightLayout::kRows);
    const auto* raw = static_cast<const uint8_t*>(on_device.weight_data());
    EXPECT_EQ(gguf_bytes(*on_cpu.quantized_weight()),
              std::vector<uint8_t>(raw, raw + on_device.weight_data_bytes()))
        << weight_format_name(f);
    EXPECT_EQ(on_cpu.weight_bytes(), on_device.weight_bytes());
  }
  // The scalar path (the reference) keeps GGUF rows, as do formats without an interleaved form.
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kQ4_0, KernelPath::kScalar, 64), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kQ2_K, KernelPath::kAvx2, 64), WeightLayout::kRows);
  EXPECT_EQ(cpu_execution_layout(WeightFormat::kBF16, KernelPath::kAvx2, 64), WeightLayout::kRows);
}

}  // namespace
}  // namespace am::kernels
