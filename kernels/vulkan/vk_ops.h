// The device-level layer of the Vulkan backend: ops on buffers already on the device, recorded
// into the device's command buffer (VulkanDevice::dispatch). VulkanBackend wraps each with
// upload -> record -> download for the host-tensor seam of backend.h; the bench drives this
// layer directly, so it measures device-resident work; the buffer-resident seam of issue 12
// will call it without the copies.
//
// Contract:
//   - Nothing here submits: callers record a sequence and then VulkanDevice::submit() (or
//     upload/download, which submit first).
//   - Sizes are validated by the caller (VulkanBackend checks shapes); these check only what the
//     shaders need: dimensions that fit the grid and 32-bit indices (Unsupported otherwise,
//     naming the op).
//   - Buffers hold row-major f32 unless said otherwise; `ids` are int32 already range-checked.
//   - Single-threaded, like the device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "kernels/vulkan/vk_device.h"
#include "kernels/vulkan/vk_weights.h"

namespace am::kernels::vulkan {

// A linear layer's weight (and bias) on the device, in the vk_weights.h layout.
struct DeviceLinear {
  WeightKind kind = WeightKind::kF32;
  int64_t rows = 0;    // N (out features)
  int64_t cols = 0;    // K (in features)
  int64_t padded = 0;  // KP or blocks per row, as PackedWeight
  Buffer values;
  Buffer scales;  // block kinds
  Buffer mins;    // q4_1
  Buffer bias;    // empty without bias
  std::size_t weight_bytes = 0;  // values + scales + mins as the shaders read them
  std::size_t bytes = 0;         // weight_bytes + bias
};

Result<DeviceLinear> upload_linear(VulkanDevice& dev, const PackedWeight& w, const float* bias);

// Work-group sizes of the shaders (specialization constants where the shader takes one).
inline constexpr uint32_t kMatvecGroup = 128;  // gemv: 4 rows of 32 lanes
inline constexpr uint32_t kMatvecLanes = 32;
inline constexpr uint32_t kRowGroup = 256;     // row reductions (norms, softmax)
inline constexpr uint32_t kFlatGroup = 256;    // element-wise shaders
inline constexpr uint32_t kQuantizeGroup = 64;
inline constexpr uint32_t kGemmTile = 128;     // gemm_f.comp's BM = BN
// Below this many rows a float matmul runs as M matrix-vector products (each re-reads W, which
// stays in cache for small M); from it on, the tiled GEMM.
inline constexpr int64_t kGemmMinRows = 8;

class DeviceOps {
 public:
  explicit DeviceOps(VulkanDevice& dev) : dev_(dev) {}

  // y[m, N] = x[m, K] · W^T + bias.
  Status linear(const DeviceLinear& w, const Buffer& x, int64_t m, const Buffer& y);
  // Forces the tiled GEMM (gemm = true) or the matrix-vector path for float weights (the bench
  // measures each); linear() picks by kGemmMinRows.
  Status linear_path(const DeviceLinear& w, const Buffer& x, int64_t m, const Buffer& y, bool gemm);
  // The two halves of a block-quantized linear: x [m, K] to q8 blocks in this object's scratch,
  // then the block products against w (which must have K = k).
  Status quantize_activations(const Buffer& x, int64_t m, int64_t k);
  Status block_matmul(const DeviceLinear& w, int64_t m, const Buffer& y);
  Status layer_norm(const Buffer& x, const Buffer& gamma, const Buffer* beta, float eps, int64_t rows,
                    int64_t cols, const Buffer& y);
  Status rms_norm(const Buffer& x, const Buffer& gamma, float eps, int64_t rows, int64_t cols, const Buffer& y);
  Status softmax(const Buffer& x, int64_t rows, int64_t cols);
  Status activation(const Buffer& x, int64_t n, uint32_t kind);
  Status binary(const Buffer& y, const Buffer& a, int64_t n, uint32_t op);  // 0 add, 1 mul
  Status gather_rows(const Buffer& table, const Buffer& ids, int64_t n, int64_t cols, bool accumulate,
                     const Buffer& y);
  Status copy_vec4(const Buffer& src, const Buffer& dst, std::size_t bytes);

  // Groups for `n` work-groups as (x, y) with x within the device limit.
  void groups_2d(int64_t n, uint32_t& gx, uint32_t& gy) const;

 private:
  Status ensure(Buffer& b, std::size_t bytes);
  Result<VkBuffer> dummy();

  VulkanDevice& dev_;
  Buffer xq_, xd_, xs_;  // quantized activations, grown on demand
  Buffer dummy_;         // bound where a shader's optional input is absent
};

}  // namespace am::kernels::vulkan
