// Synthetic weights for graph builders: seeded tensors drawn in a fixed order, so a model's values
// depend only on (config, seed), and the byte budget that keeps a plan from allocating a
// published-size model by accident.
//
// Contract: SeededWeights draws each tensor from its own stream derived from (seed, stream,
// draw index); it is not thread-safe. check_weight_budget() is InvalidArgument naming the family,
// the estimate and the cap when bytes exceed kSyntheticWeightCapBytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/cpu/linear.h"
#include "kernels/exec_context.h"
#include "kernels/formats/weight_format.h"
#include "kernels/tensor.h"

namespace am::kernels {

// Synthetic weights whose stored bytes exceed this are refused before anything is allocated:
// plans scale big published models down instead (see docs/PLANS.md).
inline constexpr std::size_t kSyntheticWeightCapBytes = std::size_t{12} << 30;  // 12 GiB

// Seeded tensors in draw order (each from its own derived stream).
class SeededWeights {
 public:
  SeededWeights(uint64_t seed, uint64_t stream, const ExecContext& ctx);
  Tensor normal(Shape shape, float mean, float stddev);
  // Uniform in [lo, hi).
  Tensor uniform(Shape shape, float lo, float hi);
  // Weight [out, in] ~ N(0, stddev); bias ~ N(0, bias_std) when with_bias, else none.
  Linear linear(int64_t in, int64_t out, float stddev, bool with_bias, float bias_std, WeightFormat format);
  const ExecContext& context() const { return ctx_; }

 private:
  uint64_t seed_;
  const ExecContext& ctx_;
  uint64_t next_ = 0;
};


// Stored bytes of an [out, in] weight at `format` (plus f32 bias), for budget checks.
std::size_t linear_bytes(int64_t in, int64_t out, WeightFormat format, bool with_bias);
// InvalidArgument naming the family, the estimate and the cap when bytes > cap.
Status check_weight_budget(const std::string& family, std::size_t bytes);

// Seeded ids uniform in [0, vocab), n of them, from (seed, stream).
std::vector<int32_t> seeded_token_ids(int64_t n, int64_t vocab, uint64_t seed, uint64_t stream);

}  // namespace am::kernels
