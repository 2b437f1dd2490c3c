// Every device advertises exactly the precisions its backend runs. The check does not ask the
// backend's supports() again (that would compare the answer with itself): for every precision a
// probe lists, a real linear layer in each of the precision's weight formats runs on that device
// and must match the cpu reference; for every precision it leaves out, the same layer must be
// refused as unsupported. A probe that lists a format its backend lacks, or hides one it has,
// fails here. Used by advertised_precisions_test.cpp (label unit: cpu) and
// live_opencl_probe_test.cpp (label opencl: PoCL).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "jobs/precision.h"
#include "kernels/accuracy.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/opencl/cl_device.h"
#include "kernels/opencl/opencl_backend.h"
#include "tests/kernels/test_util.h"
#include "worker/cpu_device.h"
#include "worker/probe.h"

namespace am::worker::precision_check {

using jobs::Precision;
using jobs::WeightFormat;
using nlohmann::json;

// Rows not a multiple of anything, K spanning a partial 256-value super-block, batch > 1.
inline constexpr int64_t kRows = 3, kIn = 288, kOut = 37;
// The formats' own rounding against an f32 layer stays far below this; a wrong kernel or a
// mislabelled format lands far above it.
inline constexpr double kMaxNmse = 0.1;

struct LinearRun {
  Status status;
  double nmse = 0;
};

// Runs one linear layer stored in `format` on `backend` and compares it with the f32 layer on the
// cpu reference path.
inline LinearRun run_linear(kernels::Backend& backend, WeightFormat format) {
  const kernels::ExecContext ctx{kernels::KernelPath::kScalar, nullptr};
  kernels::Tensor w = kernels::testing::random_tensor(kernels::Shape{kOut, kIn}, 11, 0.05f);
  kernels::Tensor b = kernels::testing::random_tensor(kernels::Shape{kOut}, 12, 0.05f);
  const kernels::Tensor x = kernels::testing::random_tensor(kernels::Shape{kRows, kIn}, 13);
  const kernels::Linear ref_layer = kernels::Linear::create(w.clone(), b.clone(), WeightFormat::kF32, ctx);
  const kernels::Linear layer = kernels::Linear::create(std::move(w), std::move(b), format, ctx);
  kernels::Tensor want(kernels::Shape{kRows, kOut});
  kernels::Tensor got(kernels::Shape{kRows, kOut});
  kernels::CpuBackend cpu(ctx);
  EXPECT_TRUE(cpu.linear(ref_layer, x.view(), want.view()).ok());
  LinearRun run;
  run.status = backend.linear(layer, x.view(), got.view());
  if (run.status.ok()) {
    run.nmse = kernels::compare_outputs(got.data(), want.data(), kRows, kOut).nmse;
  }
  return run;
}

inline std::vector<Precision> listed_precisions(const json& device) {
  std::vector<Precision> out;
  for (const auto& p : device.at("precisions")) {
    const std::optional<Precision> parsed = jobs::parse_precision(p.get<std::string>());
    EXPECT_TRUE(parsed.has_value()) << "device lists an unknown precision " << p;
    if (parsed) out.push_back(*parsed);
  }
  return out;
}

inline void expect_listing_matches_backend(kernels::Backend& backend, const std::vector<Precision>& listed,
                                    const std::string& device) {
  for (const jobs::PrecisionInfo& p : jobs::all_precisions()) {
    const bool is_listed = std::find(listed.begin(), listed.end(), p.precision) != listed.end();
    bool runs = true;
    for (WeightFormat f : jobs::formats_of(p.precision)) {
      const LinearRun r = run_linear(backend, f);
      if (!r.status.ok()) {
        runs = false;
        EXPECT_EQ(r.status.code(), StatusCode::kUnsupported) << device << " " << p.name << ": " << r.status.to_string();
        continue;
      }
      EXPECT_LT(r.nmse, kMaxNmse) << device << " " << p.name << " format " << jobs::to_string(f);
    }
    EXPECT_EQ(is_listed, runs) << device << " " << (is_listed ? "lists " : "omits ") << p.name
                               << " but its backend " << (runs ? "runs" : "refuses") << " it";
  }
}

}  // namespace am::worker::precision_check
