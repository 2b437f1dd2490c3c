#include <gtest/gtest.h>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels {
namespace {

void expect_pool_matches(PoolKind kind, int64_t kernel, int64_t stride, int64_t pad) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  const int64_t batch = 2, h = 9, w = 8, ch = 5;
  Tensor x = testing::random_tensor(Shape{batch * h * w, ch}, 13);
  const int64_t oh = conv_out_size(h, kernel, stride, pad), ow = conv_out_size(w, kernel, stride, pad);
  Tensor y(Shape{batch * oh * ow, ch}), ref(Shape{batch * oh * ow, ch});
  testing::poison(y.view());
  Pool2dArgs a{x.view(), y.view(), kind, batch, h, w, kernel, stride, pad};
  ASSERT_TRUE(be.pool2d(a).ok());
  a.y = ref.view();
  pool2d_reference(a);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.data()[i], 1e-5f) << i;
}

TEST(Pool2dOp, ResNetStemMaxPoolMatchesReference) { expect_pool_matches(PoolKind::kMax, 3, 2, 1); }
TEST(Pool2dOp, AveragePoolWithPaddingMatchesReference) { expect_pool_matches(PoolKind::kAvg, 3, 2, 1); }
TEST(Pool2dOp, AveragePoolWithoutPaddingMatchesReference) { expect_pool_matches(PoolKind::kAvg, 2, 2, 0); }

TEST(Pool2dOp, MaxOfKnownWindow) {
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x(Shape{4, 1});
  const float v[4] = {1.0f, -3.0f, 7.5f, 2.0f};
  std::copy(v, v + 4, x.data());
  Tensor y(Shape{1, 1});
  ASSERT_TRUE(be.pool2d({x.view(), y.view(), PoolKind::kMax, 1, 2, 2, 2, 2, 0}).ok());
  EXPECT_EQ(y.data()[0], 7.5f);
  ASSERT_TRUE(be.pool2d({x.view(), y.view(), PoolKind::kAvg, 1, 2, 2, 2, 2, 0}).ok());
  EXPECT_FLOAT_EQ(y.data()[0], 1.875f);
}

TEST(GlobalAvgPoolOp, MatchesReference) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x = testing::random_tensor(Shape{3 * 17, 6}, 5);
  Tensor y(Shape{3, 6}), ref(Shape{3, 6});
  testing::poison(y.view());
  ASSERT_TRUE(be.global_avg_pool(x.view(), 3, y.view()).ok());
  global_avg_pool_reference(x.view(), 3, ref.view());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.data()[i], 1e-5f);
  Tensor bad(Shape{2, 6});
  EXPECT_EQ(be.global_avg_pool(x.view(), 3, bad.view()).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace am::kernels
