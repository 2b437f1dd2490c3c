// The vulkan backend: the Backend ops as GLSL compute shaders (SPIR-V compiled by glslc at build
// time and embedded) on one Vulkan device: a GPU, or Mesa's lavapipe on the CPU.
//
// Contract (beyond backend.h):
//   - create() opens the device (vk_device.h); pipelines are built on first use of each shader.
//     No loader or device is Unsupported "no Vulkan device found: ...".
//   - Weights (every Linear; convolution weights; gamma/beta, biases, A, time_decay/time_first;
//     gather tables) are uploaded on first use and cached by
//     address for the backend's lifetime, as backend.h allows, in the layouts of vk_weights.h.
//     release_cached_weights() drops them; cached_weight_bytes() is their device footprint.
//   - Activations: tensor() tensors stay in device buffers between ops (kernels/resident_tensors.h);
//     ops on them are recorded into one command buffer, submitted when the host needs a result
//     (to_host(), synchronize()) or a buffer must be replaced. Plain host tensors are copied in
//     and out around the op. The device work itself lives in vk_ops.h (DeviceOps).
//   - supports(): every op of backend.h and every weight format. linear with f32, f16, bf16,
//     q8_0, q4_0, q4_1, q2_k and q3_k weights; gather_rows, layer_norm, rms_norm, activation,
//     add, mul, softmax, attention and attention_bias (bidirectional with key mask, causal with
//     q_offset, grouped-query, cross, any head_dim; online softmax over chunks of keys); rope
//     (cos/sin computed on the host in double, like the cpu), index_rows, scatter_add_rows,
//     top_k, matmul_nt, global_avg_pool, fma_chain; conv1d, conv2d (weights rearranged once and cached by
//     address), group_norm, pool2d, selective_scan (state_size up to 256) and time_mix (the
//     carried state is uploaded and read back with the output). An op added to backend.h later
//     is Unsupported naming op and backend until this backend learns it. Block-quantized
//     weights multiply activations quantized per row to q8 blocks (of 32; of 256 with 16-value
//     sums for the k-quants) on the device with integer block dot products, bf16 weights
//     multiply activations rounded to bf16: the cpu reference's arithmetic. f16 weights are
//     widened with unpackHalf2x16 (core SPIR-V), so they need no shaderFloat16 and run
//     everywhere.
//   - The shaders are portable (no subgroup operations, no 16-bit arithmetic): the same
//     SPIR-V on every device.
//   - Shape checks as the cpu backend; sizes beyond 32-bit indices or the device's
//     maxStorageBufferRange are Unsupported naming the op or the limit.
//   - Single-threaded like every Backend; the destructor waits for the device.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/vulkan/vk_device.h"

namespace am::kernels {

// What supports() depends on: the device's name (for messages). Kept a struct so the worker's
// probe builds it from its own answers, like OpenClTraits.
struct VulkanTraits {
  std::string name;
};

class VulkanBackend final : public Backend {
 public:
  static constexpr std::string_view kName = "vulkan";
  // The GEMM's work-groups are 256 invocations; Vulkan guarantees only 128. create() refuses a
  // device below this and the worker's probe does not make it schedulable.
  static constexpr uint32_t kMinWorkgroupInvocations = 256;

  // The answer supports() gives on a device with these traits, without opening it: what the
  // worker's probe advertises for a Vulkan device.
  static Status supports_on(const VulkanTraits& device, Op op, WeightFormat format);

  static Result<std::unique_ptr<VulkanBackend>> create(const vulkan::VulkanDeviceInfo& device,
                                                       const vulkan::VulkanDeviceOptions& options = {});
  ~VulkanBackend() override;

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
  Status top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights) override;
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

  const vulkan::VulkanDeviceInfo& device() const;
  void release_cached_weights();
  std::size_t cached_weight_bytes() const;

 private:
  struct Impl;
  explicit VulkanBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The backend on the device select_vulkan_device() picks (ACCELMATRIX_VULKAN_DEVICE, else the
// first discrete GPU, integrated GPU, any device).
Result<std::unique_ptr<Backend>> make_vulkan_backend();

}  // namespace am::kernels
