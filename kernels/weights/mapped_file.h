// A read-only memory mapping of a whole file.
//
// Contract: open() maps `path` read-only (MAP_PRIVATE) and keeps it mapped until the object is
// destroyed or moved from; an empty file is valid and has size() 0 and data() null. Errors are
// NotFound (no such file) or IoError naming the path and the system's reason. Move-only; the
// mapping is immutable, so concurrent reads from any number of threads are safe.
//
// A file truncated after it was mapped raises SIGBUS on a read past its new end. With
// install_mapped_file_fault_handler() (job processes), such a fault in a live mapping writes
// "<path> was truncated or replaced while the job read it (SIGBUS)" to stderr and exits with
// `exit_code`, so the job's reason names the file instead of a bare signal; a SIGBUS anywhere
// else ends the process as before. Up to kFaultNamedMappings mappings at once (paths up to
// kFaultPathBytes - 1 bytes) can be named; a fault in one mapped beyond that is a bare SIGBUS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace am::kernels {

inline constexpr std::size_t kFaultNamedMappings = 256;   // shards of a big checkpoint
inline constexpr std::size_t kFaultPathBytes = 512;
void install_mapped_file_fault_handler(int exit_code);

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  static Result<MappedFile> open(const std::string& path);

  const uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void release();

  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace am::kernels
