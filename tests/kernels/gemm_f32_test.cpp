// The fp32 GEMV / small-M GEMM (kernels/cpu/gemm_f32.h) against its scalar reference on every
// kernel path this CPU has, and the OpenBLAS side of matmul_f32's crossover against ours.
#include "kernels/cpu/gemm_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "test_util.h"

namespace am::kernels {
namespace {

// Summation-order tolerance relative to sum |x_i w_i| + |b| (which bounds every partial sum):
// the paths add the same f32 products in another order (vector lanes, K blocks, FMA), so they
// differ from the reference by a few f32 roundings of the running sum.
constexpr double kReorderRelTol = 2e-5;

struct Dims {
  int64_t m, k, n;
};

std::string describe(const Dims& d) {
  return "M=" + std::to_string(d.m) + " K=" + std::to_string(d.k) + " N=" + std::to_string(d.n);
}

// M = 1 (GEMV), 2, 3, 7 (partial register tiles), 16; K below one vector, not a multiple of 8
// or 16, and (M = 16, K = 4500) large enough to be split into K blocks; N below, between and
// not a multiple of the 4- and 8-row W blocks; M = 70 spans two runs of X rows per task.
std::vector<Dims> shapes() {
  return {{1, 1, 1},    {1, 7, 5},     {1, 100, 37},  {1, 257, 64},  {1, 1000, 9},
          {2, 15, 3},   {2, 33, 13},   {3, 17, 8},    {3, 520, 9},   {7, 96, 130},
          {7, 300, 12}, {16, 257, 70}, {16, 4500, 9}, {70, 300, 20}, {16, 64, 1}};
}

void expect_close(ConstTensorView x, ConstTensorView w, const float* bias, ConstTensorView got,
                  ConstTensorView want, const std::string& what) {
  for (int64_t i = 0; i < got.rows(); ++i) {
    for (int64_t j = 0; j < got.cols(); ++j) {
      double mag = bias != nullptr ? std::fabs(bias[j]) : 0.0;
      for (int64_t p = 0; p < x.cols(); ++p) mag += std::fabs(double{x.row(i)[p]} * w.row(j)[p]);
      ASSERT_NEAR(got.row(i)[j], want.row(i)[j], kReorderRelTol * mag + 1e-30)
          << what << " at (" << i << ", " << j << ")";
    }
  }
}

TEST(GemmF32, ReferenceEqualsTheDotProductsInDouble) {
  for (const Dims& d : {Dims{3, 257, 5}, Dims{1, 31, 2}}) {
    const Tensor x = testing::random_tensor(Shape{d.m, d.k}, 1);
    const Tensor w = testing::random_tensor(Shape{d.n, d.k}, 2);
    const Tensor b = testing::random_tensor(Shape{d.n}, 3);
    Tensor y(Shape{d.m, d.n}), want(Shape{d.m, d.n});
    testing::poison(y.view());
    gemm_f32_reference(x.view(), w.view(), b.data(), y.view());
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j) {
        double s = b.data()[j];
        for (int64_t p = 0; p < d.k; ++p) s += double{x.row(i)[p]} * w.row(j)[p];
        want.row(i)[j] = static_cast<float>(s);
      }
    }
    expect_close(x.view(), w.view(), b.data(), y.view(), want.view(), describe(d));
  }
}

TEST(GemmF32, EveryPathMatchesTheScalarReferenceWithAndWithoutBias) {
  ThreadPool pool(3);
  uint32_t seed = 100;
  for (KernelPath path : available_kernel_paths()) {
    for (const Dims& d : shapes()) {
      const Tensor x = testing::random_tensor(Shape{d.m, d.k}, ++seed);
      const Tensor w = testing::random_tensor(Shape{d.n, d.k}, ++seed, 0.05f);
      const Tensor b = testing::random_tensor(Shape{d.n}, ++seed);
      for (bool with_bias : {false, true}) {
        const float* bias = with_bias ? b.data() : nullptr;
        Tensor want(Shape{d.m, d.n});
        gemm_f32_reference(x.view(), w.view(), bias, want.view());
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          Tensor y(Shape{d.m, d.n});
          testing::poison(y.view());
          gemm_f32(x.view(), w.view(), bias, y.view(), ExecContext{path, p});
          const std::string what = std::string(kernel_path_name(path)) + " " + describe(d) +
                                   (with_bias ? " bias" : " no bias") + (p ? " pool" : " inline");
          ASSERT_TRUE(testing::all_finite(y.view())) << what;
          expect_close(x.view(), w.view(), bias, y.view(), want.view(), what);
        }
      }
    }
  }
}

TEST(GemmF32, ResultDoesNotDependOnTheThreadCount) {
  ThreadPool one(1), three(3);
  for (KernelPath path : available_kernel_paths()) {
    for (const Dims& d : {Dims{1, 1000, 300}, Dims{7, 300, 130}, Dims{16, 4500, 40}}) {
      const Tensor x = testing::random_tensor(Shape{d.m, d.k}, 7);
      const Tensor w = testing::random_tensor(Shape{d.n, d.k}, 8);
      Tensor a(Shape{d.m, d.n}), b(Shape{d.m, d.n});
      gemm_f32(x.view(), w.view(), nullptr, a.view(), ExecContext{path, &one});
      gemm_f32(x.view(), w.view(), nullptr, b.view(), ExecContext{path, &three});
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0)
          << kernel_path_name(path) << " " << describe(d);
    }
  }
}

// Both sides of the crossover give the same product, and matmul_f32 takes our kernels below
// it and OpenBLAS from it on (bit for bit the one or the other).
TEST(MatmulF32, OpenBlasPathAgreesWithOurKernelsAcrossTheCrossover) {
  ThreadPool pool(2);
  const ExecContext ctx{best_kernel_path(), &pool};
  const int64_t k = 300, n = 150;
  const int64_t cross = f32_blas_min_rows(k, n);
  for (int64_t m : {int64_t{1}, int64_t{3}, cross - 1, cross, cross + 5}) {
    if (m < 1) continue;
    const Tensor x = testing::random_tensor(Shape{m, k}, 20);
    const Tensor w = testing::random_tensor(Shape{n, k}, 21, 0.05f);
    const Tensor b = testing::random_tensor(Shape{n}, 22);
    Tensor ours(Shape{m, n}), sliced(Shape{m, n}), threaded(Shape{m, n}), chosen(Shape{m, n});
    for (TensorView t : {ours.view(), sliced.view(), threaded.view(), chosen.view()}) testing::poison(t);
    gemm_f32(x.view(), w.view(), b.data(), ours.view(), ctx);
    matmul_f32_blas(x.view(), w.view(), b.data(), sliced.view(), ctx, BlasThreading::kPoolSlices);
    matmul_f32_blas(x.view(), w.view(), b.data(), threaded.view(), ctx,
                    BlasThreading::kOpenBlasThreads);
    matmul_f32(x.view(), w.view(), b.data(), chosen.view(), ctx);
    const std::string what = "M=" + std::to_string(m);
    expect_close(x.view(), w.view(), b.data(), sliced.view(), ours.view(), what + " slices");
    expect_close(x.view(), w.view(), b.data(), threaded.view(), ours.view(), what + " threads");
    const Tensor& expected = m >= cross ? sliced : ours;
    EXPECT_EQ(std::memcmp(chosen.data(), expected.data(), chosen.bytes()), 0) << what;
  }
}

}  // namespace
}  // namespace am::kernels
