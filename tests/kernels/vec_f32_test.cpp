#include "kernels/cpu/vec_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

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

}  // namespace
}  // namespace am::kernels
