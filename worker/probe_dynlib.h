// Opening GPU/NPU runtimes with dlopen, so that the worker binary links none of them and runs
// on boxes that lack them: a runtime that is not installed is a fact, not a start-up failure.
//
// DynamicLibrary owns one dlopen handle (RAII, move-only). Libraries are opened with
// RTLD_NODELETE: drivers register exit handlers and threads that must stay mapped after the
// probe is done with the library, so dlclose only drops the reference.
// Thread-safety: const members may be called from any thread; dlopen itself is thread-safe.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::worker {

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

// The "library" part of a runtime's answers: {"loaded": true, "name", "path"} or
// {"loaded": false, "error"}.
nlohmann::json library_answers(const Result<DynamicLibrary>& library);

// Whether answers[key] says the library loaded.
bool library_loaded(const nlohmann::json& answers, std::string_view key = "library");

}  // namespace am::worker
