// The OpenClBackend ops beyond the BERT encoder's: rotary embeddings, attention with a score
// bias, mixture-of-experts routing, activation products and global pooling.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/attention_bias.h"
#include "kernels/cpu/matmul_nt.h"
#include "kernels/opencl/backend_impl.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/routing.h"

namespace am::kernels {

using opencl::KernelId;
using opencl::ScratchSlot;
using namespace opencl_detail;

Status OpenClBackend::attention_bias(const AttentionArgs& args, ConstTensorView bias) {
  AM_RETURN_IF_ERROR(validate_attention_bias(args, bias));
  return impl_->attention(args, bias.data, Op::kAttentionBias, *this);
}

Status OpenClBackend::rope(TensorView x, const int32_t* positions, const RopeParams& p) {
  AM_RETURN_IF_ERROR(validate_rope(x, p, positions));
  const int64_t rows = x.rows();
  if (rows == 0) return Status::Ok();
  if (x.numel() > kMaxKernelIndex) return unsupported_op(Op::kRope, "more than 2^31-1 elements");
  const int64_t rotary = p.rotary_dim == 0 ? p.head_dim : p.rotary_dim;
  const int64_t half = rotary / 2;
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
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem cbuf, im.host_input(ScratchSlot::kAuxiliary, cs.data(), float_bytes(rows * half * 2)));
    AM_ASSIGN_OR_RETURN(Impl::Out xo, im.output(ScratchSlot::kOutput, x.data, float_bytes(x.numel()), true));
    cl_mem xbuf = xo.buffer;
    auto launch = im.rt.kernel(KernelId::kRope);
    launch.mem(xbuf).mem(cbuf).i32(static_cast<int32_t>(p.heads)).i32(static_cast<int32_t>(p.head_dim))
        .i32(static_cast<int32_t>(half)).i32(neox ? 1 : 2).i32(static_cast<int32_t>(neox ? half : 1));
    AM_RETURN_IF_ERROR(im.launch_2d(half, rows * p.heads, launch));
    return im.finish(xo);
  });
}

Status OpenClBackend::top_k(ConstTensorView logits, int64_t k, bool renormalize, int32_t* ids,
                            float* weights) {
  AM_RETURN_IF_ERROR(validate_route_top_k(logits, k));
  const int64_t rows = logits.rows();
  const int64_t experts = logits.cols();
  if (rows == 0) return Status::Ok();
  if (logits.numel() > kMaxKernelIndex || rows * k > kMaxKernelIndex) {
    return unsupported_op(Op::kTopK, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem lbuf, im.input(ScratchSlot::kInput, logits.data, float_bytes(logits.numel())));
    AM_ASSIGN_OR_RETURN(cl_mem pbuf, im.scratch.get(ScratchSlot::kAuxiliary, float_bytes(logits.numel())));
    AM_ASSIGN_OR_RETURN(cl_mem ibuf, im.scratch.get(ScratchSlot::kIndices, int_bytes(rows * k)));
    AM_ASSIGN_OR_RETURN(cl_mem wbuf, im.scratch.get(ScratchSlot::kOutput, float_bytes(rows * k)));
    auto launch = im.rt.kernel(KernelId::kTopK);
    launch.mem(lbuf).mem(pbuf).i32(static_cast<int32_t>(rows)).i32(static_cast<int32_t>(experts))
        .i32(static_cast<int32_t>(k))
        .i32(renormalize ? 1 : 0).mem(ibuf).mem(wbuf);
    AM_RETURN_IF_ERROR(im.launch_flat(rows, launch));
    // The routing decision goes to the host (the graph picks each expert's rows there).
    im.resident->end_op();
    im.counts.plain_downloads += 2;
    im.counts.plain_download_bytes += static_cast<int64_t>(int_bytes(rows * k) + float_bytes(rows * k));
    AM_RETURN_IF_ERROR(im.rt.read(ibuf, ids, int_bytes(rows * k)));
    AM_RETURN_IF_ERROR(im.rt.read(wbuf, weights, float_bytes(rows * k)));
    im.drained();
    return Status::Ok();
  });
}

Status OpenClBackend::index_rows(ConstTensorView x, const int32_t* ids, int64_t n, TensorView y) {
  if (y.rows() != n || y.cols() != x.cols()) return invalid_argument("index_rows: y must be [n, x cols]");
  AM_RETURN_IF_ERROR(validate_row_ids("index_rows", x.rows(), ids, n));
  const int64_t cols = x.cols();
  if (n == 0 || cols == 0) return Status::Ok();
  if (x.numel() > kMaxKernelIndex || n * cols > kMaxKernelIndex) {
    return unsupported_op(Op::kIndexRows, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    // The gather kernel, reading an activation staged per call instead of a cached weight.
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(x.numel())));
    AM_ASSIGN_OR_RETURN(cl_mem ibuf, im.host_input(ScratchSlot::kIndices, ids, int_bytes(n)));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(n * cols), false));
    auto launch = im.rt.kernel(KernelId::kGatherRows);
    launch.mem(xbuf).mem(ibuf).mem(yo.buffer).i32(static_cast<int32_t>(cols)).i32(0);
    AM_RETURN_IF_ERROR(im.launch_2d(cols, n, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::scatter_add_rows(ConstTensorView x, const int32_t* ids, const float* scales,
                                       int64_t n, TensorView y) {
  if (x.rows() != n || y.cols() != x.cols()) {
    return invalid_argument("scatter_add_rows: x must be [n, y cols]");
  }
  AM_RETURN_IF_ERROR(validate_row_ids("scatter_add_rows", y.rows(), ids, n));
  const int64_t cols = y.cols();
  if (n == 0 || cols == 0) return Status::Ok();
  if (x.numel() > kMaxKernelIndex || y.numel() > kMaxKernelIndex) {
    return unsupported_op(Op::kScatterAddRows, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(x.numel())));
    AM_ASSIGN_OR_RETURN(cl_mem ibuf, im.host_input(ScratchSlot::kIndices, ids, int_bytes(n)));
    AM_ASSIGN_OR_RETURN(cl_mem sbuf, im.host_input(ScratchSlot::kAuxiliary, scales, float_bytes(n)));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(y.numel()), true));
    auto launch = im.rt.kernel(KernelId::kScatterAddRows);
    launch.mem(xbuf).mem(ibuf).mem(sbuf).mem(yo.buffer).i32(static_cast<int32_t>(n)).i32(static_cast<int32_t>(cols));
    AM_RETURN_IF_ERROR(im.launch_flat(cols, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::matmul_nt(ConstTensorView a, ConstTensorView b, float scale, TensorView y) {
  AM_RETURN_IF_ERROR(validate_matmul_nt_args(a, b, y));
  const int64_t m = a.rows();
  const int64_t n = b.rows();
  const int64_t k = a.cols();
  if (m == 0 || n == 0) return Status::Ok();
  if (a.numel() > kMaxKernelIndex || b.numel() > kMaxKernelIndex || y.numel() > kMaxKernelIndex) {
    return unsupported_op(Op::kMatmulNt, "sizes beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem abuf, im.input(ScratchSlot::kInput, a.data, float_bytes(a.numel())));
    AM_ASSIGN_OR_RETURN(cl_mem bbuf, im.input(ScratchSlot::kOperand, b.data, float_bytes(b.numel())));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(m * n), false));
    auto launch = im.rt.kernel(KernelId::kMatmulNt);
    launch.mem(abuf).mem(bbuf).f32(scale).mem(yo.buffer).i32(static_cast<int32_t>(m))
        .i32(static_cast<int32_t>(n)).i32(static_cast<int32_t>(k));
    AM_RETURN_IF_ERROR(im.launch_2d(n, m, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::fma_chain(int32_t iterations, TensorView out) {
  if (iterations < 0) return invalid_argument("fma_chain: iterations " + std::to_string(iterations) + " < 0");
  if (out.numel() == 0) return Status::Ok();
  if (out.numel() > kMaxKernelIndex) return unsupported_op(Op::kFmaChain, "more than 2^31-1 elements");
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(Impl::Out o, im.output(ScratchSlot::kOutput, out.data, float_bytes(out.numel()), false));
    auto launch = im.rt.kernel(KernelId::kFmaChain);
    launch.mem(o.buffer).i32(static_cast<int32_t>(out.numel())).i32(iterations);
    AM_RETURN_IF_ERROR(im.launch_flat(out.numel(), launch));
    return im.finish(o);
  });
}

Status OpenClBackend::global_avg_pool(ConstTensorView x, int64_t batch, TensorView y) {
  AM_RETURN_IF_ERROR(validate_global_avg_pool_args(x, batch, y));
  const int64_t cols = x.cols();
  if (batch == 0 || cols == 0) return Status::Ok();
  if (x.numel() > kMaxKernelIndex) return unsupported_op(Op::kGlobalAvgPool, "more than 2^31-1 elements");
  const int64_t positions = x.rows() / batch;
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(x.numel())));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(batch * cols), false));
    auto launch = im.rt.kernel(KernelId::kGlobalAvgPool);
    launch.mem(xbuf).mem(yo.buffer).i32(static_cast<int32_t>(positions)).i32(static_cast<int32_t>(cols));
    AM_RETURN_IF_ERROR(im.launch_2d(cols, batch, launch));
    return im.finish(yo);
  });
}

}  // namespace am::kernels
