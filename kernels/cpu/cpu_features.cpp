#include "kernels/cpu/cpu_features.h"

#include <cstdlib>
#include <string>

#include "common/check.h"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace am::kernels {
namespace {

constexpr KernelPath kAllKernelPaths[] = {KernelPath::kScalar, KernelPath::kAvx2,
                                          KernelPath::kAvx512, KernelPath::kNeon};

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // clang before 16 does not know "f16c" in __builtin_cpu_supports (a compile error), so this
  // one bit is read with cpuid itself: leaf 1, ECX bit 29.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#endif
#if defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is part of the aarch64 base architecture
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string_view kernel_path_name(KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      return "scalar";
    case KernelPath::kAvx2:
      return "avx2";
    case KernelPath::kAvx512:
      return "avx512";
    case KernelPath::kNeon:
      return "neon";
  }
  // The path is stored with every performance result; a value outside the enum is corruption.
  AM_UNREACHABLE("KernelPath value outside its enum");
}

std::optional<KernelPath> kernel_path_from_name(std::string_view name) {
  for (KernelPath p : kAllKernelPaths) {
    if (kernel_path_name(p) == name) return p;
  }
  return std::nullopt;
}

bool kernel_path_available(KernelPath path) {
  const CpuFeatures& f = cpu_features();
  switch (path) {
    case KernelPath::kScalar:
      return true;
    case KernelPath::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case KernelPath::kAvx512:
      // The avx512 kernels use AVX2/F16C instructions for block tails and scale conversion.
      return f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni && f.avx2 && f.fma && f.f16c;
    case KernelPath::kNeon:
      return f.neon;
  }
  return false;
}

std::vector<KernelPath> available_kernel_paths() {
  std::vector<KernelPath> paths;
  for (KernelPath p : kAllKernelPaths) {
    if (kernel_path_available(p)) paths.push_back(p);
  }
  return paths;
}

KernelPath best_kernel_path() { return available_kernel_paths().back(); }

Result<KernelPath> select_kernel_path() {
  const char* forced = std::getenv(kKernelPathEnvVar);
  if (forced == nullptr || *forced == '\0') return best_kernel_path();
  const std::optional<KernelPath> path = kernel_path_from_name(forced);
  if (!path) {
    return invalid_argument(std::string(kKernelPathEnvVar) + "='" + forced +
                            "' is not a kernel path (expected scalar|avx2|avx512|neon)");
  }
  if (!kernel_path_available(*path)) {
    return unsupported(std::string(kKernelPathEnvVar) + "=" + forced +
                       " but this CPU lacks the instructions that path needs");
  }
  return *path;
}

}  // namespace am::kernels
