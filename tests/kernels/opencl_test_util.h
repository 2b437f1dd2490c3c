// Shared by the OpenCL tests: the devices to test (every OpenCL device present, or a skip with
// the reason), the cpu scalar reference, and the NMSE tolerances of every op in one place.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/accuracy.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/opencl/cl_device.h"
#include "kernels/opencl/opencl_backend.h"
#include "kernels/resident_tensors.h"

namespace am::kernels::testing {

// NMSE of an OpenCL output against the cpu scalar reference on the same inputs. The OpenCL
// kernels use the reference's formulas; what remains is float summation order (tree
// reductions, tiles) and the device libm (erf/exp/tanh within OpenCL's ULP limits), both
// ~1e-14..1e-12 in NMSE on these shapes. The limits leave two to three decades of margin and
// still catch any real defect (a wrong element, a missed block, a wrong mask) by many decades.
struct OpenClTolerance {
  static constexpr double kElementwise = 1e-12;   // add, mul, relu, gather: same float ops
  static constexpr double kTranscendental = 1e-10;  // gelu/silu/sigmoid, softmax
  static constexpr double kNorm = 1e-10;          // layer/RMS norm: float tree vs double sums
  static constexpr double kFloatMatmul = 1e-10;   // f32/f16/bf16 weights: summation order
  // Block formats: identical int8 activation quants and int32 block sums; only the float sum
  // over blocks is reordered.
  static constexpr double kQuantMatmul = 1e-10;
  static constexpr double kAttention = 1e-10;     // online softmax vs two-pass
  // Convolutions: the cpu's order where it has one (direct, grouped), OpenBLAS's im2col GEMM
  // otherwise: float summation order only.
  static constexpr double kConvolution = 1e-10;
  // selective_scan / time_mix: the device's exp (a few ULP) carried through the recurrence.
  static constexpr double kRecurrence = 1e-10;
  // The whole encoder: every op above, compounded through layers and LayerNorms.
  static constexpr double kEncoder = 1e-8;
};

// Every OpenCL device, or the reason there is none. Every backend the tests make (run_job's
// included) checks residency: a graph that reads a device-resident tensor without to_host() or
// writes one without from_host() fails its test (resident_tensors.h).
inline Result<std::vector<opencl::OpenClDevice>> opencl_devices_or_reason() {
  setenv(kResidencyChecksEnv, "1", 0);
  return opencl::list_opencl_devices();
}

// Binds `devices` to every OpenCL device, or skips the test when there is none (no loader, no
// platform: Unsupported). Any other failure to enumerate is a broken installation and fails.
#define AM_REQUIRE_OPENCL_DEVICES(devices)                                                    \
  auto devices##_result = ::am::kernels::testing::opencl_devices_or_reason();                  \
  if (!devices##_result.ok()) {                                                                 \
    if (devices##_result.status().code() != ::am::StatusCode::kUnsupported) {                   \
      FAIL() << devices##_result.status().to_string();                                          \
    }                                                                                            \
    GTEST_SKIP() << "no OpenCL platform/device here (" << devices##_result.status().message()  \
                 << "); install pocl-opencl-icd (ops/setup.sh does) to run the OpenCL tests";   \
  }                                                                                              \
  const std::vector<::am::kernels::opencl::OpenClDevice>& devices = *devices##_result;          \
  (void)devices

// One backend per device shared by every test file of the binary that uses it (building the
// program is the slow part on PoCL); each use drops the cached weights of the previous case,
// whose addresses get reused.
inline OpenClBackend& opencl_backend_for(const opencl::OpenClDevice& device) {
  static std::map<std::string, std::unique_ptr<OpenClBackend>> backends;
  auto it = backends.find(device.label());
  if (it == backends.end()) {
    Result<std::unique_ptr<OpenClBackend>> be = OpenClBackend::create(device);
    EXPECT_TRUE(be.ok()) << be.status().message();
    if (!be.ok()) std::abort();
    it = backends.emplace(device.label(), std::move(be).value()).first;
  }
  it->second->release_cached_weights();
  return *it->second;
}

inline ExecContext scalar_context() { return ExecContext{KernelPath::kScalar, nullptr}; }

inline double nmse(ConstTensorView y, ConstTensorView ref) {
  return compare_outputs(y.data, ref.data, ref.rows(), ref.cols()).nmse;
}

}  // namespace am::kernels::testing
