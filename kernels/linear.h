// A linear layer y = x · W^T + b whose weight is stored in one WeightFormat.
//
// Contract: create() takes an f32 weight [out, in] and an optional bias [out] (empty Tensor for
// none). For q8_0 it quantizes the weight on ctx and drops the f32 copy; the bias stays f32.
// converted() derives a layer in another format from an f32 layer (aborts if this layer is not
// f32). forward() maps x [M, in] to y [M, out] and writes every element of y. weight_bytes() is
// the stored size of weight plus bias. Immutable after construction; concurrent forward() calls
// with distinct outputs are safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/exec_context.h"
#include "kernels/q8_0.h"
#include "kernels/tensor.h"
#include "kernels/weight_format.h"

namespace am::kernels {

class Linear {
 public:
  Linear() = default;
  static Linear create(Tensor weight, Tensor bias, WeightFormat format, const ExecContext& ctx);
  Linear converted(WeightFormat format, const ExecContext& ctx) const;

  WeightFormat format() const { return format_; }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  std::size_t weight_bytes() const;
  void forward(ConstTensorView x, TensorView y, const ExecContext& ctx) const;

 private:
  WeightFormat format_ = WeightFormat::kF32;
  int64_t in_ = 0;
  int64_t out_ = 0;
  Tensor weight_;       // f32 [out, in] when format_ is kF32
  Q8_0Matrix qweight_;  // when format_ is kQ8_0
  Tensor bias_;         // [out] or empty
};

}  // namespace am::kernels
