// Reusable device buffers for the activations an op copies in and out.
//
// Why: a device backend copies every op's inputs to the device and its output back (backend.h).
// Allocating fresh buffers per op would add an allocation (and, on discrete GPUs, a page-table
// update) to every op; instead each op uses numbered slots that keep their buffer between ops
// and only grow, geometrically, when an op needs more than the slot holds.
//
// Contract: get(slot, bytes) returns a buffer of at least `bytes` (>= 1) owned by the pool and
// valid until the next get() of the same slot or the pool's destruction. A request above the
// device's max allocation is ResourceExhausted naming the size and the limit. Single-threaded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "kernels/opencl/cl_handles.h"

namespace am::kernels::opencl {

enum class ScratchSlot : int {
  kInput,       // x of linear / norms / element-wise ops, q of attention
  kOutput,      // y, attention out
  kOperand,     // the second operand of add/mul
  kIndices,     // gather ids, attention key mask
  kQuantValues, // q8_0 activation values
  kQuantScales, // q8_0 activation scales
  kQuantSums,   // q8_0 activation block sums (k-quants: sums of each 16 values)
  kKeys,
  kValues,
  kAuxiliary,   // attention bias, rope cos/sin, routing scratch
  kState,       // a recurrent op's carried state (selective_scan, time_mix)
  kParams,      // selective_scan's D and delta_bias
  kCount,
};

class DeviceScratch {
 public:
  DeviceScratch(cl_context context, uint64_t max_alloc_bytes)
      : context_(context), max_alloc_bytes_(max_alloc_bytes) {}

  Result<cl_mem> get(ScratchSlot slot, std::size_t bytes);
  std::size_t total_bytes() const;

 private:
  struct Entry {
    ClBuffer buffer;
    std::size_t bytes = 0;
  };
  cl_context context_;
  uint64_t max_alloc_bytes_;
  std::array<Entry, static_cast<std::size_t>(ScratchSlot::kCount)> slots_;
};

// A device buffer of `bytes` (>= 1), optionally initialised from `host` (bytes long).
// ResourceExhausted above `max_alloc_bytes`.
Result<ClBuffer> create_buffer(cl_context context, std::size_t bytes, uint64_t max_alloc_bytes,
                               const void* host = nullptr);

}  // namespace am::kernels::opencl
