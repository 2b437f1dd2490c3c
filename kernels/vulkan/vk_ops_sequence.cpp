// DeviceOps: the sequence, routing and pooling ops (rope, scatter_add_rows, top_k, matmul_nt,
// global_avg_pool), each one element-parallel shader following the cpu reference's formula.
#include <limits>
#include <string>

#include "kernels/vulkan/vk_ops.h"

namespace am::kernels::vulkan {
namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
constexpr uint32_t kTopKGroup = 64;  // top_k.comp: one invocation per row

Status too_big(const char* op) {
  return unsupported(std::string("op ") + op + " (sizes beyond 2^31-1) not implemented on backend vulkan");
}

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

}  // namespace

Status DeviceOps::flat(const Pipeline& p, std::initializer_list<VkBuffer> buffers, const void* push,
                       uint32_t push_bytes, int64_t n, uint32_t group) {
  uint32_t gx = 0, gy = 0;
  groups_2d((n + group - 1) / group, gx, gy);
  return dev_.dispatch(p, buffers, push, push_bytes, gx, gy);
}

Status DeviceOps::rope(const Buffer& x, const Buffer& cs, int64_t rows, int64_t heads, int64_t head_dim,
                       int64_t half, int64_t first_step, int64_t partner) {
  if (rows * heads * head_dim > kMaxIndex) return too_big("rope");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("rope", 2));
  const int64_t total = rows * heads * half;
  const uint32_t push[] = {u32(total), u32(heads), u32(head_dim), u32(half), u32(first_step), u32(partner)};
  return flat(*p, {x.get(), cs.get()}, push, sizeof push, total, kFlatGroup);
}

Status DeviceOps::scatter_add_rows(const Buffer& x, const Buffer& ids, const Buffer& scales, int64_t n,
                                   int64_t cols, const Buffer& y) {
  if (n * cols > kMaxIndex) return too_big("scatter_add_rows");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("scatter_add_rows", 4));
  const uint32_t push[] = {u32(n), u32(cols)};
  return flat(*p, {x.get(), ids.get(), scales.get(), y.get()}, push, sizeof push, cols, kFlatGroup);
}

Status DeviceOps::top_k(const Buffer& logits, const Buffer& p_scratch, int64_t rows, int64_t experts, int64_t k,
                        bool renormalize, const Buffer& ids, const Buffer& weights) {
  if (rows * experts > kMaxIndex || rows * k > kMaxIndex) return too_big("top_k");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("top_k", 4));
  const uint32_t push[] = {u32(rows), u32(experts), u32(k), renormalize ? 1u : 0u};
  return flat(*p, {logits.get(), p_scratch.get(), ids.get(), weights.get()}, push, sizeof push, rows, kTopKGroup);
}

Status DeviceOps::matmul_nt(const Buffer& a, const Buffer& b, float scale, int64_t m, int64_t n, int64_t k,
                            const Buffer& y) {
  if (m * k > kMaxIndex || n * k > kMaxIndex || m * n > kMaxIndex) return too_big("matmul_nt");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("matmul_nt", 3));
  struct {
    uint32_t m, n, k;
    float scale;
  } push{u32(m), u32(n), u32(k), scale};
  return flat(*p, {a.get(), b.get(), y.get()}, &push, sizeof push, m * n, kFlatGroup);
}

Status DeviceOps::global_avg_pool(const Buffer& x, int64_t batch, int64_t positions, int64_t cols, const Buffer& y) {
  if (batch * positions * cols > kMaxIndex) return too_big("global_avg_pool");
  AM_ASSIGN_OR_RETURN(const Pipeline* p, dev_.pipeline("global_avg_pool", 2));
  const uint32_t push[] = {u32(batch * cols), u32(positions), u32(cols)};
  return flat(*p, {x.get(), y.get()}, push, sizeof push, batch * cols, kFlatGroup);
}

}  // namespace am::kernels::vulkan
