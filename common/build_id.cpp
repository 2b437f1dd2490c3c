#include "common/build_id.h"

#include <cstdint>
#include <cstring>

#if defined(__linux__)
#include <elf.h>
#include <link.h>
#endif

namespace am {

#if defined(__linux__)
namespace {

// The build id of the first object dl_iterate_phdr reports: the main program.
int find_build_id(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
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
        out->clear();
        for (uint32_t k = 0; k < note.n_descsz; ++k) {
          out->push_back(kHex[desc[k] >> 4]);
          out->push_back(kHex[desc[k] & 0xf]);
        }
        return 1;
      }
      p = next;
    }
  }
  return 1;   // only the main program counts
}

}  // namespace

std::string executable_build_id() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(find_build_id, &found);
    return found;
  }();
  return id;
}
#else
std::string executable_build_id() { return {}; }
#endif

}  // namespace am
