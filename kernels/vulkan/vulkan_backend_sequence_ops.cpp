// VulkanBackend: rope, top_k, index_rows, scatter_add_rows, matmul_nt, fma_chain and global_avg_pool, each
// one DeviceOps shader between Impl::input/output/finish (vk_ops_sequence.cpp).
#include <cmath>
#include <vector>

#include "kernels/cpu/matmul_nt.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/routing.h"
#include "kernels/vulkan/backend_impl.h"

namespace am::kernels {

namespace {
std::size_t int_bytes(int64_t n) { return static_cast<std::size_t>(n) * sizeof(int32_t); }
}  // namespace

Status VulkanBackend::rope(TensorView x, const int32_t* positions, const RopeParams& p) {
  AM_RETURN_IF_ERROR(validate_rope(x, p, positions));
  const int64_t rows = x.rows();
  if (rows == 0) return Status::Ok();
  const int64_t rotary = p.rotary_dim == 0 ? p.head_dim : p.rotary_dim;
  const int64_t half = rotary / 2;
  if (half == 0) return Status::Ok();
  // The angles pos * theta^(-2i/rotary) exceed float's precision for long positions; like the
  // cpu, compute them and their cos/sin in double, here once per row on the host.
  std::vector<double> inv_freq(static_cast<std::size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[static_cast<std::size_t>(i)] =
        std::pow(static_cast<double>(p.theta), -2.0 * static_cast<double>(i) / static_cast<double>(rotary));
  }
  std::vector<float> cs(static_cast<std::size_t>(rows * half * 2));
  for (int64_t r = 0; r < rows; ++r) {
    const double pos = static_cast<double>(positions[r]);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos * inv_freq[static_cast<std::size_t>(i)];
      cs[static_cast<std::size_t>((r * half + i) * 2)] = static_cast<float>(std::cos(angle));
      cs[static_cast<std::size_t>((r * half + i) * 2 + 1)] = static_cast<float>(std::sin(angle));
    }
  }
  const bool neox = p.layout == RopeLayout::kNeox;
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* cb, im.host_input(Slot::kAuxiliary, cs.data(), float_bytes(rows * half * 2)));
  AM_ASSIGN_OR_RETURN(Impl::Out xo, im.output(Slot::kOutput, x.data, float_bytes(x.numel()), true));
  AM_RETURN_IF_ERROR(im.ops.rope(*xo.buffer, *cb, rows, p.heads, p.head_dim, half, neox ? 1 : 2, neox ? half : 1));
  return im.finish(xo);
}

Status VulkanBackend::top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids, float* weights) {
  AM_RETURN_IF_ERROR(validate_route_top_k(logits, k));
  const int64_t rows = logits.rows();
  const int64_t experts = logits.cols();
  if (rows == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* lb, im.input(Slot::kInput, logits.data, float_bytes(logits.numel())));
  AM_ASSIGN_OR_RETURN(const Buffer* pb, im.slot(Slot::kAuxiliary, float_bytes(logits.numel())));
  AM_ASSIGN_OR_RETURN(const Buffer* ib, im.slot(Slot::kIndices, int_bytes(rows * k)));
  AM_ASSIGN_OR_RETURN(const Buffer* wb, im.slot(Slot::kOutput, float_bytes(rows * k)));
  AM_RETURN_IF_ERROR(im.ops.top_k(*lb, *pb, rows, experts, k, renormalize, *ib, *wb));
  // The routing decision goes to the host (the graph picks each expert's rows there).
  im.resident->end_op();
  im.counts.plain_downloads += 2;
  im.counts.plain_download_bytes += static_cast<int64_t>(int_bytes(rows * k) + float_bytes(rows * k));
  AM_RETURN_IF_ERROR(im.dev->download(*ib, ids, int_bytes(rows * k)));
  AM_RETURN_IF_ERROR(im.dev->download(*wb, weights, float_bytes(rows * k)));
  im.idle();
  return Status::Ok();
}

Status VulkanBackend::index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y) {
  if (y.rows() != n || y.cols() != x.cols()) return invalid_argument("index_rows: y must be [n, x cols]");
  AM_RETURN_IF_ERROR(validate_row_ids("index_rows", x.rows(), ids, n));
  const int64_t cols = x.cols();
  if (n == 0 || cols == 0) return Status::Ok();
  Impl& im = *impl_;
  // The gather shader, reading an activation staged per call instead of a cached weight.
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, float_bytes(x.numel())));
  AM_ASSIGN_OR_RETURN(const Buffer* ib, im.host_input(Slot::kIndices, ids, int_bytes(n)));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(n * cols), false));
  AM_RETURN_IF_ERROR(im.ops.gather_rows(*xb, *ib, n, cols, false, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales, int64_t n,
                                       TensorView y) {
  if (x.rows() != n || y.cols() != x.cols()) return invalid_argument("scatter_add_rows: x must be [n, y cols]");
  AM_RETURN_IF_ERROR(validate_row_ids("scatter_add_rows", y.rows(), ids, n));
  const int64_t cols = y.cols();
  if (n == 0 || cols == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, float_bytes(x.numel())));
  AM_ASSIGN_OR_RETURN(const Buffer* ib, im.host_input(Slot::kIndices, ids, int_bytes(n)));
  AM_ASSIGN_OR_RETURN(const Buffer* sb, im.host_input(Slot::kAuxiliary, scales, float_bytes(n)));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(y.numel()), true));
  AM_RETURN_IF_ERROR(im.ops.scatter_add_rows(*xb, *ib, *sb, n, cols, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::matmul_nt(ConstTensorView a, ConstTensorView b, float scale, TensorView y) {
  AM_RETURN_IF_ERROR(validate_matmul_nt_args(a, b, y));
  const int64_t m = a.rows();
  const int64_t n = b.rows();
  const int64_t k = a.cols();
  if (m == 0 || n == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* ab, im.input(Slot::kInput, a.data, float_bytes(a.numel())));
  AM_ASSIGN_OR_RETURN(const Buffer* bb, im.input(Slot::kOperand, b.data, float_bytes(b.numel())));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(m * n), false));
  AM_RETURN_IF_ERROR(im.ops.matmul_nt(*ab, *bb, scale, m, n, k, *yo.buffer));
  return im.finish(yo);
}

Status VulkanBackend::fma_chain(int32_t iterations, TensorView out) {
  if (iterations < 0) return invalid_argument("fma_chain: iterations " + std::to_string(iterations) + " < 0");
  if (out.numel() == 0) return Status::Ok();
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(Impl::Out o, im.output(Slot::kOutput, out.data, float_bytes(out.numel()), false));
  AM_RETURN_IF_ERROR(im.ops.fma_chain(out.numel(), static_cast<uint32_t>(iterations), *o.buffer));
  return im.finish(o);
}

Status VulkanBackend::global_avg_pool(ConstTensorView x, int64_t batch, TensorView y) {
  AM_RETURN_IF_ERROR(validate_global_avg_pool_args(x, batch, y));
  const int64_t cols = x.cols();
  if (batch == 0 || cols == 0) return Status::Ok();
  const int64_t positions = x.rows() / batch;
  Impl& im = *impl_;
  AM_ASSIGN_OR_RETURN(const Buffer* xb, im.input(Slot::kInput, x.data, float_bytes(x.numel())));
  AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(Slot::kOutput, y.data, float_bytes(batch * cols), false));
  AM_RETURN_IF_ERROR(im.ops.global_avg_pool(*xb, batch, positions, cols, *yo.buffer));
  return im.finish(yo);
}

}  // namespace am::kernels
