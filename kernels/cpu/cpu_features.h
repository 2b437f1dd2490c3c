// What the CPU this process runs on can execute, and which kernel path the core uses.
//
// Contract:
//   - cpu_features() asks CPUID once (via the compiler's __builtin_cpu_supports, which also checks
//     that the OS saves the wider register state) and caches the answer. Thread-safe.
//   - A KernelPath names one implementation family of the SIMD kernels:
//       scalar  portable C++, the reference every other path is tested against;
//       avx2    needs AVX2 + FMA + F16C;
//       avx512  needs AVX-512 F + BW + VL + VNNI (int8 dot products with vpdpbusd); within it
//               the bf16 kernels use VDPBF16PS when the CPU also has AVX512_BF16;
//       neon    Advanced SIMD on aarch64 (always present there, never on x86).
//     The scalar path is always available.
//   - select_kernel_path() returns the best available path, or the one named by the environment
//     variable ACCELMATRIX_KERNEL_PATH (scalar|avx2|avx512|neon) when it is set and non-empty: an
//     unknown name is InvalidArgument, a path this CPU lacks is Unsupported.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace am::kernels {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool neon = false;
};

const CpuFeatures& cpu_features();

enum class KernelPath { kScalar, kAvx2, kAvx512, kNeon };

inline constexpr const char* kKernelPathEnvVar = "ACCELMATRIX_KERNEL_PATH";

std::string_view kernel_path_name(KernelPath path);
std::optional<KernelPath> kernel_path_from_name(std::string_view name);
bool kernel_path_available(KernelPath path);
// Every available path, scalar first, best last.
std::vector<KernelPath> available_kernel_paths();
KernelPath best_kernel_path();
Result<KernelPath> select_kernel_path();

}  // namespace am::kernels
