#include "common/build_id.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <elf.h>
#include <link.h>
#endif

namespace am {

#if defined(__linux__)
namespace {

// The build id in an object's PT_NOTE segments, or "".
std::string build_id_of(const struct dl_phdr_info* info) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    // Notes are 4-byte aligned: a header, the name, then the descriptor.
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const unsigned char* name = p + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3u) & ~3u);
      const unsigned char* next = desc + ((note.n_descsz + 3u) & ~3u);
      if (next > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          note.n_descsz > 0) {
        std::string out;
        for (uint32_t k = 0; k < note.n_descsz; ++k) {
          out.push_back(kHex[desc[k] >> 4]);
          out.push_back(kHex[desc[k] & 0xf]);
        }
        return out;
      }
      p = next;
    }
  }
  return {};
}

struct Objects {
  std::string executable;                                  // the first object: the main program
  std::vector<std::pair<std::string, std::string>> libraries;   // file name, build id
  bool first = true;
};

int collect(struct dl_phdr_info* info, size_t, void* data) {
  auto* objects = static_cast<Objects*>(data);
  if (objects->first) {
    objects->first = false;
    objects->executable = build_id_of(info);
    return 0;
  }
  const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const std::string id = build_id_of(info);
  objects->libraries.emplace_back(path.substr(path.find_last_of('/') + 1), id.empty() ? "?" : id);
  return 0;
}

Objects loaded_objects() {
  Objects objects;
  dl_iterate_phdr(collect, &objects);
  std::sort(objects.libraries.begin(), objects.libraries.end());
  return objects;
}

}  // namespace

std::string executable_build_id() {
  static const std::string id = loaded_objects().executable;
  return id;
}

std::string loaded_code_id() {
  const Objects objects = loaded_objects();
  if (objects.executable.empty()) return {};
  std::string out = objects.executable;
  for (const auto& [name, id] : objects.libraries) out += "\n" + name + " " + id;
  return out;
}
#else
std::string executable_build_id() { return {}; }
std::string loaded_code_id() { return {}; }
#endif

}  // namespace am
