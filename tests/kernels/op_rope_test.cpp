// RoPE against the formula evaluated per element in double, both layouts and partial rotary.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/rope.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

std::vector<float> naive_rope(const Tensor& x, const std::vector<int32_t>& pos, const RopeParams& p) {
  std::vector<float> out(x.data(), x.data() + x.numel());
  const int64_t rd = p.rotary_dim == 0 ? p.head_dim : p.rotary_dim;
  for (int64_t r = 0; r < x.rows(); ++r)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < rd / 2; ++i) {
        const int64_t a = p.layout == RopeLayout::kNeox ? i : 2 * i;
        const int64_t b = p.layout == RopeLayout::kNeox ? i + rd / 2 : 2 * i + 1;
        const double angle = pos[static_cast<std::size_t>(r)] * std::pow(double(p.theta), -2.0 * i / double(rd));
        const double xa = x.row(r)[h * p.head_dim + a], xb = x.row(r)[h * p.head_dim + b];
        out[static_cast<std::size_t>(r * x.cols() + h * p.head_dim + a)] = float(xa * std::cos(angle) - xb * std::sin(angle));
        out[static_cast<std::size_t>(r * x.cols() + h * p.head_dim + b)] = float(xa * std::sin(angle) + xb * std::cos(angle));
      }
  return out;
}

struct RopeCase {
  RopeLayout layout;
  int64_t rotary_dim;
  float theta;
};

class CpuRope : public ::testing::TestWithParam<RopeCase> {};

TEST_P(CpuRope, MatchesTheRotationFormula) {
  ThreadPool pool(2);
  CpuBackend cpu(ExecContext{KernelPath::kScalar, &pool});
  RopeParams p{.heads = 3, .head_dim = 16, .rotary_dim = GetParam().rotary_dim, .theta = GetParam().theta,
               .layout = GetParam().layout};
  Tensor x = testing::random_tensor(Shape{37, 48}, 3);
  std::vector<int32_t> pos(37);
  for (int i = 0; i < 37; ++i) pos[static_cast<std::size_t>(i)] = (i * 97) % 4000;
  const std::vector<float> want = naive_rope(x, pos, p);
  ASSERT_TRUE(cpu.rope(x.view(), pos.data(), p).ok());
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_NEAR(x.data()[i], want[static_cast<std::size_t>(i)], 2e-5f) << i;
}

INSTANTIATE_TEST_SUITE_P(Layouts, CpuRope,
                         ::testing::Values(RopeCase{RopeLayout::kNeox, 0, 10000.0f}, RopeCase{RopeLayout::kGptj, 0, 10000.0f},
                                           RopeCase{RopeLayout::kNeox, 8, 1e6f}, RopeCase{RopeLayout::kGptj, 6, 500.0f}));

TEST(CpuRope, PositionZeroIsTheIdentity) {
  CpuBackend cpu(ExecContext{});
  Tensor x = testing::random_tensor(Shape{1, 8}, 4);
  Tensor y = x.clone();
  const int32_t pos = 0;
  ASSERT_TRUE(cpu.rope(y.view(), &pos, RopeParams{.heads = 1, .head_dim = 8}).ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(x.data()[i], y.data()[i]);
}

TEST(CpuRope, RejectsOddRotaryDimAndNegativePositions) {
  CpuBackend cpu(ExecContext{});
  Tensor x = testing::random_tensor(Shape{2, 8}, 4);
  int32_t pos[2] = {0, 1};
  EXPECT_EQ(cpu.rope(x.view(), pos, RopeParams{.heads = 1, .head_dim = 8, .rotary_dim = 5}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu.rope(x.view(), pos, RopeParams{.heads = 2, .head_dim = 8}).code(), StatusCode::kInvalidArgument);
  pos[1] = -1;
  EXPECT_EQ(cpu.rope(x.view(), pos, RopeParams{.heads = 1, .head_dim = 8}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace am::kernels
