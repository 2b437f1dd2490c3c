// The job lifecycle in the store: jobs, leases, results, terminal statuses, and report rows.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "coordinator/store.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::precision_named;
using testing::status_named;
using testing::perf_metrics;
using testing::raw_query;

class StoreJobs : public testing::StoreFixture {
 protected:
  JobRow job(const std::string& job_id) {
    auto jobs = store_->load_jobs(kRun);
    EXPECT_TRUE(jobs.ok()) << jobs.status().to_string();
    if (jobs.ok()) {
      for (const JobRow& j : *jobs) {
        if (j.job_id == job_id) return j;
      }
    }
    ADD_FAILURE() << "job " << job_id << " not loaded";
    return {};
  }

  std::string attempt_column(const std::string& job_id, int attempt, const std::string& column) {
    return raw_query(db_path_, "SELECT " + column + " FROM attempts WHERE run_id='" + kRun +
                                   "' AND job_id='" + job_id + "' AND attempt=" + std::to_string(attempt));
  }
};

TEST_F(StoreJobs, AddingTheSameJobsTwiceInsertsNothingTheSecondTime) {
  std::vector<jobs::PlannedJob> planned;
  for (const char* precision : {"f32", "f16", "q8_0"}) {
    auto spec = make_spec("bert-tiny", "encoder-only", "cpu", precision);
    planned.push_back({jobs::compute_job_id(kRun, spec), spec, std::string()});
  }
  auto first = store_->add_jobs(kRun, planned);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(*first, 3);
  auto second = store_->add_jobs(kRun, planned);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, 0);

  auto extra = make_spec("bert-tiny", "encoder-only", "cpu", "q4_0");
  planned.insert(planned.begin(), {jobs::compute_job_id(kRun, extra), extra});
  auto third = store_->add_jobs(kRun, planned);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, 1);

  auto loaded = store_->load_jobs(kRun);
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 4u);
  // Insertion order is kept: the late job comes last although it was first in the list.
  EXPECT_EQ((*loaded)[0].job_id, planned[1].job_id);
  EXPECT_EQ((*loaded)[3].job_id, planned[0].job_id);
  for (const JobRow& j : *loaded) {
    EXPECT_EQ(j.state, am::coord::JobState::kQueued);
    EXPECT_EQ(j.attempts, 0);
    EXPECT_EQ(j.status, std::nullopt);
  }
  // The stored spec is the job spec document and reads back into the same spec.
  auto spec_back = jobs::job_spec_from_json((*loaded)[3].spec);
  ASSERT_TRUE(spec_back.ok()) << spec_back.status().to_string();
  EXPECT_EQ(spec_back->precision, precision_named("q4_0"));
  EXPECT_EQ(spec_back->seed, 1234u);
}

TEST_F(StoreJobs, AddingJobsToAnUnknownRunIsRefused) {
  auto spec = make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  auto added = store_->add_jobs("no-such-run", {{"0123456789abcdef", spec, std::string()}});
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(added.status().message().find("no-such-run"), std::string::npos);
}

// A submit stores its run, jobs and plan text in one Store::atomically: what the store's own
// transactions inside did is kept together or not at all (a coordinator killed in between left
// a run with no jobs and no plan). Inside, a failing store call undoes only its own part.
TEST_F(StoreJobs, AtomicallyKeepsAllOfItsBodyOrNothing) {
  auto spec = make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  RunRecord other;
  other.run_id = "all-or-nothing";
  other.created_at_ms = 7;
  const Status failed = store_->atomically([&]() -> Status {
    AM_RETURN_IF_ERROR(store_->upsert_run(other));
    AM_RETURN_IF_ERROR(store_->add_jobs(other.run_id, {{"0123456789abcdef", spec, std::string()}}).status());
    return internal_error("the process died here");
  });
  EXPECT_FALSE(failed.ok());
  auto gone = store_->get_run(other.run_id);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());

  const Status kept = store_->atomically([&]() -> Status {
    AM_RETURN_IF_ERROR(store_->upsert_run(other));
    // Refused inside (no such run): only that call's part is undone, and the body goes on.
    EXPECT_FALSE(store_->add_jobs("no-such-run", {{"fedcba9876543210", spec, std::string()}}).ok());
    return store_->add_jobs(other.run_id, {{"0123456789abcdef", spec, std::string()}}).status();
  });
  ASSERT_TRUE(kept.ok()) << kept.to_string();
  auto there = store_->get_run(other.run_id);
  ASSERT_TRUE(there.ok() && there->has_value());
  int jobs = 0;
  ASSERT_TRUE(store_->for_each_job(other.run_id, false, [&](JobRow&) { ++jobs; return Status::Ok(); }).ok());
  EXPECT_EQ(jobs, 1);
}

TEST_F(StoreJobs, LeaseThenResultMakesTheJobTerminal) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(id, 1);
  JobRow leased = job(id);
  EXPECT_EQ(leased.state, am::coord::JobState::kLeased);
  EXPECT_EQ(leased.attempts, 1);
  EXPECT_EQ(leased.lease_worker, "worker-a");
  EXPECT_EQ(leased.lease_expires_at_ms, kT0 + 1000 + 60'000);
  EXPECT_EQ(leased.terminal_attempt, 0);
  ASSERT_TRUE(store_->attempt_worker(kRun, id, 1).ok());
  EXPECT_EQ(store_->attempt_worker(kRun, id, 1)->value_or("none"), "worker-a");
  EXPECT_FALSE(store_->attempt_worker(kRun, id, 2)->has_value());

  const StoredOutcome out = store_one(result(id, 1, "pass", "", perf_metrics(3.5, 3.9, 9142.0, 1e-7, 0.99999, 1.0)));
  EXPECT_FALSE(out.duplicate);
  EXPECT_TRUE(out.became_terminal);
  JobRow done = job(id);
  EXPECT_EQ(done.state, am::coord::JobState::kDone);
  EXPECT_EQ(done.status, am::ResultStatus::kPass);
  EXPECT_EQ(done.terminal_attempt, 1);
  EXPECT_EQ(done.lease_worker, "");
  EXPECT_EQ(attempt_column(id, 1, "state"), "done");
  EXPECT_EQ(attempt_column(id, 1, "hardware_class"), "cpu-00112233aabbccdd");   // kept from lease
}

TEST_F(StoreJobs, DuplicateResultIsFlaggedAndChangesNothing) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(id, 1);
  ASSERT_TRUE(store_one(result(id, 1, "pass", "", perf_metrics(2.25, 2.5, 1000.0, 1e-8, 1.0, 1.0))).became_terminal);
  const std::string metrics_before = attempt_column(id, 1, "metrics_json");
  const std::string received_before = attempt_column(id, 1, "received_at");

  ResultRecord again = result(id, 1, "fail", "different payload", perf_metrics(99.0, 99.0, 1.0, 0.5, 0.1, 0.0));
  again.received_at_ms += 10'000;
  const StoredOutcome out = store_one(again);
  EXPECT_TRUE(out.duplicate);
  EXPECT_FALSE(out.became_terminal);
  JobRow j = job(id);
  EXPECT_EQ(j.status, am::ResultStatus::kPass);
  EXPECT_EQ(j.reason, "");
  EXPECT_EQ(attempt_column(id, 1, "metrics_json"), metrics_before);
  EXPECT_EQ(attempt_column(id, 1, "received_at"), received_before);
  EXPECT_EQ(attempt_column(id, 1, "status"), "pass");
}

TEST_F(StoreJobs, DuplicateWithinOneBatchIsFlagged) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(id, 1);
  auto stored = store_->store_results({result(id, 1, "pass"), result(id, 1, "pass")});
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE((*stored)[0].became_terminal);
  EXPECT_FALSE((*stored)[0].duplicate);
  EXPECT_TRUE((*stored)[1].duplicate);
  EXPECT_FALSE((*stored)[1].became_terminal);
}

TEST_F(StoreJobs, LateResultOfAnotherAttemptIsKeptButDoesNotOverrideTerminal) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0"));
  lease(id, 1, "worker-a");
  ASSERT_TRUE(store_->expire_lease(kRun, id, 1, "lease expired", kT0 + 70'000).ok());
  lease(id, 2, "worker-b");
  ASSERT_TRUE(store_one(result(id, 2, "pass", "", perf_metrics(1.0, 1.1, 5.0, 1e-4, 0.999, 1.0), "worker-b"))
                  .became_terminal);

  const StoredOutcome late = store_one(result(id, 1, "fail", "nmse 0.3 above tolerance", {}, "worker-a"));
  EXPECT_FALSE(late.duplicate);
  EXPECT_FALSE(late.became_terminal);
  JobRow j = job(id);
  EXPECT_EQ(j.status, am::ResultStatus::kPass);
  EXPECT_EQ(j.terminal_attempt, 2);
  EXPECT_EQ(j.attempts, 2);
  // The late result is the record of attempt 1.
  EXPECT_EQ(attempt_column(id, 1, "state"), "done");
  EXPECT_EQ(attempt_column(id, 1, "status"), "fail");
  EXPECT_EQ(attempt_column(id, 1, "reason"), "nmse 0.3 above tolerance");
  // A repeat of the late result is now a duplicate.
  EXPECT_TRUE(store_one(result(id, 1, "fail", "again", {}, "worker-a")).duplicate);

  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].attempt, 2);
  EXPECT_EQ(rows[0].worker_id, "worker-b");
  EXPECT_EQ(rows[0].status, am::ResultStatus::kPass);
}

TEST_F(StoreJobs, ExpiredLeaseReturnsTheJobToTheQueue) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "opencl", "f16"));
  lease(id, 1);
  ASSERT_TRUE(store_->expire_lease(kRun, id, 1, "worker lost: 3 heartbeats missed", kT0 + 90'000).ok());
  JobRow j = job(id);
  EXPECT_EQ(j.state, am::coord::JobState::kQueued);
  EXPECT_EQ(j.attempts, 1);
  EXPECT_EQ(j.lease_worker, "");
  EXPECT_EQ(j.status, std::nullopt);
  EXPECT_EQ(attempt_column(id, 1, "state"), "expired");
  EXPECT_EQ(attempt_column(id, 1, "reason"), "worker lost: 3 heartbeats missed");
  EXPECT_EQ(attempt_column(id, 1, "expired_at"), std::to_string(kT0 + 90'000));

  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, am::coord::JobState::kQueued);
  EXPECT_EQ(rows[0].status, std::nullopt);
  EXPECT_EQ(rows[0].reason, "worker lost: 3 heartbeats missed");

  // An expired attempt is history: it cannot be leased again under the same number.
  LeaseRecord relapse{kRun, id, 1, "worker-a", "cpu:0", "cpu-1", kT0, kT0 + 1};
  EXPECT_EQ(store_->record_lease(relapse).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->expire_lease(kRun, id, 7, "x", kT0).code(), StatusCode::kNotFound);
}

TEST_F(StoreJobs, LeasesOfOnePassAreRecordedTogetherOrNotAtAll) {
  const std::string a = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  const std::string b = add(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"));
  const std::string c = add(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0"));
  lease(c, 1);
  ASSERT_TRUE(store_->expire_lease(kRun, c, 1, "lease expired", kT0 + 5000).ok());
  // The third lease renews an expired attempt: refused, and the two before it are rolled back.
  std::vector<LeaseRecord> pass = {{kRun, a, 1, "worker-a", "cpu:0", "cpu-1", kT0, kT0 + 60'000},
                                   {kRun, b, 1, "worker-a", "cpu:0", "cpu-1", kT0, kT0 + 60'000},
                                   {kRun, c, 1, "worker-a", "cpu:0", "cpu-1", kT0, kT0 + 60'000}};
  Status refused = store_->record_leases(pass);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.to_string();
  EXPECT_NE(refused.message().find(c), std::string::npos) << refused.message();
  auto before = store_->load_jobs(kRun);
  ASSERT_TRUE(before.ok());
  for (const auto& row : *before) {
    EXPECT_NE(row.state, am::coord::JobState::kLeased) << row.job_id;
  }
  pass.pop_back();
  ASSERT_TRUE(store_->record_leases(pass).ok());
  int leased = 0;
  auto after = store_->load_jobs(kRun);
  ASSERT_TRUE(after.ok());
  for (const auto& row : *after) {
    if (row.state == am::coord::JobState::kLeased) {
      ++leased;
      EXPECT_EQ(row.lease_worker, "worker-a");
    }
  }
  EXPECT_EQ(leased, 2);
}

TEST_F(StoreJobs, JobsReadOneAtATimeWithoutSpecsMatchTheLoadedRows) {
  std::vector<std::string> ids;
  for (const char* p : {"f32", "f16", "q8_0", "q4_0"}) ids.push_back(add(make_spec("bert-tiny", "encoder-only", "cpu", p)));
  lease(ids[1], 1);
  auto loaded_rows = store_->load_jobs(kRun);
  ASSERT_TRUE(loaded_rows.ok());
  const std::vector<JobRow>& loaded = *loaded_rows;
  std::vector<JobRow> walked;
  ASSERT_TRUE(store_->for_each_job(kRun, /*with_spec=*/false, [&](JobRow& r) {
                      walked.push_back(r);
                      return Status::Ok();
                    }).ok());
  ASSERT_EQ(walked.size(), loaded.size());
  for (std::size_t i = 0; i < walked.size(); ++i) {
    EXPECT_EQ(walked[i].job_id, loaded[i].job_id);
    EXPECT_EQ(walked[i].state, loaded[i].state);
    EXPECT_EQ(walked[i].lease_worker, loaded[i].lease_worker);
    EXPECT_TRUE(walked[i].spec.is_null());
    auto spec = store_->job_spec(kRun, walked[i].job_id);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    EXPECT_EQ(*spec, loaded[i].spec);
  }
  // A visit that fails stops the walk with its error.
  int visits = 0;
  Status stopped = store_->for_each_job(kRun, false, [&](JobRow&) {
    ++visits;
    return internal_error("enough");
  });
  EXPECT_EQ(stopped.code(), StatusCode::kInternal);
  EXPECT_EQ(visits, 1);
  EXPECT_EQ(store_->job_spec(kRun, "ffffffffffffffff").status().code(), StatusCode::kNotFound);
}

// A restart's rows read ahead (PrefetchedJobs) are the rows of the ordinary walk, and stay
// usable only while nothing is committed: a commit by the coordinator's own connection counts.
TEST_F(StoreJobs, JobsReadAheadAreTheWalkedRowsUntilAnythingIsCommitted) {
  std::vector<std::string> ids;
  for (const char* p : {"f32", "q8_0", "q4_0"}) ids.push_back(add(make_spec("bert-tiny", "encoder-only", "cpu", p)));
  lease(ids[2], 1);
  auto ahead = PrefetchedJobs::read(db_path_);
  ASSERT_TRUE(ahead.ok()) << ahead.status().to_string();
  EXPECT_EQ(ahead->run_id(), kRun);
  std::vector<JobRow> walked;
  ASSERT_TRUE(store_->for_each_job(kRun, false, [&](JobRow& r) {
                      walked.push_back(r);
                      return Status::Ok();
                    }).ok());
  ASSERT_EQ(ahead->rows().size(), walked.size());
  for (std::size_t i = 0; i < walked.size(); ++i) {
    EXPECT_EQ(ahead->rows()[i].job_id, walked[i].job_id);
    EXPECT_EQ(ahead->rows()[i].state, walked[i].state);
    EXPECT_EQ(ahead->rows()[i].lease_worker, walked[i].lease_worker);
    EXPECT_EQ(ahead->rows()[i].lease_expires_at_ms, walked[i].lease_expires_at_ms);
  }
  EXPECT_TRUE(ahead->current());
  store_one(result(ids[2], 1, "pass"));   // the coordinator's own connection commits
  EXPECT_FALSE(ahead->current());
}

TEST_F(StoreJobs, JobsAreNotReadAheadForAnotherRunSeveralRunsOrNoDatabase) {
  add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  // The run the caller wants is not the stored one: the read stops.
  PrefetchedJobs::Wanted wanted;
  wanted.run_id = "another-run";
  EXPECT_FALSE(PrefetchedJobs::read(db_path_, &wanted).ok());
  wanted.run_id = kRun;
  EXPECT_TRUE(PrefetchedJobs::read(db_path_, &wanted).ok());
  // No database yet: nothing to read, and nothing created.
  const auto missing = dir_.path() / "none.db";
  EXPECT_EQ(PrefetchedJobs::read(missing).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(missing));
  // Two runs: which one the plan submits to is not known yet, so nothing is read ahead.
  RunRecord other;
  other.run_id = "run-2";
  other.created_at_ms = kT0;
  ASSERT_TRUE(store_->upsert_run(other).ok());
  EXPECT_EQ(PrefetchedJobs::read(db_path_).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(StoreJobs, InterruptedLeaseReturnsTheJobToTheQueueAsNobodysFailure) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(id, 1);
  ASSERT_TRUE(store_->interrupt_lease(kRun, id, 1, "interrupted: the coordinator was stopped", kT0 + 7).ok());
  JobRow j = job(id);
  EXPECT_EQ(j.state, am::coord::JobState::kQueued);
  EXPECT_EQ(j.status, std::nullopt);
  EXPECT_EQ(attempt_column(id, 1, "state"), "interrupted");
  EXPECT_EQ(attempt_column(id, 1, "status"), "interrupted");
  EXPECT_EQ(attempt_column(id, 1, "reason"), "interrupted: the coordinator was stopped");
  // Interrupting again, or expiring it after, changes nothing.
  ASSERT_TRUE(store_->interrupt_lease(kRun, id, 1, "again", kT0 + 8).ok());
  ASSERT_TRUE(store_->expire_lease(kRun, id, 1, "lease expired", kT0 + 9).ok());
  EXPECT_EQ(attempt_column(id, 1, "state"), "interrupted");
  EXPECT_EQ(attempt_column(id, 1, "reason"), "interrupted: the coordinator was stopped");
  EXPECT_EQ(store_->interrupt_lease(kRun, id, 9, "x", kT0).code(), StatusCode::kNotFound);

  // The job runs again as attempt 2 and its result is the job's.
  lease(id, 2, "worker-b");
  EXPECT_TRUE(store_one(result(id, 2, "pass", "", nlohmann::json::object(), "worker-b")).became_terminal);
  EXPECT_EQ(job(id).status, am::ResultStatus::kPass);
}

TEST_F(StoreJobs, TheCancelledEchoOfAClosedAttemptIsDiscardedButARealLateResultIsKept) {
  const std::string a = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(a, 1);
  ASSERT_TRUE(store_->interrupt_lease(kRun, a, 1, "interrupted", kT0 + 7).ok());
  StoredOutcome echo = store_one(result(a, 1, "cancelled", "cancelled"));
  EXPECT_TRUE(echo.discarded);
  EXPECT_FALSE(echo.became_terminal);
  EXPECT_EQ(job(a).state, am::coord::JobState::kQueued);
  EXPECT_EQ(attempt_column(a, 1, "state"), "interrupted");

  const std::string b = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 64));
  lease(b, 1);
  ASSERT_TRUE(store_->expire_lease(kRun, b, 1, "lease expired", kT0 + 7).ok());
  EXPECT_TRUE(store_one(result(b, 1, "cancelled", "cancelled")).discarded);
  EXPECT_EQ(job(b).state, am::coord::JobState::kQueued);
  // A result that is an outcome of the job (it finished before the CANCEL arrived) still counts.
  StoredOutcome late = store_one(result(b, 1, "pass"));
  EXPECT_FALSE(late.discarded);
  EXPECT_TRUE(late.became_terminal);
  EXPECT_EQ(job(b).status, am::ResultStatus::kPass);
}

TEST_F(StoreJobs, ARunKeepsItsPlanHashAndSetRunPlanReplacesIt) {
  auto run = store_->get_run(kRun);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->plan_hash, "");
  RunRecord other;
  other.run_id = "hashed";
  other.plan_name = "p";
  other.plan_path = "a.toml";
  other.plan_hash = "0123456789abcdef";
  ASSERT_TRUE(store_->upsert_run(other).ok());
  run = store_->get_run("hashed");
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->plan_hash, "0123456789abcdef");
  other.plan_path = "b.toml";
  other.plan_hash = "fedcba9876543210";
  ASSERT_TRUE(store_->set_run_plan(other).ok());
  run = store_->get_run("hashed");
  EXPECT_EQ((*run)->plan_hash, "fedcba9876543210");
  EXPECT_EQ((*run)->plan_path, "b.toml");
  other.run_id = "missing";
  EXPECT_EQ(store_->set_run_plan(other).code(), StatusCode::kNotFound);
}

// Schema 8: what a restarted `serve` reads to go on as before (Server::resume_submitted_runs,
// the cancellation of a plan job).
TEST_F(StoreJobs, ASubmittedPlanIsKeptOnceAndReadBackWhileItsRunIsUnfinished) {
  SubmissionRecord s;
  s.run_id = kRun;
  s.plan_text = "[plan]\nname = \"a\"\n";
  s.plan_name = "a.toml";
  s.submitted_at_ms = 1000;
  ASSERT_TRUE(store_->record_submission(s).ok());
  ASSERT_TRUE(store_->record_submission(s).ok());   // the same plan again: nothing new
  EXPECT_EQ(raw_query(db_path_, "SELECT count(*) FROM run_submissions"), "1");
  s.plan_text += "# extended\n";
  s.extend = true;
  s.plan_name = "b.toml";
  ASSERT_TRUE(store_->record_submission(s).ok());
  auto read = store_->unfinished_submissions();
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->size(), 2u) << "every plan of the run, in order";
  EXPECT_EQ((*read)[0].seq, 1);
  EXPECT_EQ((*read)[0].plan_name, "a.toml");
  EXPECT_FALSE((*read)[0].extend);
  EXPECT_EQ((*read)[1].seq, 2);
  EXPECT_EQ((*read)[1].plan_name, "b.toml");
  EXPECT_EQ((*read)[1].plan_text, s.plan_text);
  EXPECT_TRUE((*read)[1].extend);
  ASSERT_TRUE(store_->mark_run_finished(kRun, 2000).ok());
  read = store_->unfinished_submissions();
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->empty()) << "a finished run is not served again";
}

TEST_F(StoreJobs, ARunRemembersEveryPlanHashItFollowed) {
  RunRecord run;
  run.run_id = "followed";
  run.plan_name = "p";
  run.plan_hash = "v2:aaaa";
  ASSERT_TRUE(store_->upsert_run(run).ok());
  run.plan_hash = "v2:bbbb";
  ASSERT_TRUE(store_->set_run_plan(run).ok());
  ASSERT_TRUE(store_->set_plan_hash("followed", "v2:cccc").ok());
  for (const char* hash : {"v2:aaaa", "v2:bbbb", "v2:cccc"}) EXPECT_TRUE(*store_->run_followed_plan("followed", hash)) << hash;
  EXPECT_FALSE(*store_->run_followed_plan("followed", "v2:dddd"));
  EXPECT_FALSE(*store_->run_followed_plan("followed", ""));
  EXPECT_FALSE(*store_->run_followed_plan(kRun, "v2:aaaa")) << "another run's hash";
}

TEST_F(StoreJobs, ACancelledPlanJobIsReadBackAndAnUnknownOneIsNotFound) {
  jobs::JobSpec placed = make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  placed.placement = jobs::Placement::kEachClass;
  jobs::JobSpec other = placed;
  other.seq_len = 64;
  const std::string cancelled = jobs::compute_job_id(kRun, placed);
  const std::string kept = jobs::compute_job_id(kRun, other);
  ASSERT_TRUE(store_->add_plan_jobs(kRun, {{cancelled, placed, ""}, {kept, other, ""}}).ok());
  ASSERT_TRUE(store_->mark_plan_job_cancelled(kRun, cancelled).ok());
  auto read = store_->cancelled_plan_jobs(kRun);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(*read, std::vector<std::string>{cancelled});
  EXPECT_EQ(store_->mark_plan_job_cancelled(kRun, "0123456789abcdef").code(), StatusCode::kNotFound);
  // Adding the plan's jobs again (a restart's submit) keeps the cancellation.
  ASSERT_TRUE(store_->add_plan_jobs(kRun, {{cancelled, placed, ""}, {kept, other, ""}}).ok());
  EXPECT_EQ(*store_->cancelled_plan_jobs(kRun), std::vector<std::string>{cancelled});
}

TEST_F(StoreJobs, ExpiringAnOlderAttemptKeepsTheJobLeasedToTheNewerOne) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f16"));
  lease(id, 1, "worker-a");
  lease(id, 2, "worker-b");
  ASSERT_TRUE(store_->expire_lease(kRun, id, 1, "lease expired", kT0 + 5).ok());
  JobRow j = job(id);
  EXPECT_EQ(j.state, am::coord::JobState::kLeased);
  EXPECT_EQ(j.lease_worker, "worker-b");
}

TEST_F(StoreJobs, ExpiringAnAttemptWithAResultChangesNothing) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f16"));
  lease(id, 1);
  ASSERT_TRUE(store_one(result(id, 1, "degraded", "nmse 2e-3")).became_terminal);
  ASSERT_TRUE(store_->expire_lease(kRun, id, 1, "lease expired", kT0 + 5).ok());
  EXPECT_EQ(job(id).state, am::coord::JobState::kDone);
  EXPECT_EQ(attempt_column(id, 1, "state"), "done");
  EXPECT_EQ(attempt_column(id, 1, "reason"), "nmse 2e-3");
}

TEST_F(StoreJobs, LeaseRecordedAfterTheJobIsDoneKeepsItDone) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f16"));
  lease(id, 1);
  ASSERT_TRUE(store_one(result(id, 1, "pass")).became_terminal);
  lease(id, 2);
  JobRow j = job(id);
  EXPECT_EQ(j.state, am::coord::JobState::kDone);
  EXPECT_EQ(j.attempts, 2);
  EXPECT_EQ(j.terminal_attempt, 1);
}

TEST_F(StoreJobs, ResultWithoutLeaseRowCreatesTheAttempt) {
  // A coordinator that restarted without the lease row still stores the worker's result.
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  ASSERT_TRUE(store_->upsert_worker({"worker-z", "host-z", "accelmatrix 0.1.0 (feedface)", {}, {}, kT0, ""}).ok());
  const StoredOutcome out = store_one(result(id, 3, "pass", "", {}, "worker-z"));
  EXPECT_TRUE(out.became_terminal);
  JobRow j = job(id);
  EXPECT_EQ(j.attempts, 3);
  EXPECT_EQ(j.terminal_attempt, 3);
  EXPECT_EQ(attempt_column(id, 3, "worker_id"), "worker-z");
  EXPECT_EQ(attempt_column(id, 3, "build"), "accelmatrix 0.1.0 (feedface)");
}

TEST_F(StoreJobs, SetJobTerminalSettlesOnceAndNeverOverridesAResult) {
  const std::string skipped = add(make_spec("bert-tiny", "encoder-only", "vulkan", "f32"));
  ASSERT_TRUE(store_->set_job_terminal(kRun, skipped, *status_named("skipped"), "no eligible hardware", kT0 + 9).ok());
  JobRow s = job(skipped);
  EXPECT_EQ(s.state, am::coord::JobState::kDone);
  EXPECT_EQ(s.status, am::ResultStatus::kSkipped);
  EXPECT_EQ(s.reason, "no eligible hardware");
  EXPECT_EQ(s.terminal_attempt, 0);
  ASSERT_TRUE(store_->set_job_terminal(kRun, skipped, *status_named("lost"), "again", kT0 + 10).ok());
  EXPECT_EQ(job(skipped).status, am::ResultStatus::kSkipped);

  const std::string passed = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(passed, 1);
  ASSERT_TRUE(store_one(result(passed, 1, "pass")).became_terminal);
  ASSERT_TRUE(store_->set_job_terminal(kRun, passed, *status_named("lost"), "retries exhausted", kT0).ok());
  EXPECT_EQ(job(passed).status, am::ResultStatus::kPass);

  EXPECT_EQ(store_->set_job_terminal(kRun, "ffffffffffffffff", *status_named("lost"), "", kT0).code(), StatusCode::kNotFound);
}

TEST_F(StoreJobs, LostJobReportsItsLastAttempt) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  lease(id, 1, "worker-a");
  ASSERT_TRUE(store_->expire_lease(kRun, id, 1, "worker lost", kT0 + 1).ok());
  lease(id, 2, "worker-b");
  ASSERT_TRUE(store_->expire_lease(kRun, id, 2, "worker lost", kT0 + 2).ok());
  ASSERT_TRUE(store_->set_job_terminal(kRun, id, *status_named("lost"), "infrastructure retries exhausted (2)", kT0 + 3).ok());
  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, am::ResultStatus::kLost);
  EXPECT_EQ(rows[0].reason, "infrastructure retries exhausted (2)");
  EXPECT_EQ(rows[0].attempt, 2);
  EXPECT_EQ(rows[0].worker_id, "worker-b");
  EXPECT_EQ(rows[0].finished_at_ms, kT0 + 3);
}

TEST_F(StoreJobs, BatchOf100ResultsIsStoredInOneTransaction) {
  std::vector<jobs::PlannedJob> planned;
  for (int i = 0; i < 100; ++i) {
    auto spec = make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 8 + i, 1000 + i);
    planned.push_back({jobs::compute_job_id(kRun, spec), spec, std::string()});
  }
  ASSERT_EQ(*store_->add_jobs(kRun, planned), 100);

  // A batch whose last entry names an unknown job fails as a whole: nothing of it is stored.
  std::vector<ResultRecord> bad;
  for (const auto& p : planned) bad.push_back(result(p.job_id, 1, "pass"));
  bad.push_back(result("0000000000000000", 1, "pass"));
  auto failed = store_->store_results(bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_query(db_path_, "SELECT count(*) FROM attempts"), "0");
  EXPECT_EQ(raw_query(db_path_, "SELECT count(*) FROM jobs WHERE state='done'"), "0");

  std::mt19937 rng(7);
  std::uniform_real_distribution<double> latency(0.5, 20.0);
  std::vector<ResultRecord> batch;
  std::vector<double> medians;
  for (const auto& p : planned) {
    medians.push_back(latency(rng));
    batch.push_back(result(p.job_id, 1, "pass", "", perf_metrics(medians.back(), medians.back() * 1.1, 10, 1e-9, 1, 1)));
  }
  auto stored = store_->store_results(batch);
  ASSERT_TRUE(stored.ok()) << stored.status().to_string();
  ASSERT_EQ(stored->size(), 100u);
  for (const StoredOutcome& o : *stored) {
    EXPECT_TRUE(o.became_terminal);
    EXPECT_FALSE(o.duplicate);
  }
  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 100u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].job_id, planned[i].job_id);
    EXPECT_DOUBLE_EQ(rows[i].metrics["latency_ms"]["median"].get<double>(), medians[i]);
  }
}

TEST_F(StoreJobs, DataSurvivesCloseAndReopen) {
  const std::string id = add(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "q8_0", 1, 64, 99, true));
  lease(id, 1);
  ASSERT_TRUE(store_one(result(id, 1, "pass", "", perf_metrics(12.5, 13.0, 5120.0, 3e-4, 0.9991, 0.98))).became_terminal);
  ASSERT_TRUE(store_->mark_run_finished(kRun, kT0 + 123'456).ok());

  open_store();
  auto run = store_->get_run(kRun);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->plan_name, "smoke");
  EXPECT_EQ((*run)->finished_at_ms, kT0 + 123'456);
  JobRow j = job(id);
  EXPECT_EQ(j.status, am::ResultStatus::kPass);
  EXPECT_EQ(j.spec["seed"], 99);
  EXPECT_EQ(j.spec["scaled"], true);
  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].metrics["accuracy"]["cosine"].get<double>(), 0.9991);
}

TEST_F(StoreJobs, RunsAreListedNewestFirstAndUpsertKeepsTheFirstRecord) {
  RunRecord older{"run-0", "old", "", "", kT0 - 10, 0, ""};
  RunRecord newer{"run-2", "new", "", "", kT0 + 10, 0, ""};
  ASSERT_TRUE(store_->upsert_run(older).ok());
  ASSERT_TRUE(store_->upsert_run(newer).ok());
  RunRecord changed{kRun, "renamed", "", "", kT0 + 999, 0, ""};
  ASSERT_TRUE(store_->upsert_run(changed).ok());
  auto runs = store_->list_runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].run_id, "run-2");
  EXPECT_EQ((*runs)[1].run_id, kRun);
  EXPECT_EQ((*runs)[1].plan_name, "smoke");
  EXPECT_EQ((*runs)[2].run_id, "run-0");
  EXPECT_FALSE(store_->get_run("nope")->has_value());
  EXPECT_EQ(store_->mark_run_finished("nope", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->report_rows("nope").status().code(), StatusCode::kNotFound);
}

// One catalog model under two configs in a run (two plan entries, or an --extend that changed
// its overrides) is two models: each gets a label of its own, named by the keys that differ, so
// no cell, memory row or comparison pools them; a model with one config keeps its name, and a
// command's model label is left as it is.
TEST_F(StoreJobs, OneModelNameUnderTwoConfigsReadsAsTwoLabelledModels) {
  auto deep = make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 16, 77);
  deep.model_config["layers"] = 8;
  const std::string shallow_f32 = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 16, 77));
  const std::string deep_f32 = add(deep);
  auto deep_q8 = deep;
  deep_q8.precision = precision_named("q8_0");
  const std::string deep_q8_id = add(deep_q8);
  const std::string other = add(make_spec("gpt2", "decoder-only", "cpu", "f32", 1, 16, 77));
  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 4u);
  std::map<std::string, std::string> label_of;
  for (const ReportRow& r : rows) {
    label_of[r.job_id] = r.model_label;
    // The model itself stays the name: what compare matches runs on.
    EXPECT_EQ(r.model, r.job_id == other ? "gpt2" : "bert-tiny");
  }
  EXPECT_EQ(label_of[shallow_f32], "bert-tiny (layers=2)");
  EXPECT_EQ(label_of[deep_f32], "bert-tiny (layers=8)");
  EXPECT_EQ(label_of[deep_q8_id], "bert-tiny (layers=8)");
  EXPECT_EQ(label_of[other], "gpt2");
}

// Three configs that agree on the first keys that differ and differ in a later one: every
// differing key is named, so no two configs share a label (naming three let two be pooled).
TEST_F(StoreJobs, ConfigsThatDifferOnlyInALaterKeyStillGetLabelsOfTheirOwn) {
  auto base = make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 16, 77);
  base.model_config = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}};
  auto x = base;
  x.model_config = {{"a", 2}, {"b", 2}, {"c", 2}, {"d", 1}};
  auto y = base;
  y.model_config = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 2}};
  add(base);
  add(x);
  add(y);
  std::set<std::string> labels;
  for (const ReportRow& r : this->rows()) labels.insert(r.model_label);
  EXPECT_EQ(labels.size(), 3u);
  EXPECT_TRUE(labels.count("bert-tiny (a=1, b=1, c=1, d=2)")) << ::testing::PrintToString(labels);
}

TEST_F(StoreJobs, ReportRowsCarryResultAndProvenance) {
  ASSERT_TRUE(store_->upsert_worker({"worker-a", "lab-box-1", "accelmatrix 0.1.0 (abc123def456)",
                                     {{"schema", 1}}, {{"rack", "r1"}}, kT0, ""}).ok());
  const std::string done = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 2, 16, 77));
  const std::string pending = add(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0", 2, 16, 77));
  const std::string leased = add(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 2, 16, 77));
  lease(done, 1, "worker-a", "cpu-feedbeefcafe0001");
  const nlohmann::json metrics = perf_metrics(4.75, 5.5, 6736.8, 2.5e-9, 0.9999998, 1.0);
  ASSERT_TRUE(store_one(result(done, 1, "pass", "", metrics)).became_terminal);
  lease(leased, 1, "worker-a", "cpu-feedbeefcafe0001");
  // The worker upgrades later; the stored result keeps the build it ran with.
  ASSERT_TRUE(store_->upsert_worker({"worker-a", "lab-box-1", "accelmatrix 0.2.0 (999999999999)", {}, {}, kT0 + 5, ""}).ok());

  auto rows = this->rows();
  ASSERT_EQ(rows.size(), 3u);
  const ReportRow& r = rows[0];
  EXPECT_EQ(r.run_id, kRun);
  EXPECT_EQ(r.job_id, done);
  EXPECT_EQ(r.model, "bert-tiny");
  EXPECT_EQ(r.architecture, "encoder-only");
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.precision, precision_named("f32"));
  EXPECT_EQ(r.state, am::coord::JobState::kDone);
  EXPECT_EQ(r.status, am::ResultStatus::kPass);
  EXPECT_EQ(r.attempt, 1);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.worker_id, "worker-a");
  EXPECT_EQ(r.hostname, "lab-box-1");
  EXPECT_EQ(r.build, "accelmatrix 0.1.0 (abc123def456)");
  EXPECT_EQ(r.hardware_class, "cpu-feedbeefcafe0001");
  EXPECT_EQ(r.device, "cpu:0");
  EXPECT_EQ(r.metrics, metrics);
  EXPECT_EQ(r.log_tail, "log of " + done + " attempt 1");
  EXPECT_EQ(r.started_at_ms, kT0 + 2000);
  EXPECT_EQ(r.finished_at_ms, kT0 + 2500);
  EXPECT_EQ(r.spec["batch"], 2);
  EXPECT_EQ(r.spec["seq_len"], 16);
  EXPECT_EQ(r.spec["seed"], 77);

  EXPECT_EQ(rows[1].job_id, pending);
  EXPECT_EQ(rows[1].state, am::coord::JobState::kQueued);
  EXPECT_EQ(rows[1].status, std::nullopt);
  EXPECT_EQ(rows[1].attempt, 0);
  EXPECT_EQ(rows[1].worker_id, "");
  EXPECT_TRUE(rows[1].metrics.empty());

  EXPECT_EQ(rows[2].job_id, leased);
  EXPECT_EQ(rows[2].state, am::coord::JobState::kLeased);
  EXPECT_EQ(rows[2].attempt, 1);
  EXPECT_EQ(rows[2].worker_id, "worker-a");
  EXPECT_EQ(rows[2].build, "accelmatrix 0.1.0 (abc123def456)");
}

TEST_F(StoreJobs, InvalidInputIsRefusedWithoutWriting) {
  const std::string id = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  EXPECT_EQ(store_->store_results({result(id, 0, "pass")}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->record_lease({kRun, id, 0, "w", "", "", 0, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->record_lease({kRun, "ffffffffffffffff", 1, "w", "", "", 0, 0}).code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_query(db_path_, "SELECT count(*) FROM attempts"), "0");
  EXPECT_EQ(job(id).state, am::coord::JobState::kQueued);
}

// Placement (schema 5): a job made for a class or device keeps its target and class, a report
// row carries them and whether its attempt ran exclusive, and a stand-in that never ran can be
// removed while a job with attempts cannot.
TEST_F(StoreJobs, PlacedJobsKeepTargetClassAndExclusiveAttempts) {
  jobs::JobSpec spec = make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  spec.placement = jobs::Placement::kEachClass;
  const std::string target = jobs::class_target("cpu-aaaa");
  const jobs::PlannedJob placed{jobs::compute_job_id(kRun, spec, target), spec, target};
  const jobs::PlannedJob stand_in{jobs::compute_job_id(kRun, spec), spec, ""};
  ASSERT_NE(placed.job_id, stand_in.job_id);
  auto added = store_->add_jobs(kRun, {placed}, {"cpu-aaaa"});
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  ASSERT_TRUE(store_->add_jobs(kRun, {stand_in}).ok());
  EXPECT_FALSE(store_->add_jobs(kRun, {stand_in}, {"a", "b"}).ok()) << "one class per job";

  JobRow row = job(placed.job_id);
  EXPECT_EQ(row.target, target);
  EXPECT_EQ(row.hardware_class, "cpu-aaaa");
  EXPECT_EQ(job(stand_in.job_id).target, "");

  // Before any attempt, the report files the job under the class it was made for.
  bool found = false;
  for (const ReportRow& r : rows()) {
    if (r.job_id != placed.job_id) continue;
    found = true;
    EXPECT_EQ(r.hardware_class, "cpu-aaaa");
    EXPECT_EQ(r.target, target);
    EXPECT_FALSE(r.exclusive);
  }
  EXPECT_TRUE(found);

  LeaseRecord l;
  l.run_id = kRun;
  l.job_id = placed.job_id;
  l.attempt = 1;
  l.worker_id = "worker-a";
  l.device = "cpu:0";
  l.hardware_class = "cpu-aaaa";
  l.lease_expires_at_ms = kT0 + 60'000;
  l.exclusive = true;
  ASSERT_TRUE(store_->record_lease(l).ok());
  store_one(result(placed.job_id, 1, "pass"));
  for (const ReportRow& r : rows()) {
    if (r.job_id == placed.job_id) {
      EXPECT_TRUE(r.exclusive);
    }
  }

  // Results are never removed; a stand-in without attempts is.
  Status refused = store_->remove_unattempted_job(kRun, placed.job_id);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.to_string();
  EXPECT_EQ(raw_query(db_path_, "SELECT COUNT(*) FROM jobs WHERE job_id = '" + placed.job_id + "'"), "1");
  ASSERT_TRUE(store_->remove_unattempted_job(kRun, stand_in.job_id).ok());
  EXPECT_EQ(raw_query(db_path_, "SELECT COUNT(*) FROM jobs WHERE job_id = '" + stand_in.job_id + "'"), "0");
}

}  // namespace
}  // namespace am::coord
