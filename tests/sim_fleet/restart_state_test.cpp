// What a restarted coordinator keeps of what was decided while it ran (schema 8): a plan job
// cancelled after jobs were made of it makes none for a class that registers after the restart.
// Raw DEALER peers against the real coordinator (coord::Server on a thread, its store on disk),
// two servers one after the other on one database.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "coordinator/control_client.h"
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

int64_t jobs_made_for(const std::filesystem::path& db, const std::string& plan_job, const std::string& hardware_class) {
  return am::testing::sql_int(db, "SELECT COUNT(*) FROM jobs WHERE plan_job_id = '" + plan_job +
                                      "' AND hardware_class = '" + hardware_class + "'");
}

TEST(RestartKeeps, APlanJobCancelledAfterJobsWereMadeOfItMakesNoneForAClassRegisteringAfterARestart) {
  TempDir dir;
  const auto db = dir.path() / "c.db";
  const jobs::Plan plan = bert_plan("keep", "[16, 24]");   // two plan jobs placed each-class
  ASSERT_EQ(plan.jobs.size(), 2u);
  const std::string cancelled = plan.jobs[0].job_id;
  const std::string kept = plan.jobs[1].job_id;
  {
    ServingCoordinator c(options_in(dir));
    ASSERT_TRUE(c.server().submit(plan, "keep").ok());
    c.start();
    HandWorker a(c.server().endpoint(), "a", "host-a", sim_capabilities("a", "host-a", "class-a"));
    ASSERT_TRUE(am::testing::wait_until([&] { return jobs_made_for(db, cancelled, "class-a") == 1; },
                                        std::chrono::seconds(5)));
    coord::ControlTarget target;
    target.coordinator = c.server().endpoint();
    auto reply = coord::control_request(target, "cancel", nlohmann::json{{"id", cancelled}});
    ASSERT_TRUE(reply.ok()) << reply.status().to_string();
    EXPECT_EQ((*reply)["cancelled"], 1) << reply->dump();
    EXPECT_EQ((*reply)["durable"], true) << reply->dump();
  }
  // The run is not finished (the kept plan job's job for class-a is queued): the restart serves
  // it, and a new class gets a job of the kept plan job only.
  ServingCoordinator c(options_in(dir));
  ASSERT_TRUE(c.server().submit(plan, "keep").ok());
  c.start();
  HandWorker b(c.server().endpoint(), "b", "host-b", sim_capabilities("b", "host-b", "class-b"));
  b.grant(2);
  const auto first = b.next_assign(milliseconds(3000));
  ASSERT_TRUE(first.has_value()) << "the kept plan job's job for class-b";
  EXPECT_FALSE(b.next_assign(milliseconds(500)).has_value()) << "a job of the cancelled plan job";
  EXPECT_EQ(jobs_made_for(db, kept, "class-b"), 1);
  EXPECT_EQ(jobs_made_for(db, cancelled, "class-b"), 0);
}

}  // namespace
}  // namespace am::sim
