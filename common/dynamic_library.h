// DynamicLibrary: one dlopen handle (RAII, move-only), the one way accelmatrix opens an
// optional runtime (OpenCL ICD loader, Vulkan loader, CUDA/NVML, ROCm, OpenVINO, QNN) so that
// no binary links them and every binary starts on boxes that lack them.
//
// Libraries are opened with RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: drivers register exit
// handlers and threads that must stay mapped after the owner is done with the library, so
// dlclose only drops the reference, and function pointers taken from it stay valid until exit.
// Thread-safety: const members may be called from any thread; dlopen itself is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace am {

class DynamicLibrary {
 public:
  // Opens the first of `names` (sonames or absolute paths) that loads. The not_found error
  // names every try with its dlerror() text.
  static Result<DynamicLibrary> open_first(const std::vector<std::string>& names);

  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // The address of `symbol`, or nullptr when the library does not export it.
  void* symbol(const char* symbol) const;
  // `symbol` as a function pointer of type F (nullptr when absent).
  template <typename F>
  F function(const char* symbol) const {
    return reinterpret_cast<F>(this->symbol(symbol));
  }

  const std::string& name() const { return name_; }   // the name that loaded
  const std::string& path() const { return path_; }   // the file the loader mapped

 private:
  DynamicLibrary(void* handle, std::string name, std::string path);
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
};

}  // namespace am
