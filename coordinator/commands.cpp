#include "coordinator/commands.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/background_writer.h"
#include "common/build_id.h"
#include "common/clock.h"
#include "common/unique_fd.h"
#include "common/utf8.h"
#include "common/protocol.h"
#include "common/curve_files.h"
#include "common/endpoint.h"
#include "common/exit_codes.h"
#include "common/heap_trim.h"
#include "common/log.h"
#include "common/proc_stat.h"
#include "coordinator/db_lock.h"
#include "coordinator/local_workers.h"
#include "coordinator/output_guard.h"
#include "coordinator/progress_display.h"
#include "coordinator/report_compare.h"
#include "coordinator/report_csv.h"
#include "coordinator/report_json.h"
#include "coordinator/report_html.h"
#include "coordinator/report_junit.h"
#include "coordinator/report_markdown.h"
#include "coordinator/status_text.h"
#include "coordinator/store.h"
#include "jobs/names.h"
#include "jobs/plan_digest.h"
#include "jobs/selftest_models.h"

namespace am::coord {
namespace {

// How long `run` waits for its local workers to exit after the run is drained.
constexpr int64_t kLocalWorkerExitWaitMs = 15'000;

// Prints "error: <what>" and returns `exit_code`.
int fail(const std::string& what, int exit_code) {
  // Messages quote what users and peers wrote (a plan's names, a file path): made inert, so a
  // plan cannot clear or rewrite the screen of whoever checks it.
  std::cerr << "error: " << terminal_safe(what, /*keep_newlines=*/true) << "\n";
  return exit_code;
}
int fail(const Status& st) { return fail(st.message(), exit_code_for_error(st)); }

// "2 pass, 1 oom" for the closing line of run and serve.
std::string status_counts(const std::map<ResultStatus, int>& by_status) {
  std::string out;
  for (const auto& [status, count] : by_status) {
    if (count <= 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(count) + " " + std::string(to_string(status));
  }
  return out.empty() ? "no jobs" : out;
}

std::string fail_on_text(const FailOnSet& set) {
  std::string out;
  for (ResultStatus s : set) out += (out.empty() ? "" : ",") + std::string(to_string(s));
  return out;
}

// One line saying why a run's verdict is not 0 (nothing when it is).
void say_verdict(const std::string& which, const std::map<ResultStatus, int>& by_status, int code,
                 const FailOnSet& fail_on) {
  if (code == kExitJobsFailed) {
    std::cerr << which << ": " << status_counts(by_status) << "; exit 1: a job ended in a --fail-on status ("
              << fail_on_text(fail_on) << ")\n";
  } else if (code == kExitInfrastructure) {
    std::cerr << which << ": " << status_counts(by_status) << "; exit 4: a job was lost\n";
  } else if (code != kExitOk) {
    std::cerr << which << ": " << status_counts(by_status) << "; exit " << code << "\n";
  }
}

// The verdict of a run that ended without a storage fault, with one line saying why when it is
// not 0.
int run_exit_code(const Server& server, const FailOnSet& fail_on, const std::string& run_id) {
  if (!server.all_done()) return kExitInterrupted;
  const Progress p = server.progress();
  const int code = exit_code_for_statuses(p.by_status, fail_on);
  // The verdict is of every job served: the runs submitted to this coordinator too.
  std::string which = "run '" + run_id + "'";
  if (const std::vector<std::string> runs = server.runs(); runs.size() > 1) {
    which = "runs";
    for (const std::string& r : runs) which += (which == "runs" ? " '" : ", '") + r + "'";
  }
  say_verdict(which, p.by_status, code, fail_on);
  return code;
}

// Whether `pid` names a running process: kill(pid, 0) also succeeds for a zombie (a coordinator
// killed a moment ago that its parent has not reaped yet), which is no process that runs.
bool process_runs(int64_t pid) {
  if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0) return false;
  const std::optional<ProcStat> stat = read_proc_stat(static_cast<pid_t>(pid));
  return !stat || stat->state != 'Z';   // no procfs: kill() said it exists
}

// A coordinator's hold on its database: taken before the store is opened, kept until the
// command returns (after the server is gone).
Result<DbLock> lock_database(const std::filesystem::path& db, const char* command) {
  AM_ASSIGN_OR_RETURN(DbLock lock, DbLock::acquire(db, command));
  if (const auto& prev = lock.previous_holder()) {
    const bool same_host = prev->host == lock.holder().host;
    const bool still_alive = same_host && process_runs(prev->pid);
    get_logger("coordinator")->warn(
        "database {}: taking over from {}, which stopped without releasing it{}", db.string(), prev->describe(),
        still_alive ? " (that pid is alive again or reused; its lock is gone, so it is not a coordinator of this "
                      "database now)"
                    : "");
  }
  return lock;
}

// The plan is read and expanded on a thread of its own. glibc gives that thread a malloc arena
// of its own, so the plan's per-job specs (a kilobyte each) do not sit in the coordinator's main
// heap between the job entries made from them: once the plan is freed its arena empties and is
// returned whole. Read on the calling thread, a million-job plan left a kilobyte hole per job
// that the entries pinned (200k jobs: 193 MB free but resident in the main heap; docs/SCALE.md).
Result<jobs::Plan> load(const std::string& plan_file, const std::string& catalog_dir, const std::string& run_id = {}) {
  std::optional<Result<jobs::Plan>> loaded;
  std::thread reader([&] { loaded.emplace(jobs::load_plan(plan_file, catalog_dir, run_id)); });
  reader.join();
  return std::move(*loaded);
}

// The same for the text of a plan file already read, its jobs for `run_id` ("" = the plan's name).
Result<jobs::Plan> expand(const std::string& text, const std::string& plan_file, const std::filesystem::path& catalog,
                          const std::string& run_id) {
  std::optional<Result<jobs::Plan>> loaded;
  std::thread reader([&] { loaded.emplace(jobs::load_plan_text(text, plan_file, catalog, run_id)); });
  reader.join();
  return std::move(*loaded);
}

Status check_run_id(const std::string& run_id) {
  std::string problem = jobs::run_id_problem(run_id);
  return problem.empty() ? Status::Ok() : invalid_argument("--run: " + problem);
}

// The database's record of `run_id` (nothing when there is no such run or database, or it cannot
// be read: the plan is then expanded, which reports any problem properly).
std::optional<RunRecord> stored_run(const std::string& db_path, const std::string& run_id) {
  std::error_code ec;
  if (db_path.empty() || !std::filesystem::exists(db_path, ec)) return std::nullopt;
  auto store = Store::open_read_only(db_path);
  if (!store.ok()) return std::nullopt;
  auto run = (*store)->get_run(run_id);
  return run.ok() ? *run : std::nullopt;
}

// The plan expanded for the run `a` serves. Job ids hash the run id since 2026-12-07; before,
// they hashed the plan's name whatever the run id. A run made under `--run ID` (not the plan's
// name) by an older build keeps the ids it was made with: when the plan expanded for the run is
// not the run's stored plan but the plan's ids hashed from its name are, that expansion is the
// run's, and *older_ids says so (such a run keeps no digest: a resume checks ids against the run
// id). Other changes to such a run (an edited plan with --extend) expand for the run id.
Result<jobs::Plan> expand_for_run(const std::string& text, const ServeArgs& a, const std::filesystem::path& catalog,
                                  bool* older_ids) {
  *older_ids = false;
  AM_ASSIGN_OR_RETURN(jobs::Plan plan, expand(text, a.plan_file, catalog, a.run_id));
  if (a.run_id.empty() || a.run_id == plan.name) return plan;
  const std::optional<RunRecord> run = stored_run(a.server.db_path, a.run_id);
  const std::string stored = run ? run->plan_hash : std::string();
  if (stored.empty() || jobs::is_plan_hash_v1(stored) || stored == jobs::plan_hash(plan.jobs)) return plan;
  Result<jobs::Plan> by_name = expand(text, a.plan_file, catalog, plan.name);
  if (!by_name.ok() || jobs::plan_hash(by_name->jobs) != stored) return plan;
  get_logger("coordinator")->info("run {}: keeps the job ids it was made with (hashed from the plan's name '{}')",
                                  a.run_id, plan.name);
  by_name->run_id = a.run_id;   // these ids are the run's (its stored plan says so)
  *older_ids = true;
  return by_name;
}


// What serve and run hold while they run: the database lock outlives the server.
struct Coordinator {
  std::optional<DbLock> lock;
  std::unique_ptr<Server> server;
  FailOnSet fail_on;
  std::string run_id;
  std::unique_ptr<ProgressDisplay> display;   // null with --quiet
  // Frees what the start held (the expanded plan, the rows read ahead) and then trims the heap,
  // on a thread of its own: at a million jobs that was about a second between the endpoint and
  // the first ASSIGN (docs/SCALE.md). Joined first when the coordinator goes.
  std::jthread releaser;

  void finish_display() {
    if (display) display->finish();
  }
};

// Shared by serve and run: check the arguments and load the plan (errors: kExitUsage), lock the
// database, start the server, submit, announce the endpoint (errors: exit_code_for_error, which
// is kExitInfrastructure for I/O, a busy database or a failed bind). On error *exit_code says
// which.
Result<Coordinator> start_server(const ServeArgs& a, const char* command, int* exit_code) {
  *exit_code = kExitUsage;
  Coordinator c;
  AM_RETURN_IF_ERROR(validate_endpoint(a.server.bind, EndpointUse::kBind).with_context("--bind"));
  AM_RETURN_IF_ERROR(check_run_id(a.run_id));
  AM_RETURN_IF_ERROR(check_output_path(a.endpoint_file, a.server.db_path, "--endpoint-file"));
  c.fail_on = default_fail_on();
  if (!a.fail_on.empty()) {
    AM_ASSIGN_OR_RETURN(c.fail_on, parse_fail_on(a.fail_on));
  }
  // The plan's text is read once: the digest of what it expands from is of these bytes, and the
  // expansion, when one is needed, reads them too.
  AM_ASSIGN_OR_RETURN(const std::string plan_text, jobs::read_plan_file(a.plan_file));
  // Plans sent with `accelmatrix submit` are read against the same catalog as this one.
  const std::filesystem::path catalog =
      a.catalog_dir.empty() ? jobs::find_catalog_dir(a.plan_file) : std::filesystem::path(a.catalog_dir);
  // A restart of the run of the same plan text, catalog and build resumes it from the store
  // (Server::resume) instead of expanding the plan: at a million jobs the expansion was two of
  // the restart's three seconds (docs/SCALE.md "Restart from the store"). Whenever that cannot
  // be known, or the server finds otherwise, the plan is expanded and submitted as before.
  std::string digest;
  std::optional<jobs::PlanSummary> summary;
  if (auto d = jobs::plan_inputs_digest(plan_text, catalog, loaded_code_id()); d.ok()) {
    digest = std::move(d).value();
    if (auto parsed = jobs::load_plan_summary_text(plan_text, a.plan_file); parsed.ok()) summary = std::move(parsed).value();
  }
  const std::string resume_run = a.run_id.empty() ? (summary ? summary->name : std::string()) : a.run_id;
  const bool may_resume = summary && !resume_run.empty() && [&] {
    const std::optional<RunRecord> run = stored_run(a.server.db_path, resume_run);
    return run && run->plan_digest == digest;
  }();
  std::optional<jobs::Plan> plan;
  bool older_ids = false;   // expand_for_run: the run keeps ids an older build made
  std::optional<Result<PrefetchedJobs>> prefetched;
  if (!may_resume) {
    // A restart reads its stored jobs on a thread of its own while the plan expands on another:
    // a million-job restart spent about 2 s on each (docs/SCALE.md). The rows serve only if still
    // current when the submit reads them back (SubmitOptions::prefetched).
    PrefetchedJobs::Wanted wanted;
    if (!a.run_id.empty()) wanted.run_id = a.run_id;
    std::jthread prefetcher([&] { prefetched.emplace(PrefetchedJobs::read(a.server.db_path, &wanted)); });
    Result<jobs::Plan> loaded = expand_for_run(plan_text, a, catalog, &older_ids);
    {
      // A plan that does not load wants no run (the read stops at its next check).
      std::lock_guard<std::mutex> lock(wanted.mu);
      wanted.run_id = !loaded.ok() ? std::string() : a.run_id.empty() ? loaded->name : a.run_id;
    }
    prefetcher.join();
    AM_ASSIGN_OR_RETURN(plan, std::move(loaded));
    c.run_id = a.run_id.empty() ? plan->name : a.run_id;
  } else {
    // Nothing to overlap with: the resume reads the rows as it indexes them (a million rows read
    // ahead into a vector first took 1.5 s, twice as long).
    c.run_id = resume_run;
  }
  ServerOptions options = a.server;
  if (!a.curve_key_file.empty() || !a.curve_allow.empty()) {
    if (a.curve_key_file.empty() || a.curve_allow.empty()) {
      return invalid_argument("--curve-key and --curve-allow go together");
    }
    AM_ASSIGN_OR_RETURN(CurveKeyPair pair, load_curve_keypair(a.curve_key_file));
    AM_ASSIGN_OR_RETURN(auto allowed, load_curve_allow_list(a.curve_allow));
    options.curve = CurveServerConfig{pair.public_key, pair.secret_key, std::move(allowed)};
  }
  if (!a.curve_admin.empty()) {
    if (!options.curve) return invalid_argument("--curve-admin needs --curve-key and --curve-allow");
    AM_ASSIGN_OR_RETURN(options.admin_keys, load_curve_allow_list(a.curve_admin));
  }
  // Expanded on a thread of its own, as `load` does with the first plan, so that a submitted
  // plan's specs (a kilobyte each) are not in the main heap between the job entries made from
  // them; the server trims the heap once the plan is freed (Server: control_submit).
  options.plan_parser = [catalog](const std::string& text, const std::string& name, const std::string& run_id) {
    std::optional<Result<jobs::Plan>> parsed;
    std::thread parser([&] { parsed.emplace(jobs::load_plan_text(text, name, catalog, run_id)); });
    parser.join();
    return std::move(*parsed);
  };
  options.command = std::string("accelmatrix ") + command;
  *exit_code = kExitInfrastructure;
  AM_ASSIGN_OR_RETURN(DbLock lock, lock_database(options.db_path, command));
  c.lock.emplace(std::move(lock));
  auto created = Server::create(options);
  if (!created.ok()) {
    *exit_code = exit_code_for_error(created.status());
    return created.status();
  }
  c.server = std::move(created).value();
  PrefetchedJobs* read_ahead = prefetched && prefetched->ok() ? &prefetched->value() : nullptr;
  bool resumed = false;
  bool forget_digest = false;
  if (may_resume) {
    Result<ResumeOutcome> r = c.server->resume(*summary, c.run_id, digest, read_ahead);
    if (!r.ok()) {
      *exit_code = exit_code_for_error(r.status());
      return r.status();
    }
    resumed = *r == ResumeOutcome::kResumed;
    if (!resumed) {
      // After a doubt (logged) the expanded plan completes what the resume began, and the run
      // keeps no digest (the next start expands the plan, and stores one only when every row
      // agrees with it).
      forget_digest = *r == ResumeOutcome::kDoubted;
      Result<jobs::Plan> expanded = expand_for_run(plan_text, a, catalog, &older_ids);
      if (!expanded.ok()) {
        *exit_code = kExitUsage;
        return expanded.status();
      }
      plan = std::move(expanded).value();
      if (a.run_id.empty()) c.run_id = plan->name;
    }
  }
  if (!resumed) {
    SubmitOptions submit;
    submit.extend = a.extend;
    submit.prefetched = read_ahead;
    submit.plan_digest = digest;
    submit.forget_digest = forget_digest || older_ids;
    if (Status st = c.server->submit(*plan, c.run_id, submit); !st.ok()) {
      *exit_code = exit_code_for_error(st);
      return st;
    }
  }
  // A coordinator serving for good (`serve`) goes on with the runs submitted to it before it
  // stopped; `run` serves its own plan only.
  if (std::string_view(command) == "serve") {
    if (Result<int> again = c.server->resume_submitted_runs(); !again.ok()) {
      *exit_code = exit_code_for_error(again.status());
      return again.status();
    }
  } else if (Status st = c.server->warn_unserved_runs(); !st.ok()) {
    *exit_code = exit_code_for_error(st);
    return st;
  }
  AM_RETURN_IF_ERROR(c.lock->set_endpoint(c.server->endpoint()));
  Server* server = c.server.get();
  if (!a.endpoint_file.empty()) {
    AM_RETURN_IF_ERROR(write_file_atomically(a.endpoint_file, server->endpoint() + "\n"));
  }
  if (!a.quiet) {
    c.display = std::make_unique<ProgressDisplay>(progress_style_for_fd(STDERR_FILENO), stderr);
    ProgressDisplay* display = c.display.get();
    server->on_progress([display](const Progress& p) { display->update(p); });
  }
  c.releaser = std::jthread([plan = std::move(plan), prefetched = std::move(prefetched)]() mutable {
    plan.reset();
    prefetched.reset();
    release_free_heap();
  });
  *exit_code = kExitOk;
  return c;
}

// Writes the report to `out` from rows it never holds (a million-result run, docs/SCALE.md):
// JSON, CSV, Markdown and JUnit a piece at a time, HTML (compressed data) whole.
Status render_to(const std::filesystem::path& db, const std::string& format, std::string run_id,
                 const TextSink& out) {
  if (format != "md" && format != "json" && format != "csv" && format != "junit" && format != "html") {
    return invalid_argument("--format: unknown format '" + format + "' (expected md, json, csv, junit or html)");
  }
  // Read-only: a report never migrates or writes, so it works beside a running coordinator and
  // on a database it may not write (file mode 0444, read-only directory).
  AM_ASSIGN_OR_RETURN(auto store, Store::open_read_only(db));
  // One snapshot for everything the report reads: a coordinator committing meanwhile does not
  // change the rows between the walks of a streaming report.
  return store->in_read_snapshot([&]() -> Status {
    std::optional<RunRecord> run;
    if (run_id.empty()) {
      AM_ASSIGN_OR_RETURN(auto runs, store->list_runs());
      if (runs.empty()) return not_found(db.string() + " holds no runs");
      run = runs.front();
    } else {
      AM_ASSIGN_OR_RETURN(run, store->get_run(run_id));
      if (!run) return not_found("no run '" + run_id + "' in " + db.string());
    }
    // The capability records name the hardware classes the matrix's columns are.
    AM_ASSIGN_OR_RETURN(auto workers, store->list_workers());
    const ReportRowSource source = [&](const ReportDocumentKeys& keys, const ReportRowVisitor& visit) {
      return store->for_each_report_row(run->run_id, keys, visit);
    };
    if (format == "json") return write_json_report(*run, workers, source, out);
    if (format == "csv") return write_csv_report(*run, source, out);
    if (format == "md") return write_markdown_report(*run, workers, source, out);
    if (format == "junit") return write_junit_report(*run, source, out);
    return write_html_report(*run, workers, source, out);
  });
}

Result<std::string> render(const std::filesystem::path& db, const std::string& format, std::string run_id) {
  std::string text;
  AM_RETURN_IF_ERROR(render_to(db, format, std::move(run_id), [&](std::string_view piece) {
    text.append(piece);
    return Status::Ok();
  }));
  return text;
}

// The dashboard beside the database, named after it: accelmatrix.db -> accelmatrix.html. A
// dashboard that cannot be made is a warning, not a failure of the run.
void write_dashboard(const std::filesystem::path& db_path, const std::string& run_id) {
  std::filesystem::path html_path = std::filesystem::path(db_path).replace_extension(".html");
  if (html_path == db_path) html_path += ".html";  // never over the DB
  if (auto html = render(db_path, "html", run_id); !html.ok()) {
    std::cerr << "warning: no dashboard: " << html.status().message() << "\n";
  } else if (Status written = write_file_atomically(html_path, *html); !written.ok()) {
    std::cerr << "warning: no dashboard: " << written.message() << "\n";
  } else {
    std::cerr << "dashboard: " << html_path.string() << "\n";
  }
}

}  // namespace

int cmd_serve(const ServeArgs& args, const std::atomic<bool>& stop) {
  int code = kExitOk;
  auto started = start_server(args, "serve", &code);
  if (!started.ok()) return fail(started.status().message(), code);
  Coordinator& c = *started;
  if (!args.quiet) std::cerr << "serving run '" << c.run_id << "' on " << c.server->endpoint() << "\n";
  // A serve loop that returns an error lost its store or its socket: infrastructure either way.
  Status st = c.server->serve(stop);
  c.finish_display();
  if (!st.ok()) return fail(st.message(), kExitInfrastructure);
  const int verdict = run_exit_code(*c.server, c.fail_on, c.run_id);
  if (verdict == kExitInterrupted) {
    // Said as `run` says it, quiet or not: the exit code alone leaves a person guessing.
    const Progress p = c.server->progress();
    const std::vector<std::string> runs = c.server->runs();
    std::cerr << "serve stopped before " << (runs.size() > 1 ? "its " + std::to_string(runs.size()) + " runs were"
                                                             : std::string("the run was"))
              << " complete (" << p.done << " of " << p.total << " job(s) done"
              << (p.done == p.total ? "; plan jobs or the expected workers and classes wait for hardware" : "")
              << "); serve the same plan on the same database again to resume"
              << (runs.size() > 1 ? " (the submitted runs are served again with it)" : "") << "\n";
  }
  return verdict;
}

// This machine as a `run`'s state directory records it (`<dir>/host`): its hostname and boot id,
// so a temp directory shared between hosts (an NFS TMPDIR, containers sharing /tmp) never has
// another machine's live run taken for a dead one of this machine.
static std::string this_machine() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return std::string(host) + " " + boot;
}

// Whether a process holds the lock of any worker in `dir` (worker/worker_id_lock.cpp).
static bool a_worker_holds(const std::filesystem::path& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("worker-", 0) != 0 || name.size() < 5 || name.compare(name.size() - 5, 5, ".lock") != 0) continue;
    UniqueFd fd(::open(it->path().c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;
    struct flock probe {};
    probe.l_type = F_RDLCK;
    probe.l_whence = SEEK_SET;
    if (fcntl(fd.get(), F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK) return true;
  }
  return false;
}

// The local workers' state directories (logs, scratch, their secrets) of `run`s that ended
// without removing theirs (killed, or interrupted: the next run's workers have other ids and
// never read them): those of this user and this machine whose process is gone and none of whose
// workers still runs. A directory whose pid is alive again (reused) is left, and so is one the run
// kept for its logs (`KEEP`, said when it ended).
static void remove_stale_run_dirs(const std::filesystem::path& temp_dir) {
  std::error_code ec;
  const std::string prefix = "accelmatrix-run-";
  const std::string machine = this_machine();
  for (std::filesystem::directory_iterator it(temp_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code exists;
    if (std::filesystem::exists(it->path() / "KEEP", exists)) continue;
    std::string recorded;
    if (std::ifstream host(it->path() / "host"); host) std::getline(host, recorded);
    if (recorded != machine || a_worker_holds(it->path())) continue;
    std::error_code removed;
    std::filesystem::remove_all(it->path(), removed);
  }
}

int cmd_run(const RunArgs& args, const std::atomic<bool>& stop) {
  remove_stale_run_dirs(std::filesystem::temp_directory_path());
  ServeArgs serve = args.serve;
  serve.server.exit_when_done = true;
  serve.server.expect_workers = args.workers;
  int code = kExitOk;
  auto started = start_server(serve, "run", &code);
  if (!started.ok()) return fail(started.status().message(), code);
  Coordinator& c = *started;
  const std::string run_id = c.run_id;

  // We hold the database: no other coordinator runs on it, so the local workers of an earlier
  // `run` on this host that still hold leases (it was killed, or crashed) can never deliver
  // them. Their jobs go back to the queue now instead of when the leases run out.
  const int64_t self = getpid();
  char host_buf[256] = {};
  ::gethostname(host_buf, sizeof host_buf - 1);
  const std::string host = host_buf;
  auto reclaimed = c.server->reclaim_leases(
      [self, host](const std::string& worker_id, const std::string& worker_host) {
        const std::optional<int64_t> pid = local_worker_run_pid(worker_id);
        return pid && *pid != self && worker_host == host;
      },
      "its run stopped without releasing it; the worker is gone");
  if (!reclaimed.ok()) return fail(reclaimed.status().message(), kExitInfrastructure);

  const auto progress = c.server->progress();
  if (c.server->all_done()) {
    // Nothing to do: no workers, no serving, the run's record untouched; the report and the
    // verdict of what is stored.
    std::cerr << "run '" << run_id << "': all " << progress.total << " job(s) already done\n";
    c.server.reset();
    auto md = render(serve.server.db_path, "md", run_id);
    if (!md.ok()) return fail(md.status());
    std::cout << *md;
    write_dashboard(serve.server.db_path, run_id);
    const int verdict = exit_code_for_statuses(progress.by_status, c.fail_on);
    if (auto skipped = progress.by_status.find(ResultStatus::kSkipped);
        skipped != progress.by_status.end() && skipped->second > 0) {
      // A skip is the run's final word on that job (no eligible hardware when it ran): flags
      // that would make hardware eligible now (--allow-commands) change nothing here.
      std::cerr << "run '" << run_id << "': " << skipped->second
                << " job(s) stay skipped; to run them with other workers or flags, start a new run (--run NAME)"
                   " or use another --db\n";
    }
    say_verdict("run '" + run_id + "'", progress.by_status, verdict, c.fail_on);
    return verdict;
  }
  std::cerr << "run '" << run_id << "': " << progress.total << " job(s), " << progress.done
            << " already done; " << args.workers << " local worker(s) on "
            << c.server->endpoint() << "\n";

  LocalWorkerOptions lw;
  lw.worker_binary = sibling_worker_binary();
  lw.endpoint = c.server->endpoint();
  lw.count = args.workers;
  lw.id_prefix = "local-" + std::to_string(self);
  lw.state_dir = std::filesystem::temp_directory_path() / ("accelmatrix-run-" + std::to_string(self));
  lw.log_level = args.worker_log_level;
  lw.heartbeat_interval_ms = serve.server.heartbeat_interval_ms;
  lw.allow_commands = args.allow_commands;
  {
    // Which machine this directory is of, for the sweep of a later run (remove_stale_run_dirs).
    std::error_code made;
    std::filesystem::create_directories(lw.state_dir, made);
    std::ofstream(lw.state_dir / "host") << this_machine() << "\n";
  }
  auto workers = LocalWorkers::start(lw);
  if (!workers.ok()) return fail(workers.status().message(), kExitInfrastructure);

  Status st = c.server->serve(stop);
  c.finish_display();
  const bool done = c.server->all_done();
  const int verdict = st.ok() ? run_exit_code(*c.server, c.fail_on, run_id) : kExitInfrastructure;
  bool keep_logs = false;
  if (!done) {
    // Stopped (Ctrl-C reaches the workers too; SIGTERM to `run` alone does not): the leases are
    // released already, so the workers need not finish anything.
    workers->stop();
  } else if (!workers->wait_all(kLocalWorkerExitWaitMs)) {
    std::cerr << "warning: local workers did not exit in time and were stopped; logs in "
              << lw.state_dir.string() << "\n";
    keep_logs = true;
    std::ofstream(lw.state_dir / "KEEP") << "logs kept: the local workers did not exit in time\n";
  }
  c.server.reset();
  if (!st.ok()) return fail(st.message(), kExitInfrastructure);

  auto md = render(serve.server.db_path, "md", run_id);
  if (!md.ok()) return fail(md.status());
  std::cout << *md;
  write_dashboard(serve.server.db_path, run_id);
  if (!done) {
    std::cerr << "run interrupted before every job finished; run the same command again to resume\n";
    return kExitInterrupted;
  }
  std::error_code ec;
  if (!keep_logs) std::filesystem::remove_all(lw.state_dir, ec);
  return verdict;
}

namespace {

int control_failed(const Status& st) { return fail(st); }

}  // namespace

int cmd_status(const ControlArgs& args, const std::atomic<bool>& stop) {
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  for (;;) {
    auto doc = control_request(args.target, "status");
    if (!doc.ok()) return control_failed(doc.status());
    std::string text = args.json ? doc->dump(2) + "\n" : render_status_text(*doc);
    // --watch on a terminal redraws in place; elsewhere each refresh is appended.
    if (args.watch_s > 0 && tty) text = "\x1b[H\x1b[2J" + text;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (args.watch_s <= 0) return kExitOk;
    const int64_t until = steady_ms() + static_cast<int64_t>(args.watch_s * 1000.0);
    while (steady_ms() < until) {
      if (stop.load()) return kExitOk;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (stop.load()) return kExitOk;
  }
}

int cmd_submit(const ControlArgs& args) {
  if (Status st = check_run_id(args.run_id); !st.ok()) return fail(st.message(), kExitUsage);
  std::error_code ec;
  if (std::filesystem::is_directory(args.plan_file, ec)) return fail(args.plan_file + ": is a directory", kExitUsage);
  std::ifstream in(args.plan_file, std::ios::binary);
  if (!in) return fail(args.plan_file + ": cannot open: " + std::strerror(errno), kExitUsage);
  // Read at most one byte past the limit (works for pipes and devices, which have no size).
  std::string text(proto::kMaxStringBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return fail(args.plan_file + ": read failed", kExitUsage);
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > proto::kMaxStringBytes) {
    return fail(args.plan_file + ": larger than " + std::to_string(proto::kMaxStringBytes) +
                    " bytes, the most a submitted plan may have (start a coordinator with serve --plan for larger ones)",
                kExitUsage);
  }
  nlohmann::json request{{"plan", text}, {"name", args.plan_file}, {"extend", args.extend}};
  if (!args.run_id.empty()) request["run"] = args.run_id;
  auto reply = control_request(args.target, "submit", request);
  if (!reply.ok()) return control_failed(reply.status());
  std::cout << "submitted run '" << reply->value("run_id", std::string("?")) << "': " << reply->value("jobs", 0)
            << " job(s), " << reply->value("new_jobs", 0) << " new, " << reply->value("remaining", 0) << " to run";
  // Each-class / each-device plan jobs become jobs as hardware of their backend registers.
  if (const int unplaced = reply->value("unplaced", 0); unplaced > 0) {
    std::cout << "; " << unplaced << " plan job(s) wait for hardware to register";
  }
  std::cout << "\n";
  return kExitOk;
}

int cmd_cancel(const ControlArgs& args) {
  auto reply = control_request(args.target, "cancel", {{"id", args.id}});
  if (!reply.ok()) return control_failed(reply.status());
  const int cancelled = reply->value("cancelled", 0);
  const int running = reply->value("stopped_running", 0);
  if (reply->contains("job_id")) {
    if (cancelled == 0) {
      std::cout << "job " << args.id << " already ended" << (reply->contains("status") ? " " + (*reply)["status"].get<std::string>() : std::string()) << "; nothing to cancel\n";
    } else {
      std::cout << "cancelled job " << args.id << (running ? " (it was running; its process is being stopped)" : "") << "\n";
    }
  } else if (reply->contains("plan_job_id")) {
    std::cout << "cancelled " << cancelled << " job(s) made of plan job " << args.id << " in run '"
              << reply->value("run_id", std::string()) << "'";
    if (running > 0) std::cout << " (" << running << " were running; their processes are being stopped)";
    std::cout << (reply->value("durable", true) ? "; hardware registering later gets none of it\n"
                                                 : "; hardware registering later gets none of it while this "
                                                   "coordinator runs (jobs were made of it already)\n");
  } else {
    std::cout << "cancelled " << cancelled << " job(s) of run '" << args.id << "'";
    if (running > 0) std::cout << " (" << running << " were running; their processes are being stopped)";
    std::cout << "\n";
  }
  return kExitOk;
}

int cmd_drain(const ControlArgs& args) {
  auto reply = control_request(args.target, "drain", {{"worker", args.id}});
  if (!reply.ok()) return control_failed(reply.status());
  std::cout << "worker " << args.id << " drained: no new jobs; it finishes the " << reply->value("holding", 0)
            << " job(s) it holds, then leaves\n";
  return kExitOk;
}

int cmd_release(const ControlArgs& args) {
  // WORKER or WORKER/DEVICE: device keys hold a ':' ("cpu:0"), worker ids may hold a '/'.
  std::string worker = args.id;
  std::string device;
  if (auto slash = args.id.rfind('/'); slash != std::string::npos && args.id.find(':', slash) != std::string::npos) {
    worker = args.id.substr(0, slash);
    device = args.id.substr(slash + 1);
  }
  if (worker.empty() || worker.back() == '/') {
    return fail("release: '" + args.id + "' is not WORKER or WORKER/DEVICE (e.g. box1 or box1/opencl:0)", kExitUsage);
  }
  nlohmann::json request{{"worker", worker}};
  if (!device.empty()) request["device"] = device;
  auto reply = control_request(args.target, "release", request);
  if (!reply.ok()) return control_failed(reply.status());
  std::string devices;
  for (const auto& d : reply->value("devices", nlohmann::json::array())) {
    devices += (devices.empty() ? "" : ", ") + (d.is_string() ? d.get<std::string>() : d.dump());
  }
  const bool peer = reply->value("worker_quarantine_lifted", false);
  if (devices.empty() && !peer) {
    std::cout << (device.empty() ? worker : worker + "/" + device) << " was not quarantined; nothing to release\n";
  } else {
    std::cout << "released " << worker << ": " << (devices.empty() ? "no device was quarantined" : "devices " + devices)
              << (peer ? "; its silent-peer quarantine lifted" : "") << "\n";
  }
  return kExitOk;
}

int cmd_runs(const RunsArgs& args) {
  auto store = Store::open_read_only(args.db);
  if (!store.ok()) return fail(store.status());
  auto runs = (*store)->list_runs();
  if (!runs.ok()) return fail(runs.status());
  auto counts = (*store)->run_counts();
  if (!counts.ok()) return fail(counts.status());
  if (args.json) {
    std::cout << render_runs_json(*runs, *counts).dump(2) << "\n";
  } else if (runs->empty()) {
    std::cout << args.db << " holds no runs\n";
  } else {
    std::cout << render_runs_text(*runs, *counts);
  }
  return kExitOk;
}

int cmd_keys(const KeysArgs& args) {
  auto pair = write_curve_keypair(args.out_dir, args.name);
  if (!pair.ok()) return fail(pair.status());
  const auto dir = std::filesystem::path(args.out_dir);
  std::cout << "wrote " << (dir / (args.name + ".key")).string() << " (secret, keep it on this box) and "
            << (dir / (args.name + ".pub")).string() << " (give it to the other side)\n";
  return kExitOk;
}

int cmd_report(const ReportArgs& args) {
  if (Status st = check_output_path(args.output, args.db, "-o"); !st.ok()) return fail(st);
  // The report is made on this thread and written on another (BackgroundWriter): at a million
  // results the write system calls are a seventh of the work (docs/SCALE.md).
  if (args.output.empty()) {
    // A write error (a full disk) fails the command. A reader that closed the pipe (`| head`)
    // took what it wanted: the report stops there, quietly and with exit 0 (a `set -o pipefail`
    // script is not failed by a `head` it asked for).
    std::cout.flush();   // nothing of ours is buffered there; the report goes to the descriptor
    std::atomic<bool> reader_gone{false};
    BackgroundWriter out([&reader_gone](std::string_view piece) -> Status {
      std::size_t done = 0;
      while (done < piece.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, piece.data() + done, piece.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EPIPE) {
          reader_gone = true;
          return io_error("standard output was closed before the report was complete (broken pipe)");
        }
        if (n <= 0) return io_error(std::string("cannot write the report to standard output: ") + std::strerror(errno));
        done += static_cast<std::size_t>(n);
      }
      return Status::Ok();
    });
    Status st = render_to(args.db, args.format, args.run_id, [&](std::string_view piece) { return out.write(piece); });
    const Status written = out.finish();
    if (reader_gone) return kExitOk;
    if (!written.ok()) return fail(written.message(), kExitInfrastructure);
    if (!st.ok()) return fail(st);
    return kExitOk;
  }
  // Into a temporary beside the output, renamed over it only when complete: a failed report leaves
  // an earlier one in place.
  auto file = AtomicFileWriter::create(args.output);
  if (!file.ok()) return fail(file.status().message(), kExitInfrastructure);
  BackgroundWriter out([&](std::string_view piece) { return file->append(piece); });
  Status st = render_to(args.db, args.format, args.run_id, [&](std::string_view piece) { return out.write(piece); });
  Status written = out.finish();
  if (written.ok() && st.ok()) written = file->commit();
  // `-o /dev/stdout | head`: the same as the report on standard output above.
  if (file->reader_gone()) return kExitOk;
  if (!written.ok()) return fail(written.message(), kExitInfrastructure);
  if (!st.ok()) return fail(st);
  return kExitOk;
}

namespace {

// The run a compare side reads: `wanted` when given, else the newest run that is not `avoid`.
Result<RunRecord> pick_run(Store& store, const std::string& db, const std::string& wanted,
                           const std::string& avoid, const char* flag) {
  if (!wanted.empty()) {
    AM_ASSIGN_OR_RETURN(auto run, store.get_run(wanted));
    if (!run) return not_found(std::string(flag) + ": no run '" + wanted + "' in " + db);
    return *run;
  }
  AM_ASSIGN_OR_RETURN(auto runs, store.list_runs());
  for (const RunRecord& r : runs) {
    if (r.run_id != avoid) return r;
  }
  if (runs.empty()) return not_found(db + " holds no runs");
  return not_found(db + " holds only run '" + avoid +
                   "'; compare needs two: run a plan into it again under another --run id, or compare with "
                   "a second database");
}

struct RenderedComparison {
  std::string text;
  bool fails_gate = false;   // --fail-on-regression given and a regression found
};

Result<RenderedComparison> render_comparison(const CompareArgs& a) {
  if (a.format != "md" && a.format != "json") {
    return invalid_argument("--format: unknown format '" + a.format + "' (expected md or json)");
  }
  CompareOptions options;
  options.alpha = a.alpha;
  if (a.fail_on_regression_pct) {
    options.gate = true;
    options.threshold_pct = *a.fail_on_regression_pct;
  }   // else: the verdict at kDefaultRegressionThresholdPct, exit 0 whatever it says
  AM_ASSIGN_OR_RETURN(auto base_store, Store::open_read_only(a.base_db));
  AM_ASSIGN_OR_RETURN(auto new_store, Store::open_read_only(a.new_db));
  std::error_code ec;
  const bool same_db = std::filesystem::equivalent(a.base_db, a.new_db, ec);

  CompareSide base, fresh;
  base.db = a.base_db;
  fresh.db = a.new_db;
  if (same_db && a.new_run.empty()) {
    // One database: the new side is the newest run other than the named base (or the newest).
    AM_ASSIGN_OR_RETURN(fresh.run, pick_run(*new_store, a.new_db, "", a.base_run, "--new-run"));
    AM_ASSIGN_OR_RETURN(base.run, pick_run(*base_store, a.base_db, a.base_run, fresh.run.run_id, "--base-run"));
  } else {
    AM_ASSIGN_OR_RETURN(fresh.run, pick_run(*new_store, a.new_db, a.new_run, "", "--new-run"));
    AM_ASSIGN_OR_RETURN(base.run, pick_run(*base_store, a.base_db, a.base_run, same_db ? fresh.run.run_id : "",
                                           "--base-run"));
  }
  if (same_db && base.run.run_id == fresh.run.run_id) {
    return invalid_argument("--base-run and --new-run name the same run '" + base.run.run_id + "' of " + a.base_db);
  }
  // Each row keeps what compare reads (compare_document_keys) and its spec as text, not its
  // whole documents or its log.
  const auto read_rows = [](Store& store, const std::string& run_id, CompareSide* side) {
    return store.for_each_report_row(run_id, compare_document_keys(), [&](const ReportRow& r, const ReportRowTexts& t) {
      side->rows.push_back(r);
      side->rows.back().log_tail.clear();
      side->rows.back().log_tail.shrink_to_fit();
      side->spec_texts.emplace_back(t.spec_json);
      return Status::Ok();
    });
  };
  AM_RETURN_IF_ERROR(read_rows(*base_store, base.run.run_id, &base));
  AM_RETURN_IF_ERROR(read_rows(*new_store, fresh.run.run_id, &fresh));
  AM_ASSIGN_OR_RETURN(Comparison c, compare_runs(base, fresh, options));
  RenderedComparison out;
  out.text = a.format == "json" ? render_compare_json_text(c) : render_compare_markdown(c);
  out.fails_gate = c.regression && options.gate;
  return out;
}

}  // namespace

int cmd_compare(const CompareArgs& args) {
  for (const std::string& db : {args.base_db, args.new_db}) {
    if (Status st = check_output_path(args.output, db, "-o"); !st.ok()) return fail(st);
  }
  auto rendered = render_comparison(args);
  if (!rendered.ok()) return fail(rendered.status());
  const int code = rendered->fails_gate ? kExitJobsFailed : kExitOk;
  if (args.output.empty()) {
    std::cout << rendered->text;
  } else {
    // Renamed over the output only when complete, as `report -o` does; a pipe's reader that
    // left early (`-o /dev/stdout | head`) is no failure, as on standard output.
    auto file = AtomicFileWriter::create(args.output);
    if (!file.ok()) return fail(file.status().message(), kExitInfrastructure);
    Status st = file->append(rendered->text);
    if (st.ok()) st = file->commit();
    if (!st.ok() && !file->reader_gone()) return fail(st.message(), kExitInfrastructure);
  }
  if (code != kExitOk) std::cerr << "compare: regression found (exit 1)\n";
  return code;
}

int cmd_plan(const PlanArgs& args) {
  if (Status st = check_run_id(args.run_id); !st.ok()) return fail(st.message(), kExitUsage);
  auto plan = load(args.plan_file, args.catalog_dir, args.run_id);
  if (!plan.ok()) return fail(plan.status().message(), kExitUsage);   // a plan that does not load is input
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : plan->jobs) out.push_back({{"job_id", j.job_id}, {"spec", jobs::to_json(j.spec)}});
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  // Labels come from the plan file: printed inert (common/utf8.h terminal_safe()).
  std::printf("plan '%s' (%s): %zu job(s)", terminal_safe(plan->name).c_str(), terminal_safe(plan->source.string()).c_str(),
              plan->jobs.size());
  std::size_t placed = 0;
  for (const auto& j : plan->jobs) placed += j.spec.placement != jobs::Placement::kAny;
  // docs/PLANS.md "Placement": each-class/each-device jobs are made per class/device at run time.
  if (placed > 0) std::printf(", %zu of them run once per hardware class or device (placement)", placed);
  std::printf("\n");
  if (placed > 0) {
    std::printf("(each of those gets a job of its own id per class or device as hardware registers; "
                "`accelmatrix cancel` takes the id below for all of them)\n");
  }
  std::printf("%-16s  %-18s  %-14s  %-7s  %-6s  %5s  %6s  %-8s  %-11s  %s\n", "job_id", "model",
              "architecture", "backend", "prec", "batch", "seq", "mode", "placement", "notes");
  for (const auto& j : plan->jobs) {
    const auto& s = j.spec;
    std::printf("%-16s  %-18s  %-14s  %-7s  %-6s  %5d  %6d  %-8s  %-11s  %s\n", j.job_id.c_str(),
                terminal_safe(s.model).c_str(), std::string(jobs::shown_architecture(s.model, s.architecture)).c_str(), s.backend.c_str(), std::string(jobs::to_string(s.precision)).c_str(),
                s.batch, s.seq_len, s.mode.c_str(), std::string(jobs::to_string(s.placement)).c_str(),
                s.scaled ? "scaled" : "");
  }
  return kExitOk;
}

}  // namespace am::coord
