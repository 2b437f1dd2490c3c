#include "kernels/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/check.h"

namespace am::kernels {
namespace {

// Output-feature tile bounds: at least the 4 rows the SIMD kernels handle per pass, at most as
// many weight rows as stay in L2 for typical K (64 rows x 768 in = 52 KB of q8_0).
constexpr int64_t kMinFeatureTile = 4;
constexpr int64_t kMaxFeatureTile = 64;
// Rows of x per task: large enough that a weight tile is reused from cache many times.
constexpr int64_t kRowsPerTask = 64;
// Target tasks per thread so dynamic hand-out can balance.
constexpr int64_t kTasksPerThread = 4;
// cblas takes int dimensions.
constexpr int64_t kMaxBlasDim = std::numeric_limits<int>::max();

}  // namespace

void set_blas_threads(int threads) { openblas_set_num_threads(std::max(1, threads)); }

void matmul_f32(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y) {
  const int64_t m = x.rows(), k = x.cols(), n = w.rows();
  AM_KERNEL_CHECK(w.cols() == k, "matmul_f32: x and w disagree on K");
  AM_KERNEL_CHECK(y.rows() == m && y.cols() == n, "matmul_f32: y must be [M, N]");
  AM_KERNEL_CHECK(m <= kMaxBlasDim && n <= kMaxBlasDim && k <= kMaxBlasDim,
                  "matmul_f32: dimension beyond OpenBLAS's 32-bit interface");
  if (m == 0 || n == 0) return;
  // Seed y with the bias (or zeros) and let sgemm accumulate onto it: one pass over y.
  for (int64_t i = 0; i < m; ++i) {
    if (bias != nullptr) {
      std::copy(bias, bias + n, y.row(i));
    } else {
      std::fill(y.row(i), y.row(i) + n, 0.0f);
    }
  }
  if (k == 0) return;  // sgemm rejects lda = 0; the product is empty anyway
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, x.data, static_cast<int>(k), w.data, static_cast<int>(k),
              1.0f, y.data, static_cast<int>(n));
}

void matmul_q8_0(ConstTensorView x, const Q8_0Matrix& w, const float* bias, TensorView y,
                 const ExecContext& ctx) {
  const int64_t m = x.rows(), k = x.cols(), n = w.rows();
  AM_KERNEL_CHECK(w.cols() == k, "matmul_q8_0: x and w disagree on K");
  AM_KERNEL_CHECK(y.rows() == m && y.cols() == n, "matmul_q8_0: y must be [M, N]");
  if (m == 0 || n == 0) return;
  const int64_t nb = w.blocks_per_row();

  std::vector<BlockQ8_0> xq(static_cast<std::size_t>(m * nb));
  parallel_for(ctx, m, 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      quantize_row_q8_0(x.row(i), xq.data() + i * nb, k, ctx.path);
  });

  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const int64_t row_tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  // Enough feature tiles that (row_tasks x tiles) gives every thread several tasks.
  const int64_t want_tiles = std::max<int64_t>(1, threads * kTasksPerThread / row_tasks);
  int64_t tile = (n + want_tiles - 1) / want_tiles;
  tile = std::clamp((tile + kMinFeatureTile - 1) / kMinFeatureTile * kMinFeatureTile,
                    kMinFeatureTile, kMaxFeatureTile);
  const int64_t tiles = (n + tile - 1) / tile;

  parallel_for(ctx, row_tasks * tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n0 = (task % tiles) * tile;
      const int64_t n1 = std::min(n, n0 + tile);
      const int64_t m0 = (task / tiles) * kRowsPerTask;
      const int64_t m1 = std::min(m, m0 + kRowsPerTask);
      for (int64_t i = m0; i < m1; ++i) {
        float* out = y.row(i) + n0;
        q8_0_dot_rows(xq.data() + i * nb, w.row(n0), nb, n1 - n0, nb, out, ctx.path);
        if (bias != nullptr) {
          for (int64_t j = 0; j < n1 - n0; ++j) out[j] += bias[n0 + j];
        }
      }
    }
  });
}

}  // namespace am::kernels
