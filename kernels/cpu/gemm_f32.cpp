#include "kernels/cpu/gemm_f32.h"

#include <algorithm>

#include "common/check.h"
#include "kernels/cpu/gemm_f32_kernels.h"

namespace am::kernels {
namespace {

// Tiling of the driver. A task multiplies a tile of W rows with a run of X rows.
//   - From kKSplitMinRows rows of X on, K is cut into blocks of kKBlockFloats: a kernel's group
//     of 3-4 W rows times one block (12-16 KiB) then stays in L1 while every X row of the task
//     (64 x 4 KiB at most, in L2) passes it; with whole rows at K = 4096 both would come from
//     L2. On the AVX2 EPYC this was measured neutral (bench_kernels --kinds smallm --threads 1,
//     K = N = 4096, M = 16-256: 50-58 GFLOPS with blocks, 55-62 without, inside the run-to-run
//     noise of that shared 2-core VM); it is kept for the larger K of 7B-class FFNs (14336),
//     whose rows no cache level holds 4 at a time. Fewer X rows are bound by W's stream, which
//     is read once either way and is best left in long runs for the prefetchers.
//   - Tiles are multiples of the kernels' 8-row GEMV pass, and there are enough of them to give
//     every thread several tasks, so dynamic hand-out balances a core that another process
//     slows down.
constexpr int64_t kKSplitMinRows = 8;
constexpr int64_t kKBlockFloats = 1024;
constexpr int64_t kRowsPerTask = 64;      // X rows per task
constexpr int64_t kFeatureTileAlign = 8;  // W rows: the GEMV pass of the SIMD kernels
constexpr int64_t kMaxFeatureTile = 512;
constexpr int64_t kTasksPerThread = 8;
// Below this many multiply-adds a product runs on the calling thread: handing it to the pool
// costs about as much as computing it (the scaled models' K/V projections are 16 Ki MACs).
constexpr int64_t kInlineMacs = 32 * 1024;

detail::GemmF32BlockFn block_kernel(KernelPath path) {
  switch (path) {
#if defined(__x86_64__)
    case KernelPath::kAvx512:
      return detail::gemm_f32_block_avx512;
    case KernelPath::kAvx2:
      return detail::gemm_f32_block_avx2;
#endif
    default:
      return detail::gemm_f32_block_scalar;  // scalar, and paths without their own f32 kernel
  }
}

void check_shapes(const char* op, ConstTensorView x, ConstTensorView w, TensorView y) {
  AM_CHECK(w.cols() == x.cols(), op);
  AM_CHECK(y.rows() == x.rows() && y.cols() == w.rows(), op);
}

void fill_bias(const float* bias, TensorView y) {
  for (int64_t i = 0; i < y.rows(); ++i) {
    if (bias != nullptr) {
      std::copy(bias, bias + y.cols(), y.row(i));
    } else {
      std::fill(y.row(i), y.row(i) + y.cols(), 0.0f);
    }
  }
}

}  // namespace

namespace detail {

void gemm_f32_block_scalar(const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw,
                           int64_t n, int64_t k, const float* bias, bool accumulate, float* y,
                           int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float* xr = x + i * ldx;
      const float* wr = w + j * ldw;
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += xr[p] * wr[p];
      float& out = y[i * ldy + j];
      out = (accumulate ? out : (bias != nullptr ? bias[j] : 0.0f)) + s;
    }
  }
}

}  // namespace detail

void gemm_f32(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y,
              const ExecContext& ctx) {
  check_shapes("gemm_f32: x must be [M, K], w [N, K] and y [M, N]", x, w, y);
  const int64_t m = x.rows(), k = x.cols(), n = w.rows();
  if (m == 0 || n == 0) return;
  if (k == 0) {
    fill_bias(bias, y);
    return;
  }
  const detail::GemmF32BlockFn block = block_kernel(ctx.path);
  const int64_t run = std::min(m, kRowsPerTask);
  const int64_t kc = m >= kKSplitMinRows ? std::min(k, kKBlockFloats) : k;
  const int64_t row_tasks = (m + run - 1) / run;
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const bool inline_only = ctx.pool == nullptr || m * n * k < kInlineMacs;
  const int64_t want_tiles =
      inline_only ? 1 : std::max<int64_t>(1, threads * kTasksPerThread / row_tasks);
  int64_t tile = (n + want_tiles - 1) / want_tiles;
  tile = std::clamp((tile + kFeatureTileAlign - 1) / kFeatureTileAlign * kFeatureTileAlign,
                    kFeatureTileAlign, inline_only ? std::max(n, kFeatureTileAlign) : kMaxFeatureTile);
  const int64_t tiles = (n + tile - 1) / tile;
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n0 = (task % tiles) * tile;
      const int64_t n1 = std::min(n, n0 + tile);
      const int64_t m0 = (task / tiles) * run;
      const int64_t m1 = std::min(m, m0 + run);
      for (int64_t p0 = 0; p0 < k; p0 += kc) {
        block(x.row(m0) + p0, k, m1 - m0, w.row(n0) + p0, k, n1 - n0, std::min(kc, k - p0),
              bias != nullptr ? bias + n0 : nullptr, p0 > 0, y.row(m0) + n0, n);
      }
    }
  };
  if (inline_only) {
    work(0, row_tasks * tiles);
  } else {
    parallel_for(ctx, row_tasks * tiles, 1, work);
  }
}

void gemm_f32_reference(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y) {
  check_shapes("gemm_f32_reference: x must be [M, K], w [N, K] and y [M, N]", x, w, y);
  if (x.rows() == 0 || w.rows() == 0) return;
  detail::gemm_f32_block_scalar(x.data, x.cols(), x.rows(), w.data, w.cols(), w.rows(), x.cols(),
                                bias, false, y.data, y.cols());
}

}  // namespace am::kernels
