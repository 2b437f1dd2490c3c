// DeviceHealth: when a device may run jobs, when its health job is due, and what quarantines
// and lifts it (docs/PROTOCOL.md §5.11).
#include "coordinator/device_health.h"

#include <gtest/gtest.h>

#include "common/reliability.h"
#include "coordinator/health_job.h"
#include "coordinator/matching.h"
#include "jobs/job_spec.h"

namespace am::coord {
namespace {

HealthPolicy policy(int64_t interval_ms = 10'000, int quarantine_after = 3) {
  return HealthPolicy{interval_ms, quarantine_after, 1'000, 8'000};
}

std::vector<std::string> names(const std::vector<HealthEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.event);
  return out;
}

TEST(DeviceHealth, ARegisteredDeviceRunsNothingUntilItsFirstHealthJobPasses) {
  DeviceHealth h(policy());
  h.on_register("w", "cpu:0", 0);
  EXPECT_FALSE(h.may_run_jobs("w", "cpu:0"));
  ASSERT_TRUE(h.health_due("w", "cpu:0", 0));
  h.on_health_issued("w", "cpu:0");
  EXPECT_FALSE(h.health_due("w", "cpu:0", 0)) << "one health job at a time";
  EXPECT_EQ(names(h.on_health_result("w", "cpu:0", true, "pass", 50)), std::vector<std::string>{"health_pass"});
  EXPECT_TRUE(h.may_run_jobs("w", "cpu:0"));
  EXPECT_FALSE(h.health_due("w", "cpu:0", 9'000));
  EXPECT_TRUE(h.health_due("w", "cpu:0", 10'050)) << "due again after the interval";
}

TEST(DeviceHealth, WithHealthJobsOffADeviceRunsAtOnceAndNothingIsEverDue) {
  DeviceHealth h(policy(0));
  h.on_register("w", "cpu:0", 0);
  EXPECT_TRUE(h.may_run_jobs("w", "cpu:0"));
  EXPECT_FALSE(h.health_due("w", "cpu:0", 1'000'000));
}

TEST(DeviceHealth, ADeviceThatCannotRunTheHealthJobIsJudgedByItsJobsAlone) {
  DeviceHealth h(policy());
  h.on_register("w", "qnn:0", 0, /*checkable=*/false);
  EXPECT_TRUE(h.may_run_jobs("w", "qnn:0"));
  EXPECT_FALSE(h.health_due("w", "qnn:0", 0));
}

TEST(DeviceHealth, AFailedHealthJobQuarantinesAndTheBackoffDoublesUntilACheckPasses) {
  DeviceHealth h(policy());
  h.on_register("w", "opencl:0", 0);
  h.on_health_issued("w", "opencl:0");
  auto events = h.on_health_result("w", "opencl:0", false, "fail: nmse 3.1e-01", 100);
  EXPECT_EQ(names(events), (std::vector<std::string>{"health_fail", "quarantined"}));
  EXPECT_NE(events[1].reason.find("nmse 3.1e-01"), std::string::npos) << events[1].reason;
  EXPECT_FALSE(h.may_run_jobs("w", "opencl:0"));
  EXPECT_FALSE(h.health_due("w", "opencl:0", 1'000)) << "backoff 1 s from t=100";
  ASSERT_TRUE(h.health_due("w", "opencl:0", 1'100));
  h.on_health_issued("w", "opencl:0");
  EXPECT_EQ(names(h.on_health_result("w", "opencl:0", false, "crash", 1'200)), std::vector<std::string>{"health_fail"});
  EXPECT_EQ(h.find("w", "opencl:0")->backoff_ms, 2'000) << "a failed re-check doubles the backoff";
  EXPECT_FALSE(h.health_due("w", "opencl:0", 3'100));
  ASSERT_TRUE(h.health_due("w", "opencl:0", 3'200));
  h.on_health_issued("w", "opencl:0");
  EXPECT_EQ(names(h.on_health_result("w", "opencl:0", true, "pass", 3'300)),
            (std::vector<std::string>{"health_pass", "lifted"}));
  EXPECT_TRUE(h.may_run_jobs("w", "opencl:0"));
}

TEST(DeviceHealth, BackoffIsCapped) {
  DeviceHealth h(policy());
  h.on_register("w", "cpu:0", 0);
  int64_t t = 0;
  for (int i = 0; i < 8; ++i) {
    h.on_health_issued("w", "cpu:0");
    h.on_health_result("w", "cpu:0", false, "crash", t);
    t += h.find("w", "cpu:0")->backoff_ms;
  }
  EXPECT_EQ(h.find("w", "cpu:0")->backoff_ms, 8'000);
}

TEST(DeviceHealth, CrashesOnDifferentModelsQuarantineButOneModelCrashingDoesNot) {
  DeviceHealth h(policy(0, 3));
  h.on_register("w", "cpu:0", 0);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(h.on_job_outcome("w", "cpu:0", "big-model", ResultStatus::kCrash, i).empty());
  EXPECT_TRUE(h.may_run_jobs("w", "cpu:0")) << "one model crashing is a finding about the model";
  EXPECT_TRUE(h.on_job_outcome("w", "cpu:0", "m2", ResultStatus::kTimeout, 10).empty());
  auto events = h.on_job_outcome("w", "cpu:0", "m3", ResultStatus::kCrash, 11);
  ASSERT_EQ(names(events), std::vector<std::string>{"quarantined"});
  EXPECT_NE(events[0].reason.find("big-model"), std::string::npos);
  EXPECT_NE(events[0].reason.find("m3 (crash)"), std::string::npos) << events[0].reason;
  EXPECT_FALSE(h.may_run_jobs("w", "cpu:0"));
}

TEST(DeviceHealth, OomNeitherCountsNorBreaksTheStreakAndAPassBreaksIt) {
  DeviceHealth h(policy(0, 3));
  h.on_register("w", "cpu:0", 0);
  h.on_job_outcome("w", "cpu:0", "a", ResultStatus::kCrash, 1);
  h.on_job_outcome("w", "cpu:0", "b", ResultStatus::kCrash, 2);
  EXPECT_TRUE(h.on_job_outcome("w", "cpu:0", "huge", ResultStatus::kOom, 3).empty());
  h.on_job_outcome("w", "cpu:0", "ok", ResultStatus::kPass, 4);
  EXPECT_TRUE(h.on_job_outcome("w", "cpu:0", "c", ResultStatus::kCrash, 5).empty()) << "the pass ended the streak";
  EXPECT_TRUE(h.may_run_jobs("w", "cpu:0"));
  h.on_job_outcome("w", "cpu:0", "d", ResultStatus::kOom, 6);
  EXPECT_TRUE(h.on_job_outcome("w", "cpu:0", "e", ResultStatus::kTimeout, 7).empty());
  EXPECT_EQ(names(h.on_job_outcome("w", "cpu:0", "f", ResultStatus::kCrash, 8)), std::vector<std::string>{"quarantined"})
      << "c, e, f: the OOM between them did not break the streak";
}

TEST(DeviceHealth, QuarantineAfterZeroNeverQuarantinesForCrashes) {
  DeviceHealth h(policy(0, 0));
  h.on_register("w", "cpu:0", 0);
  for (int i = 0; i < 10; ++i) h.on_job_outcome("w", "cpu:0", "m" + std::to_string(i), ResultStatus::kCrash, i);
  EXPECT_TRUE(h.may_run_jobs("w", "cpu:0"));
}

TEST(DeviceHealth, ReleaseLiftsAtOnceAndForgetsTheDoubling) {
  DeviceHealth h(policy(0, 1));
  h.on_register("w", "cpu:0", 0);
  h.on_register("w", "opencl:0", 0);
  h.on_job_outcome("w", "cpu:0", "a", ResultStatus::kCrash, 1);
  h.on_job_outcome("w", "opencl:0", "a", ResultStatus::kCrash, 1);
  ASSERT_FALSE(h.may_run_jobs("w", "cpu:0"));
  auto one = h.release("w", "cpu:0", 2);
  ASSERT_EQ(names(one), std::vector<std::string>{"released"});
  EXPECT_TRUE(h.may_run_jobs("w", "cpu:0"));
  EXPECT_FALSE(h.may_run_jobs("w", "opencl:0")) << "only the named device";
  EXPECT_EQ(h.find("w", "cpu:0")->quarantines, 0);
  EXPECT_TRUE(h.release("w", "cpu:0", 3).empty()) << "cpu:0 is not quarantined any more";
  EXPECT_EQ(h.release("w", "", 3).size(), 1u) << "every quarantined device of the worker";
  EXPECT_TRUE(h.may_run_jobs("w", "opencl:0"));
  EXPECT_TRUE(h.release("other", "", 3).empty());
  EXPECT_FALSE(h.known("other"));
  EXPECT_TRUE(h.known("w"));
}

TEST(DeviceHealth, ReleaseDoesNotExcuseAnUncheckedDeviceFromItsHealthJob) {
  DeviceHealth h(policy());
  h.on_register("w", "opencl:0", 0);
  EXPECT_TRUE(h.release("w", "", 1).empty());
  EXPECT_FALSE(h.may_run_jobs("w", "opencl:0"));
  EXPECT_TRUE(h.health_due("w", "opencl:0", 1));
}

TEST(DeviceHealth, AReconnectDoesNotLiftAQuarantine) {
  DeviceHealth h(policy(10'000, 1));
  h.on_register("w", "cpu:0", 0);
  h.on_job_outcome("w", "cpu:0", "a", ResultStatus::kCrash, 1);
  h.on_register("w", "cpu:0", 2);
  EXPECT_FALSE(h.may_run_jobs("w", "cpu:0"));
  EXPECT_EQ(h.find("w", "cpu:0")->condition, DeviceCondition::kQuarantined);
}

TEST(HealthJob, TheSpecIsAValidAccuracyJobOnTheDevicesBackendThatTheDeviceCanRun) {
  DeviceInfo d;
  d.key = "opencl:0";
  d.backend = "opencl";
  d.precisions = {jobs::Precision::kF16, jobs::Precision::kF32};
  const jobs::JobSpec spec = health_job_spec(d);
  EXPECT_EQ(spec.backend, "opencl");
  EXPECT_EQ(spec.precision, jobs::Precision::kF32);
  EXPECT_EQ(spec.mode, jobs::kModeAccuracy);
  auto round = jobs::job_spec_from_json(jobs::to_json(spec));
  ASSERT_TRUE(round.ok()) << round.status().to_string();
  EXPECT_EQ(ineligibility(d, spec), std::nullopt);
  d.precisions = {jobs::Precision::kQ8_0};
  EXPECT_EQ(health_job_spec(d).precision, jobs::Precision::kQ8_0) << "a device without f32 gets its own precision";
}

TEST(HealthJob, IdsNeverLookLikePlanJobIds) {
  EXPECT_TRUE(is_health_job_id(health_job_id(7)));
  EXPECT_EQ(health_job_id(255), "health-00000000000000ff");
  EXPECT_FALSE(is_health_job_id("0123456789abcdef"));
}

}  // namespace
}  // namespace am::coord
