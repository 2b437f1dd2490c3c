// The CPU ISA probe (logger "worker/probe/cpuid"): vendor, brand string, architecture and the
// instruction-set extensions that the inference core's kernels care about.
//
// Record part written: "cpu": {"vendor", "model", "arch", "isa": {flag: bool, ...}, "isa_level"}.
// - x86-64: cpuid leaves 0, 1, 7.0, 7.1 and 0x8000000x. AVX-class flags are reported true only
//   when the OS saves the matching register state (OSXSAVE + XCR0), since a CPU flag the kernel
//   does not enable faults on first use. Flags: sse3 ssse3 sse4_1 sse4_2 popcnt cx16 lahf_lm movbe
//   lzcnt bmi1 bmi2 avx avx2 fma f16c avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni
//   avx512_bf16 avx512_fp16 avx_vnni amx_tile amx_int8 amx_bf16. isa_level: x86-64-v1..v4.
// - aarch64: getauxval(AT_HWCAP/AT_HWCAP2) and the MIDR parts of /proc/cpuinfo ("model" names
//   the cores, e.g. "ARM Cortex-X1 + Cortex-A78 + Cortex-A55"). Flags: fp asimd neon fp16
//   dotprod sve sve2 i8mm bf16. isa_level: armv8-a, armv8.2-a+dotprod, armv8.6-a (i8mm+bf16), armv9-a (sve2).
// - elsewhere: "isa" is empty and "isa_level" is the architecture name.
// The raw values (registers, hwcaps) are the probe's "cpu" answers, so they are recorded and
// replayed like every other probe's (worker/probe_files.h).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace am::worker {

// The psABI micro-architecture level the flags in `isa` meet ("x86-64-v3"), or for aarch64 the
// architecture profile. `arch` is uname's machine ("x86_64", "aarch64"). Pure function.
std::string isa_level_from_flags(const nlohmann::json& isa, std::string_view arch);

}  // namespace am::worker
