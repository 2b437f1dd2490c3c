#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace am::kernels {
namespace {

// Summation-order tolerance: SIMD paths add the same exact int32 block products in another
// order, so they may differ by a few float roundings of the running sum's magnitude.
constexpr double kReorderRelTol = 1e-5;

struct Shape3 {
  int64_t m, k, n;
};

std::vector<Shape3> shapes() {
  std::vector<Shape3> s;
  for (int64_t m : {1, 3, 17}) {
    for (int64_t k : {32, 96, 100, 257}) {
      for (int64_t n : {1, 5, 64}) s.push_back({m, k, n});
    }
  }
  return s;
}

std::string describe(const Shape3& s) {
  return "M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n);
}

TEST(MatmulF32, MatchesNaiveTripleLoopWithAndWithoutBias) {
  set_blas_threads(2);
  for (const Shape3& s : shapes()) {
    const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 1);
    const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 2);
    const Tensor bias = testing::random_tensor(Shape{s.n}, 3);
    for (bool with_bias : {false, true}) {
      Tensor y(Shape{s.m, s.n});
      testing::poison(y.view());
      matmul_f32(x.view(), w.view(), with_bias ? bias.data() : nullptr, y.view());
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          double ref = with_bias ? bias.data()[j] : 0.0, mag = std::fabs(ref);
          for (int64_t p = 0; p < s.k; ++p) {
            ref += static_cast<double>(x.row(i)[p]) * w.row(j)[p];
            mag += std::fabs(static_cast<double>(x.row(i)[p]) * w.row(j)[p]);
          }
          ASSERT_NEAR(y.row(i)[j], ref, kReorderRelTol * mag)
              << describe(s) << " i=" << i << " j=" << j;
        }
      }
    }
  }
}

// The scalar q8_0 kernel computes exactly sum(dequant(x) * dequant(w)): checked here in double
// against dequantized operands, so the reference the SIMD paths are held to is itself right.
TEST(MatmulQ8_0, ScalarPathEqualsDotOfDequantizedOperands) {
  for (const Shape3& s : shapes()) {
    const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 10);
    const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 11, 0.02f);
    const Tensor bias = testing::random_tensor(Shape{s.n}, 12, 0.02f);
    const ExecContext ctx{KernelPath::kScalar, nullptr};
    const Q8_0Matrix wq = Q8_0Matrix::quantize(w.view(), ctx);
    const Tensor wd = wq.dequantize();
    Tensor y(Shape{s.m, s.n});
    testing::poison(y.view());
    matmul_q8_0(x.view(), wq, bias.data(), y.view(), ctx);
    std::vector<BlockQ8_0> xq(q8_0_blocks_per_row(s.k));
    std::vector<float> xd(s.k);
    for (int64_t i = 0; i < s.m; ++i) {
      quantize_row_q8_0_ref(x.row(i), xq.data(), s.k);
      dequantize_row_q8_0(xq.data(), xd.data(), s.k);
      for (int64_t j = 0; j < s.n; ++j) {
        double ref = bias.data()[j], mag = std::fabs(ref);
        for (int64_t p = 0; p < s.k; ++p) {
          ref += static_cast<double>(xd[p]) * wd.row(j)[p];
          mag += std::fabs(static_cast<double>(xd[p]) * wd.row(j)[p]);
        }
        ASSERT_NEAR(y.row(i)[j], ref, kReorderRelTol * mag) << describe(s);
      }
    }
  }
}

TEST(MatmulQ8_0, EveryPathMatchesScalarReferenceAndWritesEveryOutput) {
  ThreadPool pool(3);
  for (KernelPath path : available_kernel_paths()) {
    for (const Shape3& s : shapes()) {
      const Tensor x = testing::random_tensor(Shape{s.m, s.k}, 20);
      const Tensor w = testing::random_tensor(Shape{s.n, s.k}, 21, 0.05f);
      const Tensor bias = testing::random_tensor(Shape{s.n}, 22, 0.05f);
      const Q8_0Matrix wq = Q8_0Matrix::quantize(w.view(), ExecContext{path, &pool});
      Tensor ref(Shape{s.m, s.n}), got(Shape{s.m, s.n});
      testing::poison(ref.view());
      testing::poison(got.view());
      matmul_q8_0(x.view(), wq, bias.data(), ref.view(), ExecContext{KernelPath::kScalar, nullptr});
      matmul_q8_0(x.view(), wq, bias.data(), got.view(), ExecContext{path, &pool});
      ASSERT_TRUE(testing::all_finite(got.view())) << kernel_path_name(path) << " " << describe(s);
      // Scale for the reorder tolerance: sum |x||w| bounds every partial sum.
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          double mag = std::fabs(bias.data()[j]);
          for (int64_t p = 0; p < s.k; ++p) mag += std::fabs(x.row(i)[p] * w.row(j)[p]);
          ASSERT_NEAR(got.row(i)[j], ref.row(i)[j], kReorderRelTol * mag + 1e-7)
              << kernel_path_name(path) << " " << describe(s) << " i=" << i << " j=" << j;
        }
      }
    }
  }
}

TEST(MatmulQ8_0, ResultDoesNotDependOnThreadCount) {
  const Tensor x = testing::random_tensor(Shape{70, 200}, 30);
  const Tensor w = testing::random_tensor(Shape{131, 200}, 31, 0.02f);
  for (KernelPath path : available_kernel_paths()) {
    const Q8_0Matrix wq = Q8_0Matrix::quantize(w.view(), ExecContext{path, nullptr});
    Tensor one(Shape{70, 131}), many(Shape{70, 131});
    matmul_q8_0(x.view(), wq, nullptr, one.view(), ExecContext{path, nullptr});
    ThreadPool pool(4);
    matmul_q8_0(x.view(), wq, nullptr, many.view(), ExecContext{path, &pool});
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.bytes()), 0) << kernel_path_name(path);
  }
}

TEST(MatmulQ8_0, StaysCloseToF32Matmul) {
  const Tensor x = testing::random_tensor(Shape{16, 256}, 40);
  const Tensor w = testing::random_tensor(Shape{48, 256}, 41, 0.02f);
  Tensor yf(Shape{16, 48});
  matmul_f32(x.view(), w.view(), nullptr, yf.view());
  for (KernelPath path : available_kernel_paths()) {
    const Q8_0Matrix wq = Q8_0Matrix::quantize(w.view(), ExecContext{path, nullptr});
    Tensor yq(Shape{16, 48});
    matmul_q8_0(x.view(), wq, nullptr, yq.view(), ExecContext{path, nullptr});
    double err = 0.0, ref = 0.0;
    for (int64_t i = 0; i < yf.numel(); ++i) {
      err += std::pow(yq.data()[i] - yf.data()[i], 2);
      ref += std::pow(yf.data()[i], 2);
    }
    // Both operands quantized to 8 bits: ~6e-5 for Gaussian data.
    EXPECT_GT(err / ref, 1e-6) << kernel_path_name(path);
    EXPECT_LT(err / ref, 3e-4) << kernel_path_name(path);
  }
}

TEST(MatmulQ8_0, NanInActivationsPropagatesToOutputs) {
  Tensor x = testing::random_tensor(Shape{2, 64}, 50);
  x.row(1)[40] = std::numeric_limits<float>::quiet_NaN();
  const Tensor w = testing::random_tensor(Shape{8, 64}, 51, 0.02f);
  for (KernelPath path : available_kernel_paths()) {
    const Q8_0Matrix wq = Q8_0Matrix::quantize(w.view(), ExecContext{path, nullptr});
    Tensor y(Shape{2, 8});
    matmul_q8_0(x.view(), wq, nullptr, y.view(), ExecContext{path, nullptr});
    for (int64_t j = 0; j < 8; ++j) {
      EXPECT_TRUE(std::isfinite(y.row(0)[j])) << kernel_path_name(path);
      EXPECT_TRUE(std::isnan(y.row(1)[j])) << kernel_path_name(path);
    }
  }
}

}  // namespace
}  // namespace am::kernels
