// Job specs stored once per family (schema 6, coordinator/spec_families.h): every reader gets the
// bytes the whole document used to be stored as, and a damaged family is named, not fatal.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "coordinator/migrations.h"
#include "coordinator/store.h"
#include "jobs/plan.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::raw_exec;
using testing::raw_query;

const std::filesystem::path kSourceDir(ACCELMATRIX_SOURCE_DIR);

// What add_jobs stored before schema 6: the canonical dump (invalid UTF-8 replaced).
std::string whole_text(const jobs::JobSpec& spec) {
  return jobs::to_json(spec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Every step of EXPLAIN QUERY PLAN's `detail`, one per line.
std::string query_plan(const std::filesystem::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) return "<open failed>";
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    out = std::string("<prepare failed: ") + sqlite3_errmsg(db) + ">";
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3))) + "\n";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

class SpecFamiliesInTheStore : public testing::StoreFixture {
 protected:
  // job_spec() of `job_id` fails naming `what`, on a fresh connection (nothing cached).
  void expect_spec_refused(const std::string& job_id, const std::string& what) {
    open_store();
    auto one = store_->job_spec(kRun, job_id);
    ASSERT_FALSE(one.ok());
    EXPECT_NE(one.status().message().find(what), std::string::npos) << one.status().message();
  }

  // Every report row's spec text, by job id.
  std::map<std::string, std::string> report_spec_texts(const std::string& run_id) {
    std::map<std::string, std::string> texts;
    Status walked = store_->for_each_report_row(run_id, ReportDocumentKeys{},
                                                [&](const ReportRow& row, const ReportRowTexts& t) {
                                                  texts[row.job_id] = std::string(t.spec_json);
                                                  return Status::Ok();
                                                });
    EXPECT_TRUE(walked.ok()) << walked.to_string();
    return texts;
  }
};

TEST_F(SpecFamiliesInTheStore, EveryJobOfEveryShippedPlanReadsBackAsTheTextOnceStoredWhole) {
  int checked = 0, plans = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "jobs" / "plans")) {
    if (entry.path().extension() != ".toml") continue;
    auto plan = jobs::load_plan(entry.path(), kSourceDir / "jobs" / "models");
    ASSERT_TRUE(plan.ok()) << entry.path() << ": " << plan.status().to_string();
    const std::string run_id = "run-" + entry.path().stem().string();
    RunRecord run;
    run.run_id = run_id;
    ASSERT_TRUE(store_->upsert_run(run).ok());
    auto added = store_->add_jobs(run_id, plan->jobs);
    ASSERT_TRUE(added.ok()) << entry.path() << ": " << added.status().to_string();
    ++plans;

    // Only command jobs keep their document in the row.
    int commands = 0;
    for (const auto& j : plan->jobs) commands += j.spec.command.has_value();
    EXPECT_EQ(raw_query(db_path_, "SELECT count(*) FROM jobs WHERE run_id = '" + run_id + "' AND spec_json <> ''"),
              std::to_string(commands))
        << entry.path().filename();

    // A fresh connection: nothing cached from the writes.
    open_store();
    const auto texts = report_spec_texts(run_id);
    std::map<std::string, nlohmann::json> walked;
    ASSERT_TRUE(store_->for_each_job(run_id, /*with_spec=*/true, [&](JobRow& row) {
                  walked[row.job_id] = row.spec;
                  return Status::Ok();
                }).ok());
    for (const auto& j : plan->jobs) {
      const std::string want = whole_text(j.spec);
      ASSERT_EQ(texts.count(j.job_id), 1u);
      EXPECT_EQ(texts.at(j.job_id), want) << entry.path().filename() << " " << j.spec.model;
      EXPECT_EQ(walked.at(j.job_id), nlohmann::json::parse(want));
      auto one = store_->job_spec(run_id, j.job_id);
      ASSERT_TRUE(one.ok()) << one.status().to_string();
      EXPECT_EQ(*one, nlohmann::json::parse(want));
      // The view a person reads with sqlite3 shows the same document.
      EXPECT_EQ(nlohmann::json::parse(raw_query(db_path_, "SELECT spec_json FROM job_specs WHERE run_id = '" + run_id +
                                                              "' AND job_id = '" + j.job_id + "'")),
                nlohmann::json::parse(want));
      ++checked;
    }
  }
  EXPECT_GT(plans, 3);
  EXPECT_GT(checked, 100);
  // Far fewer documents than jobs.
  EXPECT_LT(std::stoi(raw_query(db_path_, "SELECT count(*) FROM spec_families")), checked / 4);
}

TEST_F(SpecFamiliesInTheStore, ADamagedOrMissingFamilyIsNamedAndItsJobsStillShowInTheReport) {
  const std::string a = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  const std::string b = add(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"));
  ASSERT_EQ(raw_query(db_path_, "SELECT count(DISTINCT family_id) FROM jobs"), "1");
  const std::string family = raw_query(db_path_, "SELECT family_id FROM jobs WHERE job_id = '" + a + "'");
  ASSERT_NE(family, "0");

  raw_exec(db_path_, "UPDATE spec_families SET spec_json = '{\"model\": ' WHERE family_id = " + family);
  open_store();
  Status walked = store_->for_each_job(kRun, /*with_spec=*/true, [](JobRow&) { return Status::Ok(); });
  ASSERT_FALSE(walked.ok());
  EXPECT_NE(walked.message().find("spec family " + family + " is damaged"), std::string::npos) << walked.message();
  EXPECT_NE(walked.message().find(a), std::string::npos) << walked.message();
  auto one = store_->job_spec(kRun, b);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("spec family " + family), std::string::npos);
  // The walk without specs (what a restart reads) does not need them.
  EXPECT_TRUE(store_->for_each_job(kRun, /*with_spec=*/false, [](JobRow&) { return Status::Ok(); }).ok());

  // The report shows both jobs from their columns, the damage in their reason.
  int shown = 0;
  ASSERT_TRUE(store_->for_each_report_row(kRun, ReportDocumentKeys{}, [&](const ReportRow& row, const ReportRowTexts&) {
                ++shown;
                EXPECT_EQ(row.model, "bert-tiny");
                EXPECT_NE(row.reason.find("corrupt spec of job '" + row.job_id + "'"), std::string::npos) << row.reason;
                EXPECT_NE(row.reason.find("spec family " + family), std::string::npos) << row.reason;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(shown, 2);

  raw_exec(db_path_, "DELETE FROM spec_families WHERE family_id = " + family);
  expect_spec_refused(a, "spec family " + family + " of run 'run-1' is not in the store");
}

TEST_F(SpecFamiliesInTheStore, ARowsOwnDocumentWinsOverItsFamily) {
  const std::string a = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  raw_exec(db_path_, "UPDATE jobs SET spec_json = '{\"model\":\"edited\"}' WHERE job_id = '" + a + "'");
  open_store();
  auto one = store_->job_spec(kRun, a);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ((*one)["model"], "edited");
}

// `any` jobs are their own plan job: stored with plan_job_id '' (schema 6), outside the partial
// plan-job index. A stand-in of a placed plan job keeps its plan job's id, so the plan job is not
// also counted and listed as unplaced.
TEST_F(SpecFamiliesInTheStore, AnyJobsStayOutOfThePlanJobIndexAndStandInsStillSettleTheirPlanJob) {
  const jobs::JobSpec any = make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  const std::string any_id = jobs::compute_job_id(kRun, any);
  ASSERT_TRUE(store_->add_jobs(kRun, {{any_id, any, ""}}, {}, {}, Store::OwnPlanJob::kUnindexed).ok());
  EXPECT_EQ(raw_query(db_path_, "SELECT plan_job_id FROM jobs WHERE job_id = '" + any_id + "'"), "");
  auto loaded = store_->load_jobs(kRun);
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].plan_job_id, "");
  EXPECT_EQ(raw_query(db_path_, "SELECT sql FROM sqlite_master WHERE name = 'jobs_by_plan_job'"),
            "CREATE INDEX jobs_by_plan_job ON jobs(run_id, plan_job_id) WHERE plan_job_id <> ''");

  jobs::JobSpec placed = make_spec("bert-tiny", "encoder-only", "cpu", "q8_0");
  placed.placement = jobs::Placement::kEachClass;
  const std::string plan_job = jobs::compute_job_id(kRun, placed);
  ASSERT_TRUE(store_->add_plan_jobs(kRun, {{plan_job, placed, ""}}).ok());
  const auto unplaced = [&] {
    auto counts = store_->run_counts();
    EXPECT_TRUE(counts.ok());
    for (const RunCounts& c : *counts) {
      if (c.run_id == kRun) return c.unplaced;
    }
    return -1;
  };
  EXPECT_EQ(unplaced(), 1);
  // The stand-in no hardware could take: the plan job itself, made into a job of its own id.
  ASSERT_TRUE(store_->add_jobs(kRun, {{plan_job, placed, ""}}).ok());
  EXPECT_EQ(raw_query(db_path_, "SELECT plan_job_id FROM jobs WHERE job_id = '" + plan_job + "'"), plan_job);
  EXPECT_EQ(unplaced(), 0);
  int shown = 0;
  ASSERT_TRUE(store_->for_each_report_row(kRun, ReportDocumentKeys{}, [&](const ReportRow&, const ReportRowTexts&) {
                ++shown;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(shown, 2) << "the any job and the stand-in, the plan job not listed again as unplaced";
  const std::string plan = query_plan(db_path_, R"sql(
      SELECT p.job_id FROM plan_jobs p WHERE p.run_id = 'run-1'
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = p.run_id AND j.plan_job_id = p.job_id
                                               AND j.plan_job_id <> ''))sql");
  EXPECT_NE(plan.find("jobs_by_plan_job"), std::string::npos) << plan;
}

// An edited file: a family row holding another model's valid document, or moved to another run,
// is refused by name, never rendered as the job's spec.
TEST_F(SpecFamiliesInTheStore, AFamilyOfAnotherModelOrRunIsRefusedNotRendered) {
  const std::string a = add(make_spec("bert-tiny", "encoder-only", "cpu", "f32"));
  const std::string family = raw_query(db_path_, "SELECT family_id FROM jobs WHERE job_id = '" + a + "'");
  jobs::JobSpec other = make_spec("tinyllama", "decoder-only", "cpu", "f32");
  raw_exec(db_path_, "UPDATE spec_families SET spec_json = '" + jobs::to_json(other).dump() +
                         "' WHERE family_id = " + family);
  expect_spec_refused(a, "spec family " + family + " is of tinyllama on cpu, the job of bert-tiny");

  RunRecord run;
  run.run_id = "run-2";
  ASSERT_TRUE(store_->upsert_run(run).ok());
  raw_exec(db_path_, "UPDATE spec_families SET run_id = 'run-2', spec_json = '" +
                         jobs::to_json(make_spec("bert-tiny", "encoder-only", "cpu", "f32")).dump() +
                         "' WHERE family_id = " + family);
  expect_spec_refused(a, "spec family " + family + " of run 'run-1' is not in the store");
  Status walked = store_->for_each_job(kRun, /*with_spec=*/true, [](JobRow&) { return Status::Ok(); });
  EXPECT_FALSE(walked.ok());
}

// What a restart from the store reads (Server::resume): every row's family and scalars from the
// walk without specs, each family's spec whole, and a family's damage by name.
TEST_F(SpecFamiliesInTheStore, TheWalkWithoutSpecsCarriesEachRowsFamilyAndScalarsAndTheFamiliesReadWhole) {
  std::vector<jobs::JobSpec> specs = {make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, 16),
                                      make_spec("bert-tiny", "encoder-only", "cpu", "q4_0", 8, 128),
                                      make_spec("gpt2", "decoder-only", "cpu", "q8_0", 2, 64)};
  std::map<std::string, jobs::JobSpec> by_id;
  for (const auto& s : specs) by_id[add(s)] = s;
  open_store();
  std::map<int64_t, int> rows_per_family;
  auto families = store_->spec_families_of_run(kRun);
  ASSERT_TRUE(families.ok()) << families.status().to_string();
  ASSERT_TRUE(store_->for_each_job(kRun, /*with_spec=*/false, [&](JobRow& row) {
                const jobs::JobSpec& want = by_id.at(row.job_id);
                EXPECT_TRUE(row.spec.is_null());
                EXPECT_EQ(row.model, want.model);
                EXPECT_EQ(row.backend, want.backend);
                EXPECT_NE(row.family_id, 0);
                EXPECT_EQ(row.scalars, jobs::scalars_of(want));
                ++rows_per_family[row.family_id];
                // The row's family with its scalars is its spec, field for field.
                const StoredSpecFamily& f = families->at(row.family_id);
                EXPECT_TRUE(f.spec.has_value()) << f.damage;
                if (f.spec) EXPECT_EQ(jobs::with_scalars(*f.spec, *row.scalars), want);
                return Status::Ok();
              }).ok());
  EXPECT_EQ(rows_per_family.size(), 2u);   // bert-tiny's two jobs share one
  EXPECT_EQ(families->size(), 2u);

  const int64_t gpt2_family = std::stoll(raw_query(db_path_, "SELECT family_id FROM jobs WHERE model = 'gpt2'"));
  raw_exec(db_path_, "UPDATE spec_families SET spec_json = '{\"model\": 3}' WHERE family_id = " +
                         std::to_string(gpt2_family));
  open_store();
  families = store_->spec_families_of_run(kRun);
  ASSERT_TRUE(families.ok());
  EXPECT_FALSE(families->at(gpt2_family).spec.has_value());
  EXPECT_NE(families->at(gpt2_family).damage.find("spec family " + std::to_string(gpt2_family) + " is damaged"),
            std::string::npos)
      << families->at(gpt2_family).damage;
  EXPECT_EQ(families->size(), 2u);
}

TEST_F(SpecFamiliesInTheStore, ThePlanDigestIsSetLastAndClearedByAnyChangeOfThePlanHash) {
  auto run = store_->get_run(kRun);
  ASSERT_TRUE(run.ok() && *run);
  EXPECT_EQ((*run)->plan_digest, "");   // a new run has none until its jobs are stored
  ASSERT_TRUE(store_->set_plan_digest(kRun, "d1:0123").ok());
  EXPECT_EQ((*store_->get_run(kRun))->plan_digest, "d1:0123");
  ASSERT_TRUE(store_->set_plan_hash(kRun, "v2:1").ok());
  EXPECT_EQ((*store_->get_run(kRun))->plan_digest, "");
  ASSERT_TRUE(store_->set_plan_digest(kRun, "d1:4567").ok());
  RunRecord extended = **store_->get_run(kRun);
  extended.plan_hash = "v2:2";
  ASSERT_TRUE(store_->set_run_plan(extended).ok());
  EXPECT_EQ((*store_->get_run(kRun))->plan_digest, "");
  EXPECT_EQ(store_->set_plan_digest("no-such-run", "d1:89").code(), StatusCode::kNotFound);
  // The current schema on disk (7 added the column), and a reader of the file sees the column.
  EXPECT_EQ(raw_query(db_path_, "SELECT max(version) FROM schema_version"), std::to_string(kSchemaVersion));
  ASSERT_TRUE(store_->set_plan_digest(kRun, "d1:abcd").ok());
  auto reader = Store::open_read_only(db_path_);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*(*reader)->get_run(kRun))->plan_digest, "d1:abcd");
}

// A schema-5 file with jobs (whole documents, `any` jobs under their own id) is migrated in place:
// its rows read as before, new jobs of the same family are stored by family beside them, and the
// view shows both.
TEST(SpecFamiliesMigration, ASchemaFiveFileKeepsItsWholeDocumentsAndTakesNewJobsByFamily) {
  testing::TempDir dir;
  const auto path = dir.path() / "v5.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Status migrated = migrate(db, 5);
    sqlite3_close(db);
    ASSERT_TRUE(migrated.ok()) << migrated.to_string();
  }
  const jobs::JobSpec old_spec = make_spec("bert-tiny", "encoder-only", "cpu", "f32");
  const std::string old_id = jobs::compute_job_id("old", old_spec);
  raw_exec(path, "INSERT INTO runs(run_id) VALUES ('old');"
                 "INSERT INTO jobs(run_id, job_id, seq, spec_json, model, architecture, backend, precision, batch, "
                 "seq_len, plan_job_id) VALUES ('old', '" + old_id + "', 1, '" + whole_text(old_spec) +
                 "', 'bert-tiny', 'encoder-only', 'cpu', 'f32', 1, 32, '" + old_id + "')");
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  const jobs::JobSpec new_spec = make_spec("bert-tiny", "encoder-only", "cpu", "q4_0", 4, 64);
  const std::string new_id = jobs::compute_job_id("old", new_spec);
  ASSERT_TRUE((*store)->add_jobs("old", {{new_id, new_spec, ""}}, {}, {}, Store::OwnPlanJob::kUnindexed).ok());
  EXPECT_EQ(raw_query(path, "SELECT family_id <> 0 AND spec_json = '' FROM jobs WHERE job_id = '" + new_id + "'"), "1");
  EXPECT_EQ(raw_query(path, "SELECT family_id FROM jobs WHERE job_id = '" + old_id + "'"), "0");

  std::map<std::string, nlohmann::json> walked;
  ASSERT_TRUE((*store)->for_each_job("old", /*with_spec=*/true, [&](JobRow& row) {
                walked[row.job_id] = row.spec;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(walked.at(old_id), jobs::to_json(old_spec));
  EXPECT_EQ(walked.at(new_id), jobs::to_json(new_spec));
  std::map<std::string, std::string> texts;
  ASSERT_TRUE((*store)->for_each_report_row("old", ReportDocumentKeys{}, [&](const ReportRow& r, const ReportRowTexts& t) {
                texts[r.job_id] = std::string(t.spec_json);
                return Status::Ok();
              }).ok());
  EXPECT_EQ(texts.at(old_id), whole_text(old_spec));
  EXPECT_EQ(texts.at(new_id), whole_text(new_spec));
  for (const auto& [id, spec] : {std::pair{old_id, old_spec}, std::pair{new_id, new_spec}}) {
    EXPECT_EQ(nlohmann::json::parse(raw_query(path, "SELECT spec_json FROM job_specs WHERE job_id = '" + id + "'")),
              jobs::to_json(spec));
  }
  // A reader of the file as it is (read-only) renders the same.
  auto ro = Store::open_read_only(path);
  ASSERT_TRUE(ro.ok()) << ro.status().to_string();
  auto spec = (*ro)->job_spec("old", new_id);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  EXPECT_EQ(*spec, jobs::to_json(new_spec));
}

}  // namespace
}  // namespace am::coord
