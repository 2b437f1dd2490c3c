// The OpenCL entry points accelmatrix uses, resolved at run time from the ICD loader.
//
// This is the one OpenCL loader of the project: the OpenCL backend and the worker's OpenCL probe
// (worker/probe_opencl.cpp) both call through it.
//
// Why dlopen: the worker binary must start on a box without libOpenCL (most CPU-only servers);
// linking OpenCL::OpenCL would make the dynamic linker refuse to start it there. The loader
// ("libOpenCL.so.1", the ocl-icd / vendor ICD loader) is opened once per process
// (common/dynamic_library.h) and never closed, so every function pointer in the table stays
// valid until exit.
//
// Contract:
//   - opencl_api() loads the library and every symbol on first call (thread-safe, once). It
//     returns Unsupported naming the library when the loader or any symbol is missing; the
//     answer is cached, so later calls are cheap.
//   - opencl_library() is the library that load opened (its soname and mapped path), or the
//     NotFound status naming every name tried. Same once-only load as opencl_api().
//   - Before the first OpenCL call it sets POCL_CACHE_DIR to $TMPDIR/accelmatrix-pocl (or
//     /tmp/accelmatrix-pocl) when the variable is unset, so PoCL's kernel cache is writable and
//     shared between runs and job processes. A value the user set is kept.
//   - cl_error_name() maps an OpenCL error code to its name ("CL_OUT_OF_RESOURCES").
//   - cl_check() turns a non-CL_SUCCESS code into a Status naming the call; allocation
//     failures map to ResourceExhausted, everything else to Internal.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string_view>

#include "common/dynamic_library.h"
#include "common/status.h"

namespace am::kernels::opencl {

// One pointer per OpenCL 1.2 function we call. Names drop the "cl" prefix.
struct ClApi {
  decltype(&::clGetPlatformIDs) GetPlatformIDs = nullptr;
  decltype(&::clGetPlatformInfo) GetPlatformInfo = nullptr;
  decltype(&::clGetDeviceIDs) GetDeviceIDs = nullptr;
  decltype(&::clGetDeviceInfo) GetDeviceInfo = nullptr;
  decltype(&::clCreateContext) CreateContext = nullptr;
  decltype(&::clReleaseContext) ReleaseContext = nullptr;
  decltype(&::clCreateCommandQueue) CreateCommandQueue = nullptr;
  decltype(&::clReleaseCommandQueue) ReleaseCommandQueue = nullptr;
  decltype(&::clCreateBuffer) CreateBuffer = nullptr;
  decltype(&::clReleaseMemObject) ReleaseMemObject = nullptr;
  decltype(&::clCreateProgramWithSource) CreateProgramWithSource = nullptr;
  decltype(&::clBuildProgram) BuildProgram = nullptr;
  decltype(&::clGetProgramBuildInfo) GetProgramBuildInfo = nullptr;
  decltype(&::clReleaseProgram) ReleaseProgram = nullptr;
  decltype(&::clCreateKernel) CreateKernel = nullptr;
  decltype(&::clReleaseKernel) ReleaseKernel = nullptr;
  decltype(&::clSetKernelArg) SetKernelArg = nullptr;
  decltype(&::clGetKernelWorkGroupInfo) GetKernelWorkGroupInfo = nullptr;
  decltype(&::clEnqueueNDRangeKernel) EnqueueNDRangeKernel = nullptr;
  decltype(&::clEnqueueWriteBuffer) EnqueueWriteBuffer = nullptr;
  decltype(&::clEnqueueReadBuffer) EnqueueReadBuffer = nullptr;
  decltype(&::clEnqueueCopyBuffer) EnqueueCopyBuffer = nullptr;
  decltype(&::clEnqueueFillBuffer) EnqueueFillBuffer = nullptr;
  decltype(&::clFinish) Finish = nullptr;
  decltype(&::clGetEventProfilingInfo) GetEventProfilingInfo = nullptr;
  decltype(&::clReleaseEvent) ReleaseEvent = nullptr;
};

Result<const ClApi*> opencl_api();
Result<const DynamicLibrary*> opencl_library();

// The loaded table. Only valid after opencl_api() succeeded (every handle wrapper relies on it:
// a handle can only exist once the API is loaded).
const ClApi& cl();

std::string_view cl_error_name(cl_int code);
Status cl_check(cl_int code, std::string_view what);

}  // namespace am::kernels::opencl
