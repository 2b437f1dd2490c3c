#include "kernels/opencl/device_scratch.h"

#include <algorithm>
#include <string>

namespace am::kernels::opencl {
namespace {

// Slots grow by half again their size so a slowly growing sequence of shapes (a KV cache, a
// longer batch) reallocates a logarithmic number of times; rounded to whole pages.
constexpr std::size_t kGrowthNumerator = 3;
constexpr std::size_t kGrowthDenominator = 2;
constexpr std::size_t kRoundingBytes = 4096;

}  // namespace

Result<ClBuffer> create_buffer(cl_context context, std::size_t bytes, uint64_t max_alloc_bytes,
                               const void* host) {
  bytes = std::max<std::size_t>(bytes, 1);
  if (bytes > max_alloc_bytes) {
    return resource_exhausted("opencl: a buffer of " + std::to_string(bytes) +
                              " bytes exceeds the device's max allocation of " +
                              std::to_string(max_alloc_bytes) + " bytes");
  }
  cl_int rc = CL_SUCCESS;
  const cl_mem_flags flags = host != nullptr ? (CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR)
                                             : CL_MEM_READ_WRITE;
  cl_mem mem = cl().CreateBuffer(context, flags, bytes, const_cast<void*>(host), &rc);
  AM_RETURN_IF_ERROR(cl_check(rc, "clCreateBuffer(" + std::to_string(bytes) + " bytes)"));
  return ClBuffer(mem);
}

Result<cl_mem> DeviceScratch::get(ScratchSlot slot, std::size_t bytes) {
  Entry& e = slots_[static_cast<std::size_t>(slot)];
  bytes = std::max<std::size_t>(bytes, 1);
  if (e.buffer && e.bytes >= bytes) return e.buffer.get();
  std::size_t want = std::max(bytes, e.bytes * kGrowthNumerator / kGrowthDenominator);
  want = (want + kRoundingBytes - 1) / kRoundingBytes * kRoundingBytes;
  if (want > max_alloc_bytes_) want = bytes;  // growth headroom must not turn a fit into a failure
  e.buffer.reset();  // free first: old and new together might not fit
  e.bytes = 0;
  AM_ASSIGN_OR_RETURN(e.buffer, create_buffer(context_, want, max_alloc_bytes_));
  e.bytes = want;
  return e.buffer.get();
}

std::size_t DeviceScratch::total_bytes() const {
  std::size_t total = 0;
  for (const Entry& e : slots_) total += e.bytes;
  return total;
}

}  // namespace am::kernels::opencl
