// MoE routing ops: top-k over softmax probabilities (with and without renormalisation) against a
// sort in double, and the row gather / weighted scatter-add against loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/test_util.h"

namespace am::kernels {
namespace {

TEST(CpuTopK, PicksTheLargestProbabilitiesWithTheirWeights) {
  ThreadPool pool(2);
  CpuBackend cpu(ExecContext{KernelPath::kScalar, &pool});
  const int64_t rows = 50, experts = 8;
  Tensor logits = testing::random_tensor(Shape{rows, experts}, 21, 2.0f);
  for (bool renorm : {false, true}) {
    for (int64_t k : {1, 2, 3}) {
      std::vector<int32_t> ids(static_cast<std::size_t>(rows * k));
      std::vector<float> w(static_cast<std::size_t>(rows * k));
      ASSERT_TRUE(cpu.top_k(logits.view(), k, renorm, ids.data(), w.data()).ok());
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> p(experts);
        double sum = 0;
        for (int64_t e = 0; e < experts; ++e) sum += (p[static_cast<std::size_t>(e)] = std::exp(double(logits.row(r)[e])));
        std::vector<int> order(experts);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
        double chosen = 0;
        for (int64_t j = 0; j < k; ++j) chosen += p[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
        for (int64_t j = 0; j < k; ++j) {
          const int e = order[static_cast<std::size_t>(j)];
          ASSERT_EQ(ids[static_cast<std::size_t>(r * k + j)], e);
          ASSERT_NEAR(w[static_cast<std::size_t>(r * k + j)], p[static_cast<std::size_t>(e)] / (renorm ? chosen : sum), 1e-6);
        }
      }
    }
  }
}

TEST(CpuTopK, RejectsKOutsideTheExperts) {
  CpuBackend cpu(ExecContext{});
  Tensor logits(Shape{2, 4});
  int32_t ids[10];
  float w[10];
  EXPECT_EQ(cpu.top_k(logits.view(), 5, true, ids, w).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu.top_k(logits.view(), 0, true, ids, w).code(), StatusCode::kInvalidArgument);
}

TEST(CpuRows, IndexAndScatterAddMoveRowsExactly) {
  CpuBackend cpu(ExecContext{});
  Tensor x = testing::random_tensor(Shape{6, 5}, 8);
  const std::vector<int32_t> ids = {4, 0, 4, 2};
  Tensor g(Shape{4, 5});
  ASSERT_TRUE(cpu.index_rows(x.view(), ids.data(), 4, g.view()).ok());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(g.row(i)[c], x.row(ids[static_cast<std::size_t>(i)])[c]);
  Tensor y = testing::random_tensor(Shape{6, 5}, 9);
  Tensor want = y.clone();
  const std::vector<float> s = {0.5f, -1.25f, 2.0f, 0.75f};
  for (std::size_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 5; ++c) want.row(ids[i])[c] += s[i] * g.row(static_cast<int64_t>(i))[c];
  ASSERT_TRUE(cpu.scatter_add_rows(g.view(), ids.data(), s.data(), 4, y.view()).ok());
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_FLOAT_EQ(y.data()[i], want.data()[i]);
  const int32_t bad = 6;
  EXPECT_EQ(cpu.index_rows(x.view(), &bad, 1, g.view().row_range(0, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu.scatter_add_rows(g.view().row_range(0, 1), &bad, s.data(), 1, y.view()).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace am::kernels
