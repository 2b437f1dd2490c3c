#include "kernels/weights/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

namespace am::kernels {
namespace {

// Closes a descriptor on every path out of open(); the mapping outlives it.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The live mappings the SIGBUS handler can name. A slot is claimed by CAS on `begin`; its size
// and path are written before `begin` is published and read only after it is seen.
struct FaultSlot {
  std::atomic<const uint8_t*> begin{nullptr};
  std::size_t size = 0;
  char path[kFaultPathBytes] = {};
};
FaultSlot g_slots[kFaultNamedMappings];
std::atomic<bool> g_claiming[kFaultNamedMappings];
int g_fault_exit_code = 0;

void name_mapping(const uint8_t* begin, std::size_t size, const std::string& path) {
  for (std::size_t i = 0; i < kFaultNamedMappings; ++i) {
    bool expected = false;
    if (!g_claiming[i].compare_exchange_strong(expected, true)) continue;
    FaultSlot& slot = g_slots[i];
    slot.size = size;
    const std::size_t n = std::min(path.size(), kFaultPathBytes - 1);
    std::memcpy(slot.path, path.data(), n);
    slot.path[n] = '\0';
    slot.begin.store(begin, std::memory_order_release);
    return;
  }
}

void forget_mapping(const uint8_t* begin) {
  for (std::size_t i = 0; i < kFaultNamedMappings; ++i) {
    if (g_slots[i].begin.load(std::memory_order_acquire) != begin) continue;
    g_slots[i].begin.store(nullptr, std::memory_order_release);
    g_claiming[i].store(false, std::memory_order_release);
    return;
  }
}

void write_all(const char* text, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Async-signal-safe: atomics, write(2), _exit(2).
void on_sigbus(int sig, siginfo_t* info, void*) {
  const auto* at = static_cast<const uint8_t*>(info != nullptr ? info->si_addr : nullptr);
  for (const FaultSlot& slot : g_slots) {
    const uint8_t* begin = slot.begin.load(std::memory_order_acquire);
    if (begin == nullptr || at < begin || at >= begin + slot.size) continue;
    static constexpr char kPrefix[] = "accelmatrix-worker --run-job: ";
    static constexpr char kSuffix[] = " was truncated or replaced while the job read it (SIGBUS)\n";
    write_all(kPrefix, sizeof kPrefix - 1);
    write_all(slot.path, std::strlen(slot.path));
    write_all(kSuffix, sizeof kSuffix - 1);
    ::_exit(g_fault_exit_code);
  }
  // Not a mapping of ours: end as the signal would have.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_mapped_file_fault_handler(int exit_code) {
  g_fault_exit_code = exit_code;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() {
  if (data_ != nullptr) {
    forget_mapping(data_);
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one for ever (until the
  // job's time limit); it is refused below as not a regular file. Reads of a regular file and
  // its mapping do not see the flag.
  FdCloser fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (fd.fd < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found("cannot open " + path + ": " + std::strerror(err));
    return io_error("cannot open " + path + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return io_error("cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return io_error(path + " is not a regular file");
  MappedFile f;
  if (st.st_size == 0) return f;  // mmap refuses length 0; an empty mapping is still a valid file
  void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) return io_error("cannot map " + path + ": " + std::strerror(errno));
  f.data_ = static_cast<const uint8_t*>(p);
  f.size_ = static_cast<std::size_t>(st.st_size);
  name_mapping(f.data_, f.size_, path);
  return f;
}

}  // namespace am::kernels
