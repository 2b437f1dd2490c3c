#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/selective_scan.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

namespace am::kernels {
namespace {

constexpr int64_t kBatch = 2, kLen = 9, kChannels = 6, kState = 4;

struct ScanData {
  Tensor u = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 1);
  Tensor delta = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 2, 0.5f);
  Tensor B = testing::random_tensor(Shape{kBatch * kLen, kState}, 3);
  Tensor C = testing::random_tensor(Shape{kBatch * kLen, kState}, 4);
  Tensor A = Tensor(Shape{kChannels, kState});
  Tensor D = testing::random_tensor(Shape{kChannels}, 5);
  Tensor bias = testing::random_tensor(Shape{kChannels}, 6, 0.3f);
  ScanData() {
    // Mamba's S4D-real initialisation: A[d, n] = -(n + 1).
    for (int64_t d = 0; d < kChannels; ++d)
      for (int64_t n = 0; n < kState; ++n) A.row(d)[n] = -static_cast<float>(n + 1);
  }
  SelectiveScanArgs args(TensorView y, float* state) const {
    SelectiveScanArgs a;
    a.u = u.view(); a.delta = delta.view(); a.B = B.view(); a.C = C.view(); a.y = y;
    a.A = A.data(); a.D = D.data(); a.delta_bias = bias.data();
    a.batch = kBatch; a.len = kLen; a.channels = kChannels; a.state_size = kState; a.state = state;
    return a;
  }
};

TEST(SelectiveScanOp, MatchesScalarReference) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  ScanData d;
  Tensor y(Shape{kBatch * kLen, kChannels}), ref(Shape{kBatch * kLen, kChannels});
  testing::poison(y.view());
  std::vector<float> s1(kBatch * kChannels * kState, 0.0f), s2 = s1;
  ASSERT_TRUE(be.selective_scan(d.args(y.view(), s1.data())).ok());
  selective_scan_reference(d.args(ref.view(), s2.data()));
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ref.data()[i], 1e-4f) << i;
  for (std::size_t i = 0; i < s1.size(); ++i) ASSERT_NEAR(s1[i], s2[i], 1e-4f) << i;
}

TEST(SelectiveScanOp, FirstStepEqualsClosedForm) {
  // From a zero state: y[0, d] = softplus(delta + bias) * u * sum_n B[n] C[n] + D u.
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  ScanData d;
  Tensor y(Shape{kBatch * kLen, kChannels});
  ASSERT_TRUE(be.selective_scan(d.args(y.view(), nullptr)).ok());
  for (int64_t c = 0; c < kChannels; ++c) {
    const float dt = softplus(d.delta.row(0)[c] + d.bias.data()[c]);
    float bc = 0;
    for (int64_t n = 0; n < kState; ++n) bc += d.B.row(0)[n] * d.C.row(0)[n];
    const float u = d.u.row(0)[c];
    EXPECT_NEAR(y.row(0)[c], dt * u * bc + d.D.data()[c] * u, 1e-5f);
  }
}

TEST(SelectiveScanOp, TokenByTokenWithCarriedStateEqualsWholeSequence) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  ScanData d;
  Tensor whole(Shape{kBatch * kLen, kChannels});
  ASSERT_TRUE(be.selective_scan(d.args(whole.view(), nullptr)).ok());
  // Sample 0 alone, one position at a time.
  std::vector<float> state(kChannels * kState, 0.0f);
  for (int64_t t = 0; t < kLen; ++t) {
    Tensor y(Shape{1, kChannels});
    SelectiveScanArgs a = d.args(y.view(), state.data());
    a.batch = 1; a.len = 1;
    a.u = d.u.view().row_range(t, 1); a.delta = d.delta.view().row_range(t, 1);
    a.B = d.B.view().row_range(t, 1); a.C = d.C.view().row_range(t, 1);
    ASSERT_TRUE(be.selective_scan(a).ok());
    for (int64_t c = 0; c < kChannels; ++c) ASSERT_NEAR(y.row(0)[c], whole.row(t)[c], 1e-5f);
  }
}

TEST(SelectiveScanOp, RejectsMismatchedB) {
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  ScanData d;
  Tensor y(Shape{kBatch * kLen, kChannels});
  SelectiveScanArgs a = d.args(y.view(), nullptr);
  a.state_size = kState + 1;
  EXPECT_EQ(be.selective_scan(a).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace am::kernels
