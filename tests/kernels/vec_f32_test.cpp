#include "kernels/cpu/vec_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/fma_chain.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels {
namespace {

constexpr float kSentinel = 12345.0f;

TEST(VecF32, DotRowsMatchesDoubleOnEveryPath) {
  for (KernelPath path : available_kernel_paths()) {
    for (int64_t n : {1, 7, 8, 16, 24, 64, 67}) {
      for (int64_t nrows : {1, 5, 33}) {
        const int64_t stride = n + 3;
        const std::vector<float> x = testing::random_normal(n, 1);
        const std::vector<float> rows = testing::random_normal(nrows * stride, 2);
        std::vector<float> out(nrows + 1, std::numeric_limits<float>::quiet_NaN());
        out[nrows] = kSentinel;
        dot_rows_f32(x.data(), rows.data(), stride, nrows, n, out.data(), path);
        for (int64_t r = 0; r < nrows; ++r) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < n; ++i) {
            want += static_cast<double>(x[i]) * rows[r * stride + i];
            mag += std::fabs(static_cast<double>(x[i]) * rows[r * stride + i]);
          }
          ASSERT_NEAR(out[r], want, 1e-5 * mag + 1e-7)
              << kernel_path_name(path) << " n=" << n << " r=" << r;
        }
        ASSERT_EQ(out[nrows], kSentinel);
      }
    }
  }
}

TEST(VecF32, WeightedSumRowsMatchesDoubleAndWritesExactlyN) {
  for (KernelPath path : available_kernel_paths()) {
    for (int64_t n : {1, 7, 8, 16, 24, 64, 67}) {
      for (int64_t nrows : {1, 5, 33}) {
        const int64_t stride = n + 5;
        const std::vector<float> p = testing::random_normal(nrows, 3);
        const std::vector<float> rows = testing::random_normal(nrows * stride, 4);
        std::vector<float> out(n + 1, std::numeric_limits<float>::quiet_NaN());
        out[n] = kSentinel;
        weighted_sum_rows_f32(p.data(), rows.data(), stride, nrows, n, out.data(), path);
        for (int64_t i = 0; i < n; ++i) {
          double want = 0, mag = 0;
          for (int64_t r = 0; r < nrows; ++r) {
            want += static_cast<double>(p[r]) * rows[r * stride + i];
            mag += std::fabs(static_cast<double>(p[r]) * rows[r * stride + i]);
          }
          ASSERT_NEAR(out[i], want, 1e-5 * mag + 1e-7)
              << kernel_path_name(path) << " n=" << n << " i=" << i;
        }
        ASSERT_EQ(out[n], kSentinel) << kernel_path_name(path) << " wrote past n=" << n;
      }
    }
  }
}

// fma_chain's contract in closed form where it has one: no steps leave the sum of the starts,
// 16 s + 0.25 * (0 + 1 + ... + 15); one step maps each start a to fma(a, mul, add).
TEST(FmaChain, ScalarReferenceFollowsItsContract) {
  std::vector<float> out(5);
  fma_chain_scalar(0, 5, 0, out.data());
  for (int i = 0; i < 5; ++i) {
    const float s = static_cast<float>(i) * 1e-7f;
    EXPECT_NEAR(out[static_cast<std::size_t>(i)], 16.0 * s + 30.0, 1e-5) << i;
  }
  fma_chain_scalar(0, 5, 1, out.data());
  double want = 0.0;
  for (int j = 0; j < 16; ++j) want += std::fma(0.25f * static_cast<float>(j), kFmaChainMul, kFmaChainAdd);
  EXPECT_NEAR(out[0], want, 1e-5);
}

// Every SIMD path, split over a pool, gives the scalar reference's bits: both use fused FMAs and
// the contract's summation order. 1003 elements: vectors, chunk boundaries and a scalar tail.
TEST(FmaChain, EveryPathMatchesTheScalarReferenceExactly) {
  constexpr int64_t kN = 1003;
  constexpr int32_t kIterations = 37;
  std::vector<float> want(kN);
  fma_chain_scalar(0, kN, kIterations, want.data());
  ThreadPool pool(2);
  for (KernelPath path : available_kernel_paths()) {
    std::vector<float> got(kN + 1, std::numeric_limits<float>::quiet_NaN());
    got[kN] = kSentinel;
    fma_chain(kN, kIterations, got.data(), ExecContext{path, &pool});
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)]) << kernel_path_name(path) << " i=" << i;
    ASSERT_EQ(got[kN], kSentinel);
  }
}

}  // namespace
}  // namespace am::kernels
