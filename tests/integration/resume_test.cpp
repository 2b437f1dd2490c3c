// A restart that resumes a run from the store (Server::resume, docs/SCALE.md "Restart"), against
// real processes: with the plan text, catalog and build unchanged the restart reads the run back
// instead of expanding the plan, and the coordinator it builds says exactly what one built by
// expanding the plan says; anything changed (a plan byte, a catalog file, a plan submitted over
// the control socket into the run) expands the plan again, with the refusals that brings.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

using json = nlohmann::json;

bool log_has(const std::filesystem::path& log, const std::string& needle) {
  return read_file(log).find(needle) != std::string::npos;
}

// A coordinator that stays up (no --exit-when-done): endpoint file NAME.ep, log NAME.log; `extra`
// arguments after the rest (--run, --extend).
struct ServeOptions {
  std::string catalog = catalog_dir();
  std::vector<std::string> extra;
};
std::unique_ptr<Process> serve_live(const ScratchDir& dir, const std::filesystem::path& plan,
                                    const std::filesystem::path& db, const std::string& name,
                                    const ServeOptions& o = {}) {
  std::vector<std::string> args = {coordinator_binary().string(), "--log-level", "info", "serve", "--plan",
                                   plan.string(), "--db", db.string(), "--bind", "tcp://127.0.0.1:*",
                                   "--catalog", o.catalog, "--endpoint-file", (dir / (name + ".ep")).string(),
                                   "--quiet", "--heartbeat-ms", "100", "--liveness", "20"};
  args.insert(args.end(), o.extra.begin(), o.extra.end());
  std::filesystem::remove(dir / (name + ".ep"));
  return std::make_unique<Process>(args, dir / (name + ".log"));
}

// serve_live() until its endpoint is up, then a clean stop; its log.
std::string serve_until_up(const ScratchDir& dir, const std::filesystem::path& plan, const std::filesystem::path& db,
                           const std::string& name, const ServeOptions& o = {}) {
  auto serve = serve_live(dir, plan, db, name, o);
  EXPECT_FALSE(wait_for_endpoint(dir / (name + ".ep")).empty()) << serve->log();
  serve->terminate();
  EXPECT_NE(serve->wait(60s), -1);
  return serve->log();
}

// The runs of a status document without what differs between two coordinators of one state
// (times, the server's own counters).
json runs_of(const json& status) {
  json runs = status.at("runs");
  for (json& r : runs) {
    for (const char* volatile_key : {"started_at", "elapsed_s", "eta_s", "rate_per_min", "budget_left_s"}) {
      r.erase(volatile_key);
    }
  }
  return runs;
}

TEST(Resume, AnUnchangedPlanResumesFromTheStoreAndServesWhatAnExpansionWouldServe) {
  ScratchDir dir("resume-same");
  const auto db = dir / "r.db";
  // Passing `any` jobs, failing each-class jobs, a job that hangs (leased when the coordinator
  // dies) and a cuda plan job no hardware here takes (its stand-in settled skipped).
  const auto plan = write_file(dir / "resume.toml",
                               "[plan]\nname = \"resume\"\nmode = \"accuracy\"\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\ntimeout_s = 120\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nbatch = [1, 2, 3, 4]\nplacement = \"any\"\n\n"
                               "[[models]]\nname = \"selftest:fail\"\nbatch = [1, 2]\nplacement = \"each-class\"\n\n"
                               "[[models]]\nname = \"selftest:hang\"\nplacement = \"any\"\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nbackends = [\"cuda\"]\nplacement = \"each-class\"\n");
  {
    auto serve = serve_live(dir, plan, db, "first");
    const std::string ep = wait_for_endpoint(dir / "first.ep");
    ASSERT_FALSE(ep.empty()) << serve->log();
    EXPECT_FALSE(log_has(dir / "first.log", "resumed from the store")) << serve->log();
    Process worker(worker_args(ep, "w1", dir, /*slots=*/2), dir / "w1.log");
    // Everything but the hang finished, the hang running: the coordinator dies then.
    ASSERT_TRUE(wait_until([&] {
      return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 7 &&
             sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 1;
    }, 60s)) << serve->log();
    serve->kill_hard();
    worker.kill_hard();
  }
  ASSERT_TRUE(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0).starts_with("d1:"));
  // A copy of the same state whose run has no digest: its restart expands the plan.
  ASSERT_EQ(sql_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)"), "");
  const auto copy = dir / "expanded.db";
  std::filesystem::copy_file(db, copy);
  ASSERT_EQ(sql_exec(copy, "UPDATE runs SET plan_digest = ''"), "");

  auto resumed = serve_live(dir, plan, db, "resumed");
  auto expanded = serve_live(dir, plan, copy, "expanded");
  ASSERT_FALSE(wait_for_endpoint(dir / "resumed.ep").empty()) << resumed->log();
  ASSERT_FALSE(wait_for_endpoint(dir / "expanded.ep").empty()) << expanded->log();
  // 5 `any` jobs, the 2 each-class jobs made for w1's class, the cuda plan job's stand-in.
  EXPECT_TRUE(log_has(dir / "resumed.log", "run resume: resumed from the store: 8 job(s), 3 plan job(s)"))
      << resumed->log();
  EXPECT_TRUE(log_has(dir / "expanded.log", "run resume: 8 job(s) stored, 0 new; 3 plan job(s)")) << expanded->log();
  const auto a = status_of(db);
  const auto b = status_of(copy);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(runs_of(*a), runs_of(*b)) << a->dump(2) << "\n---\n" << b->dump(2);
  const json run = runs_of(*a).at(0);
  EXPECT_EQ(run.at("by_status"), (json{{"pass", 4}, {"fail", 2}, {"skipped", 1}})) << run.dump(2);
  // The expanded copy stored its digest after its jobs: its next restart resumes too.
  EXPECT_TRUE(sql_rows(copy, "SELECT plan_digest FROM runs").at(0).at(0).starts_with("d1:"));
  expanded->terminate();
  EXPECT_NE(expanded->wait(30s), -1);

  // The resumed coordinator knows the lease it read back: w1 comes back (a new process, the same
  // id and state directory) without the hang, whose lease is released and the job leased again
  // (attempt 2); nothing that finished runs again.
  const std::string ep = wait_for_endpoint(dir / "resumed.ep");
  Process worker(worker_args(ep, "w1", dir, /*slots=*/2), dir / "w1-again.log");
  ASSERT_TRUE(wait_until([&] {
    return sql_int(db, "SELECT COUNT(*) FROM attempts a JOIN jobs j ON j.run_id = a.run_id AND j.job_id = a.job_id "
                       "WHERE j.model = 'selftest:hang' AND a.attempt = 2 AND a.state = 'leased'") == 1;
  }, 60s)) << resumed->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts a JOIN jobs j ON j.run_id = a.run_id AND j.job_id = a.job_id "
                        "WHERE j.model <> 'selftest:hang' AND a.attempt > 1"),
            0);
  worker.kill_hard();
  resumed->terminate();
  EXPECT_NE(resumed->wait(30s), -1);
}

TEST(Resume, AChangedCatalogFileOrPlanTextExpandsThePlanAgain) {
  ScratchDir dir("resume-changed");
  const auto db = dir / "c.db";
  const auto catalog = dir / "models";
  std::filesystem::create_directories(catalog);
  std::filesystem::copy_file(source_dir() / "jobs/models/bert-tiny.toml", catalog / "bert-tiny.toml");
  const auto plan = write_bert_plan(dir / "changed.toml", "changed", 0.1, "[16, 32]", "[\"f32\", \"q8_0\"]");
  int round = 0;
  const auto restart = [&] {
    return serve_until_up(dir, plan, db, "serve" + std::to_string(++round), {catalog.string(), {}});
  };
  // The plan's four jobs are plan jobs (each-class, the default) no hardware took yet.
  const std::string expanded = "0 job(s) stored, 0 new; 4 plan job(s) placed";
  const std::string resumed = "resumed from the store: 0 job(s), 4 plan job(s) placed";
  EXPECT_NE(restart().find(expanded), std::string::npos);
  EXPECT_NE(restart().find(resumed), std::string::npos);
  // A catalog file changed (a comment): expanded again, the same jobs, and the digest renewed.
  std::ofstream(catalog / "bert-tiny.toml", std::ios::app) << "\n# edited\n";
  std::string log = restart();
  EXPECT_NE(log.find(expanded), std::string::npos) << log;
  EXPECT_NE(restart().find(resumed), std::string::npos);
  // A catalog file added: the same.
  std::filesystem::copy_file(source_dir() / "jobs/models/gpt2.toml", catalog / "gpt2.toml");
  log = restart();
  EXPECT_NE(log.find(expanded), std::string::npos) << log;
  // The plan's text changed (a comment).
  std::ofstream(plan, std::ios::app) << "\n# a comment\n";
  log = restart();
  EXPECT_NE(log.find(expanded), std::string::npos) << log;
  EXPECT_NE(restart().find(resumed), std::string::npos);
  // The plan's jobs changed: expanded, and refused as another plan under the same run, as ever.
  const auto other = write_bert_plan(dir / "changed.toml", "changed", 0.1, "[16, 64]", "[\"f32\", \"q8_0\"]");
  auto serve = serve_live(dir, other, db, "other", {catalog.string(), {}});
  EXPECT_EQ(serve->wait(30s), 2) << serve->log();
  EXPECT_TRUE(log_has(dir / "other.log", "was made from another plan")) << serve->log();
}

TEST(Resume, ADoubtAboutAnyRowFamilyOrPlanJobExpandsThePlanAndSettlesNothing) {
  ScratchDir dir("resume-tampered");
  const auto db = dir / "t.db";
  // Three `any` jobs and two each-class plan jobs, no worker: everything stays queued.
  const auto plan = write_file(dir / "t.toml",
                               "[plan]\nname = \"tampered\"\nmode = \"accuracy\"\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nbatch = [1, 2, 3]\nplacement = \"any\"\n\n"
                               "[[models]]\nname = \"selftest:fail\"\nbatch = [1, 2]\nplacement = \"each-class\"\n");
  const auto serve_once = [&](const std::string& name) { return serve_until_up(dir, plan, db, name); };
  const std::string expanded = "run tampered: 3 job(s) stored, 0 new; 2 plan job(s) placed";
  const auto digest = [&] { return sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0); };
  // A start that resumes, doubts and expands on the same server (nothing settled, every job
  // queued), then keeps no digest: the next start expands without a doubt, and stores a digest
  // only once the rows agree with the plan again.
  const auto expect_doubt_then_expansion = [&](const std::string& why, const std::string& name) {
    const std::string log = serve_once(name);
    EXPECT_NE(log.find("not resumed from the store: "), std::string::npos) << log;
    EXPECT_NE(log.find(why), std::string::npos) << log;
    EXPECT_NE(log.find(expanded), std::string::npos) << log;
    EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND status = ''"), 3) << log;
    EXPECT_EQ(digest(), "") << log;
    const std::string again = serve_once(name + "-again");
    EXPECT_EQ(again.find("not resumed"), std::string::npos) << again;
    EXPECT_NE(again.find(expanded), std::string::npos) << again;
    EXPECT_EQ(digest(), "") << again;   // the rows still disagree with the plan
  };
  serve_once("first");
  EXPECT_NE(serve_once("second").find("resumed from the store: 3 job(s), 2 plan job(s)"), std::string::npos);
  const std::string good = digest();
  ASSERT_TRUE(good.starts_with("d1:"));

  // One job's batch changed in its row: the row is not the job its id names.
  ASSERT_EQ(sql_exec(db, "UPDATE jobs SET batch = 7 WHERE batch = 2 AND model = 'selftest:pass'"), "");
  expect_doubt_then_expansion("is not the job its stored family, precision, batch, seq_len", "changed-row");
  ASSERT_EQ(sql_exec(db, "UPDATE jobs SET batch = 2 WHERE batch = 7"), "");
  serve_once("mended-row");
  EXPECT_EQ(digest(), good);
  EXPECT_NE(serve_once("resumed-again").find("resumed from the store"), std::string::npos);

  // The third job's batch made 0 (out of range): the resume reads the first two and doubts the
  // third; the plan's submit on the same server passes over the two and gives the third the plan's
  // spec (not its stored one, which no worker could run: it is not settled).
  ASSERT_EQ(sql_exec(db, "UPDATE jobs SET batch = 0 WHERE batch = 3 AND model = 'selftest:pass'"), "");
  expect_doubt_then_expansion("precision, batch or seq_len is out of range", "batch-zero");
  ASSERT_EQ(sql_exec(db, "UPDATE jobs SET batch = 3 WHERE batch = 0"), "");
  serve_once("mended-batch");
  EXPECT_EQ(digest(), good);

  // A spec family damaged (the expansion does not read it).
  ASSERT_EQ(sql_exec(db, "UPDATE spec_families SET spec_json = replace(spec_json, '\"selftest:pass\"', '3') "
                         "WHERE spec_json LIKE '%selftest:pass%'"),
            "");
  expect_doubt_then_expansion("is damaged", "damaged-family");
  ASSERT_EQ(sql_exec(db, "UPDATE spec_families SET spec_json = replace(spec_json, '\"model\":3', "
                         "'\"model\":\"selftest:pass\"') WHERE spec_json LIKE '%\"model\":3%'"),
            "");
  serve_once("mended-family");
  EXPECT_EQ(digest(), good);

  // A plan job's stored spec changed.
  ASSERT_EQ(sql_exec(db, "UPDATE plan_jobs SET spec_json = replace(spec_json, '\"batch\":2', '\"batch\":5') "
                         "WHERE spec_json LIKE '%\"batch\":2%'"),
            "");
  ASSERT_EQ(sql_int(db, "SELECT COUNT(*) FROM plan_jobs WHERE spec_json LIKE '%\"batch\":5%'"), 1);
  expect_doubt_then_expansion("is not the job its stored spec makes (the row was changed)", "changed-plan-job");
}

TEST(Resume, APlanPastTheResumeLimitKeepsNoDigestAndExpandsAtEveryStart) {
  // 20,200 each-class plan jobs: more than kResumeMaxPlanJobs, whose specs a resume would parse.
  ScratchDir dir("resume-limit");
  const auto db = dir / "l.db";
  std::string batches;
  for (int b = 1; b <= 202; ++b) batches += (b > 1 ? ", " : "") + std::to_string(b);
  std::string seq_lens;
  for (int q = 1; q <= 100; ++q) seq_lens += (q > 1 ? ", " : "") + std::to_string(q);
  const auto plan = write_file(dir / "l.toml", "[plan]\nname = \"large\"\nmode = \"accuracy\"\nmax_jobs = 30000\n\n"
                                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\n\n"
                                               "[[models]]\nname = \"selftest:pass\"\nbatch = [" + batches +
                                               "]\nseq_len = [" + seq_lens + "]\n");
  for (const char* name : {"first", "second"}) {
    const std::string log = serve_until_up(dir, plan, db, name);
    EXPECT_NE(log.find("0 job(s) stored, 0 new; 20200 plan job(s) placed"), std::string::npos) << log;
    EXPECT_EQ(log.find("resumed from the store"), std::string::npos) << log;
    EXPECT_EQ(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0), "");
  }
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM plan_jobs"), 20200);
}

TEST(Resume, ARunNamedOnTheCommandLineResumesWithItsJobsIntact) {
  // Every job's id hashes the run id given on the command line, not the plan's name.
  ScratchDir dir("resume-named");
  const auto db = dir / "n.db";
  const auto plan = write_file(dir / "n.toml",
                               "[plan]\nname = \"planname\"\nmode = \"accuracy\"\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\ntimeout_s = 120\n\n"
                               "[[models]]\nname = \"selftest:hang\"\nbatch = [1, 2, 3]\nplacement = \"any\"\n\n"
                               "[[models]]\nname = \"selftest:hang\"\nbatch = [4, 5]\nplacement = \"each-class\"\n");
  const ServeOptions named{catalog_dir(), {"--run", "nightly-7"}};
  {
    auto serve = serve_live(dir, plan, db, "first", named);
    const std::string ep = wait_for_endpoint(dir / "first.ep");
    ASSERT_FALSE(ep.empty()) << serve->log();
    // A worker takes two jobs (one slot each on a two-slot worker) and is gone: the class's two
    // jobs were made for it, with ids of the run.
    Process worker(worker_args(ep, "w1", dir, /*slots=*/2), dir / "w1.log");
    ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 2; }, 60s))
        << serve->log();
    worker.kill_hard();
    serve->terminate();
    EXPECT_NE(serve->wait(30s), -1);
  }
  ASSERT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE target <> ''"), 2);
  auto again = serve_live(dir, plan, db, "again", named);
  ASSERT_FALSE(wait_for_endpoint(dir / "again.ep").empty()) << again->log();
  EXPECT_TRUE(log_has(dir / "again.log", "run nightly-7: resumed from the store: 5 job(s), 2 plan job(s)"))
      << again->log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'error'"), 0) << again->log();
  again->terminate();
  EXPECT_NE(again->wait(30s), -1);
}

// Before 2026-12-07 job ids hashed the plan's name whatever the run id. A run an older build made
// under `--run ID` keeps its jobs: its next start finds the plan's ids hashed from the name to be
// the run's stored plan, and adds nothing.
TEST(Resume, ARunMadeUnderItsOwnIdBeforeIdsHashedItKeepsItsJobs) {
  ScratchDir dir("resume-legacy-ids");
  const auto db = dir / "l.db";
  const auto plan = write_file(dir / "legacy.toml",
                               "[plan]\nname = \"legacy\"\nmode = \"accuracy\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                               "precisions = [\"f32\"]\ntimeout_s = 60\n\n[[models]]\nname = \"selftest:hang\"\n"
                               "batch = [1, 2]\nplacement = \"any\"\n");
  serve_until_up(dir, plan, db, "first");   // run 'legacy': ids hashed from 'legacy'
  // What an older build stored for `--run old-7`: the same rows under another run id.
  const std::string renamed = sql_exec(db, "PRAGMA foreign_keys = OFF;"
                                           "UPDATE runs SET run_id = 'old-7', plan_digest = '';"
                                           "UPDATE jobs SET run_id = 'old-7'; UPDATE spec_families SET run_id = 'old-7';"
                                           "UPDATE plan_jobs SET run_id = 'old-7'; UPDATE attempts SET run_id = 'old-7';");
  ASSERT_EQ(renamed, "");
  const std::vector<std::vector<std::string>> before = sql_rows(db, "SELECT job_id FROM jobs ORDER BY job_id");
  ASSERT_EQ(before.size(), 2u);
  const std::string log = serve_until_up(dir, plan, db, "again", {catalog_dir(), {"--run", "old-7"}});
  EXPECT_NE(log.find("run old-7: keeps the job ids it was made with (hashed from the plan's name 'legacy')"),
            std::string::npos) << log;
  EXPECT_EQ(sql_rows(db, "SELECT job_id FROM jobs ORDER BY job_id"), before) << log;
  EXPECT_EQ(sql_rows(db, "SELECT plan_digest FROM runs WHERE run_id = 'old-7'"),
            (std::vector<std::vector<std::string>>{{""}})) << "such a run never resumes by its digest";
  const std::string third = serve_until_up(dir, plan, db, "third", {catalog_dir(), {"--run", "old-7"}});
  EXPECT_NE(third.find("keeps the job ids it was made with"), std::string::npos) << third;
  EXPECT_EQ(sql_rows(db, "SELECT job_id FROM jobs ORDER BY job_id"), before) << third;
  // A new run under an id of its own gets ids of its own.
  serve_until_up(dir, plan, db, "new", {catalog_dir(), {"--run", "new-8"}});
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'new-8' AND job_id IN (SELECT job_id FROM jobs "
                        "WHERE run_id = 'old-7')"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE run_id = 'new-8'"), 2);
}

TEST(Resume, AServeThatExtendsTheRunStoresNoDigestAndItsRestartExpands) {
  ScratchDir dir("resume-serve-extend");
  const auto db = dir / "x.db";
  const auto p1 = write_bert_plan(dir / "p1.toml", "both", 0.1, "[16]", "[\"f32\"]");
  const auto p2 = write_bert_plan(dir / "p2.toml", "both", 0.1, "[32]", "[\"f32\"]");
  const auto serve_with = [&](const std::filesystem::path& plan, const std::string& name,
                              const std::vector<std::string>& extra) {
    return serve_until_up(dir, plan, db, name, {catalog_dir(), extra});
  };
  serve_with(p1, "p1", {});
  EXPECT_TRUE(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0).starts_with("d1:"));
  std::string log = serve_with(p2, "p2", {"--extend"});
  EXPECT_NE(log.find("extended with plan"), std::string::npos) << log;
  // The run holds the jobs of two plans: no digest describes it.
  EXPECT_EQ(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0), "");
  log = serve_with(p2, "p2-again", {});
  EXPECT_EQ(log.find("resumed from the store"), std::string::npos) << log;
  EXPECT_NE(log.find("job(s) stored, 0 new"), std::string::npos) << log;
  EXPECT_EQ(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0), "");
}

TEST(Resume, APlanSubmittedIntoTheRunOverTheControlSocketEndsTheResumesButNotTheRun) {
  ScratchDir dir("resume-extend");
  const auto db = dir / "e.db";
  const auto plan = write_bert_plan(dir / "p.toml", "extended", 0.1, "[16]", "[\"f32\"]");
  const auto more = write_bert_plan(dir / "q.toml", "more", 0.1, "[32]", "[\"f32\"]");
  auto serve = serve_live(dir, plan, db, "first");
  ASSERT_FALSE(wait_for_endpoint(dir / "first.ep").empty()) << serve->log();
  ASSERT_TRUE(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0).starts_with("d1:"));
  int code = -1;
  const std::string out = run_capture(cli({"submit", "--run", "extended", "--extend", more.string()}, db), &code);
  ASSERT_EQ(code, 0) << out << serve->log();
  // The run now follows the submitted plan, which this host has no file of: no digest.
  EXPECT_EQ(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0), "");
  serve->terminate();
  EXPECT_NE(serve->wait(30s), -1);
  // Restarted with the first plan: expanded (not resumed), and served as part of the run, which
  // keeps following the submitted plan (before: refused as another plan, exit 2).
  const auto followed = sql_rows(db, "SELECT plan_hash, plan_path FROM runs");
  auto again = serve_live(dir, plan, db, "again");
  ASSERT_FALSE(wait_for_endpoint(dir / "again.ep").empty()) << again->log();
  EXPECT_TRUE(log_has(dir / "again.log", "made it before it was extended; it is served as part of the run"))
      << again->log();
  EXPECT_FALSE(log_has(dir / "again.log", "resumed from the store")) << again->log();
  EXPECT_EQ(sql_rows(db, "SELECT plan_hash, plan_path FROM runs"), followed);
  EXPECT_EQ(sql_rows(db, "SELECT plan_digest FROM runs").at(0).at(0), "");
  again->terminate();
  EXPECT_NE(again->wait(30s), -1);
}

}  // namespace
}  // namespace am::testing
