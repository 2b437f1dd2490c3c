// Per-path kernels of the quantized matmul, behind the dispatch in kernels/cpu/matmul.cpp. Internal
// to kernels/: x86 kernels are compiled with function-level target attributes (never global
// flags) and may only be called when kernel_path_available() says so; NEON kernels exist only
// in aarch64 builds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_features.h"
#include "kernels/exec_context.h"
#include "kernels/formats/quantized_activations.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels::detail {

// out[r] = dot(a, weight row r) for r in [0, nrows); weight row r starts at w + r * row_bytes.
// The dot is the format's product as docs/FORMATS.md defines it (exact int32 block sums, scaled
// and summed in f32 for the integer formats). The weight buffer must be followed by
// kWeightReadSlackBytes readable bytes (WeightMatrix guarantees it): the AVX-512 kernels fetch a
// block pair with one 64-byte load.
using DotRowsFn = void (*)(const ActRow& a, const uint8_t* w, std::size_t row_bytes, int64_t nrows,
                           float* out);

// The row-dot kernel of (format, path); null for f32 (OpenBLAS) and for paths not built here.
DotRowsFn dot_rows_kernel(WeightFormat format, KernelPath path);

DotRowsFn dot_rows_scalar(WeightFormat format);
DotRowsFn dot_rows_avx2(WeightFormat format);
DotRowsFn dot_rows_avx512(WeightFormat format);
DotRowsFn dot_rows_neon(WeightFormat format);

// Interleaved groups (kernels/formats/interleaved_layout.h): for each of the mr rows x[0], ...,
// x[mr - 1] of X (1 <= mr <= kGroupTileRows, all with the same blocks), y[m * ldy + i] =
// dot(x[m], row i of the group) for i < kInterleaveRows, the same product as the row-dot
// kernels compute on the group's GGUF rows. `group` is the group's first byte; like every weight
// buffer it must be followed by kWeightReadSlackBytes readable bytes.
inline constexpr int64_t kGroupTileRows = 4;
using GroupDotFn = void (*)(const ActRow* x, int64_t mr, const uint8_t* group, float* y, int64_t ldy);

// The scalar reference: the same integer block sums and the same f32 expression, in the same
// order, as dot_rows_scalar() on GGUF rows, so the two agree bit for bit.
GroupDotFn group_dot_scalar(WeightFormat format);
// AVX2 + FMA + F16C; also what the avx512 path runs on an interleaved matrix. Null where the
// format has no interleaved form.
GroupDotFn group_dot_avx2(WeightFormat format);
// The interleaved kernel of (format, path): avx2 on the avx2 and avx512 paths, the scalar
// reference on scalar and neon (the portable fallback). Null for formats without the layout.
GroupDotFn group_dot_kernel(WeightFormat format, KernelPath path);

void quantize_activation_row_avx2(const float* x, int64_t k, int64_t block, int8_t* q, float* d,
                                  int32_t* sum, int16_t* bsum);
void quantize_activation_row_avx512(const float* x, int64_t k, int64_t block, int8_t* q, float* d,
                                    int32_t* sum, int16_t* bsum);

// The blocked AVX-512 GEMM for M >= kGemmMinRows (prefill): Y[m, n] = dot(a.row(m), W row n)
// for all m < a.rows(), n < nrows, written to y (row stride ldy floats). Weight rows are
// decoded panel by panel into a cache-resident packed layout and multiplied by a register-tiled
// VNNI / BF16 / FMA microkernel; the work is split over ctx.pool by panels of output columns.
// Returns false (and writes nothing) for formats it does not handle.
bool gemm_avx512(const PreparedActivations& a, WeightFormat format, const uint8_t* w,
                 std::size_t row_bytes, int64_t nrows, float* y, int64_t ldy,
                 const ExecContext& ctx);

}  // namespace am::kernels::detail
