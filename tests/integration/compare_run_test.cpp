// Issue 14 items 4 and 5 against real processes:
// - `accelmatrix compare` on real measurements: the same plan run twice is not a regression
//   (exit 0); a real, measured slowdown (1 thread against all threads with 4+ cores, 4x the layers
//   on 2 cores) is flagged at --fail-on-regression 10 (exit 1) — DECISIONS.md, "Measurement";
// - `report` reads while a coordinator writes the database, and reads a database it may not
//   write (mode 0444 in a read-only directory, as a user who cannot write either).
//
// The performance cases are RUN_SERIAL (tests/integration/CMakeLists.txt): another test sharing
// the cores would be a slowdown of its own.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

int run_logged(const ScratchDir& dir, const std::string& name, const std::vector<std::string>& argv, std::string* log,
               std::chrono::milliseconds timeout = 180s) {
  Process p(argv, dir / (name + ".log"));
  const int code = p.wait(timeout);
  *log = p.log();
  return code;
}

// DECISIONS.md's compare shape: bert-tiny b8 s128, perf mode, min_time_s 1.0, f32 on the cpu.
std::filesystem::path write_perf_plan(const ScratchDir& dir, const std::string& name, int threads,
                                      const std::string& model_extra = "") {
  return write_file(dir / (name + ".toml"),
                    "[plan]\nname = \"" + name + "\"\nmode = \"perf\"\nseed = 3\n\n"
                    "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\nbatch = [8]\nseq_len = [128]\n"
                    "warmup = 3\nmin_reps = 20\nmax_reps = 1000\nmin_time_s = 1.0\ntimeout_s = 120\n"
                    "threads = " + std::to_string(threads) + "\n\n[[models]]\nname = \"bert-tiny\"\n" + model_extra);
}

// `accelmatrix run` of `plan` into `db` as run `run_id`; asserts exit 0.
void run_plan(const ScratchDir& dir, const std::filesystem::path& plan, const std::filesystem::path& db,
              const std::string& run_id) {
  std::string log;
  ASSERT_EQ(run_logged(dir, "run-" + run_id, {coordinator_binary().string(), "run", "--plan", plan.string(), "--db",
                                              db.string(), "--catalog", catalog_dir(), "--run", run_id},
                       &log),
            0)
      << log;
}

// CPU time the whole machine spent busy, and the part of it spent by this test's (waited-for)
// child processes and their descendants.
struct CpuUse {
  double machine_busy_s = 0.0;
  double ours_s = 0.0;
  std::chrono::steady_clock::time_point at;
};

CpuUse cpu_use() {
  CpuUse u;
  u.at = std::chrono::steady_clock::now();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  u.machine_busy_s = (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
  struct rusage ru {};
  getrusage(RUSAGE_CHILDREN, &ru);
  u.ours_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return u;
}

// Share of the machine's cores that processes other than this test's kept busy since `from`.
// A measurement comparison is only meaningful when nothing else competed for the cores: another
// build on a shared machine slows one run and not the other, and compare would rightly call that
// a slowdown.
double others_share(const CpuUse& from) {
  const CpuUse now = cpu_use();
  const double wall = std::chrono::duration<double>(now.at - from.at).count();
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  const double others = (now.machine_busy_s - from.machine_busy_s) - (now.ours_s - from.ours_s);
  return wall > 0 ? std::max(0.0, others) / (wall * cores) : 0.0;
}

// Skips (never passes) a measuring test when other processes used more than a quarter of the
// cores while it ran: the verdict would be about them, not about the runs compared.
constexpr double kMaxOthersShare = 0.25;
#define SKIP_IF_MACHINE_WAS_BUSY(since)                                                                  \
  do {                                                                                                  \
    const double share = others_share(since);                                                           \
    if (share > kMaxOthersShare) {                                                                      \
      GTEST_SKIP() << "other processes kept " << static_cast<int>(share * 100)                         \
                   << "% of the cores busy during the measured runs (limit "                           \
                   << static_cast<int>(kMaxOthersShare * 100) << "%): no verdict on a shared machine"; \
    }                                                                                                   \
  } while (0)

nlohmann::json read_json(const std::filesystem::path& file) {
  try {
    return nlohmann::json::parse(read_file(file));
  } catch (const std::exception& e) {
    ADD_FAILURE() << file << ": " << e.what();
    return {};
  }
}

std::string describe(const nlohmann::json& doc) {
  if (!doc.contains("jobs") || doc["jobs"].empty()) return doc.dump();
  return doc["jobs"][0]["latency"].dump() + " base " + doc["jobs"][0]["base"].dump() + " new " +
         doc["jobs"][0]["new"].dump();
}

// Two identical runs on a 2-core VM differed by up to 17% at all threads (measured; see below) and
// by 0.97x-1.03x at one thread (4 runs of this test), so the threshold sits well above that
// spread: a compare that calls noise a regression still fails.
constexpr const char* kSamePlanThresholdPercent = "25";

// One thread, not all of them: on a 2-core VM a 2-thread job waits at every barrier for the
// slower core, so a hypervisor that takes either vCPU away for a moment slows the whole job. CI
// saw two identical 2-thread runs 30% apart (22.3 ms vs 29.1 ms median, same wall and CPU time,
// nothing else running); a 1-thread job is exposed to one core's share of that, and this
// model is no faster at 2 threads (22-23 ms median either way).
TEST(CompareRuns, SamePlanTwiceIsNotARegression) {
  ScratchDir dir("compare-same");
  const auto plan = write_perf_plan(dir, "same", 1);
  const CpuUse start = cpu_use();
  run_plan(dir, plan, dir / "a.db", "same");
  run_plan(dir, plan, dir / "b.db", "same");
  SKIP_IF_MACHINE_WAS_BUSY(start);

  std::string log;
  const auto out = dir / "same.json";
  EXPECT_EQ(run_logged(dir, "compare", {coordinator_binary().string(), "compare", (dir / "a.db").string(),
                                        (dir / "b.db").string(), "--fail-on-regression", kSamePlanThresholdPercent, "--format", "json",
                                        "-o", out.string()},
                       &log),
            0)
      << log << read_file(out);
  const nlohmann::json doc = read_json(out);
  ASSERT_EQ(doc["jobs"].size(), 1u) << doc.dump(2);
  const auto& job = doc["jobs"][0];
  EXPECT_EQ(doc["regression"], false) << describe(doc);
  EXPECT_EQ(job["status_change"], "none");
  EXPECT_EQ(job["base"]["status"], "pass");
  ASSERT_TRUE(job["latency"]["ratio"].is_number()) << describe(doc);
  EXPECT_GE(job["base"]["latency_samples"].get<int>(), 20);
  EXPECT_NE(job["latency"]["verdict"], "not_compared") << describe(doc);
  EXPECT_TRUE(job["spec_changes"].empty()) << job["spec_changes"].dump();
  std::cout << "same plan twice: " << describe(doc) << "\n";

  // Markdown by default, on stdout.
  int code = -1;
  const std::string md = run_capture({coordinator_binary().string(), "compare", (dir / "a.db").string(),
                                      (dir / "b.db").string(), "--fail-on-regression", kSamePlanThresholdPercent},
                                     &code);
  EXPECT_EQ(code, 0) << md;
  EXPECT_TRUE(has(md, "**Verdict: no regression**")) << md;
}

// The flagged slowdown must be real and far beyond the machine's run-to-run spread. With 4 or
// more cores: all threads against 1 thread (DECISIONS.md's case). On 2 cores that is 1.1x-1.6x
// (measured on this VM with nothing else running: 1.48, 1.10, 1.58) against a run-to-run spread
// of up to 17% between two identical runs, so it is not a reliable test there; the 2-core slowdown
// is the same job doing 4x the work (layers 2 -> 8 through a plan override: same model, backend,
// precision and shape, so it matches), measured 1 thread vs 1 thread.
TEST(CompareRuns, ARealSlowdownIsFlaggedFromOneDatabase) {
  ScratchDir dir("compare-slow");
  const auto db = dir / "runs.db";
  const bool threads_case = std::thread::hardware_concurrency() >= 4;
  const CpuUse start = cpu_use();
  if (threads_case) {
    run_plan(dir, write_perf_plan(dir, "all", 0), db, "fast");
    run_plan(dir, write_perf_plan(dir, "one", 1), db, "slow");
  } else {
    run_plan(dir, write_perf_plan(dir, "two-layers", 1), db, "fast");
    run_plan(dir, write_perf_plan(dir, "eight-layers", 1, "[models.overrides]\nlayers = 8\n"), db, "slow");
  }
  SKIP_IF_MACHINE_WAS_BUSY(start);

  // One database, no run ids: base = the older run, new = the newer one.
  std::string log;
  const auto out = dir / "slow.json";
  EXPECT_EQ(run_logged(dir, "compare", {coordinator_binary().string(), "compare", db.string(), db.string(),
                                        "--fail-on-regression", "10", "--format", "json", "-o", out.string()},
                       &log),
            1)
      << log << read_file(out);
  EXPECT_TRUE(has(log, "regression found")) << log;
  const nlohmann::json doc = read_json(out);
  EXPECT_EQ(doc["base"]["run_id"], "fast");
  EXPECT_EQ(doc["new"]["run_id"], "slow");
  ASSERT_EQ(doc["jobs"].size(), 1u) << doc.dump(2);
  const auto& job = doc["jobs"][0];
  EXPECT_EQ(doc["regression"], true) << describe(doc);
  EXPECT_EQ(job["regression"], true);
  EXPECT_EQ(job["latency"]["verdict"], "slower") << describe(doc);
  EXPECT_GE(job["latency"]["ci_low"].get<double>(), 1.1) << describe(doc);
  EXPECT_LT(job["latency"]["p_holm"].get<double>(), 0.05) << describe(doc);
  // The settings that explain it are named (an override also changes the job's derived seed).
  bool named = false;
  for (const auto& change : job["spec_changes"]) named = named || change["field"] == (threads_case ? "threads" : "model_config");
  EXPECT_TRUE(named) << job["spec_changes"].dump();
  std::cout << (threads_case ? "1 thread vs all threads: " : "8 layers vs 2 layers: ") << describe(doc) << "\n";

  // The same comparison without a gate exits 0 and still says what it found; the reverse
  // direction is a speed-up, not a regression.
  EXPECT_EQ(run_logged(dir, "nogate", {coordinator_binary().string(), "compare", db.string(), db.string()}, &log), 0)
      << log;
  EXPECT_TRUE(has(log, "**slower")) << log;
  EXPECT_EQ(run_logged(dir, "reverse", {coordinator_binary().string(), "compare", db.string(), db.string(),
                                        "--base-run", "slow", "--new-run", "fast", "--fail-on-regression", "10"},
                       &log),
            0)
      << log;
  EXPECT_TRUE(has(log, "| faster |")) << log;
}

TEST(CompareRuns, PassToFailIsARegressionWhateverTheLatency) {
  ScratchDir dir("compare-broke");
  const auto db = dir / "runs.db";
  // The same job; the second time it measures for 60 s under a 1 s time limit and ends `timeout`.
  run_plan(dir, write_bert_plan(dir / "ok.toml", "ok", 0.05, "[16]", "[\"f32\"]", "perf"), db, "ok");
  std::string log;
  const auto broken = write_bert_plan(dir / "broken.toml", "broken", 60.0, "[16]", "[\"f32\"]", "perf",
                                      "timeout_s = 1\n");
  ASSERT_EQ(run_logged(dir, "run-broken", {coordinator_binary().string(), "run", "--plan", broken.string(), "--db",
                                           db.string(), "--catalog", catalog_dir(), "--run", "broken"},
                       &log),
            1)
      << log;
  const auto out = dir / "broke.json";
  EXPECT_EQ(run_logged(dir, "compare", {coordinator_binary().string(), "compare", db.string(), db.string(),
                                        "--fail-on-regression", "50", "--format", "json", "-o", out.string()},
                       &log),
            1)
      << log;
  const nlohmann::json doc = read_json(out);
  ASSERT_EQ(doc["jobs"].size(), 1u) << doc.dump(2);
  EXPECT_EQ(doc["jobs"][0]["status_change"], "broke");
  EXPECT_EQ(doc["jobs"][0]["base"]["status"], "pass");
  EXPECT_EQ(doc["jobs"][0]["new"]["status"], "timeout");
  EXPECT_EQ(doc["jobs"][0]["latency"]["verdict"], "not_compared");
  EXPECT_EQ(doc["summary"]["broke"], 1);
  // Without the gate: reported, exit 0.
  EXPECT_EQ(run_logged(dir, "nogate", {coordinator_binary().string(), "compare", db.string(), db.string()}, &log), 0)
      << log;
  EXPECT_TRUE(has(log, "**pass→fail: REGRESSION**")) << log;
}

TEST(CompareRuns, BadInputExitsTwo) {
  ScratchDir dir("compare-bad");
  const auto db = dir / "one.db";
  const auto plan = write_bert_plan(dir / "tiny.toml", "tiny", 0.01, "[16]", "[\"f32\"]", "accuracy");
  run_plan(dir, plan, db, "only");
  const std::string am = coordinator_binary().string();
  std::string log;
  EXPECT_EQ(run_logged(dir, "missing", {am, "compare", (dir / "nope.db").string(), db.string()}, &log), 2) << log;
  EXPECT_TRUE(has(log, "does not exist")) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "nope.db"));
  EXPECT_EQ(run_logged(dir, "norun", {am, "compare", db.string(), db.string(), "--base-run", "ghost"}, &log), 2)
      << log;
  EXPECT_TRUE(has(log, "no run 'ghost'")) << log;
  EXPECT_EQ(run_logged(dir, "onerun", {am, "compare", db.string(), db.string()}, &log), 2) << log;
  EXPECT_TRUE(has(log, "holds only run 'only'")) << log;
  EXPECT_EQ(run_logged(dir, "pct", {am, "compare", db.string(), db.string(), "--fail-on-regression", "-5"}, &log), 2)
      << log;
  // Decimal digits only: "0x10" was read as 16 %.
  for (const char* bad : {"0x10", "inf", "1e2"}) {
    EXPECT_EQ(run_logged(dir, "pct-text", {am, "compare", db.string(), db.string(), "--fail-on-regression", bad}, &log), 2)
        << bad << ": " << log;
    EXPECT_TRUE(has(log, "decimal digits")) << log;
  }
  EXPECT_EQ(run_logged(dir, "fmt", {am, "compare", db.string(), db.string(), "--format", "xml"}, &log), 2) << log;
  write_file(dir / "text.db", "not a database");
  EXPECT_EQ(run_logged(dir, "text", {am, "compare", (dir / "text.db").string(), db.string()}, &log), 2) << log;
  EXPECT_TRUE(has(log, "not an SQLite database")) << log;
  // Two different files each default to their newest run: comparing a run with its copy works.
  std::filesystem::copy_file(db, dir / "copy.db");
  EXPECT_EQ(run_logged(dir, "copy", {am, "compare", db.string(), (dir / "copy.db").string(),
                                     "--fail-on-regression", "0"}, &log),
            0)
      << log;
}

// `report -o` and `compare -o` renamed their output over its target: pointed at the database
// (by its name, another spelling, a hard link, or its -wal) they wiped every stored run, exit 0.
TEST(CompareRuns, AnOutputThatIsTheDatabaseOrOneOfItsFilesIsRefusedAndTheDatabaseKept) {
  ScratchDir dir("output-over-db");
  const auto db = dir / "keep.db";
  const auto plan = write_bert_plan(dir / "tiny.toml", "tiny", 0.01, "[16]", "[\"f32\"]", "accuracy");
  run_plan(dir, plan, db, "one");
  run_plan(dir, plan, db, "two");
  const std::string am = coordinator_binary().string();
  const std::string before = read_file(db);
  ASSERT_FALSE(before.empty());
  std::filesystem::create_hard_link(db, dir / "hard.db");
  std::string log;
  int n = 0;
  for (const std::filesystem::path& target :
       {db, dir / "." / "keep.db", dir / "hard.db", std::filesystem::path(db.string() + "-wal")}) {
    for (const std::string format : {"json", "html"}) {
      const std::string name = "report-" + std::to_string(n++);
      EXPECT_EQ(run_logged(dir, name, {am, "report", "--db", db.string(), "--format", format, "-o", target.string()},
                           &log),
                2)
          << target << log;
      EXPECT_TRUE(has(log, "destroy the stored runs")) << log;
    }
    EXPECT_EQ(run_logged(dir, "compare-" + std::to_string(n++),
                         {am, "compare", db.string(), db.string(), "-o", target.string()}, &log),
              2)
        << target << log;
  }
  // --db through a symlink: the files SQLite and the lock keep beside its target are guarded.
  std::filesystem::create_symlink(db, dir / "link.db");
  for (const char* suffix : {"-wal", ".lock"}) {
    EXPECT_EQ(run_logged(dir, std::string("link") + suffix,
                         {am, "report", "--db", (dir / "link.db").string(), "-o", db.string() + suffix}, &log),
              2)
        << log;
  }
  // The message names the database a side file belongs to.
  EXPECT_EQ(run_logged(dir, "wal-named", {am, "report", "--db", db.string(), "-o", db.string() + "-wal"}, &log), 2);
  EXPECT_TRUE(has(log, db.string() + "-wal, a file of the database " + db.string() + ";")) << log;
  // Another database (a copy kept aside, another run's store) is not overwritten either.
  std::filesystem::copy_file(db, dir / "aside.db");
  const std::string aside = read_file(dir / "aside.db");
  EXPECT_EQ(run_logged(dir, "aside", {am, "report", "--db", db.string(), "-o", (dir / "aside.db").string()}, &log), 2)
      << log;
  EXPECT_TRUE(has(log, "is an SQLite database; it is not overwritten")) << log;
  EXPECT_EQ(run_logged(dir, "aside-c", {am, "compare", db.string(), db.string(), "-o", (dir / "aside.db").string()},
                       &log),
            2)
      << log;
  EXPECT_EQ(read_file(dir / "aside.db"), aside);
  // An output where none can be made is a usage error naming it, not an I/O fault naming a
  // temporary file.
  const std::string nowhere = (dir / "nodir" / "r.md").string();
  EXPECT_EQ(run_logged(dir, "nodir", {am, "report", "--db", db.string(), "-o", nowhere}, &log), 2) << log;
  EXPECT_TRUE(has(log, "-o " + nowhere + ": no directory")) << log;
  EXPECT_FALSE(has(log, ".tmp")) << log;
  EXPECT_EQ(run_logged(dir, "nodir-c", {am, "compare", db.string(), db.string(), "-o", nowhere}, &log), 2) << log;
  EXPECT_EQ(run_logged(dir, "isdir", {am, "report", "--db", db.string(), "-o", dir.path().string()}, &log), 2) << log;
  EXPECT_TRUE(has(log, "is a directory")) << log;
  EXPECT_EQ(read_file(db), before);
  EXPECT_EQ(run_logged(dir, "runs", {am, "runs", "--db", db.string()}, &log), 0) << log;
  EXPECT_TRUE(has(log, "one") && has(log, "two")) << log;
  // Beside the database is fine.
  EXPECT_EQ(run_logged(dir, "beside", {am, "report", "--db", db.string(), "-o", (dir / "keep.md").string()}, &log), 0)
      << log;
  // A database reached through a symlink reads as under its own name (it was exit 4, "cannot open
  // for reading (SQLite error 14)": the header check handed SQLite's VFS the link's path).
  std::filesystem::create_symlink(db.filename(), dir / "via-link.db");
  EXPECT_EQ(run_logged(dir, "link-runs", {am, "runs", "--db", (dir / "via-link.db").string()}, &log), 0) << log;
  EXPECT_TRUE(has(log, "one") && has(log, "two")) << log;
  EXPECT_EQ(run_logged(dir, "link-cmp", {am, "compare", db.string(), (dir / "via-link.db").string()}, &log), 0) << log;
  // A database whose name is the output's plus ".tmp" (the writer's temporary was that fixed
  // name: `report --db r.md.tmp -o r.md` emptied the database, then deleted it).
  const auto tmp_named = dir / "r.md.tmp";
  std::filesystem::copy_file(db, tmp_named);
  EXPECT_EQ(run_logged(dir, "tmpname", {am, "report", "--db", tmp_named.string(), "-o", (dir / "r.md").string()}, &log),
            0) << log;
  EXPECT_EQ(read_file(tmp_named), before);
  EXPECT_TRUE(has(read_file(dir / "r.md"), "two")) << read_file(dir / "r.md");
  EXPECT_EQ(run_logged(dir, "tmpname-c", {am, "compare", db.string(), db.string(), "-o", (dir / "r.md").string()}, &log),
            0) << log;
  EXPECT_EQ(read_file(tmp_named), before);
  // Standard output that cannot be written (a full disk): exit 4 and a message, for compare
  // (a CI gate was green on an empty comparison), runs and plan as for report (all were 0).
  for (const std::string& cmd : {"compare '" + db.string() + "' '" + db.string() + "'",
                                  "compare '" + db.string() + "' '" + db.string() + "' --fail-on-regression 10",
                                  "runs --db '" + db.string() + "'", "plan '" + plan.string() + "'",
                                  "report --db '" + db.string() + "'"}) {
    EXPECT_EQ(run_logged(dir, "full", {"/bin/bash", "-c", "'" + am + "' " + cmd + " > /dev/full"}, &log), 4)
        << cmd << ": " << log;
    EXPECT_TRUE(has(log, "standard output")) << cmd << ": " << log;
    // A reader that leaves early is no failure.
    EXPECT_EQ(run_logged(dir, "gone", {"/bin/bash", "-c", "set -o pipefail; '" + am + "' " + cmd + " | true"}, &log),
              0) << cmd << ": " << log;
  }
  // Through a pipe whose reader leaves at once: no error, as on standard output (was exit 4).
  const std::string piped = "set -o pipefail; '" + am + "' compare '" + db.string() + "' '" + db.string() +
                            "' -o /dev/stdout | true";
  EXPECT_EQ(run_logged(dir, "piped-c", {"/bin/bash", "-c", piped}, &log), 0) << log;
  EXPECT_FALSE(has(log, "error:")) << log;
}

// ---------------------------------------------------------------------------------------------
// Item 5: reports from a live run and from a database this process cannot write

TEST(LiveReports, ReportReadsWhileTheCoordinatorWritesResults) {
  ScratchDir dir("report-live");
  const auto db = dir / "live.db";
  // Six short jobs, one worker slot: results are stored one after another while we read.
  const auto plan = write_bert_plan(dir / "live.toml", "live", 0.3, "[16, 24, 32, 48, 64, 96]", "[\"f32\"]", "both");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  Process worker(worker_args(ep, "w1", dir), dir / "worker.log");

  int reports = 0;
  int saw_done_max = 0;
  bool saw_partial = false;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (serve.running() && std::chrono::steady_clock::now() < deadline) {
    int code = -1;
    const std::string out = run_capture({coordinator_binary().string(), "report", "--db", db.string(), "--format",
                                         "json"},
                                        &code, 30s);
    ASSERT_EQ(code, 0) << out << serve.log();
    nlohmann::json doc;
    ASSERT_NO_THROW(doc = nlohmann::json::parse(out)) << out;
    ++reports;
    int done = 0;
    for (const auto& r : doc["results"]) done += r["state"] == "done" ? 1 : 0;
    saw_done_max = std::max(saw_done_max, done);
    if (done > 0 && done < 6) saw_partial = true;
  }
  EXPECT_EQ(serve.wait(60s), 0) << serve.log();
  EXPECT_GE(reports, 2);
  EXPECT_TRUE(saw_partial) << "no report caught the run in progress (" << reports << " reports)";
  int code = -1;
  const std::string final_report = run_capture({coordinator_binary().string(), "report", "--db", db.string()}, &code);
  EXPECT_EQ(code, 0) << final_report;
  expect_exactly_one_terminal_result_per_job(db, 6);
}

// On a full file system a reader cannot make the -shm a WAL database needs: `report`, `runs`
// and `compare` failed with "disk I/O error" on an intact database. With no -wal holding data
// the file alone is the database, and it is read as on a read-only mount. The file system is a
// 1 MiB tmpfs in a mount namespace of the command's own (root only).
TEST(LiveReports, ReportReadsADatabaseOnAFullFileSystem) {
  if (geteuid() != 0 || !std::filesystem::exists("/usr/bin/unshare")) GTEST_SKIP() << "needs root and unshare";
  ScratchDir dir("report-full");
  const auto db = dir / "src.db";
  const auto plan = write_bert_plan(dir / "full.toml", "full", 0.01, "[16]", "[\"f32\"]", "accuracy");
  run_plan(dir, plan, db, "full");
  ASSERT_FALSE(std::filesystem::exists(db.string() + "-wal"));
  const auto mnt = dir / "mnt";
  std::filesystem::create_directories(mnt);
  const std::string script =
      "mount -t tmpfs -o size=1m tmpfs \"$1\" || exit 97; cp \"$2\" \"$1/r.db\" || exit 98; "
      "dd if=/dev/zero of=\"$1/filler\" bs=4k 2>/dev/null; df \"$1\" | tail -1; "
      "\"$3\" report --db \"$1/r.db\" --format json || exit $?; \"$3\" runs --db \"$1/r.db\"";
  int code = -1;
  const std::string out = run_capture({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                       script, "sh", mnt.string(), db.string(), coordinator_binary().string()},
                                      &code);
  if (code == 97) GTEST_SKIP() << "cannot mount a tmpfs here: " << out;
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(has(out, "\"run_id\": \"full\"")) << out;
  EXPECT_FALSE(has(out, "disk I/O error")) << out;
}

TEST(LiveReports, ReportReadsADatabaseInAReadOnlyDirectory) {
  ScratchDir dir("report-ro");
  const auto db = dir / "src.db";
  const auto plan = write_bert_plan(dir / "ro.toml", "ro", 0.01, "[16]", "[\"f32\"]", "accuracy");
  run_plan(dir, plan, db, "ro");
  ASSERT_FALSE(std::filesystem::exists(db.string() + "-wal"));   // closed cleanly: checkpointed

  const auto ro_dir = dir / "ro";
  std::filesystem::create_directories(ro_dir);
  const auto ro_db = ro_dir / "results.db";
  std::filesystem::copy_file(db, ro_db);
  ASSERT_EQ(chmod(ro_db.c_str(), 0444), 0);
  ASSERT_EQ(chmod(ro_dir.c_str(), 0555), 0);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);   // mkdtemp makes it 0700: let another user in

  // Root may write anything: run the report as `nobody`, for whom the permissions hold.
  std::vector<std::string> argv;
  if (geteuid() == 0) {
    if (!std::filesystem::exists("/usr/bin/setpriv")) GTEST_SKIP() << "running as root without setpriv";
    argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  for (const char* format : {"md", "json", "csv", "junit"}) {
    std::vector<std::string> cmd = argv;
    for (const std::string& a : {coordinator_binary().string(), std::string("report"), std::string("--db"),
                                 ro_db.string(), std::string("--format"), std::string(format)}) {
      cmd.push_back(a);
    }
    int code = -1;
    const std::string out = run_capture(cmd, &code);
    EXPECT_EQ(code, 0) << format << ": " << out;
    EXPECT_FALSE(has(out, "not an accelmatrix database")) << out;
    if (std::string(format) == "json") EXPECT_TRUE(has(out, "\"run_id\": \"ro\"")) << out;
  }
  // compare reads the same way.
  std::vector<std::string> cmd = argv;
  for (const std::string& a : {coordinator_binary().string(), std::string("compare"), db.string(), ro_db.string()}) {
    cmd.push_back(a);
  }
  int code = -1;
  const std::string out = run_capture(cmd, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(has(out, "**Verdict: no regression**")) << out;
  // Nothing was written beside the file.
  EXPECT_FALSE(std::filesystem::exists(ro_db.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(ro_db.string() + "-shm"));
  chmod(ro_dir.c_str(), 0755);   // so the scratch directory can be removed

  // A report written over a file this user may not write (read-only, another owner's) in a
  // directory they may write: refused, exit 2, the file kept (it was renamed over, exit 0).
  const auto shared = dir / "shared";
  std::filesystem::create_directories(shared);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  const auto kept = shared / "kept.md";
  {
    std::ofstream out(kept);
    out << "keep me\n";
  }
  ASSERT_EQ(chmod(kept.c_str(), 0444), 0);
  std::vector<std::string> over = argv;
  for (const std::string& a : {coordinator_binary().string(), std::string("report"), std::string("--db"),
                               ro_db.string(), std::string("-o"), kept.string()}) {
    over.push_back(a);
  }
  const std::string refused = run_capture(over, &code);
  EXPECT_EQ(code, 2) << refused;
  EXPECT_TRUE(has(refused, "not writable")) << refused;
  EXPECT_EQ(read_file(kept), "keep me\n");
}

}  // namespace
}  // namespace am::testing
