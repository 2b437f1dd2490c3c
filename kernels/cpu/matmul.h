// Matrix multiplication in the weight layout of GGUF and PyTorch Linear:
//   Y[M, N] = X[M, K] · W[N, K]^T (+ bias[N])
// W is stored row-major [out_features, in_features].
//
// Contract:
//   - x: [M, K]; w: [N, K] (f32 view, or a WeightMatrix with cols() == K); y: [M, N], must not
//     alias x or w; bias: N floats or null. Shapes are checked (abort on mismatch: programmer
//     error). Every element of y is written.
//   - matmul_f32 (and matmul with an f32 WeightMatrix) runs our own GEMV / small-M GEMM
//     (kernels/cpu/gemm_f32.h) on ctx.path over ctx.pool when M < f32_blas_min_rows(), and
//     OpenBLAS sgemm from there on (matmul_f32_blas). One owner of the cores at a time: OpenBLAS
//     is kept single-threaded and called once per pool thread on a slice of W's rows (output
//     columns), so its threads never run beside the pool's (BlasThreading below says why).
//     Below the crossover f32 results do not depend on the thread count; above it the slices
//     follow the pool's size, so the last bits may (OpenBLAS does not promise otherwise).
//   - matmul() with any other format prepares X once (kernels/formats/quantized_activations.h: bf16
//     rounding or per-row 8-bit blocks), then runs on ctx.path over ctx.pool, by w.layout():
//       * kInterleaved8 (the avx2 path's execution layout of q8_0/q4_0/q4_1,
//         kernels/formats/interleaved_layout.h), every M: the group kernels, up to 4 rows of X
//         times 8 weight rows per call (AVX2 on the avx2/avx512 paths, the scalar reference on
//         scalar/neon), split by tiles of groups and runs of rows of X; the GGUF tail rows
//         (rows % 8) on the row-dot kernel;
//       * kStrips64 (f16 on the avx512 path, bf16 there on a CPU with AVX512_BF16,
//         kernels/formats/strips_layout.h), every M: the blocked GEMM's BF16 or f16 microkernel
//         reads the strips in place as its panels (1-6 rows of X per call); the GGUF tail rows
//         (rows % 64) as a rows matrix of their own: the blocked GEMM from kGemmMinRows rows of
//         X, the row-dot kernels below. On another path: that path's row kernel on a copy of the
//         GGUF rows (right, not fast);
//       * f16 / bf16 on the avx2 path with M >= f32_blas_min_rows(): weight tiles decoded to f32
//         (exact) and OpenBLAS sgemm on the pool as for f32, X rounded to bf16 first for bf16
//         (the products stay the bf16 x bf16 products; only the f32 summation order differs);
//       * kRows, M >= kGemmMinRows on the avx512 path: the blocked GEMM (weights decoded panel by
//         panel into a packed layout, register-tiled VNNI / BF16 / FMA microkernels);
//       * kRows otherwise: the row-dot kernels (GEMV for M = 1), split by tiles of output
//         features (and rows of X), streaming the stored weight bytes once per row of X.
//     Paths agree with the scalar reference up to the order of f32 summation (the integer
//     block sums are exact everywhere); results do not depend on the thread count.
//   - matmul_reference() is the scalar reference itself (single-threaded), for tests and
//     benchmarks; on an interleaved matrix it runs the interleaved scalar reference, which gives
//     the same bits as the row reference on the same matrix in GGUF rows; on a strips64 matrix
//     the row reference on a copy of its GGUF rows.
//   - All are safe to call concurrently with distinct outputs.
#pragma once

#include <cstdint>

#include "kernels/exec_context.h"
#include "kernels/formats/weight_matrix.h"
#include "kernels/tensor.h"

namespace am::kernels {

// Rows of X from which the avx512 path uses the blocked GEMM instead of row dots.
inline constexpr int64_t kGemmMinRows = 8;

// Rows of X from which matmul_f32 hands an f32 product to OpenBLAS (matmul.cpp carries the
// measurement it comes from).
int64_t f32_blas_min_rows(int64_t k, int64_t n);

// How the OpenBLAS path uses the cores.
//   kPoolSlices:      OpenBLAS single-threaded, one sgemm per pool thread on its own slice of
//                     W's rows; the pool is the only owner of the cores (the default).
//   kOpenBlasThreads: one sgemm from the calling thread on OpenBLAS's own threads, their count
//                     set to the pool's size for the call and back to 1 after (the pool idles
//                     meanwhile). Kept for the benchmark that chose between them; not safe to
//                     run concurrently with other OpenBLAS users.
enum class BlasThreading { kPoolSlices, kOpenBlasThreads };

void matmul_f32(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y,
                const ExecContext& ctx);
// The OpenBLAS path at any M (the crossover's other side, for tests and benchmarks).
void matmul_f32_blas(ConstTensorView x, ConstTensorView w, const float* bias, TensorView y,
                     const ExecContext& ctx, BlasThreading threading = BlasThreading::kPoolSlices);
void matmul(ConstTensorView x, const WeightMatrix& w, const float* bias, TensorView y,
            const ExecContext& ctx);
void matmul_reference(ConstTensorView x, const WeightMatrix& w, const float* bias, TensorView y);

}  // namespace am::kernels
