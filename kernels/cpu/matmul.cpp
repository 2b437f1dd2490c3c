#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "common/check.h"
#include "kernels/cpu/gemm_f32.h"
#include "kernels/formats/quantized_activations.h"
#include "kernels/formats/dot_kernels.h"
#include "kernels/formats/interleaved_layout.h"
#include "kernels/formats/bf16.h"

namespace am::kernels {
namespace {

// Row-dot driver tiling. A task multiplies a tile of weight rows with a run of rows of X; the
// tile is sized so its stored bytes stay in L2 while every row of X in the task streams past it.
constexpr std::size_t kTileBytesTarget = 256 * 1024;
constexpr int64_t kFeatureTileAlign = 16;  // the SIMD kernels take 4-16 rows per pass
constexpr int64_t kMaxFeatureTile = 512;
constexpr int64_t kRowsPerTask = 64;
// Tasks per thread so dynamic hand-out balances uneven progress (another process on a core).
constexpr int64_t kTasksPerThread = 16;
// cblas takes int dimensions.
constexpr int64_t kMaxBlasDim = std::numeric_limits<int>::max();

// Rows of X from which an f32 product goes to OpenBLAS instead of gemm_f32. Measured with
//   build/bench/bench_kernels --kinds smallm --formats f32 --min-time-s 0.25   (run twice)
// on the AVX2 host (AMD EPYC VM, 2 cores shared with other work; parallel capacity 0.97-1.00x,
// so the 2-thread figures are close to 1-thread ones), at (K, N) = (4096, 4096), (2048, 5632)
// and (256, 704), 1 and 2 threads, sgemm time / gemm_f32 time per M (> 1: ours faster):
//   M = 16: 1.27-2.87 in 11 of 12 figures (one 0.80);   M = 32: 1.05-1.49 in 11 of 12 (one 0.94);
//   M = 64: 0.61-1.02 in 10 of 12 (1.06 and a 1.71 outlier);  M = 128: 0.69-0.95 in all 12.
// No (K, N) dependence stood out of the noise, so one constant. From M = 64 on OpenBLAS's packed
// GEMM (1 thread, M = 64-256: 47-94 GFLOPS, median in the 70s) stays ahead of our dot-product
// tiles (43-80 GFLOPS, median in the 50s), which do not repack W.
constexpr int64_t kF32BlasMinRows = 64;
// OpenBLAS slices (BlasThreading::kPoolSlices): at least this many W rows each, in multiples
// of the sgemm kernel's column block so no slice ends in a partial panel.
constexpr int64_t kBlasMinSliceCols = 64;
constexpr int64_t kBlasSliceAlign = 16;

void check_shapes(const char* op, ConstTensorView x, int64_t n, int64_t k, TensorView y) {
  AM_CHECK(x.cols() == k, op);
  AM_CHECK(y.rows() == x.rows() && y.cols() == n, op);
}

void add_bias(TensorView y, const float* bias, const ExecContext& ctx) {
  if (bias == nullptr) return;
  const int64_t n = y.cols();
  parallel_for(ctx, y.rows(), 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* row = y.row(i);
      for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
    }
  });
}

void row_dot_matmul(const PreparedActivations& a, const WeightMatrix& w, detail::DotRowsFn dot,
                    TensorView y, const ExecContext& ctx) {
  const int64_t m = a.rows(), n = w.rows();
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const int64_t row_tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  // Enough feature tiles that (row tasks x tiles) gives every thread several tasks, each tile
  // small enough to stay in L2 while the rows of X stream past it.
  const int64_t want_tiles = std::max<int64_t>(1, threads * kTasksPerThread / row_tasks);
  const int64_t cache_rows =
      std::max<int64_t>(kFeatureTileAlign, static_cast<int64_t>(kTileBytesTarget / w.row_bytes()));
  int64_t tile = std::min((n + want_tiles - 1) / want_tiles, cache_rows);
  tile = std::clamp((tile + kFeatureTileAlign - 1) / kFeatureTileAlign * kFeatureTileAlign,
                    kFeatureTileAlign, kMaxFeatureTile);
  const int64_t tiles = (n + tile - 1) / tile;
  parallel_for(ctx, row_tasks * tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n0 = (task % tiles) * tile;
      const int64_t n1 = std::min(n, n0 + tile);
      const int64_t m0 = (task / tiles) * kRowsPerTask;
      const int64_t m1 = std::min(m, m0 + kRowsPerTask);
      for (int64_t i = m0; i < m1; ++i) {
        dot(a.row(i), w.row_data(n0), w.row_bytes(), n1 - n0, y.row(i) + n0);
      }
    }
  });
}

// y[i][col0 + r] = row i of X . GGUF row r at `rows`, r < nrows, with ctx.path's row-dot kernel,
// one task per row of X: the strips layout's tail rows, or all of its rows on another path.
void dot_each_row(const PreparedActivations& a, WeightFormat format, const uint8_t* rows, std::size_t row_bytes,
                  int64_t nrows, TensorView y, int64_t col0, const ExecContext& ctx) {
  const detail::DotRowsFn dot = detail::dot_rows_kernel(format, ctx.path);
  AM_CHECK(dot != nullptr, "matmul: no kernel for this format on this kernel path");
  parallel_for(ctx, a.rows(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dot(a.row(i), rows, row_bytes, nrows, y.row(i) + col0);
  });
}

// Interleaved driver (kernels/formats/interleaved_layout.h). A task multiplies a tile of groups
// with a run of rows of X, the kernel's tile of rows of X at a time per group, so each group's
// bytes are read from L2 once per tile of rows of X; the GGUF tail rows (rows % 8) run on the
// row-dot kernel in the task that holds the last tile. With more rows of X than one kernel call
// takes, a task walks K in slices of kKSliceBlocks blocks (slice outside, rows of X, then groups
// inside): the slice of a row tile of X (8 rows x 512 bytes) stays in L1 while the slice's group
// blocks stream past, where whole rows (8 x 4-14 KiB) fell out of L1 at every group (the
// AVX-512 kernels at 34-51% of the int8 peak on M = 512 before, see docs/FORMATS.md). The
// kernels continue each output's sum from y (GroupDotFn's accumulate), so the bits are those of
// one call over all of K. A single row tile (GEMV, decode) reads its weights once either way and
// walks K in one call.
constexpr int64_t kKSliceBlocks = 16;
constexpr int64_t kInterleavedBlockValues = 32;  // q8_0, q4_0 and q4_1 blocks
// The packed-tile path (AVX-512): rows of X per task in whole packed tiles of 6, and at least one
// 4-group kernel call per tile of groups (tiny products would otherwise split into 1-group tasks).
// A task's weights come from memory once per task, so a prefill's M = 512 rows make one row
// task (the tasks split N): with 60 rows per task each weight byte was read from memory 9 times,
// and the first tile of X of every slice waited for it. Its K slice holds about
// kPackedSliceGroupBytes of each group (64 blocks of q8_0, 112-128 of q4_0/q4_1; 16 blocks left
// y's tile loaded and stored 8 times as often), and its panel of groups may fill an L2 of 1 MiB
// (the task count caps it first). bench_kernels --kinds gemm, M = 512, alternated rounds
// (AMD EPYC, 2026-12-07): q8_0 1 thread 60-62% -> 66-70% of the int8 peak at K = 4096 and
// 53-56% -> 64% at K = 14336; 2 threads 58-62% -> 64-68%; q4_0 67-69% -> 68-73%.
constexpr int64_t kPackedRowsPerTask = 516;
constexpr int64_t kPackedMinTileGroups = 4;
constexpr std::size_t kPackedSliceGroupBytes = 18 * 1024;
constexpr std::size_t kPackedPanelBytesTarget = 1024 * 1024;
constexpr int64_t kParallelPackBytes = int64_t{1} << 20;  // X quant bytes from which packing runs on the pool
static_assert(kPackedRowsPerTask % detail::kPackedTileRows == 0, "a task holds whole packed tiles");
void interleaved_matmul(const PreparedActivations& a, const WeightMatrix& w, detail::GroupDot group_dot,
                        detail::DotRowsFn tail_dot, TensorView y, const ExecContext& ctx) {
  const int64_t m = a.rows();
  if (m == 0) return;
  const int64_t groups = w.grouped_rows() / kInterleaveRows;
  const int64_t tail = w.rows() - w.grouped_rows();
  const std::size_t group_bytes = w.row_bytes() * kInterleaveRows;
  const int64_t tile_rows = std::min(group_dot.tile_rows, detail::kMaxGroupTileRows);
  const int64_t blocks = a.row(0).blocks;
  const std::size_t group_block_bytes = blocks > 0 ? group_bytes / static_cast<std::size_t>(blocks) : 0;
  // On a path with a packed-tile kernel (avx512) every product takes it: X is packed once, tile
  // by tile, before the product (every task of a row tile reads the same packed rows).
  const bool packed = group_dot.tile != nullptr;
  const int64_t rows_per_task = packed ? kPackedRowsPerTask : kRowsPerTask;
  const int64_t slice_blocks =
      packed ? std::max<int64_t>(kKSliceBlocks, static_cast<int64_t>(kPackedSliceGroupBytes /
                                                                      std::max<std::size_t>(1, group_block_bytes)) /
                                                    kKSliceBlocks * kKSliceBlocks)
             : kKSliceBlocks;
  const bool sliced = m > tile_rows && blocks > slice_blocks;
  const int64_t slice = sliced ? slice_blocks : std::max<int64_t>(1, blocks);
  // The bytes of a group one pass over a tile reads: what must stay in L2 while the rows of X
  // stream past.
  const std::size_t pass_group_bytes = sliced ? static_cast<std::size_t>(slice) * group_block_bytes : group_bytes;
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const int64_t row_tasks = (m + rows_per_task - 1) / rows_per_task;
  const int64_t want_tiles = std::max<int64_t>(1, threads * kTasksPerThread / row_tasks);
  const std::size_t panel_bytes = packed ? kPackedPanelBytesTarget : kTileBytesTarget;
  const int64_t cache_groups =
      std::max<int64_t>(1, static_cast<int64_t>(panel_bytes / std::max<std::size_t>(1, pass_group_bytes)));
  int64_t tile = std::max<int64_t>(1, std::min((groups + want_tiles - 1) / want_tiles, cache_groups));
  // Whole 4-group kernel calls: a tile of 22 groups (a decode's 5632 outputs on 2 threads) left
  // two to the 256-bit kernel, 6% of a q4_0 decode.
  if (packed) tile = std::max(tile / kPackedMinTileGroups * kPackedMinTileGroups, kPackedMinTileGroups);
  const int64_t tiles = std::max<int64_t>(1, (groups + tile - 1) / tile);
  // The calling thread's packed tiles, kept from call to call: a small product (bert-tiny's
  // 32 x 512 rows) spent 4-6% of its time allocating and freeing a vector per tile. Workers only
  // read them, during this call. Like the GEMM's scratch buffers (gemm_avx512.cpp), the largest
  // X a thread has multiplied stays allocated until the thread ends (q8_0, M = 512,
  // K = 14336: about 9 MB).
  thread_local std::vector<detail::PackedActTile> t_packed_x;
  std::vector<detail::PackedActTile>& packed_x = t_packed_x;
  const int64_t ntiles = packed ? (m + detail::kPackedTileRows - 1) / detail::kPackedTileRows : 0;
  if (packed) {
    if (packed_x.size() < static_cast<std::size_t>(ntiles)) packed_x.resize(static_cast<std::size_t>(ntiles));
    const auto pack = [&](int64_t begin, int64_t end) {
      ActRow rows[detail::kPackedTileRows];
      for (int64_t k = begin; k < end; ++k) {
        const int64_t i = k * detail::kPackedTileRows;
        const int64_t mr = std::min(detail::kPackedTileRows, m - i);
        for (int64_t r = 0; r < mr; ++r) rows[r] = a.row(i + r);
        detail::pack_act_tile(w.format(), rows, mr, packed_x[static_cast<std::size_t>(k)]);
      }
    };
    // Waking the pool costs more than packing a small X (bert-tiny's 32 x 128: ~1 us).
    if (m * blocks * kInterleavedBlockValues >= kParallelPackBytes) {
      parallel_for(ctx, ntiles, 1, pack);
    } else {
      pack(0, ntiles);
    }
  }
  parallel_for(ctx, row_tasks * tiles, 1, [&](int64_t begin, int64_t end) {
    ActRow rows[detail::kMaxGroupTileRows];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task % tiles;
      const int64_t g0 = t * tile;
      const int64_t g1 = std::min(groups, g0 + tile);
      const int64_t m0 = (task / tiles) * rows_per_task;
      const int64_t m1 = std::min(m, m0 + rows_per_task);
      // At least one pass, so that K = 0 (no blocks) still writes its zeros.
      for (int64_t b0 = 0; b0 < std::max<int64_t>(blocks, 1) && g0 < g1; b0 += slice) {
        const int64_t nb = std::min(slice, blocks - b0);
        const std::size_t offset = static_cast<std::size_t>(b0) * group_block_bytes;
        if (packed) {
          // A row tile's slice, read by every group of the tile.
          for (int64_t i = m0; i < m1; i += detail::kPackedTileRows) {
            const detail::PackedActTile& px = packed_x[static_cast<std::size_t>(i / detail::kPackedTileRows)];
            group_dot.tile(detail::packed_view(px, b0, nb), px.rows, w.group_data(g0) + offset, group_bytes, g1 - g0,
                           y.row(i) + g0 * kInterleaveRows, y.cols(), b0 > 0);
          }
          continue;
        }
        for (int64_t i = m0; i < m1; i += tile_rows) {
          const int64_t mr = std::min(tile_rows, m1 - i);
          for (int64_t r = 0; r < mr; ++r) {
            rows[r] = a.row(i + r);
            rows[r].q += b0 * kInterleavedBlockValues;
            rows[r].d += b0;
            rows[r].sum += b0;
            rows[r].blocks = nb;
          }
          for (int64_t g = g0; g < g1; ++g) {
            group_dot.fn(rows, mr, w.group_data(g) + offset, y.row(i) + g * kInterleaveRows, y.cols(), b0 > 0);
          }
        }
      }
      if (tail > 0 && t == tiles - 1) {
        const int64_t n0 = w.grouped_rows();
        for (int64_t i = m0; i < m1; ++i) tail_dot(a.row(i), w.row_data(n0), w.row_bytes(), tail, y.row(i) + n0);
      }
    }
  });
}

// f16 / bf16 weights with many rows of X on the avx2 path, which has no blocked GEMM of its own:
// tiles of kHalfBlasTileRows weight rows are decoded to f32 (exact) into a per-task scratch and
// multiplied by OpenBLAS sgemm, single-threaded on the pool like matmul_f32_blas. For bf16, X is
// rounded to bf16 first, so the products are the bf16 x bf16 products every path multiplies
// (exact in f32); only the order of the f32 sums differs. The scratch is transient (one tile per
// running task), not a second copy of the weight. 256 rows keep OpenBLAS's repacking of X to
// one pass per 256 outputs.
constexpr int64_t kHalfBlasTileRows = 256;

void half_weight_blas(ConstTensorView x, const WeightMatrix& w, const float* bias, TensorView y,
                      const ExecContext& ctx) {
  const int64_t m = x.rows(), k = x.cols(), n = w.rows();
  AM_CHECK(m <= kMaxBlasDim && n <= kMaxBlasDim && k <= kMaxBlasDim,
           "matmul: dimension beyond OpenBLAS's 32-bit interface");
  Tensor rounded;
  const float* xs = x.data;
  if (w.format() == WeightFormat::kBF16) {
    rounded = Tensor(Shape{m, k});
    parallel_for(ctx, m, 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = 0; j < k; ++j) rounded.row(i)[j] = round_to_bf16(x.row(i)[j]);
      }
    });
    xs = rounded.data();
  }
  for (int64_t i = 0; i < m; ++i) {
    if (bias != nullptr) {
      std::copy(bias, bias + n, y.row(i));
    } else {
      std::fill(y.row(i), y.row(i) + n, 0.0f);
    }
  }
  if (k == 0) return;
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
  parallel_for(ctx, (n + kHalfBlasTileRows - 1) / kHalfBlasTileRows, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> tile(static_cast<std::size_t>(std::min(n, kHalfBlasTileRows) * k));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n0 = t * kHalfBlasTileRows, n1 = std::min(n, n0 + kHalfBlasTileRows);
      for (int64_t r = n0; r < n1; ++r) w.dequantize_row(r, tile.data() + (r - n0) * k);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n1 - n0),
                  static_cast<int>(k), 1.0f, xs, static_cast<int>(k), tile.data(), static_cast<int>(k), 1.0f,
                  y.data + n0, static_cast<int>(n));
    }
  });
}

}  // namespace

int64_t f32_blas_min_rows(int64_t /*k*/, int64_t /*n*/) { return kF32BlasMinRows; }

void matmul_f32_blas(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y,
                     const ExecContext& ctx, BlasThreading threading) {
  const int64_t m = x.rows(), k = x.cols(), n = w.rows();
  AM_CHECK(w.cols() == k, "matmul_f32: x and w disagree on K");
  AM_CHECK(y.rows() == m && y.cols() == n, "matmul_f32: y must be [M, N]");
  AM_CHECK(m <= kMaxBlasDim && n <= kMaxBlasDim && k <= kMaxBlasDim,
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
  auto sgemm = [&](int64_t n0, int64_t n1) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m),
                static_cast<int>(n1 - n0), static_cast<int>(k), 1.0f, x.data, static_cast<int>(k),
                w.row(n0), static_cast<int>(k), 1.0f, y.data + n0, static_cast<int>(n));
  };
  // Why slices on the pool: measured in the same runs as kF32BlasMinRows, OpenBLAS on its own
  // 2 threads took 1.07-2.90x the time of 2 single-threaded slices at M = 2-8 and 0.84-1.44x at
  // M = 32-256 (noise either side) — never clearly faster — and its threads keep spinning after
  // a call (OpenBLAS's thread timeout) while the pool's workers spin for the next op, so two
  // owners would fight over the same 2 cores.
  const int threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  if (threading == BlasThreading::kOpenBlasThreads) {
    openblas_set_num_threads(threads);
    sgemm(0, n);
    openblas_set_num_threads(1);
    return;
  }
  // OpenBLAS starts with as many threads as OPENBLAS_NUM_THREADS or the machine's CPUs; it must
  // run single-threaded inside the pool's threads. The getter reads a global, so this is cheap.
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
  // Slices of W's rows: each sgemm packs its own W panel once and X (the smaller operand at
  // these shapes) again; slices stay multiples of kBlasSliceAlign columns.
  const int64_t slices =
      std::clamp<int64_t>(n / kBlasMinSliceCols, 1, static_cast<int64_t>(threads));
  const int64_t per = (n + slices - 1) / slices;
  const int64_t slice = (per + kBlasSliceAlign - 1) / kBlasSliceAlign * kBlasSliceAlign;
  parallel_for(ctx, (n + slice - 1) / slice, 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) sgemm(s * slice, std::min(n, (s + 1) * slice));
  });
}

void matmul_f32(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y,
                const ExecContext& ctx) {
  if (x.rows() >= f32_blas_min_rows(x.cols(), w.rows())) {
    matmul_f32_blas(x, w, bias, y, ctx);
  } else {
    gemm_f32(x, w, bias, y, ctx);
  }
}

void matmul(ConstTensorView x, const WeightMatrix& w, const float* bias, TensorView y,
            const ExecContext& ctx) {
  check_shapes("matmul: x must be [M, K] and y [M, N] for a [N, K] weight", x, w.rows(), w.cols(),
               y);
  if (w.format() == WeightFormat::kF32) {
    matmul_f32(x, ConstTensorView{reinterpret_cast<const float*>(w.data()), Shape{w.rows(), w.cols()}},
               bias, y, ctx);
    return;
  }
  if (x.rows() == 0 || w.rows() == 0) return;
  if ((w.format() == WeightFormat::kF16 || w.format() == WeightFormat::kBF16) && ctx.path == KernelPath::kAvx2 &&
      x.rows() >= f32_blas_min_rows(x.cols(), w.rows())) {
    half_weight_blas(x, w, bias, y, ctx);
    return;
  }
  PreparedActivations a;
  a.prepare(x, w.format(), ctx);
  bool done = false;
  if (w.layout() == WeightLayout::kStrips64) {
    // Laid out for the avx512 path (cpu_execution_layout), for every M: the strips read in place,
    // then the GGUF tail rows (rows % 64) as a rows-layout matrix of their own would be: the
    // blocked GEMM from its row count on, the row-dot kernels below it (the bits of the rows
    // layout either way: a column's sum never depends on its neighbours).
#if defined(__x86_64__)
    const int64_t strips = w.grouped_rows();
    if (ctx.path == KernelPath::kAvx512 &&
        detail::gemm_strips64(a, w.format(), w.data(), w.row_bytes(), strips, y.data, y.cols(), ctx)) {
      const int64_t tail = w.rows() - strips;
      if (tail > 0 && !(x.rows() >= kGemmMinRows && detail::gemm_avx512(a, w.format(), w.row_data(strips), w.row_bytes(),
                                                                          tail, y.data + strips, y.cols(), ctx))) {
        dot_each_row(a, w.format(), w.row_data(strips), w.row_bytes(), tail, y, strips, ctx);
      }
      done = true;
    }
#endif
    if (!done) {
      // Called on another path than the weight was laid out for: right, not fast — its GGUF rows
      // copied, then that path's row kernel.
      std::vector<uint8_t> rows(w.size_bytes() + kWeightReadSlackBytes, 0);
      w.gguf_rows(rows.data());
      dot_each_row(a, w.format(), rows.data(), w.row_bytes(), w.rows(), y, 0, ctx);
      done = true;
    }
  }
  if (w.layout() == WeightLayout::kInterleaved8) {
    const detail::GroupDot group_dot = detail::group_dot_kernel(w.format(), ctx.path);
    const detail::DotRowsFn tail_dot = detail::dot_rows_kernel(w.format(), ctx.path);
    AM_CHECK((group_dot.fn != nullptr || group_dot.tile != nullptr) && tail_dot != nullptr,
             "matmul: no interleaved kernel for this format");
    interleaved_matmul(a, w, group_dot, tail_dot, y, ctx);
    done = true;
  }
#if defined(__x86_64__)
  if (!done && ctx.path == KernelPath::kAvx512 && x.rows() >= kGemmMinRows) {
    done = detail::gemm_avx512(a, w.format(), w.data(), w.row_bytes(), w.rows(), y.data, y.cols(),
                               ctx);
  }
#endif
  if (!done) {
    const detail::DotRowsFn dot = detail::dot_rows_kernel(w.format(), ctx.path);
    AM_CHECK(dot != nullptr, "matmul: no kernel for this format on this kernel path");
    row_dot_matmul(a, w, dot, y, ctx);
  }
  add_bias(y, bias, ctx);
}

void matmul_reference(ConstTensorView x, const WeightMatrix& w, const float* bias, TensorView y) {
  check_shapes("matmul_reference: x must be [M, K] and y [M, N] for a [N, K] weight", x, w.rows(),
               w.cols(), y);
  const ExecContext ctx{KernelPath::kScalar, nullptr};
  if (w.format() == WeightFormat::kF32) {
    // The f32 reference is the plain triple loop, not OpenBLAS.
    gemm_f32_reference(
        x, ConstTensorView{reinterpret_cast<const float*>(w.data()), Shape{w.rows(), w.cols()}},
        bias, y);
    return;
  }
  PreparedActivations a;
  a.prepare(x, w.format(), ctx);
  const detail::DotRowsFn dot = detail::dot_rows_scalar(w.format());
  if (w.layout() == WeightLayout::kInterleaved8) {
    // The interleaved layout's scalar reference (bit-identical to the row reference below).
    interleaved_matmul(a, w, {detail::group_dot_scalar(w.format()), detail::kGroupTileRows}, dot, y, ctx);
  } else if (w.layout() == WeightLayout::kStrips64) {
    // The row reference on the matrix's GGUF rows (a copy: the reference is for tests).
    std::vector<uint8_t> rows(w.size_bytes() + kWeightReadSlackBytes, 0);
    w.gguf_rows(rows.data());
    for (int64_t i = 0; i < x.rows(); ++i) dot(a.row(i), rows.data(), w.row_bytes(), w.rows(), y.row(i));
  } else {
    for (int64_t i = 0; i < x.rows(); ++i) dot(a.row(i), w.data(), w.row_bytes(), w.rows(), y.row(i));
  }
  add_bias(y, bias, ctx);
}

}  // namespace am::kernels
