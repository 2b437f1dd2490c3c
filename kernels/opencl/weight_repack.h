// Linear weights rearranged for the OpenCL matmul kernels, once per layer at upload.
//
// The kernels give each work-item a few output columns n and walk k, so weights are stored
// transposed ("k-major") with the output dimension padded to `padded_rows` (NP >= N, zeros in
// the padding): neighbouring work-items then read neighbouring addresses.
//   - Float formats (f32, f16, bf16; element size 4 or 2 bytes): element (n, k) of the
//     [rows = N, cols = K] weight moves to k * NP + n.
//   - Block formats: GGUF blocks interleave 2-byte half scales with their values (34-byte q8_0,
//     18-byte q4_0, 20-byte q4_1 blocks), leaving the values unaligned and the scales readable
//     only with half support. They are split into `values`, byte j of the payload of block b of
//     row n at (b * payload + j) * NP + n (payload: 32 int8 for q8_0; 16 bytes of GGUF-ordered
//     nibbles for q4_0/q4_1), `scales`, the float value of block b's scale at b * NP + n, and
//     for q4_1 `mins` likewise.
//   - q2_k / q3_k super-blocks (256 weights) likewise, with the payload the GGUF block without
//     its halves, in GGUF order (q2_k: scales[16], qs[64] = 80 bytes; q3_k: hmask[32], qs[64],
//     scales[12] = 108 bytes), `scales` the float d and, for q2_k, `mins` the float dmin.
//
// Contract: `raw` holds the layer's weight as Linear::weight_data() documents it (rows one after
// another; block rows padded to whole blocks of 32, or of 256 for the k-quants). A byte count that disagrees with rows x
// cols in the format is InvalidArgument naming both sizes; padded_rows >= rows. Pure,
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace am::kernels::opencl {

inline constexpr std::size_t kQ8_0BlockBytes = 34;  // half d + 32 x int8
inline constexpr std::size_t kQ4_0BlockBytes = 18;  // half d + 16 bytes of nibbles
inline constexpr std::size_t kQ4_1BlockBytes = 20;  // half d + half m + 16 bytes of nibbles
inline constexpr std::size_t kQ2_KBlockBytes = 84;  // scales[16] + qs[64] + half d + half dmin
inline constexpr std::size_t kQ3_KBlockBytes = 110; // hmask[32] + qs[64] + scales[12] + half d
inline constexpr int64_t kBlockValues = 32;
inline constexpr int64_t kSuperBlockValues = 256;

// Float weights of `element_bytes` bytes each, transposed.
Result<std::vector<uint8_t>> transpose_float_weight(const void* raw, std::size_t bytes, int64_t rows,
                                                    int64_t cols, int64_t padded_rows,
                                                    std::size_t element_bytes);

struct RepackedBlocks {
  std::vector<uint8_t> values;
  std::vector<float> scales;
  std::vector<float> mins;  // q4_1 only
};

Result<RepackedBlocks> repack_q8_0(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows);
Result<RepackedBlocks> repack_q4_0(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows);
Result<RepackedBlocks> repack_q4_1(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows);
Result<RepackedBlocks> repack_q2_k(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows);
Result<RepackedBlocks> repack_q3_k(const void* raw, std::size_t bytes, int64_t rows, int64_t cols,
                                   int64_t padded_rows);

}  // namespace am::kernels::opencl
