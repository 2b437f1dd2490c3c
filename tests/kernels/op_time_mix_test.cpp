#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/thread_pool.h"
#include "kernels/cpu/time_mix.h"
#include "test_util.h"

namespace am::kernels {
namespace {

constexpr int64_t kBatch = 2, kLen = 7, kChannels = 5;

TimeMixArgs make_args(const Tensor& k, const Tensor& v, const Tensor& decay, const Tensor& first,
                      TensorView out, float* state) {
  TimeMixArgs a;
  a.k = k.view(); a.v = v.view(); a.out = out;
  a.time_decay = decay.data(); a.time_first = first.data();
  a.batch = kBatch; a.len = kLen; a.channels = kChannels; a.state = state;
  return a;
}

TEST(TimeMixOp, MatchesUnstabilisedDefinitionOnModerateValues) {
  // wkv_t = (sum_{i<t} e^{-(t-1-i)w' + k_i} v_i + e^{u + k_t} v_t) / (same without v), w' = e^decay.
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor k = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 1);
  Tensor v = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 2);
  Tensor decay = testing::random_tensor(Shape{kChannels}, 3, 0.5f);
  Tensor first = testing::random_tensor(Shape{kChannels}, 4, 0.5f);
  Tensor out(Shape{kBatch * kLen, kChannels});
  testing::poison(out.view());
  ASSERT_TRUE(be.time_mix(make_args(k, v, decay, first, out.view(), nullptr)).ok());
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t c = 0; c < kChannels; ++c) {
      const double w = std::exp(static_cast<double>(decay.data()[c]));
      for (int64_t t = 0; t < kLen; ++t) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < t; ++i) {
          const double e = std::exp(-(t - 1 - i) * w + k.row(b * kLen + i)[c]);
          num += e * v.row(b * kLen + i)[c];
          den += e;
        }
        const double e = std::exp(first.data()[c] + k.row(b * kLen + t)[c]);
        num += e * v.row(b * kLen + t)[c];
        den += e;
        ASSERT_NEAR(out.row(b * kLen + t)[c], num / den, 1e-4) << b << "," << c << "," << t;
      }
    }
  }
}

TEST(TimeMixOp, StaysFiniteAndMatchesReferenceWithHugeKeys) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor k = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 5, 200.0f);  // e^k overflows f32
  Tensor v = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 6);
  Tensor decay = testing::random_tensor(Shape{kChannels}, 7);
  Tensor first = testing::random_tensor(Shape{kChannels}, 8);
  Tensor out(Shape{kBatch * kLen, kChannels}), ref(Shape{kBatch * kLen, kChannels});
  ASSERT_TRUE(be.time_mix(make_args(k, v, decay, first, out.view(), nullptr)).ok());
  time_mix_reference(make_args(k, v, decay, first, ref.view(), nullptr));
  EXPECT_TRUE(testing::all_finite(out.view()));
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_NEAR(out.data()[i], ref.data()[i], 1e-4f);
}

TEST(TimeMixOp, SplitSequenceWithCarriedStateEqualsWholeSequence) {
  ThreadPool pool(2);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor k = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 9);
  Tensor v = testing::random_tensor(Shape{kBatch * kLen, kChannels}, 10);
  Tensor decay = testing::random_tensor(Shape{kChannels}, 11);
  Tensor first = testing::random_tensor(Shape{kChannels}, 12);
  Tensor whole(Shape{kBatch * kLen, kChannels});
  ASSERT_TRUE(be.time_mix(make_args(k, v, decay, first, whole.view(), nullptr)).ok());
  std::vector<float> state(3 * kChannels);
  for (int64_t c = 0; c < kChannels; ++c) state[2 * kChannels + c] = kTimeMixInitialMax;
  for (int64_t t = 0; t < kLen; ++t) {  // sample 1, one position at a time
    Tensor kk = Tensor::from_view(k.view().row_range(kLen + t, 1));
    Tensor vv = Tensor::from_view(v.view().row_range(kLen + t, 1));
    Tensor o(Shape{1, kChannels});
    TimeMixArgs a = make_args(kk, vv, decay, first, o.view(), state.data());
    a.batch = 1; a.len = 1;
    ASSERT_TRUE(be.time_mix(a).ok());
    for (int64_t c = 0; c < kChannels; ++c) ASSERT_NEAR(o.row(0)[c], whole.row(kLen + t)[c], 1e-5f);
  }
}

TEST(TimeMixOp, RejectsMissingDecay) {
  ThreadPool pool(1);
  CpuBackend be(ExecContext{best_kernel_path(), &pool});
  Tensor k(Shape{kBatch * kLen, kChannels}), first(Shape{kChannels}), out(Shape{kBatch * kLen, kChannels});
  TimeMixArgs a = make_args(k, k, first, first, out.view(), nullptr);
  a.time_decay = nullptr;
  EXPECT_EQ(be.time_mix(a).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace am::kernels
