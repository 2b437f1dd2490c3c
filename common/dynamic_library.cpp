#include "common/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace am {

DynamicLibrary::DynamicLibrary(void* handle, std::string name, std::string path)
    : handle_(handle), name_(std::move(name)), path_(std::move(path)) {}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      name_(std::move(other.name_)),
      path_(std::move(other.path_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

Result<DynamicLibrary> DynamicLibrary::open_first(const std::vector<std::string>& names) {
  std::string errors;
  for (const std::string& name : names) {
    dlerror();  // clear a stale message
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const char* err = dlerror();
      errors += (errors.empty() ? "" : "; ") + (err != nullptr ? std::string(err) : name + ": not loadable");
      continue;
    }
    std::string path = name;
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      path = map->l_name;
    }
    return DynamicLibrary(handle, name, std::move(path));
  }
  return not_found(errors.empty() ? std::string("no library names given") : errors);
}

void* DynamicLibrary::symbol(const char* symbol) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, symbol);
}

}  // namespace am
