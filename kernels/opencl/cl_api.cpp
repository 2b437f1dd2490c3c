#include "kernels/opencl/cl_api.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "common/dynamic_library.h"
#include "common/log.h"

namespace am::kernels::opencl {
namespace {

// The loader's soname first (what ocl-icd-libopencl1 installs), then the development symlink
// for boxes where only a vendor's unversioned library exists.
const std::vector<std::string> kLoaderNames = {"libOpenCL.so.1", "libOpenCL.so"};
constexpr const char* kPoclCacheEnv = "POCL_CACHE_DIR";
constexpr const char* kPoclCacheSubdir = "accelmatrix-pocl";

// Written once under g_load_once, read-only afterwards. The library is never closed (and is
// opened RTLD_NODELETE), so the table's pointers stay valid until exit.
std::optional<DynamicLibrary> g_library;
Status g_library_status = Status::Ok();
ClApi g_api;
Status g_load_status = Status::Ok();
std::once_flag g_load_once;

// PoCL compiles every kernel with LLVM on first use and keeps the result under POCL_CACHE_DIR
// (default ~/.cache/pocl). Job processes may run with an unwritable or throwaway HOME; a
// directory under TMPDIR keeps the cache working and shared across job processes.
void ensure_pocl_cache_dir() {
  if (std::getenv(kPoclCacheEnv) != nullptr) return;
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / kPoclCacheSubdir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    get_logger("kernels/opencl")->warn("cannot create {}: {}; PoCL keeps its default cache", dir.string(),
                                       ec.message());
    return;
  }
  setenv(kPoclCacheEnv, dir.c_str(), /*overwrite=*/0);
}

template <typename Fn>
bool resolve(const DynamicLibrary& lib, const char* symbol, Fn& slot, std::string& missing) {
  slot = lib.function<Fn>(symbol);
  if (slot == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += symbol;
    return false;
  }
  return true;
}

Status load() {
  ensure_pocl_cache_dir();
  Result<DynamicLibrary> opened = DynamicLibrary::open_first(kLoaderNames);
  if (!opened.ok()) {
    g_library_status = opened.status();
    return unsupported("OpenCL ICD loader not found: " + opened.status().message());
  }
  g_library.emplace(std::move(opened).value());
  const DynamicLibrary& lib = *g_library;
  std::string missing;
  ClApi& a = g_api;
  resolve(lib, "clGetPlatformIDs", a.GetPlatformIDs, missing);
  resolve(lib, "clGetPlatformInfo", a.GetPlatformInfo, missing);
  resolve(lib, "clGetDeviceIDs", a.GetDeviceIDs, missing);
  resolve(lib, "clGetDeviceInfo", a.GetDeviceInfo, missing);
  resolve(lib, "clCreateContext", a.CreateContext, missing);
  resolve(lib, "clReleaseContext", a.ReleaseContext, missing);
  resolve(lib, "clCreateCommandQueue", a.CreateCommandQueue, missing);
  resolve(lib, "clReleaseCommandQueue", a.ReleaseCommandQueue, missing);
  resolve(lib, "clCreateBuffer", a.CreateBuffer, missing);
  resolve(lib, "clReleaseMemObject", a.ReleaseMemObject, missing);
  resolve(lib, "clCreateProgramWithSource", a.CreateProgramWithSource, missing);
  resolve(lib, "clBuildProgram", a.BuildProgram, missing);
  resolve(lib, "clGetProgramBuildInfo", a.GetProgramBuildInfo, missing);
  resolve(lib, "clReleaseProgram", a.ReleaseProgram, missing);
  resolve(lib, "clCreateKernel", a.CreateKernel, missing);
  resolve(lib, "clReleaseKernel", a.ReleaseKernel, missing);
  resolve(lib, "clSetKernelArg", a.SetKernelArg, missing);
  resolve(lib, "clGetKernelWorkGroupInfo", a.GetKernelWorkGroupInfo, missing);
  resolve(lib, "clEnqueueNDRangeKernel", a.EnqueueNDRangeKernel, missing);
  resolve(lib, "clEnqueueWriteBuffer", a.EnqueueWriteBuffer, missing);
  resolve(lib, "clEnqueueReadBuffer", a.EnqueueReadBuffer, missing);
  resolve(lib, "clEnqueueCopyBuffer", a.EnqueueCopyBuffer, missing);
  resolve(lib, "clEnqueueFillBuffer", a.EnqueueFillBuffer, missing);
  resolve(lib, "clFinish", a.Finish, missing);
  resolve(lib, "clGetEventProfilingInfo", a.GetEventProfilingInfo, missing);
  resolve(lib, "clReleaseEvent", a.ReleaseEvent, missing);
  if (!missing.empty()) {
    // The library stays open (it may be in use elsewhere in the process); only our table is void.
    g_api = ClApi{};
    return unsupported(lib.path() + " lacks OpenCL 1.2 symbols: " + missing);
  }
  return Status::Ok();
}

}  // namespace

Result<const ClApi*> opencl_api() {
  std::call_once(g_load_once, [] { g_load_status = load(); });
  if (!g_load_status.ok()) return g_load_status;
  return &g_api;
}

Result<const DynamicLibrary*> opencl_library() {
  std::call_once(g_load_once, [] { g_load_status = load(); });
  if (!g_library) return g_library_status;
  return &*g_library;
}

const ClApi& cl() { return g_api; }

std::string_view cl_error_name(cl_int code) {
  switch (code) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_PROFILING_INFO_NOT_AVAILABLE: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case CL_MEM_COPY_OVERLAP: return "CL_MEM_COPY_OVERLAP";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_MAP_FAILURE: return "CL_MAP_FAILURE";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case CL_COMPILE_PROGRAM_FAILURE: return "CL_COMPILE_PROGRAM_FAILURE";
    case CL_LINKER_NOT_AVAILABLE: return "CL_LINKER_NOT_AVAILABLE";
    case CL_LINK_PROGRAM_FAILURE: return "CL_LINK_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE_TYPE: return "CL_INVALID_DEVICE_TYPE";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_QUEUE_PROPERTIES: return "CL_INVALID_QUEUE_PROPERTIES";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_HOST_PTR: return "CL_INVALID_HOST_PTR";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM: return "CL_INVALID_PROGRAM";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_DEFINITION: return "CL_INVALID_KERNEL_DEFINITION";
    case CL_INVALID_KERNEL: return "CL_INVALID_KERNEL";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_DIMENSION: return "CL_INVALID_WORK_DIMENSION";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_OFFSET: return "CL_INVALID_GLOBAL_OFFSET";
    case CL_INVALID_EVENT_WAIT_LIST: return "CL_INVALID_EVENT_WAIT_LIST";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_PROPERTY: return "CL_INVALID_PROPERTY";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
  }
}

Status cl_check(cl_int code, std::string_view what) {
  if (code == CL_SUCCESS) return Status::Ok();
  std::string msg = "opencl: " + std::string(what) + " failed: " + std::string(cl_error_name(code)) +
                    " (" + std::to_string(code) + ")";
  if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_HOST_MEMORY ||
      code == CL_OUT_OF_RESOURCES) {
    return resource_exhausted(std::move(msg));
  }
  return internal_error(std::move(msg));
}

}  // namespace am::kernels::opencl
