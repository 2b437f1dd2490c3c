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
inline constexpr uint32_t kMatvecGroup = 128;  // gemv: WG / lanes rows per work-group
inline constexpr uint32_t kMatvecMinLanes = 32;
// Blocks (or 16-byte chunks) each gemv invocation reads: enough to amortise the row's reduction,
// few enough that a long row is spread over many invocations.
inline constexpr int64_t kMatvecUnitsPerLane = 4;
// Invocations per row for a row of `units` blocks or chunks: units / kMatvecUnitsPerLane rounded
// up to a power of two, within [kMatvecMinLanes, kMatvecGroup].
uint32_t matvec_lanes(int64_t units);
inline constexpr uint32_t kRowGroup = 256;     // row reductions (norms, softmax)
inline constexpr uint32_t kFlatGroup = 256;    // element-wise shaders
inline constexpr uint32_t kQuantizeGroup = 64;
inline constexpr int64_t kKQuantSumGroup = 16;  // values per int sum of a k-quant activation block
inline constexpr uint32_t kAttentionGroup = 64;  // per (sample, head, query)
inline constexpr uint32_t kGemmTile = 128;     // gemm_f.comp's BM = BN
inline constexpr uint32_t kCoopmatTile = 64;   // gemm_coopmat.comp's BM = BN
// selective_scan.comp keeps a channel's states in one work-group of this many invocations.
inline constexpr int64_t kScanMaxState = 256;
// Below this many rows a float matmul runs as M matrix-vector products (each re-reads W, which
// stays in cache for small M); from it on, the tiled GEMM.
inline constexpr int64_t kGemmMinRows = 8;

// Float-weight matrix-vector rows per invocation set (gemv_f.comp ROWS): each activation chunk
// is loaded once for this many rows. On an H200 (bench_vulkan_ops --only gemv --matvec-rows N,
// every figure warmed up) 1, 2 and 4 were within 3% of each other at 96-108% of the copy
// bandwidth; 2 was never the slowest.
inline constexpr uint32_t kMatvecRows = 2;

// gemm_coopmat.comp's K step (halves staged per row and pass): on an H200 the f16 GEMM at
// M512 N4096 K4096 ran at 40.4 TFLOPS with 64 and 35.4 with 32 (bench_vulkan_ops
// --coopmat-k-step); shared memory 2 * 64 * (BK + 8) * 2 + 64 * 64 * 4 bytes.
inline constexpr uint32_t kCoopmatKStep = 64;

// Knobs the bench sweeps to choose the defaults above on a real device; production code leaves
// them at their defaults.
struct DeviceOpsTuning {
  uint32_t matvec_lanes = 0;  // invocations per matrix-vector row; 0: matvec_lanes(units)
  uint32_t matvec_rows = kMatvecRows;  // rows per invocation set in gemv_f.comp (1, 2 or 4)
  uint32_t coopmat_k_step = kCoopmatKStep;  // 32 or 64
};

class DeviceOps {
 public:
  explicit DeviceOps(VulkanDevice& dev) : dev_(dev) {}

  void set_tuning(const DeviceOpsTuning& t) { tuning_ = t; }

  // y[m, N] = x[m, K] · W^T + bias.
  Status linear(const DeviceLinear& w, const Buffer& x, int64_t m, const Buffer& y);
  // Forces the tiled GEMM (gemm = true) or the matrix-vector path for float weights (the bench
  // measures each); linear() picks by kGemmMinRows.
  Status linear_path(const DeviceLinear& w, const Buffer& x, int64_t m, const Buffer& y, bool gemm);
  // The two halves of a block-quantized linear: x [m, K] to q8 blocks of `block` values (32, or
  // 256 for the k-quants: activation_block(w.kind)) in this object's scratch, then the block
  // products against w (which must have K = k and that activation block).
  Status quantize_activations(const Buffer& x, int64_t m, int64_t k, int64_t block = kBlockValues);
  Status block_matmul(const DeviceLinear& w, int64_t m, const Buffer& y);
  Status layer_norm(const Buffer& x, const Buffer& gamma, const Buffer* beta, float eps, int64_t rows,
                    int64_t cols, const Buffer& y);
  Status rms_norm(const Buffer& x, const Buffer& gamma, float eps, int64_t rows, int64_t cols, const Buffer& y);
  Status softmax(const Buffer& x, int64_t rows, int64_t cols);
  Status activation(const Buffer& x, int64_t n, uint32_t kind);
  Status binary(const Buffer& y, const Buffer& a, int64_t n, uint32_t op);  // 0 add, 1 mul
  // out[0, n) = the FMA chains of kernels/cpu/fma_chain.h (fma_f32.comp).
  Status fma_chain(int64_t n, uint32_t iterations, const Buffer& out);
  Status gather_rows(const Buffer& table, const Buffer& ids, int64_t n, int64_t cols, bool accumulate,
                     const Buffer& y);
  // Scaled dot-product attention (attention.comp) over q [batch*q_len, heads*head_dim] and
  // k, v [batch*kv_len, kv_heads*head_dim]; `mask` (batch*kv_len int32) and `bias`
  // ([q_len*kv_len, heads]) may be null.
  struct AttentionShape {
    int64_t batch, q_len, kv_len, heads, kv_heads, head_dim, q_offset;
    float scale;
    bool causal;
  };
  Status attention(const AttentionShape& a, const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* mask,
                   const Buffer* bias, const Buffer& out);
  // Sequence and routing ops (vk_ops_sequence.cpp), the shaders named after them.
  // rope: cs [rows][half][2] cos/sin; pairs at i * first_step and + partner.
  Status rope(const Buffer& x, const Buffer& cs, int64_t rows, int64_t heads, int64_t head_dim, int64_t half,
              int64_t first_step, int64_t partner);
  Status scatter_add_rows(const Buffer& x, const Buffer& ids, const Buffer& scales, int64_t n, int64_t cols,
                          const Buffer& y);
  // p: scratch of rows * experts floats.
  Status top_k(const Buffer& logits, const Buffer& p, int64_t rows, int64_t experts, int64_t k, bool renormalize,
               const Buffer& ids, const Buffer& weights);
  Status matmul_nt(const Buffer& a, const Buffer& b, float scale, int64_t m, int64_t n, int64_t k, const Buffer& y);
  Status global_avg_pool(const Buffer& x, int64_t batch, int64_t positions, int64_t cols, const Buffer& y);

  // Spatial and recurrent ops (vk_ops_spatial.cpp), the shaders named after them, each the cpu
  // reference's formula (the op's header in kernels/cpu/). Convolution weights are in the
  // layout of kernels/conv_weight_layout.h; optional inputs (bias, beta, ...) may be null.
  struct Conv1dShape {
    int64_t batch, in_len, out_len, in_channels, out_channels, kernel, stride, dilation, pad_left, groups;
  };
  Status conv1d(const Conv1dShape& s, const Buffer& x, const Buffer& w, const Buffer* bias, const Buffer& y);
  struct Conv2dShape {
    int64_t batch, height, width, out_h, out_w, in_channels, out_channels, kernel_h, kernel_w, stride, padding,
        groups;
  };
  Status conv2d(const Conv2dShape& s, const Buffer& x, const Buffer& w, const Buffer* bias, const Buffer& y);
  // x, y [batch * positions, channels]; y may be x.
  Status group_norm(const Buffer& x, const Buffer& gamma, const Buffer* beta, float eps, int64_t batch,
                    int64_t positions, int64_t channels, int64_t groups, const Buffer& y);
  struct Pool2dShape {
    int64_t batch, height, width, out_h, out_w, channels, kernel, stride, padding;
    bool max;
  };
  Status pool2d(const Pool2dShape& s, const Buffer& x, const Buffer& y);
  // `params` holds D then delta_bias (channels floats each, as has_D / has_delta_bias say);
  // `state` [batch, channels, state_size] is read and written when non-null (else a zero start).
  // state_size above kScanMaxState is Unsupported.
  struct ScanShape {
    int64_t batch, len, channels, state_size;
    bool has_D, has_delta_bias, softplus;
  };
  Status selective_scan(const ScanShape& s, const Buffer& u, const Buffer& delta, const Buffer& B, const Buffer& C,
                        const Buffer& A, const Buffer* params, const Buffer* state, const Buffer& y);
  // RWKV-4 WKV; `state` [batch, 3, channels] read and written when non-null (else a fresh one).
  Status time_mix(int64_t batch, int64_t len, int64_t channels, const Buffer& k, const Buffer& v,
                  const Buffer& decay, const Buffer& first, const Buffer* state, const Buffer& out);

  Status copy_vec4(const Buffer& src, const Buffer& dst, std::size_t bytes);

  // Groups for `n` work-groups as (x, y) with x within the device limit.
  void groups_2d(int64_t n, uint32_t& gx, uint32_t& gy) const;

 private:
  DeviceOpsTuning tuning_;
  // `n` invocations of a shader with `group`-wide work-groups (split over x/y).
  Status flat(const Pipeline& p, std::initializer_list<VkBuffer> buffers, const void* push, uint32_t push_bytes,
              int64_t n, uint32_t group);
  Status ensure(Buffer& b, std::size_t bytes);
  Result<VkBuffer> dummy();

  VulkanDevice& dev_;
  Buffer xq_, xd_, xs_;  // quantized activations, grown on demand
  Buffer dummy_;         // bound where a shader's optional input is absent
};

}  // namespace am::kernels::vulkan
