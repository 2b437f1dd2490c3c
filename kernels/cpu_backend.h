// The cpu backend: every op, on this process's cores, with the SIMD path and thread pool of an
// ExecContext. It is the reference the other backends are checked against.
#pragma once

#include "kernels/backend.h"

namespace am::kernels {

class CpuBackend final : public Backend {
 public:
  // `ctx.pool` (if any) must outlive the backend.
  explicit CpuBackend(const ExecContext& ctx);

  std::string_view name() const override { return "cpu"; }
  std::string device_name() const override;
  Status supports(Op op, WeightFormat format) const override;

  Status linear(const Linear& layer, ConstTensorView x, TensorView y) override;
  Status gather_rows(ConstTensorView table, const int32_t* ids, int64_t n, TensorView y,
                     bool accumulate) override;
  Status layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps,
                    TensorView y) override;
  Status rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y) override;
  Status activation(Activation act, TensorView x) override;
  Status add(TensorView y, ConstTensorView a) override;
  Status mul(TensorView y, ConstTensorView a) override;
  Status softmax(TensorView x) override;
  Status attention(const AttentionArgs& args) override;

  const ExecContext& context() const { return ctx_; }

 private:
  ExecContext ctx_;
};

}  // namespace am::kernels
