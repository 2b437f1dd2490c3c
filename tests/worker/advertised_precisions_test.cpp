// The cpu device's advertised precisions against real linear layers on the cpu backend
// (advertised_precisions.h says how). Label: unit.
#include <gtest/gtest.h>

#include "tests/worker/advertised_precisions.h"

namespace am::worker {
namespace {

using namespace precision_check;

TEST(AdvertisedPrecisions, CpuDeviceListsExactlyWhatTheCpuBackendRuns) {
  const std::vector<Precision> listed = cpu_precisions();
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed.front(), Precision::kF32);
  kernels::CpuBackend cpu(kernels::ExecContext{kernels::KernelPath::kScalar, nullptr});
  expect_listing_matches_backend(cpu, listed, "cpu:0");
}

}  // namespace
}  // namespace am::worker
