// Activations (the X of Y = X · W^T) prepared once per matmul for the kernels of a weight format.
//
// What each format's kernels read (docs/FORMATS.md, "Activations"):
//   f16         the f32 rows as they are;
//   bf16        the rows rounded to bf16 (round to nearest even), so every path multiplies the
//               same bf16 x bf16 products;
//   q8_0, q4_0, q4_1
//               per row, blocks of 32: f32 scale d = amax / 127, int8 q = round-half-away(x / d)
//               (computed as x * (1/d), like GGUF), and the int32 sum of q per block;
//   q2_k, q3_k  the same with blocks of 256 (one scale per super-block, as GGUF's q8_K), plus
//               the int16 sums of q over each 16 values.
// A block holding NaN or +-Inf gets d = NaN and q = 0, so every output it enters is NaN. Rows
// are zero-padded to whole blocks.
//
// Contract: prepare() (re)fills the object for x [M, K]; quantization runs on ctx (rows in
// parallel) and gives identical bytes on every kernel path. Not thread-safe for concurrent
// prepare(); concurrent reads after prepare() are safe.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

inline constexpr int64_t kActBlock32 = 32;
inline constexpr int64_t kActBlock256 = 256;
inline constexpr int64_t kActSumGroup = 16;  // bsum granularity of 256-blocks
inline constexpr float kActMaxQ = 127.0f;

enum class ActivationKind { kF32, kBf16, kQ8Block32, kQ8Block256 };

ActivationKind activation_kind(WeightFormat format);

// One prepared row. Only the members of the row's kind are set.
struct ActRow {
  int64_t k = 0;                  // logical length
  const float* f32 = nullptr;     // kF32: k values
  const uint16_t* bf16 = nullptr; // kBf16: k values
  const int8_t* q = nullptr;      // q8 kinds: blocks * block values
  const float* d = nullptr;       // q8 kinds: per block
  const int32_t* sum = nullptr;   // q8 kinds: per block
  const int16_t* bsum = nullptr;  // kQ8Block256: per 16 values
  int64_t blocks = 0;             // q8 kinds
};

// Quantizes k values into ceil(k / block) blocks (block 32 or 256): q gets blocks * block
// values (zero-padded), d and sum one value per block, bsum (256 only, may be null otherwise)
// one per 16 values. `path` picks the SIMD implementation; output is identical on every path.
void quantize_activation_row(const float* x, int64_t k, int64_t block, int8_t* q, float* d,
                             int32_t* sum, int16_t* bsum, KernelPath path);
void quantize_activation_row_ref(const float* x, int64_t k, int64_t block, int8_t* q, float* d,
                                 int32_t* sum, int16_t* bsum);

class PreparedActivations {
 public:
  void prepare(ConstTensorView x, WeightFormat format, const ExecContext& ctx);

  ActivationKind kind() const { return kind_; }
  int64_t rows() const { return rows_; }
  int64_t k() const { return k_; }
  int64_t block() const { return block_; }
  int64_t blocks_per_row() const { return blocks_; }
  int64_t padded_k() const { return blocks_ * block_; }
  ActRow row(int64_t m) const;

 private:
  ActivationKind kind_ = ActivationKind::kF32;
  int64_t rows_ = 0;
  int64_t k_ = 0;
  int64_t block_ = 1;
  int64_t blocks_ = 0;
  const float* x_ = nullptr;  // kF32: the caller's rows (must outlive the reads)
  std::vector<uint16_t> bf16_;
  std::vector<int8_t> q_;
  std::vector<float> d_;
  std::vector<int32_t> sum_;
  std::vector<int16_t> bsum_;
};

}  // namespace am::kernels
