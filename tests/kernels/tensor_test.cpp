#include "kernels/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace am::kernels {
namespace {

TEST(Tensor, StorageIsAlignedAndZeroFilled) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t(Shape{n, 3});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % kTensorAlignmentBytes, 0u);
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.data()[i], 0.0f);
  }
}

TEST(Tensor, ShapeReportsRowsColsAndElements) {
  Tensor t(Shape{2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.cols(), 4);
  EXPECT_EQ(t.rows(), 6);
  EXPECT_EQ(t.bytes(), 96u);
  EXPECT_EQ(t.shape().to_string(), "[2, 3, 4]");
  t.reshape(Shape{6, 4});
  EXPECT_EQ(t.shape(), (Shape{6, 4}));
  EXPECT_TRUE(Tensor().empty());
  EXPECT_EQ(Tensor().numel(), 0);
}

TEST(Tensor, ViewsAndRowRangesShareStorage) {
  Tensor t(Shape{4, 5});
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(i);
  TensorView v = t.view();
  TensorView mid = v.row_range(1, 2);
  EXPECT_EQ(mid.rows(), 2);
  EXPECT_EQ(mid.row(0)[0], 5.0f);
  mid.row(1)[4] = -1.0f;
  EXPECT_EQ(t.row(2)[4], -1.0f);
  Tensor copy = t.clone();
  copy.data()[0] = 99.0f;
  EXPECT_EQ(t.data()[0], 0.0f);
  EXPECT_EQ(copy.row(2)[4], -1.0f);
}

}  // namespace
}  // namespace am::kernels
