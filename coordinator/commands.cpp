#include "coordinator/commands.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "common/curve_files.h"
#include "common/log.h"
#include "coordinator/local_workers.h"
#include "coordinator/report_csv.h"
#include "coordinator/report_json.h"
#include "coordinator/report_junit.h"
#include "coordinator/report_markdown.h"
#include "coordinator/store.h"

namespace am::coord {
namespace {

// How long `run` waits for its local workers to exit after the run is drained.
constexpr int64_t kLocalWorkerExitWaitMs = 15'000;

int fail(const std::string& what) {
  std::cerr << "error: " << what << "\n";
  return 1;
}

// Exit code of serve and run on an infrastructure fault such as losing the database
// (DECISIONS.md: 4 = lost or infrastructure fault).
constexpr int kExitInfrastructureFault = 4;

void print_progress(const Progress& p) {
  static std::string last;
  if (p.last_event.empty() || p.last_event == last) return;
  last = p.last_event;
  std::fprintf(stderr, "[%*d/%d] %s\n", static_cast<int>(std::to_string(p.total).size()), p.done,
               p.total, p.last_event.c_str());
}

Result<jobs::Plan> load(const std::string& plan_file, const std::string& catalog_dir) {
  return jobs::load_plan(plan_file, catalog_dir);
}

// Shared by serve and run: load the plan, start the server, submit, announce the endpoint.
Result<std::unique_ptr<Server>> start_server(const ServeArgs& a, std::string* run_id) {
  AM_ASSIGN_OR_RETURN(jobs::Plan plan, load(a.plan_file, a.catalog_dir));
  *run_id = a.run_id.empty() ? plan.name : a.run_id;
  ServerOptions options = a.server;
  if (!a.curve_key_file.empty() || !a.curve_allow.empty()) {
    if (a.curve_key_file.empty() || a.curve_allow.empty()) {
      return invalid_argument("--curve-key and --curve-allow go together");
    }
    AM_ASSIGN_OR_RETURN(CurveKeyPair pair, load_curve_keypair(a.curve_key_file));
    AM_ASSIGN_OR_RETURN(auto allowed, load_curve_allow_list(a.curve_allow));
    options.curve = CurveServerConfig{pair.public_key, pair.secret_key, std::move(allowed)};
  }
  AM_ASSIGN_OR_RETURN(auto server, Server::create(options));
  AM_RETURN_IF_ERROR(server->submit(plan, *run_id));
  if (!a.endpoint_file.empty()) {
    const std::string tmp = a.endpoint_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << server->endpoint() << "\n";
      if (!out) return io_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), a.endpoint_file.c_str()) != 0) {
      return io_error("cannot write " + a.endpoint_file);
    }
  }
  if (!a.quiet) server->on_progress(print_progress);
  return server;
}

Result<std::string> render(const std::filesystem::path& db, const std::string& format,
                           std::string run_id) {
  if (format != "md" && format != "json" && format != "csv" && format != "junit") {
    return invalid_argument("--format: unknown format '" + format + "' (expected md, json, csv or junit)");
  }
  if (!std::filesystem::exists(db)) return not_found("database " + db.string() + " does not exist");
  AM_ASSIGN_OR_RETURN(auto store, Store::open(db));
  std::optional<RunRecord> run;
  if (run_id.empty()) {
    AM_ASSIGN_OR_RETURN(auto runs, store->list_runs());
    if (runs.empty()) return not_found(db.string() + " holds no runs");
    run = runs.front();
  } else {
    AM_ASSIGN_OR_RETURN(run, store->get_run(run_id));
    if (!run) return not_found("no run '" + run_id + "' in " + db.string());
  }
  AM_ASSIGN_OR_RETURN(auto rows, store->report_rows(run->run_id));
  if (format == "json") return render_json(*run, rows).dump(2) + "\n";
  if (format == "csv") return render_csv(*run, rows);
  if (format == "junit") return render_junit(*run, rows);
  return render_markdown(*run, rows);
}

}  // namespace

int cmd_serve(const ServeArgs& args, const std::atomic<bool>& stop) {
  std::string run_id;
  auto server = start_server(args, &run_id);
  if (!server.ok()) return fail(server.status().message());
  if (!args.quiet) std::cerr << "serving run '" << run_id << "' on " << (*server)->endpoint() << "\n";
  Status st = (*server)->serve(stop);
  if (!st.ok()) {
    fail(st.message());
    return (*server)->storage_failed() ? kExitInfrastructureFault : 1;
  }
  return (*server)->all_done() ? 0 : 3;
}

int cmd_run(const RunArgs& args, const std::atomic<bool>& stop) {
  std::string run_id;
  ServeArgs serve = args.serve;
  serve.server.exit_when_done = true;
  serve.server.expect_workers = args.workers;
  auto server = start_server(serve, &run_id);
  if (!server.ok()) return fail(server.status().message());
  const auto progress = (*server)->progress();
  std::cerr << "run '" << run_id << "': " << progress.total << " job(s), " << progress.done
            << " already done; " << args.workers << " local worker(s) on "
            << (*server)->endpoint() << "\n";

  LocalWorkerOptions lw;
  lw.worker_binary = sibling_worker_binary();
  lw.endpoint = (*server)->endpoint();
  lw.count = args.workers;
  lw.id_prefix = "local-" + std::to_string(getpid());
  lw.state_dir = std::filesystem::temp_directory_path() / ("accelmatrix-run-" + std::to_string(getpid()));
  lw.log_level = args.worker_log_level;
  lw.heartbeat_interval_ms = serve.server.heartbeat_interval_ms;
  auto workers = LocalWorkers::start(lw);
  if (!workers.ok()) return fail(workers.status().message());

  Status st = (*server)->serve(stop);
  const bool done = (*server)->all_done();
  const bool storage_failed = (*server)->storage_failed();
  if (!workers->wait_all(kLocalWorkerExitWaitMs)) {
    std::cerr << "warning: local workers did not exit in time and were stopped; logs in "
              << lw.state_dir << "\n";
  }
  server->reset();
  if (!st.ok()) {
    fail(st.message());
    return storage_failed ? kExitInfrastructureFault : 1;
  }

  auto md = render(serve.server.db_path, "md", run_id);
  if (!md.ok()) return fail(md.status().message());
  std::cout << *md;
  if (!done) {
    std::cerr << "run interrupted before every job finished; run the same command again to resume\n";
    return 3;
  }
  std::error_code ec;
  std::filesystem::remove_all(lw.state_dir, ec);
  return 0;
}

int cmd_keys(const KeysArgs& args) {
  auto pair = write_curve_keypair(args.out_dir, args.name);
  if (!pair.ok()) return fail(pair.status().message());
  const auto dir = std::filesystem::path(args.out_dir);
  std::cout << "wrote " << (dir / (args.name + ".key")).string() << " (secret, keep it on this box) and "
            << (dir / (args.name + ".pub")).string() << " (give it to the other side)\n";
  return 0;
}

int cmd_report(const ReportArgs& args) {
  auto text = render(args.db, args.format, args.run_id);
  if (!text.ok()) return fail(text.status().message());
  if (args.output.empty()) {
    std::cout << *text;
    return 0;
  }
  std::ofstream out(args.output);
  out << *text;
  if (!out) return fail("cannot write " + args.output);
  return 0;
}

int cmd_plan(const PlanArgs& args) {
  auto plan = load(args.plan_file, args.catalog_dir);
  if (!plan.ok()) return fail(plan.status().message());
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : plan->jobs) out.push_back({{"job_id", j.job_id}, {"spec", jobs::to_json(j.spec)}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("plan '%s' (%s): %zu job(s)\n", plan->name.c_str(), plan->source.c_str(),
              plan->jobs.size());
  std::printf("%-16s  %-18s  %-14s  %-7s  %-6s  %5s  %6s  %-8s  %s\n", "job_id", "model",
              "architecture", "backend", "prec", "batch", "seq", "mode", "notes");
  for (const auto& j : plan->jobs) {
    const auto& s = j.spec;
    std::printf("%-16s  %-18s  %-14s  %-7s  %-6s  %5d  %6d  %-8s  %s\n", j.job_id.c_str(),
                s.model.c_str(), s.architecture.c_str(), s.backend.c_str(), std::string(jobs::to_string(s.precision)).c_str(),
                s.batch, s.seq_len, s.mode.c_str(), s.scaled ? "scaled" : "");
  }
  return 0;
}

}  // namespace am::coord
