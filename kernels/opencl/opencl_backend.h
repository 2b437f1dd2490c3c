// The opencl backend: the Backend ops as OpenCL C kernels on one OpenCL device (a GPU, or PoCL
// on the CPU where there is none).
//
// Contract (beyond backend.h):
//   - create() builds one program holding every kernel for the device (OpenCL C 1.2, compiled at
//     run time; PoCL also caches the binaries on disk under POCL_CACHE_DIR). Failure to build is
//     Internal with the build log; a device whose work-group limits the kernels cannot meet is
//     Unsupported naming the device.
//   - Weights (every Linear and convolution weight; gamma/beta, biases, A, time_decay/time_first;
//     gather tables) are uploaded on first use and cached by
//     address for the backend's lifetime, as backend.h allows; linear weights are transposed
//     and quantized ones split into value and scale arrays (weight_repack.h).
//     release_cached_weights() drops them, for a caller that frees weights while keeping the
//     backend (a weight freed without it and replaced at the same address by one of the same
//     shape would be read stale); cached_weight_bytes() is their device footprint.
//   - Activations are copied host -> device and back on every op, into pooled buffers that only
//     grow (device_scratch.h). That transfer is part of every op's measured latency; on PoCL it
//     is a memcpy, on a discrete GPU a PCIe round trip per op.
//   - supports(): every op of backend.h; linear with f32, bf16, q8_0, q4_0, q4_1, q2_k and q3_k
//     weights, f16 weights only on devices with cl_khr_fp16 ("precision f16 needs cl_khr_fp16 on
//     device <name>"); a weight format or op added later is Unsupported naming op and format.
//     Block-quantized weights multiply activations quantized per row to q8 blocks on the device
//     (of 32; of 256 with 16-value sums for the k-quants), with integer block dot products;
//     bf16 weights multiply activations rounded to bf16 — the cpu reference's arithmetic in
//     both cases.
//   - attention() / attention_bias(): bidirectional with key mask, causal with q_offset,
//     grouped-query (kv_heads dividing heads), cross (q_len != kv_len), any head_dim, with or
//     without an additive score bias.
//   - Also rope (cos/sin computed on the host in double, like the cpu), index_rows,
//     scatter_add_rows, top_k, matmul_nt, global_avg_pool, fma_chain; conv1d and conv2d (weights
//     rearranged once per weight, conv_weight_layout.h), group_norm, pool2d, selective_scan
//     (state_size up to 4x the row work-group: 256 on PoCL) and time_mix, whose carried state is
//     uploaded and read back with the output.
//   - Shape checks as the cpu backend; sizes beyond the kernels' 32-bit indices (a dimension or
//     row count above 2^31-1) are Unsupported naming the op.
//   - Single-threaded like every Backend; the destructor waits for queued work and frees every
//     device object.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "kernels/backend.h"
#include "kernels/opencl/cl_device.h"

namespace am::kernels {

struct OpenClBackendOptions {
  // Run f16 weights on a device without cl_khr_fp16: the halves are only stored and the kernel
  // widens them with vload_half (core OpenCL C), so it works anywhere. Off by default, because
  // a matrix cell should report f16 only where the device itself supports fp16; the test
  // harness turns it on to check the f16 kernel on PoCL.
  bool f16_without_extension = false;
  // The float-matmul kernel variant (cl_kernels.h, KernelConfig::column_matmul): unset picks by
  // device type; the tests force each to hold both to the cpu on PoCL.
  std::optional<bool> column_matmul;
};

// What supports() depends on: the device's name (for messages), whether it has cl_khr_fp16, and
// the harness's f16 override.
struct OpenClTraits {
  std::string name;
  bool fp16 = false;
  bool f16_without_extension = false;
};

class OpenClBackend final : public Backend {
 public:
  static constexpr std::string_view kName = "opencl";

  // The answer supports() gives on a device with these traits, without creating a backend (no
  // context, no kernel build): what the worker's probe advertises for an OpenCL device.
  static Status supports_on(const OpenClTraits& device, Op op, WeightFormat format);

  static Result<std::unique_ptr<OpenClBackend>> create(const opencl::OpenClDevice& device,
                                                       const OpenClBackendOptions& options = {});
  ~OpenClBackend() override;

  std::string_view name() const override { return kName; }
  std::string device_name() const override;
  Status supports(Op op, WeightFormat format = WeightFormat::kF32) const override;
  Tensor tensor(Shape shape) override;
  Status to_host(ConstTensorView v) override;
  Status from_host(ConstTensorView v) override;
  TransferCounts transfers() const override;
  Status synchronize() override;
  std::vector<DeviceKernelTime> take_device_profile() override;

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
  Status attention_bias(const AttentionArgs& args, ConstTensorView bias) override;
  Status rope(TensorView x, const int32_t* positions, const RopeParams& params) override;
  Status top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids,
               float* weights) override;
  Status index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y) override;
  Status scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n,
                          TensorView y) override;
  Status matmul_nt(ConstTensorView a, ConstTensorView b, float scale, TensorView y) override;
  Status fma_chain(int32_t iterations, TensorView out) override;
  Status global_avg_pool(ConstTensorView x, int64_t batch, TensorView y) override;
  Status conv1d(const Conv1dArgs& args) override;
  Status conv2d(const Conv2dArgs& args) override;
  Status group_norm(ConstTensorView x, int64_t batch, int64_t groups, const float* gamma, const float* beta,
                    float eps, TensorView y) override;
  Status pool2d(const Pool2dArgs& args) override;
  Status selective_scan(const SelectiveScanArgs& args) override;
  Status time_mix(const TimeMixArgs& args) override;

  const opencl::OpenClDevice& device() const;
  void release_cached_weights();
  std::size_t cached_weight_bytes() const;

 private:
  struct Impl;
  explicit OpenClBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The backend on the device select_opencl_device() picks (ACCELMATRIX_OPENCL_DEVICE, else the
// first GPU, else the first device). Unsupported "no OpenCL device found: ..." without one.
Result<std::unique_ptr<Backend>> make_opencl_backend();

}  // namespace am::kernels
