// The CPU ISA probe (logger "worker/probe/cpuid"). The probe is split in two: gathering asks the
// CPU (cpuid and XCR0 on x86-64, the auxiliary vector on aarch64) and writes the raw register
// values as the "cpu" answers; decoding turns those values into flags. Decoding is plain code
// compiled on every architecture, so an aarch64 recording replays on an x86-64 build and back.
//
// Answers source "cpu":
//   x86-64:  {"machine": "x86_64", "cpuid": [{"leaf", "subleaf", "eax", "ebx", "ecx", "edx"}],
//             "xcr0"}   (hex strings; leaves above the CPU's maximum are not recorded)
//   aarch64: {"machine": "aarch64", "hwcap", "hwcap2"} plus the machine file /proc/cpuinfo
//   other:   {"machine": uname's machine}
#include "worker/probe_cpuid.h"

#include <sys/utsname.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "worker/probe.h"
#include "worker/probe_files.h"
#include "worker/probe_json.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define AM_PROBE_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define AM_PROBE_AARCH64 1
#endif

namespace am::worker {
namespace {

constexpr int kRegisterHexDigits = 8;
constexpr int kXcr0HexDigits = 16;

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

bool is_x86(std::string_view machine) {
  return machine == "x86_64" || machine == "amd64" || machine == "i686" || machine == "i386";
}
bool is_aarch64(std::string_view machine) { return machine == "aarch64" || machine == "arm64"; }

// ---- x86-64 ------------------------------------------------------------------------------

struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

constexpr uint32_t kExtendedBase = 0x80000000u;
constexpr uint32_t kBrandFirstLeaf = 0x80000002u;
constexpr uint32_t kBrandLastLeaf = 0x80000004u;

#if defined(AM_PROBE_X86)
nlohmann::json regs_entry(uint32_t leaf, uint32_t subleaf, const Regs& r) {
  return {{"leaf", hex_string(leaf, kRegisterHexDigits)}, {"subleaf", hex_string(subleaf, 1)},
          {"eax", hex_string(r.eax, kRegisterHexDigits)}, {"ebx", hex_string(r.ebx, kRegisterHexDigits)},
          {"ecx", hex_string(r.ecx, kRegisterHexDigits)}, {"edx", hex_string(r.edx, kRegisterHexDigits)}};
}

Regs raw_cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

uint64_t read_xcr0() {
  // Inline asm rather than _xgetbv(): the intrinsic needs -mxsave on the whole translation unit.
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// A leaf above the CPU's maximum returns garbage from some hypervisors, so only leaves within
// the advertised maxima are asked (and recorded).
nlohmann::json gather_x86(nlohmann::json answers) {
  nlohmann::json leaves = nlohmann::json::array();
  const Regs leaf0 = raw_cpuid(0, 0);
  leaves.push_back(regs_entry(0, 0, leaf0));
  if (leaf0.eax >= 1) leaves.push_back(regs_entry(1, 0, raw_cpuid(1, 0)));
  if (leaf0.eax >= 7) {
    const Regs l7 = raw_cpuid(7, 0);
    leaves.push_back(regs_entry(7, 0, l7));
    if (l7.eax >= 1) leaves.push_back(regs_entry(7, 1, raw_cpuid(7, 1)));
  }
  const Regs ext0 = raw_cpuid(kExtendedBase, 0);
  leaves.push_back(regs_entry(kExtendedBase, 0, ext0));
  for (uint32_t leaf = kExtendedBase + 1; leaf <= kBrandLastLeaf && leaf <= ext0.eax; ++leaf) {
    leaves.push_back(regs_entry(leaf, 0, raw_cpuid(leaf, 0)));
  }
  answers["cpuid"] = std::move(leaves);
  const bool osxsave = leaf0.eax >= 1 && ((raw_cpuid(1, 0).ecx >> 27) & 1u) != 0;
  // xgetbv faults unless the OS enabled XSAVE, so XCR0 is read only then.
  if (osxsave) answers["xcr0"] = hex_string(read_xcr0(), kXcr0HexDigits);
  return answers;
}
#endif

using CpuidTable = std::map<std::pair<uint32_t, uint32_t>, Regs>;

CpuidTable cpuid_table(const nlohmann::json& answers) {
  CpuidTable table;
  auto it = answers.find("cpuid");
  if (it == answers.end() || !it->is_array()) return table;
  for (const auto& e : *it) {
    const auto leaf = json_u64(e, "leaf");
    if (!leaf) continue;
    Regs r;
    r.eax = static_cast<uint32_t>(json_u64(e, "eax").value_or(0));
    r.ebx = static_cast<uint32_t>(json_u64(e, "ebx").value_or(0));
    r.ecx = static_cast<uint32_t>(json_u64(e, "ecx").value_or(0));
    r.edx = static_cast<uint32_t>(json_u64(e, "edx").value_or(0));
    table[{static_cast<uint32_t>(*leaf), static_cast<uint32_t>(json_u64(e, "subleaf").value_or(0))}] = r;
  }
  return table;
}

// An unrecorded leaf reads as zeros, as the live probe treats a leaf above the maximum.
Regs lookup(const CpuidTable& table, uint32_t leaf, uint32_t subleaf = 0) {
  auto it = table.find({leaf, subleaf});
  return it == table.end() ? Regs{} : it->second;
}

bool bit(uint32_t reg, int n) { return ((reg >> n) & 1u) != 0; }

// XCR0 state components the OS must enable before the registers may be used.
constexpr uint64_t kXcr0SseAvx = 0x6;          // XMM (bit 1) + YMM upper halves (bit 2)
constexpr uint64_t kXcr0Avx512 = 0xE0;         // opmask, ZMM0-15 upper, ZMM16-31 (bits 5-7)
constexpr uint64_t kXcr0Amx = 0x60000;         // XTILECFG + XTILEDATA (bits 17-18)

nlohmann::json decode_x86(const nlohmann::json& answers) {
  const CpuidTable t = cpuid_table(answers);
  const Regs leaf0 = lookup(t, 0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);

  char brand_buf[49] = {};
  for (uint32_t i = 0; i < 3; ++i) {
    const Regs r = lookup(t, kBrandFirstLeaf + i);
    std::memcpy(brand_buf + 16 * i + 0, &r.eax, 4);
    std::memcpy(brand_buf + 16 * i + 4, &r.ebx, 4);
    std::memcpy(brand_buf + 16 * i + 8, &r.ecx, 4);
    std::memcpy(brand_buf + 16 * i + 12, &r.edx, 4);
  }
  const std::string brand = trim_copy(brand_buf);
  const Regs l1 = lookup(t, 1);
  const Regs l7 = lookup(t, 7, 0);
  const Regs l7s1 = lookup(t, 7, 1);
  const Regs e1 = lookup(t, kExtendedBase + 1);

  const bool osxsave = bit(l1.ecx, 27);
  const uint64_t xcr0 = osxsave ? json_u64(answers, "xcr0").value_or(0) : 0;
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

  nlohmann::json cpu = nlohmann::json::object();
  cpu["vendor"] = std::string(vendor);
  cpu["model"] = brand.empty() ? std::string(vendor) : brand;
  cpu["isa"] = std::move(isa);
  return cpu;
}

// ---- aarch64 -----------------------------------------------------------------------------

// HWCAP bit positions from the kernel's arch/arm64/include/uapi/asm/hwcap.h; spelled out so the
// decoder builds on every architecture and against older headers.
constexpr uint64_t kHwcapFp = uint64_t{1} << 0;
constexpr uint64_t kHwcapAsimd = uint64_t{1} << 1;
constexpr uint64_t kHwcapFphp = uint64_t{1} << 9;
constexpr uint64_t kHwcapAsimdhp = uint64_t{1} << 10;
constexpr uint64_t kHwcapAsimddp = uint64_t{1} << 20;
constexpr uint64_t kHwcapSve = uint64_t{1} << 22;
constexpr uint64_t kHwcap2Sve2 = uint64_t{1} << 1;
constexpr uint64_t kHwcap2I8mm = uint64_t{1} << 13;
constexpr uint64_t kHwcap2Bf16 = uint64_t{1} << 14;

#if defined(AM_PROBE_AARCH64)
nlohmann::json gather_aarch64(nlohmann::json answers) {
  answers["hwcap"] = hex_string(getauxval(AT_HWCAP), kXcr0HexDigits);
  answers["hwcap2"] = hex_string(getauxval(AT_HWCAP2), kXcr0HexDigits);
  return answers;
}
#endif

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

// Core names of the parts seen in laptops, phones and servers (MIDR part numbers from each
// core's technical reference manual); others are named by number.
std::string arm_part_name(unsigned implementer, unsigned part) {
  static const std::map<std::pair<unsigned, unsigned>, const char*> kParts = {
      {{0x41, 0xd03}, "Cortex-A53"},   {{0x41, 0xd05}, "Cortex-A55"},
      {{0x41, 0xd08}, "Cortex-A72"},   {{0x41, 0xd0b}, "Cortex-A76"},
      {{0x41, 0xd0c}, "Neoverse-N1"},  {{0x41, 0xd0d}, "Cortex-A77"},
      {{0x41, 0xd40}, "Neoverse-V1"},  {{0x41, 0xd41}, "Cortex-A78"},
      {{0x41, 0xd44}, "Cortex-X1"},    {{0x41, 0xd46}, "Cortex-A510"},
      {{0x41, 0xd47}, "Cortex-A710"},  {{0x41, 0xd48}, "Cortex-X2"},
      {{0x41, 0xd49}, "Neoverse-N2"},  {{0x41, 0xd4d}, "Cortex-A715"},
      {{0x41, 0xd4e}, "Cortex-X3"},    {{0x41, 0xd4f}, "Neoverse-V2"},
      {{0x41, 0xd80}, "Cortex-A520"},  {{0x41, 0xd81}, "Cortex-A720"},
      {{0x41, 0xd82}, "Cortex-X4"},    {{0x51, 0x001}, "Oryon"},
  };
  auto it = kParts.find({implementer, part});
  if (it != kParts.end()) return it->second;
  char buf[32];
  std::snprintf(buf, sizeof buf, "part 0x%03x", part);
  return buf;
}

nlohmann::json decode_aarch64(const nlohmann::json& answers, const std::optional<std::string>& cpuinfo) {
  const uint64_t hw = json_u64(answers, "hwcap").value_or(0);
  const uint64_t hw2 = json_u64(answers, "hwcap2").value_or(0);
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

  // /proc/cpuinfo on arm64 carries the MIDR fields of every core but no marketing name; a
  // big.LITTLE chip lists several parts, named here in order of appearance.
  unsigned implementer = 0;
  std::vector<std::pair<unsigned, unsigned>> parts;
  if (cpuinfo) {
    std::istringstream in(*cpuinfo);
    std::string line;
    unsigned current_implementer = 0;
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = trim_copy(line.substr(0, colon));
      const std::string value = trim_copy(line.substr(colon + 1));
      try {
        if (key == "CPU implementer") {
          current_implementer = static_cast<unsigned>(std::stoul(value, nullptr, 0));
          if (implementer == 0) implementer = current_implementer;
        } else if (key == "CPU part") {
          const std::pair<unsigned, unsigned> p{current_implementer,
                                                static_cast<unsigned>(std::stoul(value, nullptr, 0))};
          if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
        }
      } catch (const std::exception&) {
        // A malformed line leaves the field unknown; the flags above are what matters.
      }
    }
  }
  std::string model = arm_implementer_name(implementer);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    model += (i == 0 ? " " : " + ") + arm_part_name(parts[i].first, parts[i].second);
  }
  nlohmann::json cpu = nlohmann::json::object();
  cpu["vendor"] = arm_implementer_name(implementer);
  cpu["model"] = model;
  cpu["isa"] = std::move(isa);
  return cpu;
}

nlohmann::json gather_cpu() {
  nlohmann::json answers = {{"machine", machine_name()}};
#if defined(AM_PROBE_X86)
  return gather_x86(std::move(answers));
#elif defined(AM_PROBE_AARCH64)
  return gather_aarch64(std::move(answers));
#else
  return answers;
#endif
}

class CpuIsaProbe final : public Probe {
 public:
  explicit CpuIsaProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "cpuid"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    AM_ASSIGN_OR_RETURN(nlohmann::json answers, probe_answers(options_, "cpu", gather_cpu));
    const std::string arch = json_string(answers, "machine");
    if (arch.empty()) return invalid_argument("cpu answers name no machine");
    nlohmann::json cpu;
    if (is_x86(arch)) {
      cpu = decode_x86(answers);
    } else if (is_aarch64(arch)) {
      cpu = decode_aarch64(answers, read_machine_file(options_, "/proc/cpuinfo"));
    } else {
      cpu = {{"vendor", "unknown"}, {"model", arch}, {"isa", nlohmann::json::object()}};
    }
    cpu["arch"] = arch;
    cpu["isa_level"] = isa_level_from_flags(cpu["isa"], arch);
    get_logger("worker/probe/cpuid")
        ->debug("{} ({}), {}", cpu["model"].get<std::string>(), cpu["vendor"].get<std::string>(),
                cpu["isa_level"].get<std::string>());
    record["cpu"] = std::move(cpu);
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
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
  if (is_aarch64(arch)) {
    if (flag(isa, "sve2")) return "armv9-a";
    if (flag(isa, "i8mm") && flag(isa, "bf16")) return "armv8.6-a";
    if (flag(isa, "dotprod")) return "armv8.2-a+dotprod";
    return "armv8-a";
  }
  return std::string(arch);
}

std::unique_ptr<Probe> make_cpu_isa_probe() { return make_cpu_isa_probe(ProbeOptions{}); }

std::unique_ptr<Probe> make_cpu_isa_probe(const ProbeOptions& options) {
  return std::make_unique<CpuIsaProbe>(options);
}

}  // namespace am::worker
