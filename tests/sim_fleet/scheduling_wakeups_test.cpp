// Between its full passes the coordinator's scheduler walks only the workers whose own credit or
// result changed (coordinator/server.cpp, assign_jobs). These tests push the full passes past the
// run (ServerOptions::full_pass_interval_ms), so a worker that could take work and is not walked
// waits, and the test sees it: every event that lets another worker take work must wake it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "coordinator/server.h"
#include "jobs/plan.h"
#include "tests/jobs/temp_dir.h"
#include "tests/sim_fleet/sim_fleet.h"
#include "tests/sim_fleet/sim_plan.h"
#include "tests/sim_fleet/sim_records.h"
#include "tests/sim_fleet/hand_worker.h"

namespace am::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr int64_t kNoFullPassesMs = 3'600'000;

using jobs::testing::TempDir;

jobs::Plan plan_of(const std::string& toml, const std::string& name) {
  auto plan = jobs::load_plan_text(toml, name + ".toml",
                                   std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models");
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? *plan : jobs::Plan{};
}

// bert-tiny on the cpu in f32, one job per seq_len; `mode` perf makes speed jobs (exclusive).
std::string bert_plan(const std::string& name, const std::string& mode, const std::string& seq_lens,
                      const std::string& more_defaults = "") {
  return "[plan]\nname = \"" + name + "\"\nmode = \"" + mode +
         "\"\n\n[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\nbatch = [1]\nseq_len = " + seq_lens +
         "\n" + more_defaults + "\n[[models]]\nname = \"bert-tiny\"\n";
}

// A and B share a host; A's perf job holds it alone, so B's accuracy job waits. A's RESULT is
// stored in the same tick as an older result of C's (a batch flushed at once): the perf job is
// done before the scheduling pass, no perf job is left queued or out, and B must be walked all
// the same. `c_result_first` false is the same without C's result (a pass with the lease out).
void expect_cohosted_worker_served_when_perf_lease_ends(bool c_result_first) {
  TempDir dir;
  coord::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.db_path = dir.path() / "c.db";
  o.health_interval_ms = 0;
  o.full_pass_interval_ms = kNoFullPassesMs;
  ServingCoordinator c(o);
  ASSERT_TRUE(c.server().submit(plan_of(bert_plan("hold", "perf", "[16]"), "hold"), "hold").ok());
  ASSERT_TRUE(c.server().submit(plan_of(bert_plan("wait", "accuracy", "[16, 24, 32]"), "wait"), "wait").ok());
  c.start();
  const std::string endpoint = c.server().endpoint();
  HandWorker a(endpoint, "wa", "host-shared");
  a.grant(1);
  const auto perf = a.next_assign(milliseconds(3000));
  ASSERT_TRUE(perf.has_value());
  ASSERT_NE(perf->spec.dump().find("\"perf\""), std::string::npos) << perf->spec.dump();
  HandWorker b(endpoint, "wb", "host-shared");
  b.grant(1);
  EXPECT_FALSE(b.next_assign(milliseconds(300)).has_value()) << "B shares A's host, which A's perf job holds";
  HandWorker other(endpoint, "wc", "host-other");
  other.grant(1);
  const auto accuracy = other.next_assign(milliseconds(3000));
  ASSERT_TRUE(accuracy.has_value());
  if (c_result_first) {
    other.pass(*accuracy);
    // Older than the batch delay: the next tick flushes it with A's result.
    std::this_thread::sleep_for(milliseconds(3 * reliability::kStoreBatchMaxDelayMs / 2));
  }
  a.pass(*perf);
  EXPECT_TRUE(b.next_assign(milliseconds(3000)).has_value())
      << "B (free credit, its host free again, accuracy jobs queued) was not offered a job";
}

TEST(SchedulingWakeups, ACoHostedWorkerIsServedWhenThePerfLeaseHoldingItsHostEnds) {
  expect_cohosted_worker_served_when_perf_lease_ends(/*c_result_first=*/false);
}

TEST(SchedulingWakeups, ACoHostedWorkerIsServedWhenThePerfLeaseEndsInTheTickThatStoresABatch) {
  expect_cohosted_worker_served_when_perf_lease_ends(/*c_result_first=*/true);
}

// A job lost on a worker (its lease ran out) goes to another worker when one could run it, and
// back to the worker that lost it otherwise. A worker that takes no work now (draining, here;
// also a quarantined one) is no such other worker: the job must not wait for it.
TEST(SchedulingWakeups, AJobLostOnAWorkerFallsBackToItWhileTheOnlyOtherWorkerIsDraining) {
  TempDir dir;
  coord::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.db_path = dir.path() / "c.db";
  o.health_interval_ms = 0;
  o.lease_grace_ms = 100;   // the lease runs out 1.1 s after the ASSIGN (timeout_s = 1 below)
  ServingCoordinator c(o);
  ASSERT_TRUE(c.server().submit(plan_of(bert_plan("lost", "accuracy", "[16]", "timeout_s = 1\n"), "lost"), "lost").ok());
  c.start();
  const std::string endpoint = c.server().endpoint();
  HandWorker b(endpoint, "wb", "host-b");   // no credit yet: the job goes to A
  HandWorker a(endpoint, "wa", "host-a");
  a.grant(1);
  const auto first = a.next_assign(milliseconds(3000));
  ASSERT_TRUE(first.has_value());

  auto admin = DealerEndpoint::connect(endpoint);
  ASSERT_TRUE(admin.ok()) << admin.status().to_string();
  ASSERT_TRUE(admin->send(proto::Message{proto::Control{"drain-1", "drain", {{"worker", "wb"}}}}).ok());
  std::optional<proto::Reply> reply;
  for (const auto until = steady_clock::now() + milliseconds(3000); !reply && steady_clock::now() < until;) {
    auto m = admin->recv(10);
    if (m.ok() && m->has_value()) {
      if (const auto* r = std::get_if<proto::Reply>(&(**m).body)) reply = *r;
    }
  }
  ASSERT_TRUE(reply.has_value() && reply->ok) << (reply ? reply->error : std::string("no REPLY"));
  b.grant(1);   // credits, but draining: it takes nothing

  ASSERT_TRUE(a.cancelled_within(milliseconds(5000))) << "A's lease did not run out";
  a.grant(1);
  const auto again = a.next_assign(milliseconds(3000));
  ASSERT_TRUE(again.has_value()) << "the lost job waits for a draining worker";
  EXPECT_EQ(again->job_id, first->job_id);
  EXPECT_EQ(again->attempt, first->attempt + 1);
}

// A progress display prints a line per distinct event (coordinator/progress_display.h): every
// finished job must reach the callback, also when results are stored many to a batch.
TEST(SchedulingWakeups, EveryFinishedJobReachesTheProgressCallback) {
  TempDir dir;
  const SimPlan p = many_jobs_plan("shown", 60);
  coord::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.db_path = dir.path() / "c.db";
  o.exit_when_done = true;
  ServingCoordinator c(o);
  ASSERT_TRUE(c.server().submit(plan_of(p.toml, "shown"), "shown").ok());
  std::set<std::string> finished;   // written by the serve thread only, read after it joined
  c.server().on_progress([&finished](const coord::Progress& progress) {
    if (progress.last_event.rfind("pass", 0) == 0) finished.insert(progress.last_event);
  });
  c.start();
  FleetOptions fo;
  fo.endpoint = c.server().endpoint();
  fo.workers = 4;
  fo.slots = 4;
  auto fleet = SimFleet::start(fo);
  ASSERT_TRUE(fleet.ok()) << fleet.status().to_string();
  c.join();
  (*fleet)->stop();
  EXPECT_EQ(static_cast<int64_t>(finished.size()), p.jobs) << "finished jobs never shown";
}

}  // namespace
}  // namespace am::sim
