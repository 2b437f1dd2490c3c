// What a peer or a submit may decide for a run (PROTOCOL §5.6, §5.8): a peer with no usable
// device is no hardware and completes no fleet; a RESULT may carry only a status a worker
// reports; a connection is one worker at a time; a plan cannot take another run's job ids. Raw
// DEALER peers against the real coordinator (coord::Server on a thread, its store on disk).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "coordinator/server.h"
#include "jobs/plan.h"
#include "tests/integration/harness.h"
#include "tests/jobs/temp_dir.h"
#include "tests/sim_fleet/hand_worker.h"

namespace am::sim {
namespace {

using std::chrono::milliseconds;
using jobs::testing::TempDir;

coord::ServerOptions options_in(const TempDir& dir) { return serving_options(dir.path()); }

TEST(PeerVerdicts, APeerWithoutAUsableDeviceCompletesNoFleetAndSettlesNothing) {
  TempDir dir;
  const auto db = dir.path() / "c.db";
  ServingCoordinator c(options_in(dir));
  ASSERT_TRUE(c.server().submit(bert_plan("fleet", "[16, 24]"), "fleet").ok());
  c.start();
  // Before: this HELLO alone settled both jobs `skipped` ("no registered device has backend
  // 'cpu'") and a later worker with a cpu got nothing.
  HandWorker nothing(c.server().endpoint(), "nothing", "host-n", nlohmann::json{{"devices", nlohmann::json::array()}});
  HandWorker junk(c.server().endpoint(), "junk", "host-j", nlohmann::json{{"devices", "not a list"}});
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(am::testing::sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 0);
  HandWorker cpu(c.server().endpoint(), "cpu", "host-c");
  cpu.grant(1);
  const auto first = cpu.next_assign(milliseconds(3000));
  ASSERT_TRUE(first.has_value());
  cpu.pass(*first);
  cpu.grant(1);
  EXPECT_TRUE(cpu.next_assign(milliseconds(3000)).has_value()) << "the run's second job";
}

// A peer whose device of a real class can run nothing (not schedulable; no precision this build
// knows) made the class's each-class jobs and settled them skipped or unsupported, and the
// class's real worker got nothing.
TEST(PeerVerdicts, ADeviceThatCanRunNothingMakesNoJobsForItsClass) {
  for (const char* poison : {"unschedulable", "no precision", "unknown precision"}) {
    TempDir dir;
    const auto db = dir.path() / "c.db";
    ServingCoordinator c(options_in(dir));
    ASSERT_TRUE(c.server().submit(bert_plan("poison", "[16, 24]"), "poison").ok());
    c.start();
    nlohmann::json record = sim_capabilities("fake", "host-f");   // the shared simulated class
    nlohmann::json& device = record["devices"][0];
    if (std::string(poison) == "unschedulable") device["schedulable"] = false;
    if (std::string(poison) == "no precision") device["precisions"] = nlohmann::json::array();
    if (std::string(poison) == "unknown precision") device["precisions"] = {"zz9"};
    HandWorker fake(c.server().endpoint(), "fake", "host-f", record);
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(am::testing::sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 0) << poison;
    HandWorker real(c.server().endpoint(), "real", "host-r");
    real.grant(1);
    EXPECT_TRUE(real.next_assign(milliseconds(3000)).has_value()) << poison << ": the class's real worker got no job";
  }
}

TEST(PeerVerdicts, ACoordinatorsStatusInALeaseholdersResultIsDroppedAndTheJobStaysOpen) {
  TempDir dir;
  const auto db = dir.path() / "c.db";
  {
    ServingCoordinator c(options_in(dir));
    ASSERT_TRUE(c.server().submit(bert_plan("verdicts", "[16]"), "verdicts").ok());
    c.start();
    HandWorker w(c.server().endpoint(), "w", "host-w");
    w.grant(1);
    const auto a = w.next_assign(milliseconds(3000));
    ASSERT_TRUE(a.has_value());
    // lost would have settled the job lost (exit 4), interrupted ended it with a status that is
    // never final, skipped settled it as if no hardware could run it.
    for (ResultStatus s : {ResultStatus::kLost, ResultStatus::kInterrupted, ResultStatus::kSkipped}) w.report(*a, s);
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(am::testing::sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 0);
    EXPECT_EQ(am::testing::sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'leased'"), 1);
    w.pass(*a);
    ASSERT_TRUE(am::testing::wait_until(
        [&] { return am::testing::sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'pass'") == 1; },
        std::chrono::seconds(5)));
  }
  EXPECT_EQ(am::testing::sql_int(db, "SELECT value FROM counters WHERE name = 'messages_unexpected'"), 3);
}

// One connection that registers as another worker: the first worker is gone, and its lease is
// lost at once (before: orphaned until it ran out, while `drain` of the old id reached the new).
TEST(PeerVerdicts, AConnectionRegisteringAsAnotherWorkerEndsTheFirstAndItsLease) {
  TempDir dir;
  const auto db = dir.path() / "c.db";
  ServingCoordinator c(options_in(dir));
  ASSERT_TRUE(c.server().submit(bert_plan("hop", "[16]"), "hop").ok());
  c.start();
  HandWorker w(c.server().endpoint(), "first", "host-h");
  w.grant(1);
  const auto a = w.next_assign(milliseconds(3000));
  ASSERT_TRUE(a.has_value());
  w.register_as("second", "host-h");
  w.grant(1);
  const auto again = w.next_assign(milliseconds(3000));
  ASSERT_TRUE(again.has_value()) << "the job of the first worker's lease, leased again";
  EXPECT_EQ(again->job_id, a->job_id);
  EXPECT_EQ(again->attempt, a->attempt + 1);
  EXPECT_EQ(am::testing::sql_int(db, "SELECT COUNT(*) FROM attempts WHERE worker_id = 'first' AND state = 'expired'"), 1);
}

// Job ids are unique on a coordinator. A run an older build made under --run has the ids of the
// run named after its plan: served beside that run it is refused, not merged into it.
TEST(PeerVerdicts, APlanWhoseJobIdsAreAnotherRunsOnThisCoordinatorIsRefused) {
  TempDir dir;
  ServingCoordinator c(options_in(dir));
  const jobs::Plan own = bert_plan("shared", "[16, 24]");
  ASSERT_TRUE(c.server().submit(own, "shared").ok());
  jobs::Plan older = own;   // as an older build expanded it for run 'legacy-7'
  older.run_id = "legacy-7";
  const Status st = c.server().submit(older, "legacy-7");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is a job of run 'shared'"), std::string::npos) << st.message();
  EXPECT_TRUE(c.server().submit(bert_plan("shared", "[16, 24]"), "shared").ok()) << "its own run takes it again";
}

}  // namespace
}  // namespace am::sim
