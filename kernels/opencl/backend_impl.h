// Internal to the OpenCL backend: the state an OpenClBackend holds (device runtime, scratch
// buffers, weight caches) and the helpers its op files share. Not for use outside
// kernels/opencl/.
//
// Contract: as OpenClBackend (single-threaded). Weight caches are keyed by the host address of
// the weight (backend.h guarantees weights stay alive and unchanged for the backend's
// lifetime); a Linear whose address is reused by a layer of another shape, format or storage
// is uploaded afresh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/opencl/device_runtime.h"
#include "kernels/opencl/device_scratch.h"
#include "kernels/opencl/opencl_backend.h"
#include "kernels/resident_tensors.h"

namespace am::kernels {
namespace opencl_detail {

// How a Linear's weight lives on the device. Decided from the format's name so that formats
// added to WeightFormat later are Unsupported here until this backend learns them.
enum class DeviceWeight { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ2_K, kQ3_K };

std::optional<DeviceWeight> device_weight_for(WeightFormat format);
// Block formats multiply q8 activations: blocks of 32, or of 256 for the k-quants (q2_k, q3_k).
bool is_block_format(DeviceWeight w);
bool is_k_quant(DeviceWeight w);

// Kernels index with 32-bit ints; larger dimensions are Unsupported.
inline constexpr int64_t kMaxKernelIndex = std::numeric_limits<int32_t>::max();

inline std::size_t float_bytes(int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); }
inline std::size_t int_bytes(int64_t n) { return static_cast<std::size_t>(n) * sizeof(int32_t); }
inline std::size_t round_up(int64_t n, int64_t multiple) {
  return static_cast<std::size_t>((n + multiple - 1) / multiple * multiple);
}
// The output dimension of a weight as stored on the device: padded to whole matmul vectors.
inline int64_t padded_columns(int64_t n) {
  return (n + opencl::kMatmulColumns - 1) / opencl::kMatmulColumns * opencl::kMatmulColumns;
}
// InvalidArgument "<op>: shapes differ (RxC vs RxC)" unless a and b have the same rows and cols.
Status same_shape(const char* op, ConstTensorView a, ConstTensorView b);

}  // namespace opencl_detail

struct OpenClBackend::Impl {
  struct LinearOnDevice {
    // What the upload was made from: a layer at the same address that differs in any of these
    // is a different layer (the old one was freed, against backend.h's contract) and is
    // uploaded afresh rather than read out of bounds.
    const void* source = nullptr;
    int64_t in = 0;
    int64_t out = 0;
    opencl_detail::DeviceWeight kind = opencl_detail::DeviceWeight::kF32;
    opencl::ClBuffer values;  // transposed weight, or quantized values (weight_repack.h)
    opencl::ClBuffer scales;  // block formats: one float per block
    opencl::ClBuffer mins;    // q4_1, q2_k: one float per block
    opencl::ClBuffer bias;    // empty without bias
    std::size_t bytes = 0;
  };
  struct VectorOnDevice {
    opencl::ClBuffer buffer;
    std::size_t bytes = 0;
  };

  using Resident = ResidentTensors<opencl::ClBuffer>;
  using Entry = Resident::Entry;

  Impl(opencl::DeviceRuntime runtime, const OpenClBackendOptions& opts);
  ~Impl();

  opencl::DeviceRuntime rt;
  opencl::DeviceScratch scratch;
  bool fp16;
  OpenClBackendOptions options;
  std::unordered_map<const Linear*, LinearOnDevice> linears;
  std::unordered_map<const float*, VectorOnDevice> vectors;
  // Convolution weights rearranged by conv_weight_taps_major() (kernels/conv_weight_layout.h),
  // keyed by address like every weight; a different geometry at the same address re-uploads.
  struct ConvOnDevice {
    int64_t out = 0, cin_g = 0, taps = 0;
    opencl::ClBuffer buffer;
    std::size_t bytes = 0;
  };
  std::unordered_map<const float*, ConvOnDevice> convs;

  Result<opencl::ClBuffer> upload(const void* host, std::size_t bytes);
  // A weight vector/table of `count` floats at `host`, uploaded once.
  Result<cl_mem> weight_vector(const float* host, int64_t count);
  Result<cl_mem> conv_weight(const float* host, int64_t out, int64_t cin_g, int64_t taps);
  Result<const LinearOnDevice*> weight_linear(const Linear& layer, opencl_detail::DeviceWeight kind);

  // Residency (backend.h): the tensor() tensors' device copies, the transfer counts, and copies
  // of host inputs whose queued writes have not run yet (freed at the next blocking call).
  std::shared_ptr<Resident> resident = std::make_shared<Resident>();
  TransferCounts counts;
  std::vector<std::unique_ptr<uint8_t[]>> pending_host;

  // An op's output buffer and, for a resident tensor, where its bytes land.
  struct Out {
    cl_mem buffer = nullptr;
    Entry* entry = nullptr;  // null: a plain host tensor, read back by finish()
    std::size_t offset = 0;
    void* host = nullptr;
    std::size_t bytes = 0;
  };
  // A float activation the op reads: a resident tensor's buffer (a range not at its start, or
  // any range when `private_copy` because the kernel modifies it, is copied on the device into
  // `slot`), else the host bytes written into `slot`.
  Result<cl_mem> input(opencl::ScratchSlot slot, const float* host, std::size_t bytes, bool private_copy = false);
  // int32 ids, masks, positions and per-call parameters: always from the host.
  Result<cl_mem> host_input(opencl::ScratchSlot slot, const void* host, std::size_t bytes);
  // `reads`: the op reads the output first (accumulates or works in place).
  Result<Out> output(opencl::ScratchSlot slot, float* host, std::size_t bytes, bool reads);
  Status finish(const Out& o);
  // A host read of queued results is done: queued writes have run.
  void drained() { pending_host.clear(); resident->recycle(); }
  Status make_current(Entry& e);
  Status ensure_buffer(Entry& e);
  // A queued write from a copy of `host` kept until the queue drains.
  Status queued_write(cl_mem dst, const void* host, std::size_t bytes);

  // Runs an op body; on failure waits for the queue so no transfer still touches the caller's
  // host memory after we return.
  template <typename Body>
  Status run(Body body) {
    Status s = body();
    if (!s.ok()) (void)rt.finish();
    return s;
  }

  // One work-group of `group` work-items per row.
  Status launch_rows(int64_t rows, int group, opencl::KernelLaunch& k);
  // n work-items in one dimension (d0 x d1 in two), dimension 0 rounded up to whole
  // work-groups: the kernel must ignore work-items past its size.
  Status launch_flat(int64_t n, opencl::KernelLaunch& k);
  Status launch_2d(int64_t d0, int64_t d1, opencl::KernelLaunch& k);
  // attention and attention_bias (bias null for none); args already validated. Unsupported
  // answers name `op`.
  Status attention(const AttentionArgs& a, const float* bias, Op op, const OpenClBackend& self);
  // add and mul share everything but the kernel.
  Status elementwise(opencl::KernelId id, const char* op, TensorView y, ConstTensorView a);
};

}  // namespace am::kernels
