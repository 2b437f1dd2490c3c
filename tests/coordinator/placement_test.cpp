// Placement and exclusivity on the coordinator's side (issue 11 items 1 and 2): which devices a
// plan job is made for, which devices may run the job made, and who may start where.
#include <gtest/gtest.h>

#include "coordinator/exclusivity.h"
#include "coordinator/placement.h"
#include "jobs/placement.h"

namespace am::coord {
namespace {

DeviceInfo device(const std::string& key, const std::string& backend, const std::string& cls, bool host_cores) {
  DeviceInfo d;
  d.key = key;
  d.backend = backend;
  d.hardware_class = cls;
  d.host_cores = host_cores;
  d.precisions = {jobs::Precision::kF32};
  return d;
}

jobs::JobSpec spec(const std::string& backend, jobs::Placement placement) {
  jobs::JobSpec s;
  s.model = "bert-tiny";
  s.architecture = "encoder-only";
  s.backend = backend;
  s.placement = placement;
  return s;
}

TEST(PlacementFor, EachClassTargetsTheDevicesClassAndEachDeviceTheDevice) {
  const DeviceInfo cpu = device("cpu:0", "cpu", "cpu-aaaa", true);
  auto cls = placement_for(spec("cpu", jobs::Placement::kEachClass), "w1", cpu);
  ASSERT_TRUE(cls);
  EXPECT_EQ(cls->target, "class:cpu-aaaa");
  EXPECT_EQ(cls->hardware_class, "cpu-aaaa");
  auto dev = placement_for(spec("cpu", jobs::Placement::kEachDevice), "w1", cpu);
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->target, "device:w1/cpu:0");
  EXPECT_EQ(dev->hardware_class, "cpu-aaaa");
  // Another backend, and `any` (made at submission, not per device), get nothing.
  EXPECT_FALSE(placement_for(spec("opencl", jobs::Placement::kEachClass), "w1", cpu));
  EXPECT_FALSE(placement_for(spec("cpu", jobs::Placement::kAny), "w1", cpu));
}

TEST(PlacementFor, TagsAndCommandsDecideWhetherAWorkersDeviceIsOwedTheJob) {
  DeviceInfo cpu = device("cpu:0", "cpu", "cpu-aaaa", true);
  jobs::JobSpec tagged = spec("cpu", jobs::Placement::kEachClass);
  tagged.required_tags = {{"rack", "b2"}};
  EXPECT_FALSE(placement_for(tagged, "w1", cpu));
  cpu.worker_tags = {{"rack", "b2"}};
  EXPECT_TRUE(placement_for(tagged, "w1", cpu));
  jobs::JobSpec command = spec("cpu", jobs::Placement::kEachClass);
  command.command = jobs::CommandSpec{};
  EXPECT_FALSE(placement_for(command, "w1", cpu));
  cpu.runs_commands = true;
  EXPECT_TRUE(placement_for(command, "w1", cpu));
  // A precision the class lacks does not stop the job being made: that class's cell is a finding.
  jobs::JobSpec f16 = spec("cpu", jobs::Placement::kEachClass);
  f16.precision = jobs::Precision::kF16;
  EXPECT_TRUE(placement_for(f16, "w1", cpu));
}

TEST(Admits, AClassJobRunsOnItsClassAndADeviceJobOnlyOnItsDevice) {
  const DeviceInfo a = device("cpu:0", "cpu", "cpu-aaaa", true);
  const DeviceInfo b = device("cpu:0", "cpu", "cpu-bbbb", true);
  const PlacedTarget cls = *placement_for(spec("cpu", jobs::Placement::kEachClass), "w1", a);
  EXPECT_TRUE(admits(cls, "w1", a));
  EXPECT_TRUE(admits(cls, "w9", a));    // an identical box
  EXPECT_FALSE(admits(cls, "w1", b));
  const PlacedTarget dev = *placement_for(spec("cpu", jobs::Placement::kEachDevice), "w1", a);
  EXPECT_TRUE(admits(dev, "w1", a));
  EXPECT_FALSE(admits(dev, "w9", a));   // same class, another box
  EXPECT_TRUE(admits(PlacedTarget{}, "w9", b));   // any
  // Read back from the store, the same answers.
  auto stored = placed_target(dev.target, "cpu-aaaa");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(admits(*stored, "w1", a));
  EXPECT_FALSE(admits(*stored, "w9", a));
  auto stored_cls = placed_target(cls.target, "");
  ASSERT_TRUE(stored_cls);
  EXPECT_EQ(stored_cls->hardware_class, "cpu-aaaa");
  EXPECT_FALSE(placed_target("class:", ""));
}

TEST(Occupancy, AnExclusiveJobNeedsTheHostsCoresEmptyAcrossWorkers) {
  const DeviceInfo cpu = device("cpu:0", "cpu", "c", true);
  const DeviceInfo pocl = device("opencl:0", "opencl", "p", true);
  const DeviceInfo gpu = device("vulkan:0", "vulkan", "g", false);
  const std::string host = host_key_of("m1", "w1");
  EXPECT_EQ(host, host_key_of("m1", "w2"));   // same machine, another worker
  const HardwareSlot w1_cpu = slot_of(host, "w1", cpu);
  const HardwareSlot w2_cpu = slot_of(host_key_of("m1", "w2"), "w2", cpu);
  const HardwareSlot w1_pocl = slot_of(host, "w1", pocl);
  const HardwareSlot w1_gpu = slot_of(host, "w1", gpu);
  const HardwareSlot other_host = slot_of(host_key_of("m2", "w3"), "w3", cpu);

  Occupancy occ;
  occ.hold(w1_cpu, /*exclusive=*/false);   // an accuracy job on worker 1's cpu
  EXPECT_FALSE(occ.can_start(w2_cpu, true)) << "worker 2's cpu is the same cores";
  EXPECT_FALSE(occ.can_start(w1_pocl, true)) << "PoCL computes on the same cores";
  EXPECT_TRUE(occ.can_start(w1_gpu, true)) << "a GPU has cores of its own";
  EXPECT_TRUE(occ.can_start(other_host, true));
  EXPECT_TRUE(occ.can_start(w2_cpu, false)) << "accuracy jobs share";

  Occupancy perf;
  perf.hold(w1_pocl, /*exclusive=*/true);
  EXPECT_FALSE(perf.can_start(w2_cpu, false));
  EXPECT_FALSE(perf.can_start(w1_cpu, true));
  EXPECT_TRUE(perf.can_start(w1_gpu, false));
  EXPECT_TRUE(perf.can_start(other_host, false));

  // A GPU perf job excludes its own device only.
  Occupancy gpu_perf;
  gpu_perf.hold(w1_gpu, true);
  EXPECT_FALSE(gpu_perf.can_start(w1_gpu, false));
  EXPECT_TRUE(gpu_perf.can_start(w1_cpu, true));
}

TEST(Occupancy, AWaitingExclusiveJobReservesItsHardwareAgainstSharedJobs) {
  const DeviceInfo cpu = device("cpu:0", "cpu", "c", true);
  const HardwareSlot w1 = slot_of(host_key_of("m1", "w1"), "w1", cpu);
  const HardwareSlot w2 = slot_of(host_key_of("m1", "w2"), "w2", cpu);
  Occupancy occ;
  occ.hold(w1, false);
  EXPECT_FALSE(occ.can_start(w2, true));
  occ.reserve(w2);
  EXPECT_TRUE(occ.reserved(w1)) << "the reservation is of the host's cores";
  EXPECT_FALSE(occ.can_start(w1, false)) << "no shared job starts while a perf job waits";
  EXPECT_FALSE(occ.can_start(w2, false));
  Occupancy empty;
  empty.reserve(w2);
  EXPECT_TRUE(empty.can_start(w2, true)) << "the waiting perf job itself starts once the cores are free";
  // Without a host id each worker is its own host: nothing is known to be shared.
  const HardwareSlot lone1 = slot_of(host_key_of("", "w1"), "w1", cpu);
  const HardwareSlot lone2 = slot_of(host_key_of("", "w2"), "w2", cpu);
  Occupancy lone;
  lone.hold(lone1, true);
  EXPECT_TRUE(lone.can_start(lone2, true));
}

TEST(MeasuresSpeed, PerfAndBothAreExclusiveAccuracyIsNot) {
  jobs::JobSpec s;
  for (const char* mode : {"perf", "both"}) {
    s.mode = mode;
    EXPECT_TRUE(measures_speed(s)) << mode;
  }
  s.mode = "accuracy";
  EXPECT_FALSE(measures_speed(s));
}

}  // namespace
}  // namespace am::coord
