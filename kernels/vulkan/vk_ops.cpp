#include "kernels/vulkan/vk_ops.h"

#include <array>
#include <limits>
#include <string>

namespace am::kernels::vulkan {
namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
// Grid z carries the activation row of a matrix-vector product (maxComputeWorkGroupCount[2] is
// at least 65535 on every device).
constexpr int64_t kMaxGridZ = 65535;

std::size_t round4(std::size_t n) { return (n + 3) / 4 * 4; }

Result<Buffer> upload_bytes(VulkanDevice& dev, const void* data, std::size_t bytes) {
  AM_ASSIGN_OR_RETURN(Buffer b, dev.create_buffer(round4(bytes)));
  AM_RETURN_IF_ERROR(dev.upload(b, data, bytes));
  return b;
}

Status too_big(const char* op) {
  return unsupported(std::string("op ") + op + " (sizes beyond 2^31-1) not implemented on backend vulkan");
}

const char* gemv_shader(WeightKind k) {
  switch (k) {
    case WeightKind::kF32: return "gemv_f32";
    case WeightKind::kF16: return "gemv_f16";
    case WeightKind::kBF16: return "gemv_bf16";
    case WeightKind::kQ8_0: return "gemv_q8_0";
    case WeightKind::kQ4_0: return "gemv_q4_0";
    case WeightKind::kQ4_1: return "gemv_q4_1";
    case WeightKind::kQ2_K: return "gemv_q2_k";
    case WeightKind::kQ3_K: return "gemv_q3_k";
  }
  return "";
}

const char* gemm_shader(WeightKind k) {
  switch (k) {
    case WeightKind::kF32: return "gemm_f32";
    case WeightKind::kF16: return "gemm_f16";
    case WeightKind::kBF16: return "gemm_bf16";
    default: return "";
  }
}

}  // namespace

uint32_t matvec_lanes(int64_t units) {
  uint32_t lanes = kMatvecMinLanes;
  while (lanes < kMatvecGroup && static_cast<int64_t>(lanes) * kMatvecUnitsPerLane < units) lanes *= 2;
  return lanes;
}

Result<DeviceLinear> upload_linear(VulkanDevice& dev, const PackedWeight& w, const float* bias) {
  DeviceLinear d;
  d.kind = w.kind;
  d.rows = w.rows;
  d.cols = w.cols;
  d.padded = w.padded;
  AM_ASSIGN_OR_RETURN(d.values, upload_bytes(dev, w.values.data(), w.values.size()));
  d.weight_bytes = w.values.size();
  if (is_block_kind(w.kind)) {
    AM_ASSIGN_OR_RETURN(d.scales, upload_bytes(dev, w.scales.data(), w.scales.size() * sizeof(uint16_t)));
    d.weight_bytes += w.scales.size() * sizeof(uint16_t);
    if (!w.mins.empty()) {
      AM_ASSIGN_OR_RETURN(d.mins, upload_bytes(dev, w.mins.data(), w.mins.size() * sizeof(uint16_t)));
      d.weight_bytes += w.mins.size() * sizeof(uint16_t);
    }
  }
  d.bytes = d.weight_bytes;
  if (bias != nullptr) {
    AM_ASSIGN_OR_RETURN(d.bias, upload_bytes(dev, bias, static_cast<std::size_t>(w.rows) * sizeof(float)));
    d.bytes += static_cast<std::size_t>(w.rows) * sizeof(float);
  }
  return d;
}

void DeviceOps::groups_2d(int64_t n, uint32_t& gx, uint32_t& gy) const {
  const int64_t max_x = dev_.max_groups_x();
  if (n <= max_x) {
    gx = static_cast<uint32_t>(n);
    gy = 1;
  } else {
    gx = static_cast<uint32_t>(max_x);
    gy = static_cast<uint32_t>((n + max_x - 1) / max_x);
  }
}

Status DeviceOps::ensure(Buffer& b, std::size_t bytes) {
  if (b && b.bytes >= bytes) return Status::Ok();
  AM_RETURN_IF_ERROR(dev_.submit());  // the old buffer may still be in use by recorded work
  b = Buffer();
  AM_ASSIGN_OR_RETURN(b, dev_.create_buffer(bytes));
  return Status::Ok();
}

Result<VkBuffer> DeviceOps::dummy() {
  if (!dummy_) {
    AM_ASSIGN_OR_RETURN(dummy_, dev_.create_buffer(16));
  }
  return dummy_.get();
}

Status DeviceOps::linear(const DeviceLinear& w, const Buffer& x, int64_t m, const Buffer& y) {
  return linear_path(w, x, m, y, !is_block_kind(w.kind) && m >= kGemmMinRows);
}

Status DeviceOps::linear_path(const DeviceLinear& w, const Buffer& x, int64_t m, const Buffer& y, bool gemm) {
  const int64_t n = w.rows;
  const int64_t k = w.cols;
  if (m == 0 || n == 0) return Status::Ok();
  if (m * k > kMaxIndex || m * n > kMaxIndex) return too_big("linear");
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  const VkBuffer bias = w.bias ? w.bias.get() : none;
  const uint32_t has_bias = w.bias ? 1u : 0u;
  if (!is_block_kind(w.kind)) {
    if (gemm) {
      // f16 weights on the device's matrix units where it has them (gemm_coopmat.comp).
      const bool coop = w.kind == WeightKind::kF16 && dev_.coopmat_f16();
      const int64_t tile = coop ? kCoopmatTile : kGemmTile;
      const int32_t coop_spec[] = {static_cast<int32_t>(tuning_.coopmat_k_step), k % 4 == 0 ? 1 : 0};
      AM_ASSIGN_OR_RETURN(const Pipeline* p,
                          coop ? dev_.pipeline("gemm_f16_coopmat", 4, coop_spec) : dev_.pipeline(gemm_shader(w.kind), 4));
      const uint32_t push[] = {static_cast<uint32_t>(m), static_cast<uint32_t>(n), static_cast<uint32_t>(k),
                               static_cast<uint32_t>(w.padded), has_bias};
      const int64_t tiles_n = (n + tile - 1) / tile;
      const int64_t tiles_m = (m + tile - 1) / tile;
      if (tiles_n > dev_.max_groups_x() || tiles_m > kMaxGridZ) return too_big("linear");
      return dev_.dispatch(*p, {x.get(), w.values.get(), bias, y.get()}, push, sizeof push,
                           static_cast<uint32_t>(tiles_n), static_cast<uint32_t>(tiles_m));
    }
    if (m > kMaxGridZ) return too_big("linear");
    const int64_t per_chunk = w.kind == WeightKind::kF32 ? 4 : 8;
    const uint32_t lanes = tuning_.matvec_lanes != 0 ? tuning_.matvec_lanes : matvec_lanes((k + per_chunk - 1) / per_chunk);
    // X_VEC4: rows of x start on 16 bytes, so gemv_f.comp reads them as vec4.
    const uint32_t rows = tuning_.matvec_rows;
    const int32_t spec[] = {static_cast<int32_t>(kMatvecGroup), static_cast<int32_t>(lanes), k % 4 == 0 ? 1 : 0,
                            static_cast<int32_t>(rows)};
    const int64_t rows_per_group = (kMatvecGroup / lanes) * rows;
    uint32_t gx = 0, gy = 0;
    groups_2d((n + rows_per_group - 1) / rows_per_group, gx, gy);
    AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline(gemv_shader(w.kind), 4, spec));
    const uint32_t push[] = {static_cast<uint32_t>(n), static_cast<uint32_t>(k), static_cast<uint32_t>(w.padded),
                             has_bias};
    return dev_.dispatch(*p, {x.get(), w.values.get(), bias, y.get()}, push, sizeof push, gx, gy,
                         static_cast<uint32_t>(m));
  }
  // Activations to q8 blocks first (the cpu reference's arithmetic), then the block products.
  AM_RETURN_IF_ERROR(quantize_activations(x, m, k, activation_block(w.kind)));
  return block_matmul(w, m, y);
}

Status DeviceOps::quantize_activations(const Buffer& x, int64_t m, int64_t k, int64_t block) {
  if (block != kBlockValues && block != kSuperBlockValues) return internal_error("q8 activation blocks are 32 or 256");
  const int64_t blocks = (k + block - 1) / block;
  const std::size_t nblocks = static_cast<std::size_t>(m * blocks);
  // One int sum per block of 32; one per 16 values of a block of 256 (the k-quants' bsum).
  const std::size_t sums = block == kBlockValues ? 1 : static_cast<std::size_t>(block / kKQuantSumGroup);
  if (m * blocks * block > kMaxIndex) return too_big("linear");
  AM_RETURN_IF_ERROR(ensure(xq_, nblocks * static_cast<std::size_t>(block)));
  AM_RETURN_IF_ERROR(ensure(xd_, nblocks * sizeof(float)));
  AM_RETURN_IF_ERROR(ensure(xs_, nblocks * sums * sizeof(int32_t)));
  AM_ASSIGN_OR_RETURN(const Pipeline* q, dev_.pipeline(block == kBlockValues ? "quantize_q8" : "quantize_q8_k", 4));
  const uint32_t push[] = {static_cast<uint32_t>(k), static_cast<uint32_t>(blocks), static_cast<uint32_t>(nblocks)};
  uint32_t qx = 0, qy = 0;
  groups_2d((static_cast<int64_t>(nblocks) + kQuantizeGroup - 1) / kQuantizeGroup, qx, qy);
  return dev_.dispatch(*q, {x.get(), xq_.get(), xd_.get(), xs_.get()}, push, sizeof push, qx, qy);
}

Status DeviceOps::block_matmul(const DeviceLinear& w, int64_t m, const Buffer& y) {
  const int64_t n = w.rows;
  if (m == 0 || n == 0) return Status::Ok();
  if (m > kMaxGridZ || m * n > kMaxIndex) return too_big("linear");
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  // gemv_k.comp splits a super-block into 8 runs of 32 (its units); gemv_q.comp reads whole blocks.
  const uint32_t lanes = tuning_.matvec_lanes != 0 ? tuning_.matvec_lanes
                                                  : matvec_lanes(is_k_quant_kind(w.kind) ? w.padded * 8 : w.padded);
  const int32_t spec[] = {static_cast<int32_t>(kMatvecGroup), static_cast<int32_t>(lanes)};
  const int64_t rows_per_group = kMatvecGroup / lanes;
  uint32_t gx = 0, gy = 0;
  groups_2d((n + rows_per_group - 1) / rows_per_group, gx, gy);
  // q8_0/q4_0/q4_1 have an integer-dot-product variant (same bits, fewer instructions).
  std::string shader = gemv_shader(w.kind);
  if (dev_.int_dot() && !is_k_quant_kind(w.kind)) shader += "_dot";
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline(shader, 8, spec));
  const uint32_t push[] = {static_cast<uint32_t>(n), static_cast<uint32_t>(w.padded), w.bias ? 1u : 0u};
  const VkBuffer bias = w.bias ? w.bias.get() : none;
  const VkBuffer mins = w.mins ? w.mins.get() : none;
  return dev_.dispatch(*p, {xq_.get(), xd_.get(), xs_.get(), w.values.get(), w.scales.get(), mins, bias, y.get()},
                       push, sizeof push, gx, gy, static_cast<uint32_t>(m));
}

Status DeviceOps::layer_norm(const Buffer& x, const Buffer& gamma, const Buffer* beta, float eps, int64_t rows,
                             int64_t cols, const Buffer& y) {
  if (rows * cols > kMaxIndex) return too_big("layer_norm");
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  const int32_t spec[] = {static_cast<int32_t>(kRowGroup)};
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("layer_norm", 4, spec));
  struct {
    uint32_t rows, cols;
    float eps;
    uint32_t has_beta;
  } push{static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), eps, beta != nullptr ? 1u : 0u};
  uint32_t gx = 0, gy = 0;
  groups_2d(rows, gx, gy);
  return dev_.dispatch(*p, {x.get(), gamma.get(), beta != nullptr ? beta->get() : none, y.get()}, &push, sizeof push,
                       gx, gy);
}

Status DeviceOps::rms_norm(const Buffer& x, const Buffer& gamma, float eps, int64_t rows, int64_t cols,
                           const Buffer& y) {
  if (rows * cols > kMaxIndex) return too_big("rms_norm");
  const int32_t spec[] = {static_cast<int32_t>(kRowGroup)};
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("rms_norm", 3, spec));
  struct {
    uint32_t rows, cols;
    float eps;
  } push{static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), eps};
  uint32_t gx = 0, gy = 0;
  groups_2d(rows, gx, gy);
  return dev_.dispatch(*p, {x.get(), gamma.get(), y.get()}, &push, sizeof push, gx, gy);
}

Status DeviceOps::softmax(const Buffer& x, int64_t rows, int64_t cols) {
  if (rows * cols > kMaxIndex) return too_big("softmax");
  const int32_t spec[] = {static_cast<int32_t>(kRowGroup)};
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("softmax", 1, spec));
  const uint32_t push[] = {static_cast<uint32_t>(rows), static_cast<uint32_t>(cols)};
  uint32_t gx = 0, gy = 0;
  groups_2d(rows, gx, gy);
  return dev_.dispatch(*p, {x.get()}, push, sizeof push, gx, gy);
}

Status DeviceOps::activation(const Buffer& x, int64_t n, uint32_t kind) {
  if (n > kMaxIndex) return too_big("activation");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("activation", 1));
  const uint32_t push[] = {static_cast<uint32_t>(n), kind};
  uint32_t gx = 0, gy = 0;
  groups_2d((n + kFlatGroup - 1) / kFlatGroup, gx, gy);
  return dev_.dispatch(*p, {x.get()}, push, sizeof push, gx, gy);
}

Status DeviceOps::binary(const Buffer& y, const Buffer& a, int64_t n, uint32_t op) {
  if (n > kMaxIndex) return too_big(op == 0 ? "add" : "mul");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("binary", 2));
  const uint32_t push[] = {static_cast<uint32_t>(n), op};
  uint32_t gx = 0, gy = 0;
  groups_2d((n + kFlatGroup - 1) / kFlatGroup, gx, gy);
  return dev_.dispatch(*p, {y.get(), a.get()}, push, sizeof push, gx, gy);
}

Status DeviceOps::fma_chain(int64_t n, uint32_t iterations, const Buffer& out) {
  if (n > kMaxIndex) return too_big("fma_chain");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("fma_f32", 1));
  struct {
    uint32_t iterations;
    float seed;
    uint32_t count;
  } push{iterations, 0.0f, static_cast<uint32_t>(n)};
  uint32_t gx = 0, gy = 0;
  groups_2d((n + kFlatGroup - 1) / kFlatGroup, gx, gy);
  return dev_.dispatch(*p, {out.get()}, &push, sizeof push, gx, gy);
}

Status DeviceOps::gather_rows(const Buffer& table, const Buffer& ids, int64_t n, int64_t cols, bool accumulate,
                              const Buffer& y) {
  if (n * cols > kMaxIndex) return too_big("gather_rows");
  // Whole rows of vec4s when they divide: a quarter of the invocations, 16-byte accesses.
  const int64_t width = cols % 4 == 0 ? 4 : 1;
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline(width == 4 ? "gather_rows_vec4" : "gather_rows", 3));
  const int64_t total = n * cols / width;
  const uint32_t push[] = {static_cast<uint32_t>(total), static_cast<uint32_t>(cols / width), accumulate ? 1u : 0u};
  uint32_t gx = 0, gy = 0;
  groups_2d((total + kFlatGroup - 1) / kFlatGroup, gx, gy);
  return dev_.dispatch(*p, {table.get(), ids.get(), y.get()}, push, sizeof push, gx, gy);
}

Status DeviceOps::attention(const AttentionShape& a, const Buffer& q, const Buffer& k, const Buffer& v,
                            const Buffer* mask, const Buffer* bias, const Buffer& out) {
  const int64_t groups = a.batch * a.heads * a.q_len;
  if (groups > kMaxIndex || a.batch * a.q_len * a.heads * a.head_dim > kMaxIndex ||
      a.batch * a.kv_len * a.kv_heads * a.head_dim > kMaxIndex || a.q_len * a.kv_len * a.heads > kMaxIndex ||
      a.q_offset > kMaxIndex) {
    return too_big("attention");
  }
  AM_ASSIGN_OR_RETURN(VkBuffer none, dummy());
  const int32_t spec[] = {static_cast<int32_t>(kAttentionGroup)};
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("attention", 6, spec));
  struct {
    uint32_t groups, q_len, kv_len, heads, kv_heads, head_dim;
    float scale;
    uint32_t causal, q_offset, has_mask, has_bias;
  } push{static_cast<uint32_t>(groups), static_cast<uint32_t>(a.q_len), static_cast<uint32_t>(a.kv_len),
         static_cast<uint32_t>(a.heads), static_cast<uint32_t>(a.kv_heads), static_cast<uint32_t>(a.head_dim),
         a.scale, a.causal ? 1u : 0u, static_cast<uint32_t>(a.q_offset), mask != nullptr ? 1u : 0u,
         bias != nullptr ? 1u : 0u};
  uint32_t gx = 0, gy = 0;
  groups_2d(groups, gx, gy);
  return dev_.dispatch(*p, {q.get(), k.get(), v.get(), out.get(), mask != nullptr ? mask->get() : none,
                            bias != nullptr ? bias->get() : none},
                       &push, sizeof push, gx, gy);
}

Status DeviceOps::copy_vec4(const Buffer& src, const Buffer& dst, std::size_t bytes) {
  const int64_t n = static_cast<int64_t>(bytes / 16);
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("copy_vec4", 2));
  const uint32_t push[] = {static_cast<uint32_t>(n)};
  uint32_t gx = 0, gy = 0;
  groups_2d((n + kFlatGroup - 1) / kFlatGroup, gx, gy);
  return dev_.dispatch(*p, {src.get(), dst.get()}, push, sizeof push, gx, gy);
}

}  // namespace am::kernels::vulkan
