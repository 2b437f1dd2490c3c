#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace am::kernels {
namespace {

// Straight from the definition, in double: for each sample, head and query, build the full
// score row over unpadded keys, normalize, and mix the values.
std::vector<double> naive_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::vector<int32_t>& mask, int64_t batch, int64_t seq,
                                    int64_t heads) {
  const int64_t hidden = q.cols(), dh = hidden / heads;
  std::vector<double> out(static_cast<std::size_t>(batch * seq * hidden), 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < seq; ++i) {
        std::vector<double> p(seq, 0.0);
        double max = -1e300;
        bool any = false;
        for (int64_t j = 0; j < seq; ++j) {
          if (!mask[b * seq + j]) continue;
          double s = 0;
          for (int64_t d = 0; d < dh; ++d) {
            s += static_cast<double>(q.row(b * seq + i)[h * dh + d]) *
                 k.row(b * seq + j)[h * dh + d];
          }
          p[j] = s / std::sqrt(static_cast<double>(dh));
          max = std::max(max, p[j]);
          any = true;
        }
        if (!any) continue;  // all keys padded: zero context
        double z = 0;
        for (int64_t j = 0; j < seq; ++j) {
          p[j] = mask[b * seq + j] ? std::exp(p[j] - max) : 0.0;
          z += p[j];
        }
        for (int64_t j = 0; j < seq; ++j) {
          for (int64_t d = 0; d < dh; ++d) {
            out[(b * seq + i) * hidden + h * dh + d] += p[j] / z * v.row(b * seq + j)[h * dh + d];
          }
        }
      }
    }
  }
  return out;
}

TEST(Attention, CoreMatchesNaiveImplementationWithPaddingMask) {
  // head_dim 20: one full SIMD vector plus a tail on every path.
  const int64_t batch = 4, seq = 7, heads = 3, hidden = 60;
  // Sample 0 full, 1 and 2 padded at the end, 3 entirely padding.
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
                                     1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const Tensor q = testing::random_tensor(Shape{batch * seq, hidden}, 1);
  const Tensor k = testing::random_tensor(Shape{batch * seq, hidden}, 2);
  const Tensor v = testing::random_tensor(Shape{batch * seq, hidden}, 3);
  const std::vector<double> want = naive_attention(q, k, v, mask, batch, seq, heads);
  ThreadPool pool(3);
  for (KernelPath path : available_kernel_paths()) {
    Tensor out(Shape{batch * seq, hidden});
    testing::poison(out.view());
    attention_core(q.view(), k.view(), v.view(), mask.data(), batch, seq, heads, out.view(),
                   ExecContext{path, &pool});
    for (int64_t i = 0; i < out.numel(); ++i) {
      ASSERT_NEAR(out.data()[i], want[i], 1e-5) << kernel_path_name(path) << " element " << i;
    }
    // The fully padded sample produces zeros, not NaN.
    for (int64_t i = 3 * seq * hidden; i < out.numel(); ++i) ASSERT_EQ(out.data()[i], 0.0f);
  }
}

TEST(Attention, PaddedKeysDoNotInfluenceOutputs) {
  const int64_t seq = 6, heads = 2, hidden = 8;
  const std::vector<int32_t> mask = {1, 1, 1, 1, 0, 0};
  const Tensor q = testing::random_tensor(Shape{seq, hidden}, 4);
  const Tensor k = testing::random_tensor(Shape{seq, hidden}, 5);
  const Tensor v = testing::random_tensor(Shape{seq, hidden}, 6);
  Tensor k2 = k.clone(), v2 = v.clone();
  for (int64_t i = 0; i < hidden; ++i) {
    k2.row(4)[i] = 50.0f;  // would dominate the softmax if it were attended to
    v2.row(5)[i] = -1e6f;
  }
  for (KernelPath path : available_kernel_paths()) {
    Tensor a(Shape{seq, hidden}), b(Shape{seq, hidden});
    const ExecContext ctx{path, nullptr};
    attention_core(q.view(), k.view(), v.view(), mask.data(), 1, seq, heads, a.view(), ctx);
    attention_core(q.view(), k2.view(), v2.view(), mask.data(), 1, seq, heads, b.view(), ctx);
    for (int64_t i = 0; i < a.numel(); ++i) {
      ASSERT_EQ(a.data()[i], b.data()[i]) << kernel_path_name(path) << " " << i;
    }
  }
}

TEST(Attention, NullMaskAttendsToEveryKey) {
  const int64_t batch = 2, seq = 5, heads = 2, hidden = 6;
  const std::vector<int32_t> ones(batch * seq, 1);
  const Tensor q = testing::random_tensor(Shape{batch * seq, hidden}, 7);
  const Tensor k = testing::random_tensor(Shape{batch * seq, hidden}, 8);
  const Tensor v = testing::random_tensor(Shape{batch * seq, hidden}, 9);
  Tensor a(Shape{batch * seq, hidden}), b(Shape{batch * seq, hidden});
  const ExecContext ctx{KernelPath::kScalar, nullptr};
  attention_core(q.view(), k.view(), v.view(), nullptr, batch, seq, heads, a.view(), ctx);
  attention_core(q.view(), k.view(), v.view(), ones.data(), batch, seq, heads, b.view(), ctx);
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]);
}

TEST(Attention, SelfAttentionProjectsAttendsAndProjectsBack) {
  const int64_t batch = 2, seq = 5, heads = 2, hidden = 8;
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  const Tensor x = testing::random_tensor(Shape{batch * seq, hidden}, 10);
  const ExecContext ctx{KernelPath::kScalar, nullptr};
  // Keep f32 copies of the weights to build the naive reference.
  std::vector<Tensor> ws, bs;
  for (uint32_t i = 0; i < 4; ++i) {
    ws.push_back(testing::random_tensor(Shape{hidden, hidden}, 20 + i, 0.3f));
    bs.push_back(testing::random_tensor(Shape{hidden}, 30 + i, 0.1f));
  }
  AttentionWeights w;
  w.query = Linear::create(ws[0].clone(), bs[0].clone(), WeightFormat::kF32, ctx);
  w.key = Linear::create(ws[1].clone(), bs[1].clone(), WeightFormat::kF32, ctx);
  w.value = Linear::create(ws[2].clone(), bs[2].clone(), WeightFormat::kF32, ctx);
  w.output = Linear::create(ws[3].clone(), bs[3].clone(), WeightFormat::kF32, ctx);
  Tensor out(Shape{batch * seq, hidden});
  testing::poison(out.view());
  self_attention(x.view(), mask.data(), batch, seq, heads, w, out.view(), ctx);

  auto project = [&](const Tensor& in, int idx) {
    Tensor y(Shape{in.rows(), hidden});
    for (int64_t r = 0; r < in.rows(); ++r) {
      for (int64_t o = 0; o < hidden; ++o) {
        double s = bs[idx].data()[o];
        for (int64_t i = 0; i < hidden; ++i)
          s += static_cast<double>(in.row(r)[i]) * ws[idx].row(o)[i];
        y.row(r)[o] = static_cast<float>(s);
      }
    }
    return y;
  };
  const Tensor q = project(x, 0), k = project(x, 1), v = project(x, 2);
  const std::vector<double> ctxd = naive_attention(q, k, v, mask, batch, seq, heads);
  Tensor context(Shape{batch * seq, hidden});
  for (int64_t i = 0; i < context.numel(); ++i) context.data()[i] = static_cast<float>(ctxd[i]);
  const Tensor want = project(context, 3);
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_NEAR(out.data()[i], want.data()[i], 1e-4) << i;
}

}  // namespace
}  // namespace am::kernels
