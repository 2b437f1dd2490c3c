// conv1d against the definition (double accumulation) for dense, strided, grouped, depthwise
// causal and padded geometries.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

std::vector<float> naive_conv1d(const Conv1dArgs& a, int64_t out_len) {
  const int64_t cin_g = a.in_channels / a.groups, cout_g = a.out_channels / a.groups;
  std::vector<float> y(static_cast<std::size_t>(a.batch * out_len * a.out_channels));
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t t = 0; t < out_len; ++t)
      for (int64_t o = 0; o < a.out_channels; ++o) {
        double s = a.bias ? a.bias[o] : 0.0;
        const int64_t g = o / cout_g;
        for (int64_t c = 0; c < cin_g; ++c)
          for (int64_t k = 0; k < a.kernel; ++k) {
            const int64_t ti = t * a.stride + k * a.dilation - a.pad_left;
            if (ti < 0 || ti >= a.in_len) continue;
            s += double(a.weight[(o * cin_g + c) * a.kernel + k]) * a.x.row(b * a.in_len + ti)[g * cin_g + c];
          }
        y[static_cast<std::size_t>((b * out_len + t) * a.out_channels + o)] = float(s);
      }
  return y;
}

struct ConvCase {
  int64_t batch, in_len, cin, cout, kernel, stride, dilation, pad_left, pad_right, groups;
  bool bias;
};

class CpuConv1d : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CpuConv1d, MatchesTheDefinition) {
  const ConvCase c = GetParam();
  ThreadPool pool(2);
  CpuBackend cpu(ExecContext{KernelPath::kScalar, &pool});
  Tensor x = testing::random_tensor(Shape{c.batch * c.in_len, c.cin}, 1);
  Tensor w = testing::random_tensor(Shape{c.cout, c.cin / c.groups, c.kernel}, 2, 0.3f);
  Tensor bias = testing::random_tensor(Shape{c.cout}, 3);
  Conv1dArgs a{.x = x.view(), .weight = w.data(), .bias = c.bias ? bias.data() : nullptr, .batch = c.batch,
               .in_len = c.in_len, .in_channels = c.cin, .out_channels = c.cout, .kernel = c.kernel,
               .stride = c.stride, .dilation = c.dilation, .pad_left = c.pad_left, .pad_right = c.pad_right,
               .groups = c.groups};
  const int64_t out_len = conv1d_out_len(a);
  ASSERT_GT(out_len, 0);
  Tensor y(Shape{c.batch * out_len, c.cout});
  testing::poison(y.view());
  a.y = y.view();
  ASSERT_TRUE(cpu.conv1d(a).ok());
  const std::vector<float> want = naive_conv1d(a, out_len);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], want[static_cast<std::size_t>(i)], 1e-4f) << i;
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CpuConv1d,
    ::testing::Values(ConvCase{2, 50, 1, 8, 10, 5, 1, 0, 0, 1, false},   // wav2vec2 first layer
                      ConvCase{1, 30, 6, 10, 3, 2, 1, 1, 1, 1, true},    // whisper conv2
                      ConvCase{2, 40, 16, 16, 8, 1, 1, 4, 3, 4, true},   // grouped positional conv
                      ConvCase{3, 9, 12, 12, 4, 1, 1, 3, 0, 12, true},   // depthwise causal (mamba)
                      ConvCase{1, 20, 4, 6, 3, 1, 2, 2, 2, 2, false}));  // dilated

TEST(CpuConv1d, RejectsBadGeometryNamingIt) {
  CpuBackend cpu(ExecContext{});
  Tensor x(Shape{10, 6}), w(Shape{4, 3, 3}), y(Shape{8, 4});
  Conv1dArgs a{.x = x.view(), .y = y.view(), .weight = w.data(), .in_len = 10, .in_channels = 6, .out_channels = 4,
               .kernel = 3, .groups = 4};
  Status s = cpu.conv1d(a);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("groups"), std::string::npos);
  a.groups = 2;
  a.in_len = 2;
  Tensor short_x(Shape{2, 6});
  a.x = short_x.view();
  EXPECT_EQ(cpu.conv1d(a).code(), StatusCode::kInvalidArgument);  // shorter than the kernel
}

}  // namespace
}  // namespace am::kernels
