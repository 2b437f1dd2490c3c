#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/group_norm.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels {
namespace {

TEST(GroupNormOp, MatchesScalarReferenceWithOffsetInputs) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  const int64_t batch = 3, positions = 10, channels = 12, groups = 4;
  Tensor x = testing::random_tensor(Shape{batch * positions, channels}, 7, 2.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 5.0f;  // a mean far from zero
  Tensor gamma = testing::random_tensor(Shape{channels}, 8);
  Tensor beta = testing::random_tensor(Shape{channels}, 9);
  Tensor y(x.shape()), ref(x.shape());
  testing::poison(y.view());
  ASSERT_TRUE(be.group_norm(x.view(), batch, groups, gamma.data(), beta.data(), 1e-5f, y.view()).ok());
  group_norm_reference(x.view(), batch, groups, gamma.data(), beta.data(), 1e-5f, ref.view());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.data()[i], 1e-4f) << i;
}

TEST(GroupNormOp, EachGroupOfEachSampleHasZeroMeanUnitVarianceWithUnitGamma) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  const int64_t batch = 2, positions = 6, channels = 8, groups = 2;
  Tensor x = testing::random_tensor(Shape{batch * positions, channels}, 3, 3.0f);
  Tensor gamma(Shape{channels});
  for (int64_t c = 0; c < channels; ++c) gamma.data()[c] = 1.0f;
  ASSERT_TRUE(be.group_norm(x.view(), batch, groups, gamma.data(), nullptr, 1e-6f, x.view()).ok());  // in place
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      double sum = 0, sq = 0;
      for (int64_t p = 0; p < positions; ++p) {
        for (int64_t c = 0; c < channels / groups; ++c) {
          const double v = x.row(b * positions + p)[g * channels / groups + c];
          sum += v;
          sq += v * v;
        }
      }
      const double n = positions * channels / groups;
      EXPECT_NEAR(sum / n, 0.0, 1e-5);
      EXPECT_NEAR(sq / n, 1.0, 1e-3);
    }
  }
}

TEST(GroupNormOp, RejectsGroupsThatDoNotDivideChannels) {
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x(Shape{4, 6}), g(Shape{6});
  Status s = be.group_norm(x.view(), 1, 4, g.data(), nullptr, 1e-5f, x.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("group_norm"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
