#include <gtest/gtest.h>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels {
namespace {

struct ConvCase {
  int64_t batch, h, w, cin, cout, kh, kw, stride, pad, groups;
};

void expect_matches_reference(const ConvCase& c, uint32_t seed) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x = testing::random_tensor(Shape{c.batch * c.h * c.w, c.cin}, seed);
  Tensor w = testing::random_tensor(Shape{c.cout, c.cin / c.groups, c.kh, c.kw}, seed + 1, 0.3f);
  Tensor bias = testing::random_tensor(Shape{c.cout}, seed + 2);
  const int64_t oh = conv_out_size(c.h, c.kh, c.stride, c.pad);
  const int64_t ow = conv_out_size(c.w, c.kw, c.stride, c.pad);
  Tensor y(Shape{c.batch * oh * ow, c.cout}), ref(Shape{c.batch * oh * ow, c.cout});
  testing::poison(y.view());
  Conv2dArgs a{x.view(), y.view(), w.data(), bias.data(), c.batch, c.h, c.w, c.cin, c.cout,
               c.kh, c.kw, c.stride, c.pad, c.groups};
  ASSERT_TRUE(be.conv2d(a).ok());
  a.y = ref.view();
  conv2d_reference(a);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.data()[i], 1e-3f) << i;
}

TEST(Conv2dOp, Im2colPathMatchesScalarReference) {
  expect_matches_reference({2, 9, 7, 5, 6, 3, 3, 2, 1, 1}, 11);
}

TEST(Conv2dOp, PatchEmbeddingKernelEqualsStrideMatchesReference) {
  expect_matches_reference({1, 8, 8, 3, 10, 4, 4, 4, 0, 1}, 21);
}

TEST(Conv2dOp, PointwisePathMatchesReference) { expect_matches_reference({2, 5, 5, 7, 9, 1, 1, 1, 0, 1}, 31); }

TEST(Conv2dOp, DepthwiseGroupsMatchReference) { expect_matches_reference({2, 6, 6, 8, 8, 3, 3, 1, 1, 8}, 41); }

TEST(Conv2dOp, KnownValueOfCentreTapKernel) {
  // A 3x3 kernel whose only tap is the centre copies the input scaled by that tap.
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x = testing::random_tensor(Shape{16, 1}, 5);
  Tensor w(Shape{1, 1, 3, 3});
  w.data()[4] = 2.5f;
  Tensor y(Shape{16, 1});
  ASSERT_TRUE(be.conv2d({x.view(), y.view(), w.data(), nullptr, 1, 4, 4, 1, 1, 3, 3, 1, 1, 1}).ok());
  for (int64_t i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(y.data()[i], 2.5f * x.data()[i]);
}

TEST(Conv2dOp, RejectsWrongOutputShapeNamingOp) {
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor x(Shape{16, 2}), w(Shape{3, 2, 3, 3}), y(Shape{15, 3});
  Status s = be.conv2d({x.view(), y.view(), w.data(), nullptr, 1, 4, 4, 2, 3, 3, 3, 1, 1, 1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("conv2d"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
