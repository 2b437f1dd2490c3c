// Per-path kernels of the quantized matmul, behind the dispatch in kernels/cpu/matmul.cpp. Internal
// to kernels/: x86 kernels are compiled with function-level target attributes (never global
// flags) and may only be called when kernel_path_available() says so; NEON kernels exist only
// in aarch64 builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
// x[mr - 1] of X (1 <= mr <= the kernel's tile rows, all with the same blocks), y[m * ldy + i] =
// dot(x[m], row i of the group) for i < kInterleaveRows, the same product as the row-dot
// kernels compute on the group's GGUF rows. `group` is the group's first byte; like every weight
// buffer it must be followed by kWeightReadSlackBytes readable bytes.
inline constexpr int64_t kGroupTileRows = 4;  // scalar and AVX2 kernels (16 registers)
inline constexpr int64_t kMaxGroupTileRows = 8;
// accumulate: each output continues from the value y holds (the f32 sum of earlier blocks, in
// the same order as one call over all of them), instead of starting at 0. With ActRows and a
// group pointer advanced to block b0 and `blocks` cut to a range, a product can be walked in
// K-slices that give the bits of one call.
using GroupDotFn = void (*)(const ActRow* x, int64_t mr, const uint8_t* group, float* y, int64_t ldy,
                            bool accumulate);

// The scalar reference: the same integer block sums and the same f32 expression, in the same
// order, as dot_rows_scalar() on GGUF rows, so the two agree bit for bit.
GroupDotFn group_dot_scalar(WeightFormat format);
// AVX2 + FMA + F16C. Null where the format has no interleaved form.
GroupDotFn group_dot_avx2(WeightFormat format);
// The AVX-512 interleaved products' tiles of X (any number of rows): a tile's rows packed so
// that one pointer walks them and every operand the kernel broadcasts sits at a constant offset. For mr
// rows and `blocks` blocks of 32:
//   q:     [block][chunk c of 8][row][4 bytes]: bytes 4c..4c+3 of the row's block quants;
//   d:     [block][row] the rows' scales;
//   corr:  [block][row] the integer correction of the weight encoding: -128 * sum(x) for q8_0
//          (weights w + 128), -8 * sum(x) for q4_0 (nibbles), 0 for q4_1;
//   msum:  [block][row] d * sum(x) as float (q4_1's min term), empty for the others.
struct PackedActTile {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> corr;
  std::vector<float> msum;
  int64_t rows = 0;
  int64_t blocks = 0;
};
// What a kernel call reads: blocks [b0, b0 + blocks) of a packed tile.
struct PackedActView {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int32_t* corr = nullptr;
  const float* msum = nullptr;
  int64_t blocks = 0;
};
PackedActView packed_view(const PackedActTile& t, int64_t b0, int64_t nb);
// Packs every block of rows[0..mr) (mr <= kPackedTileRows) into `out` (reusing its storage).
void pack_act_tile(WeightFormat format, const ActRow* rows, int64_t mr, PackedActTile& out);
// y[m * ldy + 8 g + i] (+)= dot(row m of the view, row i of group g) over the view's blocks for
// the `ngroups` consecutive groups from `group` (the first group's pointer at the view's first
// block; groups `group_stride` bytes apart). Same bits as the AVX-512 group kernels over the
// same blocks. mr <= kPackedTileRows.
inline constexpr int64_t kPackedTileRows = 6;
using GroupTileFn = void (*)(const PackedActView& x, int64_t mr, const uint8_t* group, std::size_t group_stride,
                             int64_t ngroups, float* y, int64_t ldy, bool accumulate);
GroupTileFn group_tile_avx512(WeightFormat format);

// A path's interleaved kernels: the group kernel on ActRows and the most rows of X it takes per
// call (scalar, avx2), or (avx512) the packed-tile kernel, which takes every product there
// (kPackedTileRows rows of X per call; fn is null).
struct GroupDot {
  GroupDotFn fn = nullptr;
  int64_t tile_rows = kGroupTileRows;
  GroupTileFn tile = nullptr;
};

// The interleaved kernel of (format, path): avx2 and avx512 their own, the scalar reference on
// scalar and neon (the portable fallback). fn and tile are null for formats without the layout.
GroupDot group_dot_kernel(WeightFormat format, KernelPath path);

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

// The strips of an f16 or bf16 matrix in the kStrips64 layout (strips_layout.h): n rows, a
// multiple of kStripRows (the caller multiplies the GGUF tail rows), row_bytes 2K, K even for
// bf16, on the AVX-512 path, for any M >= 1. The strips are read in place as the panels of
// gemm_avx512's GEMM of the format (the same bits as it for the same rows: bf16 pairs through
// vdpbf16ps, f16 widened to f32 in the kernel, then FMA). False (and nothing written) for a bf16
// matrix on a CPU without AVX512_BF16, another format, or an n that is not whole strips.
bool gemm_strips64(const PreparedActivations& a, WeightFormat format, const uint8_t* w, std::size_t row_bytes,
                   int64_t n, float* y, int64_t ldy, const ExecContext& ctx);

}  // namespace am::kernels::detail
