// Move-only owners of OpenCL objects: each releases its handle exactly once, in its destructor.
//
// Contract: a handle is constructed from a raw object the caller owns (one reference, as the
// clCreate* functions return it) and releases that reference through the loaded API table
// (cl_api.h). Handles only exist after opencl_api() succeeded. Not copyable; moving transfers
// ownership and leaves the source empty. Not thread-safe (like the Backend that owns them).
#pragma once

#include <utility>

#include "kernels/opencl/cl_api.h"

namespace am::kernels::opencl {

template <typename H>
struct ClRelease;
template <>
struct ClRelease<cl_context> {
  static void release(cl_context h) { cl().ReleaseContext(h); }
};
template <>
struct ClRelease<cl_command_queue> {
  static void release(cl_command_queue h) { cl().ReleaseCommandQueue(h); }
};
template <>
struct ClRelease<cl_mem> {
  static void release(cl_mem h) { cl().ReleaseMemObject(h); }
};
template <>
struct ClRelease<cl_program> {
  static void release(cl_program h) { cl().ReleaseProgram(h); }
};
template <>
struct ClRelease<cl_kernel> {
  static void release(cl_kernel h) { cl().ReleaseKernel(h); }
};

template <typename H>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(H handle) : handle_(handle) {}
  ~ClHandle() { reset(); }
  ClHandle(ClHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;

  H get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  void reset() {
    if (handle_ != nullptr) ClRelease<H>::release(std::exchange(handle_, nullptr));
  }

 private:
  H handle_ = nullptr;
};

using ClContext = ClHandle<cl_context>;
using ClQueue = ClHandle<cl_command_queue>;
using ClBuffer = ClHandle<cl_mem>;
using ClProgram = ClHandle<cl_program>;
using ClKernel = ClHandle<cl_kernel>;

}  // namespace am::kernels::opencl
