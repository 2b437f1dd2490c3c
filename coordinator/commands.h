// The `accelmatrix` subcommands. Each returns the process exit code (common/exit_codes.h) and
// prints its own errors (one line naming what is wrong) to stderr. main.cpp only parses flags
// into these structs.
//
// cmd_run and cmd_serve: 2 for a bad endpoint, --fail-on or plan, or a plan that differs from
// the one the run was made from (without --extend), before anything starts; 4 when
// the database cannot be opened or is held by another coordinator (coordinator/db_lock.h, the
// holder named), when binding fails, or when the store fails mid-run; 3 when stopped before
// every job was terminal; otherwise the verdict of exit_code_for_statuses() on the run's jobs.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "coordinator/control_client.h"
#include "coordinator/server.h"

namespace am::coord {

struct ServeArgs {
  std::string plan_file;
  std::string curve_key_file;          // the coordinator's keypair (accelmatrix keys)
  std::string curve_allow;             // a .pub file or a directory of worker .pub files
  std::string curve_admin;             // a .pub file or a directory of admin .pub files (CONTROL)
  std::string catalog_dir;
  std::string run_id;                  // default: the plan's name
  ServerOptions server;
  std::string endpoint_file;           // written with the resolved endpoint once bound
  bool quiet = false;                  // no progress display
  bool extend = false;                 // add a different plan's jobs to an existing run (--extend)
  // Comma-separated statuses that make a finished run exit 1 (common/exit_codes.h); empty =
  // default_fail_on(). Checked before anything starts.
  std::string fail_on;
};

struct RunArgs {
  ServeArgs serve;                     // bind defaults to tcp://127.0.0.1:* (loopback only)
  int workers = 1;
  std::string worker_log_level = "warn";
  // The local workers run the plan's [[commands]] (accelmatrix-worker --allow-commands). Off by
  // default even here: a plan's commands are programs, and running them is a decision.
  bool allow_commands = false;
};

struct ReportArgs {
  std::string db;
  std::string format = "md";           // md | json | csv | junit
  std::string run_id;                  // default: newest run
  std::string output;                  // default: stdout
};

// `compare BASE_DB NEW_DB`: exit 0, or 1 when --fail-on-regression is given and a regression is
// found (coordinator/report_compare.h); 2 for bad input (missing database or run, bad option); 4
// when a database cannot be read.
struct CompareArgs {
  std::string base_db;
  std::string new_db;
  std::string base_run;                // default: see cmd_compare
  std::string new_run;
  std::string format = "md";           // md | json
  std::string output;                  // default: stdout
  std::optional<double> fail_on_regression_pct;
  double alpha = 0.05;
};

struct PlanArgs {
  std::string plan_file;
  std::string catalog_dir;
  std::string run_id;   // the run whose job ids to list ("" = the plan's name)
  bool json = false;
};

struct KeysArgs {
  std::string out_dir = ".";
  std::string name;
};

// The control commands (docs/PROTOCOL.md §5.10) talk to a live coordinator: exit 0 when it
// did what was asked; 2 for a bad argument, an unknown run/job/worker, or a request the
// coordinator refused (no admin rights); 4 when no coordinator answered.
struct ControlArgs {
  ControlTarget target;
  bool json = false;                   // status: print the coordinator's document
  double watch_s = 0;                  // status --watch: refresh every this many seconds (0: once)
  std::string plan_file;               // submit
  std::string run_id;                  // submit --run
  bool extend = false;                 // submit --extend
  std::string id;                      // cancel: run or job id; drain/release: WORKER[/DEVICE]
};

struct RunsArgs {
  std::string db = "accelmatrix.db";
  bool json = false;
};

int cmd_status(const ControlArgs& args, const std::atomic<bool>& stop);
int cmd_submit(const ControlArgs& args);
int cmd_cancel(const ControlArgs& args);
int cmd_drain(const ControlArgs& args);
int cmd_release(const ControlArgs& args);
// The runs of a database with their job counts; read-only, no coordinator needed.
int cmd_runs(const RunsArgs& args);

int cmd_keys(const KeysArgs& args);
int cmd_serve(const ServeArgs& args, const std::atomic<bool>& stop);
int cmd_run(const RunArgs& args, const std::atomic<bool>& stop);
int cmd_report(const ReportArgs& args);
int cmd_plan(const PlanArgs& args);
// Runs default to the database's newest run. When both sides name the same database file and a
// run id is left out, the new side is the newest run and the base the newest other run, so
// `compare x.db x.db` compares the last two runs.
int cmd_compare(const CompareArgs& args);

}  // namespace am::coord
