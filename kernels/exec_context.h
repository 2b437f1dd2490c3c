// How a kernel call should execute: which SIMD path and which threads.
//
// Contract: an ExecContext is a cheap value passed by const reference to every op. `pool` may be
// null, in which case parallel_for() runs the whole range on the calling thread. The pool is not
// owned; it must outlive every call that uses the context.
//
// cpu_weights says who will execute the weights built under this context (Linear::create): true
// (the default) for the cpu backend, which stores block weights in its execution layout for
// `path` (kernels/formats/interleaved_layout.h); false for a device backend (opencl, vulkan), which
// uploads the GGUF rows Linear::weight_data() hands out. Either way a layer holds one copy.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_features.h"
#include "kernels/thread_pool.h"

namespace am::kernels {

struct ExecContext {
  KernelPath path = KernelPath::kScalar;
  ThreadPool* pool = nullptr;
  bool cpu_weights = true;
};

inline void parallel_for(const ExecContext& ctx, int64_t n, int64_t grain,
                         const ThreadPool::RangeFn& fn) {
  if (ctx.pool != nullptr) {
    ctx.pool->parallel_for(n, grain, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace am::kernels
