// A linear layer y = x · W^T + b whose weight is stored in one WeightFormat.
//
// Contract: create() takes an f32 weight [out, in] and an optional bias [out] (empty Tensor for
// none). For every format but f32 it converts / quantizes the weight on ctx (docs/FORMATS.md)
// and drops the f32 copy; the bias stays f32. Block weights are quantized straight into the
// layout of whoever executes them (ExecContext::cpu_weights): the cpu backend's execution
// layout for ctx.path (cpu_execution_layout(), e.g. row-interleaved q4_0 on avx2), or GGUF rows
// for a device backend. The layer holds exactly one copy of its weight either way: no GGUF rows
// are kept beside an execution layout (weight_bytes() is the GGUF size in both). converted()
// derives a layer in another format from an f32 layer (aborts if this layer is not f32).
// forward() maps x [M, in] to y [M, out] through kernels::matmul and writes every element of y.
// weight_bytes() is the stored size of weight plus bias. Immutable after construction; concurrent
// forward() calls with distinct outputs are safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/exec_context.h"
#include "kernels/formats/weight_matrix.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

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
  // Read-only view of the stored weight for backends that upload it to a device: out_features()
  // rows stored contiguously in format()'s layout (docs/FORMATS.md) — in_features() floats per
  // row for f32, in_features() halves for f16/bf16, the row's blocks (padded to whole blocks,
  // byte-identical to GGUF's blocks for q8_0/q4_0/q4_1) for block formats. Valid, unmoved and
  // unchanged for the layer's lifetime. Only a layer in GGUF rows has such a view: one built for
  // the cpu backend in an execution layout aborts here, naming the rule (a device backend's
  // layers are built with ExecContext::cpu_weights = false; WeightMatrix::gguf_rows() rebuilds
  // the GGUF bytes of any layer into a caller buffer).
  const void* weight_data() const;
  WeightLayout weight_layout() const {
    return format_ == WeightFormat::kF32 ? WeightLayout::kRows : qweight_.layout();
  }
  std::size_t weight_data_bytes() const;
  // The stored weight of a non-f32 layer with its typed block views (q8_0_blocks(),
  // q4_0_blocks(), ...); null for f32 layers.
  const WeightMatrix* quantized_weight() const {
    return format_ == WeightFormat::kF32 ? nullptr : &qweight_;
  }
  const float* bias_data() const { return bias_.empty() ? nullptr : bias_.data(); }  // [out] or null
  void forward(ConstTensorView x, TensorView y, const ExecContext& ctx) const;

 private:
  WeightFormat format_ = WeightFormat::kF32;
  int64_t in_ = 0;
  int64_t out_ = 0;
  Tensor weight_;         // f32 [out, in] when format_ is kF32
  WeightMatrix qweight_;  // every other format
  Tensor bias_;           // [out] or empty
};

}  // namespace am::kernels
