// The project's words each exist once: the precision/format table (jobs/precision.h), the result
// statuses (common/result_status.h). These tests hold the table to the published block geometry,
// check that every conversion round-trips, and pin the ids of shipped plans' jobs as they were
// before precisions became an enum, so the typed identity hashes exactly what the string did.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "common/result_status.h"
#include "jobs/plan.h"
#include "jobs/precision.h"

namespace am::jobs {
namespace {

const std::filesystem::path kSourceDir(ACCELMATRIX_SOURCE_DIR);

TEST(PrecisionTable, EveryPrecisionRoundTripsThroughItsName) {
  std::set<std::string_view> names;
  for (const PrecisionInfo& p : all_precisions()) {
    EXPECT_EQ(parse_precision(p.name), p.precision) << p.name;
    EXPECT_EQ(to_string(p.precision), p.name);
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate name " << p.name;
    EXPECT_EQ(p.format.has_value(), p.kind != FormatKind::kPolicy) << p.name;
    if (p.format) EXPECT_EQ(precision_of(*p.format), p.precision);
  }
  EXPECT_EQ(precision_names(), "f32, f16, bf16, q8_0, q4_0, q4_1, q3_k, q2_k, mixed");
}

TEST(PrecisionTable, BlockGeometryAndBitsPerWeightAreGgufs) {
  const std::map<std::string_view, std::tuple<int64_t, std::size_t, double>> want = {
      {"f32", {1, 4, 32.0}},        {"f16", {1, 2, 16.0}},       {"bf16", {1, 2, 16.0}},
      {"q8_0", {32, 34, 8.5}},      {"q4_0", {32, 18, 4.5}},     {"q4_1", {32, 20, 5.0}},
      {"q2_k", {256, 84, 2.625}},   {"q3_k", {256, 110, 3.4375}}};
  ASSERT_EQ(all_weight_formats().size(), want.size());
  for (const WeightFormatInfo& f : all_weight_formats()) {
    const auto& [block, bytes, bits] = want.at(f.name);
    EXPECT_EQ(f.block_size, block) << f.name;
    EXPECT_EQ(f.block_bytes, bytes) << f.name;
    EXPECT_DOUBLE_EQ(bits_per_weight(f.format), bits) << f.name;
    EXPECT_EQ(f.kind == FormatKind::kBlockQuantized, block > 1) << f.name;
    EXPECT_EQ(parse_weight_format(f.name), f.format);
  }
  EXPECT_EQ(row_bytes(WeightFormat::kQ4_0, 33), 36u);   // the last block zero-padded
  EXPECT_EQ(row_bytes(WeightFormat::kQ3_K, 257), 220u);
}

TEST(ResultStatuses, EveryStatusRoundTripsAndIsClassifiedOnce) {
  std::set<std::string_view> names;
  for (ResultStatus s : all_result_statuses()) {
    EXPECT_EQ(parse_result_status(to_string(s)), s);
    EXPECT_TRUE(names.insert(to_string(s)).second);
    // A status is at most one of: usable output, a test failure, an infrastructure fault.
    EXPECT_LE(int(is_working(s)) + int(is_test_failure(s)) + int(is_infrastructure(s)), 1) << s;
  }
  EXPECT_EQ(names.size(), 12u);
  EXPECT_TRUE(is_working(ResultStatus::kDegraded));
  EXPECT_TRUE(is_test_failure(ResultStatus::kOom));
  EXPECT_FALSE(is_test_failure(ResultStatus::kUnsupported));
  EXPECT_TRUE(is_infrastructure(ResultStatus::kLost));
}

// Ids recorded from the build before this change (`accelmatrix plan FILE`): a job's identity
// must not move when its precision's representation does, or resumed runs would redo every job.
TEST(JobIdentity, ShippedPlansKeepTheirJobIds) {
  struct Pin {
    const char* plan;
    const char* model;
    const char* backend;
    Precision precision;
    int batch, seq_len;
    const char* id;
  };
  const Pin pins[] = {
      {"smoke", "bert-tiny", "cpu", Precision::kF32, 1, 32, "89b48e347887e6e5"},
      {"smoke", "bert-tiny", "cpu", Precision::kF32, 1, 128, "e12a81cdbc892845"},
      {"smoke", "bert-tiny", "cpu", Precision::kQ8_0, 1, 32, "c0d791b961e96bfa"},
      {"smoke", "bert-tiny", "cpu", Precision::kQ8_0, 1, 128, "6b1e75a56260ed80"},
      {"default", "bert-tiny", "opencl", Precision::kF32, 8, 32, "c82145455ac59f44"},
      {"key-models", "bert-tiny", "cpu", Precision::kMixed, 1, 16, "8d798f1710d00c4a"},
      {"key-models", "t5-efficient-tiny", "cpu", Precision::kQ2_K, 1, 16, "d12118372a2892dd"},
  };
  std::map<std::string, Plan> plans;
  for (const Pin& pin : pins) {
    if (!plans.count(pin.plan)) {
      Result<Plan> plan = load_plan(kSourceDir / "jobs" / "plans" / (std::string(pin.plan) + ".toml"));
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      plans.emplace(pin.plan, std::move(*plan));
    }
    int found = 0;
    for (const PlannedJob& j : plans.at(pin.plan).jobs) {
      const JobSpec& s = j.spec;
      if (s.model != pin.model || s.backend != pin.backend || s.precision != pin.precision ||
          s.batch != pin.batch || s.seq_len != pin.seq_len) {
        continue;
      }
      ++found;
      // The shipped plans name no placement: each-class, whose plan jobs name it in their spec.
      // Under placement "any" a job's id is exactly the one recorded (DECISIONS.md).
      EXPECT_EQ(s.placement, Placement::kEachClass);
      EXPECT_EQ(j.job_id, compute_job_id(plans.at(pin.plan).name, s));
      JobSpec any = s;
      any.placement = Placement::kAny;
      EXPECT_EQ(compute_job_id(plans.at(pin.plan).name, any), pin.id) << pin.plan << " " << pin.model << " " << pin.precision;
    }
    EXPECT_EQ(found, 1) << pin.plan << " " << pin.model << " " << pin.precision;
  }
}

// Ids of the jobs made per class and per device (recorded when placements were introduced): the
// target is part of the identity, and the same target always gives the same id.
TEST(JobIdentity, PlacementTargetsArePinnedAndDistinct) {
  Result<Plan> plan = load_plan(kSourceDir / "jobs" / "plans" / "smoke.toml");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const PlannedJob& first = plan->jobs.front();   // bert-tiny cpu f32 b1 s32
  ASSERT_EQ(first.spec.seq_len, 32);
  ASSERT_EQ(first.spec.precision, Precision::kF32);
  const std::string cls = compute_job_id("smoke", first.spec, class_target("cpu-17c5240c3fea2575"));
  const std::string dev = compute_job_id("smoke", first.spec, device_target("local-1-1", "cpu:0"));
  EXPECT_EQ(first.job_id, "7166596605dcc390");
  EXPECT_EQ(cls, "30bd2d928e10d49b");
  EXPECT_EQ(dev, "3532549601ab63bd");
  EXPECT_NE(cls, compute_job_id("smoke", first.spec, class_target("cpu-0000000000000000")));
  JobSpec each_device = first.spec;
  each_device.placement = Placement::kEachDevice;
  EXPECT_NE(compute_job_id("smoke", each_device), first.job_id);
}

}  // namespace
}  // namespace am::jobs
