#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/matmul_nt.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels {
namespace {

TEST(MatmulNtOp, MatchesScalarReferenceWithScale) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor a = testing::random_tensor(Shape{5, 33}, 1), b = testing::random_tensor(Shape{7, 33}, 2);
  Tensor y(Shape{5, 7}), ref(Shape{5, 7});
  testing::poison(y.view());
  ASSERT_TRUE(be.matmul_nt(a.view(), b.view(), 14.3f, y.view()).ok());
  matmul_nt_reference(a.view(), b.view(), 14.3f, ref.view());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.data()[i], 1e-3f * std::abs(ref.data()[i]) + 1e-3f);
}

TEST(MatmulNtOp, RejectsMismatchedInnerDimension) {
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor a(Shape{2, 3}), b(Shape{2, 4}), y(Shape{2, 2});
  Status s = be.matmul_nt(a.view(), b.view(), 1.0f, y.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("matmul_nt"), std::string::npos);
}

TEST(ActivationOp, SigmoidAndQuickGeluMatchTheirDefinitions) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x = testing::random_tensor(Shape{9, 13}, 3, 3.0f);
  Tensor s = x.clone(), q = x.clone();
  ASSERT_TRUE(be.activation(Activation::kSigmoid, s.view()).ok());
  ASSERT_TRUE(be.activation(Activation::kQuickGelu, q.view()).ok());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data()[i];
    EXPECT_NEAR(s.data()[i], 1.0 / (1.0 + std::exp(-v)), 1e-6);
    EXPECT_NEAR(q.data()[i], v / (1.0 + std::exp(-1.702 * v)), 1e-5);
  }
  EXPECT_EQ(*activation_from_name("quick_gelu"), Activation::kQuickGelu);
  EXPECT_EQ(activation_name(Activation::kSigmoid), "sigmoid");
}

}  // namespace
}  // namespace am::kernels
