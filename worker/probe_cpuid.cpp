#include "worker/probe_cpuid.h"

#include <sys/utsname.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/log.h"
#include "worker/probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define AM_PROBE_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define AM_PROBE_AARCH64 1
#endif

namespace am::worker {
namespace {

std::string machine_name() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return u.machine;
}

bool flag(const nlohmann::json& isa, const char* name) {
  auto it = isa.find(name);
  return it != isa.end() && it->is_boolean() && it->get<bool>();
}

template <std::size_t N>
bool all_flags(const nlohmann::json& isa, const std::array<const char*, N>& names) {
  for (const char* n : names) {
    if (!flag(isa, n)) return false;
  }
  return true;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

#if defined(AM_PROBE_X86)

struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// A leaf above the CPU's maximum returns garbage from some hypervisors, so every read is gated
// on the advertised maximum.
Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return Regs{};
  return r;
}

uint64_t read_xcr0() {
  // Inline asm rather than _xgetbv(): the intrinsic needs -mxsave on the whole translation unit.
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

bool bit(uint32_t reg, int n) { return ((reg >> n) & 1u) != 0; }

// XCR0 state components the OS must enable before the registers may be used.
constexpr uint64_t kXcr0SseAvx = 0x6;          // XMM (bit 1) + YMM upper halves (bit 2)
constexpr uint64_t kXcr0Avx512 = 0xE0;         // opmask, ZMM0-15 upper, ZMM16-31 (bits 5-7)
constexpr uint64_t kXcr0Amx = 0x60000;         // XTILECFG + XTILEDATA (bits 17-18)

nlohmann::json x86_cpu_record() {
  nlohmann::json cpu = nlohmann::json::object();
  const Regs leaf0 = cpuid(0, 0);
  const uint32_t max_leaf = leaf0.eax;
  char vendor[13] = {};
  std::memcpy(vendor + 0, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);

  const Regs ext0 = cpuid(0x80000000u, 0);
  const uint32_t max_ext = ext0.eax;
  std::string brand;
  if (max_ext >= 0x80000004u) {
    char buf[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002u + i, 0);
      std::memcpy(buf + 16 * i + 0, &r.eax, 4);
      std::memcpy(buf + 16 * i + 4, &r.ebx, 4);
      std::memcpy(buf + 16 * i + 8, &r.ecx, 4);
      std::memcpy(buf + 16 * i + 12, &r.edx, 4);
    }
    brand = trim(buf);
  }

  const Regs l1 = max_leaf >= 1 ? cpuid(1, 0) : Regs{};
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
  const Regs l7s1 = (max_leaf >= 7 && l7.eax >= 1) ? cpuid(7, 1) : Regs{};
  const Regs e1 = max_ext >= 0x80000001u ? cpuid(0x80000001u, 0) : Regs{};

  const bool osxsave = bit(l1.ecx, 27);
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_avx = osxsave && (xcr0 & kXcr0SseAvx) == kXcr0SseAvx;
  const bool os_avx512 = os_avx && (xcr0 & kXcr0Avx512) == kXcr0Avx512;
  const bool os_amx = osxsave && (xcr0 & kXcr0Amx) == kXcr0Amx;

  nlohmann::json isa = nlohmann::json::object();
  isa["sse3"] = bit(l1.ecx, 0);
  isa["ssse3"] = bit(l1.ecx, 9);
  isa["sse4_1"] = bit(l1.ecx, 19);
  isa["sse4_2"] = bit(l1.ecx, 20);
  isa["popcnt"] = bit(l1.ecx, 23);
  isa["cx16"] = bit(l1.ecx, 13);
  isa["movbe"] = bit(l1.ecx, 22);
  isa["lahf_lm"] = bit(e1.ecx, 0);
  isa["lzcnt"] = bit(e1.ecx, 5);
  isa["bmi1"] = bit(l7.ebx, 3);
  isa["bmi2"] = bit(l7.ebx, 8);
  isa["osxsave"] = osxsave;
  isa["avx"] = os_avx && bit(l1.ecx, 28);
  isa["fma"] = os_avx && bit(l1.ecx, 12);
  isa["f16c"] = os_avx && bit(l1.ecx, 29);
  isa["avx2"] = os_avx && bit(l7.ebx, 5);
  isa["avx_vnni"] = os_avx && bit(l7s1.eax, 4);
  isa["avx512f"] = os_avx512 && bit(l7.ebx, 16);
  isa["avx512dq"] = os_avx512 && bit(l7.ebx, 17);
  isa["avx512cd"] = os_avx512 && bit(l7.ebx, 28);
  isa["avx512bw"] = os_avx512 && bit(l7.ebx, 30);
  isa["avx512vl"] = os_avx512 && bit(l7.ebx, 31);
  isa["avx512_vnni"] = os_avx512 && bit(l7.ecx, 11);
  isa["avx512_bf16"] = os_avx512 && bit(l7s1.eax, 5);
  isa["avx512_fp16"] = os_avx512 && bit(l7.edx, 23);
  isa["amx_tile"] = os_amx && bit(l7.edx, 24);
  isa["amx_int8"] = os_amx && bit(l7.edx, 25);
  isa["amx_bf16"] = os_amx && bit(l7.edx, 22);

  cpu["vendor"] = std::string(vendor);
  cpu["model"] = brand.empty() ? std::string(vendor) : brand;
  cpu["isa"] = std::move(isa);
  return cpu;
}

#elif defined(AM_PROBE_AARCH64)

// HWCAP bit positions from the kernel's arch/arm64/include/uapi/asm/hwcap.h; spelled out so the
// probe builds against older headers that lack the newer names.
constexpr unsigned long kHwcapFp = 1ul << 0;
constexpr unsigned long kHwcapAsimd = 1ul << 1;
constexpr unsigned long kHwcapFphp = 1ul << 9;
constexpr unsigned long kHwcapAsimdhp = 1ul << 10;
constexpr unsigned long kHwcapAsimddp = 1ul << 20;
constexpr unsigned long kHwcapSve = 1ul << 22;
constexpr unsigned long kHwcap2Sve2 = 1ul << 1;
constexpr unsigned long kHwcap2I8mm = 1ul << 13;
constexpr unsigned long kHwcap2Bf16 = 1ul << 14;

// MIDR implementer codes (Arm ARM, "Main ID Register").
std::string arm_implementer_name(unsigned code) {
  switch (code) {
    case 0x41: return "ARM";
    case 0x42: return "Broadcom";
    case 0x43: return "Cavium";
    case 0x46: return "Fujitsu";
    case 0x48: return "HiSilicon";
    case 0x4e: return "NVIDIA";
    case 0x51: return "Qualcomm";
    case 0x61: return "Apple";
    case 0xc0: return "Ampere";
    default: return "unknown";
  }
}

nlohmann::json aarch64_cpu_record() {
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  nlohmann::json isa = nlohmann::json::object();
  isa["fp"] = (hw & kHwcapFp) != 0;
  isa["asimd"] = (hw & kHwcapAsimd) != 0;
  isa["neon"] = (hw & kHwcapAsimd) != 0;
  isa["fp16"] = (hw & kHwcapFphp) != 0 && (hw & kHwcapAsimdhp) != 0;
  isa["dotprod"] = (hw & kHwcapAsimddp) != 0;
  isa["sve"] = (hw & kHwcapSve) != 0;
  isa["sve2"] = (hw2 & kHwcap2Sve2) != 0;
  isa["i8mm"] = (hw2 & kHwcap2I8mm) != 0;
  isa["bf16"] = (hw2 & kHwcap2Bf16) != 0;

  // /proc/cpuinfo on arm64 carries the MIDR fields but no marketing name.
  unsigned implementer = 0, part = 0;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    try {
      if (key == "CPU implementer" && implementer == 0) implementer = std::stoul(value, nullptr, 0);
      if (key == "CPU part" && part == 0) part = std::stoul(value, nullptr, 0);
    } catch (const std::exception&) {
      // A malformed line leaves the field unknown; the flags above are what matters.
    }
  }
  nlohmann::json cpu = nlohmann::json::object();
  cpu["vendor"] = arm_implementer_name(implementer);
  char model[64];
  std::snprintf(model, sizeof model, "%s part 0x%03x", arm_implementer_name(implementer).c_str(),
                part);
  cpu["model"] = std::string(model);
  cpu["isa"] = std::move(isa);
  return cpu;
}

#endif

class CpuIsaProbe final : public Probe {
 public:
  std::string_view name() const override { return "cpuid"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    const std::string arch = machine_name();
#if defined(AM_PROBE_X86)
    nlohmann::json cpu = x86_cpu_record();
#elif defined(AM_PROBE_AARCH64)
    nlohmann::json cpu = aarch64_cpu_record();
#else
    nlohmann::json cpu = {{"vendor", "unknown"}, {"model", arch}, {"isa", nlohmann::json::object()}};
#endif
    cpu["arch"] = arch;
    cpu["isa_level"] = isa_level_from_flags(cpu["isa"], arch);
    get_logger("worker/probe/cpuid")
        ->debug("{} ({}), {}", cpu["model"].get<std::string>(), cpu["vendor"].get<std::string>(),
                cpu["isa_level"].get<std::string>());
    record["cpu"] = std::move(cpu);
    return Status::Ok();
  }
};

}  // namespace

std::string isa_level_from_flags(const nlohmann::json& isa, std::string_view arch) {
  if (arch == "x86_64") {
    // Levels as defined by the x86-64 psABI (2020); each includes the one below.
    static constexpr std::array<const char*, 7> kV2 = {"cx16",   "lahf_lm", "popcnt", "sse3",
                                                       "sse4_1", "sse4_2",  "ssse3"};
    static constexpr std::array<const char*, 8> kV3 = {"avx", "avx2", "bmi1",  "bmi2",
                                                       "f16c", "fma", "lzcnt", "movbe"};
    static constexpr std::array<const char*, 5> kV4 = {"avx512f", "avx512bw", "avx512cd",
                                                       "avx512dq", "avx512vl"};
    if (!all_flags(isa, kV2)) return "x86-64-v1";
    if (!all_flags(isa, kV3)) return "x86-64-v2";
    if (!all_flags(isa, kV4)) return "x86-64-v3";
    return "x86-64-v4";
  }
  if (arch == "aarch64" || arch == "arm64") {
    if (flag(isa, "sve2")) return "armv9-a";
    if (flag(isa, "i8mm") && flag(isa, "bf16")) return "armv8.6-a";
    if (flag(isa, "dotprod")) return "armv8.2-a+dotprod";
    return "armv8-a";
  }
  return std::string(arch);
}

std::unique_ptr<Probe> make_cpu_isa_probe() { return std::make_unique<CpuIsaProbe>(); }

}  // namespace am::worker
