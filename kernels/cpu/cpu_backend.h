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
  Status rope(TensorView x, const int32_t* positions, const RopeParams& params) override;  // op_rope.cpp
  Status conv1d(const Conv1dArgs& args) override;                                         // op_conv1d.cpp
  Status top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights) override;  // op_routing.cpp
  Status index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y) override;  // op_routing.cpp
  Status scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n,
                          TensorView y) override;                                         // op_routing.cpp
  Status attention_bias(const AttentionArgs& args, ConstTensorView bias) override;        // op_attention_bias.cpp
  Status conv2d(const Conv2dArgs& args) override;                                         // op_conv2d.cpp
  Status group_norm(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma, const float* beta,
                    float eps, TensorView y) override;                                    // op_group_norm.cpp
  Status pool2d(const Pool2dArgs& args) override;                                         // op_pool2d.cpp
  Status global_avg_pool(ConstTensorView x, int64_t batch, TensorView y) override;        // op_pool2d.cpp
  Status selective_scan(const SelectiveScanArgs& args) override;                          // op_selective_scan.cpp
  Status time_mix(const TimeMixArgs& args) override;                                      // op_time_mix.cpp
  Status matmul_nt(ConstTensorView a, ConstTensorView b, float scale, TensorView y) override;  // op_matmul_nt.cpp
  Status fma_chain(int32_t iterations, TensorView out) override;                          // op_matmul_nt.cpp

  const ExecContext& context() const { return ctx_; }

 private:
  ExecContext ctx_;
};

}  // namespace am::kernels
