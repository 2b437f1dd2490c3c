// The reliability findings of issue 10, each against real processes over loopback TCP:
// - a coordinator killed while a worker holds an un-ACKed RESULT must not stall the run after
//   its restart (credits, PROTOCOL §5.2);
// - a deleted database stops the coordinator with exit code 4 without ACKing, and the worker's
//   results reach the restarted coordinator (§5.4);
// - a HELLO that reuses another worker's id without its credential is refused (§5.8);
// - peers that take jobs and never answer cost themselves, not the jobs (§5.5);
// - a lease that runs out on live workers that answered it counts against the job, which is
//   `lost` once that happened on --max-attempts distinct workers (§5.5, issue 16).
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/curve.h"
#include "common/curve_files.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {


bool log_has(const std::filesystem::path& log, const std::string& needle) {
  return read_file(log).find(needle) != std::string::npos;
}

// The (job, attempt) leased to `worker` and running there now, once the worker has started it.
std::optional<std::pair<std::string, std::string>> running_attempt(const std::filesystem::path& db,
                                                                    const std::filesystem::path& log,
                                                                    const std::string& worker) {
  for (const auto& row : sql_rows(db, "SELECT job_id, attempt FROM attempts WHERE worker_id = '" + worker +
                                          "' AND state = 'leased'")) {
    if (log_has(log, "running " + row[0] + "#" + row[1])) return std::make_pair(row[0], row[1]);
  }
  return std::nullopt;
}

TEST(Reliability, RestartedCoordinatorFinishesTheRunWhenAWorkerHeldAnUnackedResult) {
  ScratchDir dir("unacked");
  const auto db = dir / "u.db";
  // Four jobs of about 0.6 s on one single-slot worker.
  const auto plan = write_bert_plan(dir / "unacked.toml", "unacked", 0.6, "[16, 24, 32, 40]", "[\"f32\"]");
  auto serve = std::make_unique<Process>(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep1"), dir / "serve1.log");
  const std::string ep = wait_for_endpoint(dir / "ep1");
  ASSERT_FALSE(ep.empty()) << serve->log();
  const auto wlog = dir / "w.log";
  Process worker(worker_args(ep, "held", dir), wlog);

  // Freeze the coordinator while the worker runs a job, so the job's RESULT cannot be ACKed;
  // if the job's result was stored before the freeze took hold, try the next job.
  std::optional<std::pair<std::string, std::string>> held;
  for (int tries = 0; tries < 3 && !held; ++tries) {
    std::optional<std::pair<std::string, std::string>> running;
    ASSERT_TRUE(wait_until([&] { return (running = running_attempt(db, wlog, "held")).has_value(); }, 60s))
        << serve->log();
    serve->signal(SIGSTOP);
    if (sql_int(db, "SELECT COUNT(*) FROM attempts WHERE job_id = '" + running->first +
                        "' AND attempt = " + running->second + " AND state = 'leased'") == 1) {
      held = running;
    } else {
      serve->signal(SIGCONT);
      ASSERT_TRUE(wait_until([&] { auto r = running_attempt(db, wlog, "held"); return r && r != running; }, 60s));
    }
  }
  ASSERT_TRUE(held.has_value());
  const std::string key = held->first + "#" + held->second;
  // The worker finished the job and sent its RESULT to a coordinator that cannot answer.
  ASSERT_TRUE(wait_until([&] { return log_has(wlog, "finished " + key); }, 60s)) << read_file(wlog);
  serve->kill_hard();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE job_id = '" + held->first +
                        "' AND state = 'done'"), 0);

  // Same database, same endpoint. Before the fix the worker's credits were spent on a lease
  // that still counted, and nothing granted them again: the run never finished.
  Process restarted(serve_args(plan, db, ep, dir / "ep2"), dir / "serve2.log");
  ASSERT_EQ(restarted.wait(90s), 0) << restarted.log() << read_file(wlog);
  EXPECT_EQ(worker.wait(15s), 0) << read_file(wlog);
  expect_exactly_one_terminal_result_per_job(db, 4);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0);
  // The held result was delivered after the restart and is the job's result: no re-run.
  EXPECT_EQ(sql_int(db, "SELECT terminal_attempt FROM jobs WHERE job_id = '" + held->first + "'"),
            std::stoll(held->second));
}

// Copies a live database (WAL included) with the SQLite CLI's backup command.
void backup_db(const std::filesystem::path& from, const std::filesystem::path& to) {
  int code = -1;
  const std::string out = run_capture({"/usr/bin/sqlite3", from.string(), ".backup '" + to.string() + "'"}, &code);
  ASSERT_EQ(code, 0) << out;
}

TEST(Reliability, DeletedDatabaseStopsTheCoordinatorWithExit4AndTheUnackedResultReachesTheNextOne) {
  ScratchDir dir("dbloss");
  const auto db = dir / "d.db";
  const auto plan = write_bert_plan(dir / "dbloss.toml", "dbloss", 0.6, "[16, 24, 32]", "[\"f32\"]");
  auto serve = std::make_unique<Process>(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep1"), dir / "serve1.log");
  const std::string ep = wait_for_endpoint(dir / "ep1");
  ASSERT_FALSE(ep.empty()) << serve->log();
  const auto wlog = dir / "w.log";
  Process worker(worker_args(ep, "keeper", dir), wlog);

  std::optional<std::pair<std::string, std::string>> running;
  ASSERT_TRUE(wait_until([&] { return (running = running_attempt(db, wlog, "keeper")).has_value(); }, 60s))
      << serve->log();
  // A consistent copy taken while the lease is out (the operator's backup), then the files go.
  serve->signal(SIGSTOP);
  const auto backup = dir / "backup.db";
  backup_db(db, backup);
  const bool still_leased = sql_int(backup, "SELECT COUNT(*) FROM attempts WHERE job_id = '" + running->first +
                                                "' AND state = 'leased'") == 1;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
  serve->signal(SIGCONT);

  // Before the fix: nothing logged, every result ACKed into the unlinked file, exit 0.
  EXPECT_EQ(serve->wait(60s), 4) << serve->log();
  EXPECT_TRUE(log_has(dir / "serve1.log", "storage fault on database " + db.string())) << serve->log();

  // Restore the backup and restart: the worker re-sends what was never ACKed.
  std::filesystem::copy_file(backup, db);
  Process restarted(serve_args(plan, db, ep, dir / "ep2"), dir / "serve2.log");
  ASSERT_EQ(restarted.wait(90s), 0) << restarted.log();
  EXPECT_EQ(worker.wait(15s), 0) << read_file(wlog);
  expect_exactly_one_terminal_result_per_job(db, 3);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0);
  if (still_leased) {
    // The attempt the worker ran before the fault is the job's result, delivered afterwards.
    EXPECT_EQ(sql_int(db, "SELECT terminal_attempt FROM jobs WHERE job_id = '" + running->first + "'"),
              std::stoll(running->second));
  }
}

// With no worker, nothing is written: the coordinator went on serving a deleted database until
// something made it write (README: "stops at once with exit code 4").
TEST(Reliability, AnIdleCoordinatorWhoseDatabaseIsDeletedStopsWithExit4) {
  ScratchDir dir("dbloss-idle");
  const auto db = dir / "d.db";
  const auto plan = write_bert_plan(dir / "idle.toml", "idle", 0.1, "[16]", "[\"f32\"]");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  ASSERT_FALSE(wait_for_endpoint(dir / "ep").empty()) << serve.log();
  std::filesystem::remove(db);
  EXPECT_EQ(serve.wait(15s), 4) << serve.log();
  EXPECT_TRUE(log_has(dir / "serve.log", "was removed while open")) << serve.log();
}

TEST(Reliability, HelloReusingAnotherWorkersIdWithoutItsSecretIsRefusedAndForgesNothing) {
  ScratchDir dir("impersonate");
  const auto db = dir / "i.db";
  const auto plan = write_bert_plan(dir / "imp.toml", "imp", 1.0, "[16, 24]", "[\"f32\"]");
  Process serve(serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep"), dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  const auto wlog = dir / "victim.log";
  Process victim(worker_args(ep, "victim", dir), wlog);
  std::optional<std::pair<std::string, std::string>> running;
  ASSERT_TRUE(wait_until([&] { return (running = running_attempt(db, wlog, "victim")).has_value(); }, 60s))
      << serve.log();

  for (const std::string& secret : {std::string(), std::string(64, 'f')}) {
    auto thief = DealerEndpoint::connect(ep);
    ASSERT_TRUE(thief.ok());
    proto::Hello h;
    h.worker_id = "victim";
    h.hostname = "thief";
    h.slots = 4;
    h.secret = secret;   // none, or a wrong one; `held` empty would reclaim the victim's lease
    ASSERT_TRUE(thief->send(proto::Message{h}).ok());
    auto answer = expect_message<proto::Reject>(*thief);
    ASSERT_TRUE(answer.has_value()) << "an impersonating HELLO was not refused\n" << serve.log();
    EXPECT_FALSE(answer->retry);
    EXPECT_NE(answer->reason.find("secret"), std::string::npos) << answer->reason;
    // Its forged RESULT for the victim's attempt is not stored (the peer has no session).
    proto::JobResult forged;
    forged.job_id = running->first;
    forged.attempt = std::stoi(running->second);
    forged.status = am::ResultStatus::kFail;
    forged.reason = "forged";
    ASSERT_TRUE(thief->send(proto::Message{forged}).ok());
    EXPECT_TRUE(expect_message<proto::Reject>(*thief).has_value());
  }
  ASSERT_EQ(serve.wait(60s), 0) << serve.log();
  EXPECT_EQ(victim.wait(15s), 0) << read_file(wlog);
  expect_exactly_one_terminal_result_per_job(db, 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE reason = 'forged'"), 0);
  // The lease was never reclaimed by the thief's empty `held`.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE state = 'expired'"), 0);
  EXPECT_EQ(sql_rows(db, "SELECT worker_id FROM workers"), (std::vector<std::vector<std::string>>{{"victim"}}));
  EXPECT_TRUE(log_has(dir / "serve.log", "hellos_refused_identity=2")) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'hellos_refused_identity'"), 2);
}

TEST(Reliability, UnderCurveAWorkerIdBelongsToTheKeyThatFirstRegisteredIt) {
  if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  ScratchDir dir("curveid");
  const auto keys = dir / "keys";
  const auto allowed = dir / "allowed";
  int code = -1;
  for (const char* name : {"coordinator", "owner", "other", "stranger"}) {
    run_capture({coordinator_binary().string(), "keys", name, "--out", keys.string()}, &code);
    ASSERT_EQ(code, 0) << name;
  }
  std::filesystem::create_directories(allowed);
  std::filesystem::copy_file(keys / "owner.pub", allowed / "owner.pub");
  std::filesystem::copy_file(keys / "other.pub", allowed / "other.pub");
  const auto plan = write_bert_plan(dir / "cid.toml", "cid", 1.0, "[16, 24]", "[\"f32\"]");
  const auto db = dir / "c.db";
  auto args = serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep");
  args.insert(args.end(), {"--curve-key", (keys / "coordinator.key").string(), "--curve-allow", allowed.string()});
  Process serve(args, dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  auto curve_worker = [&](const std::string& id, const std::string& key) {
    auto a = worker_args(ep, id, dir);
    a.insert(a.end(), {"--curve-key", (keys / (key + ".key")).string(), "--curve-server",
                       (keys / "coordinator.pub").string()});
    return std::make_unique<Process>(a, dir / (id + "-" + key + ".log"));
  };
  // A key off the allow-list: the worker says what is wrong instead of "send queue full".
  auto stranger = curve_worker("lost-soul", "stranger");
  auto owner = curve_worker("shared-id", "owner");
  ASSERT_TRUE(wait_until([&] { return sql_int(db, "SELECT COUNT(*) FROM worker_credentials") == 1; }, 30s))
      << serve.log();

  // Another allowed key claiming the same id is refused and changes nothing.
  auto pair = load_curve_keypair((keys / "other.key").string());
  auto server_key = load_curve_public_key((keys / "coordinator.pub").string());
  ASSERT_TRUE(pair.ok() && server_key.ok());
  CurveClientConfig cc{*server_key, pair->public_key, pair->secret_key};
  auto thief = DealerEndpoint::connect(ep, &cc);
  ASSERT_TRUE(thief.ok());
  proto::Hello h;
  h.worker_id = "shared-id";
  h.slots = 1;
  ASSERT_TRUE(thief->send(proto::Message{h}).ok());
  auto answer = expect_message<proto::Reject>(*thief);
  ASSERT_TRUE(answer.has_value()) << serve.log();
  EXPECT_FALSE(answer->retry);
  EXPECT_NE(answer->reason.find("another CURVE key"), std::string::npos) << answer->reason;

  ASSERT_EQ(serve.wait(60s), 0) << serve.log();
  expect_exactly_one_terminal_result_per_job(db, 2);
  auto owner_key = load_curve_public_key((keys / "owner.pub").string());
  ASSERT_TRUE(owner_key.ok());
  EXPECT_EQ(sql_rows(db, "SELECT worker_id, curve_key FROM worker_credentials"),
            (std::vector<std::vector<std::string>>{{"shared-id", *owner_key}}));
  stranger->terminate();
  stranger->wait(10s);
  const std::string slog = read_file(dir / "lost-soul-stranger.log");
  EXPECT_EQ(slog.find("send queue full"), std::string::npos) << slog;
}

// A peer that registers, grants many credits, heartbeats, and never answers an ASSIGN.
class SilentPeer {
 public:
  SilentPeer(std::string endpoint, std::string id, nlohmann::json capabilities)
      : endpoint_(std::move(endpoint)), id_(std::move(id)), capabilities_(std::move(capabilities)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~SilentPeer() {
    stop_ = true;
    thread_.join();
  }
  int assigns() const { return assigns_.load(); }

 private:
  void loop() {
    auto d = DealerEndpoint::connect(endpoint_);
    if (!d.ok()) return;
    proto::Hello h;
    h.worker_id = id_;
    h.hostname = "silent";
    h.slots = 64;
    h.capabilities = capabilities_;
    (void)d->send(proto::Message{h});
    auto last_beat = std::chrono::steady_clock::now() - 1s;
    while (!stop_) {
      auto m = d->recv(20);
      if (m.ok() && m->has_value()) {
        if (std::holds_alternative<proto::Welcome>((**m).body)) {
          proto::Ready r;
          r.credits = {{"cpu:0", 64}};
          r.window = std::map<std::string, int>{{"cpu:0", 64}};
          (void)d->send(proto::Message{r});
        } else if (std::holds_alternative<proto::Assign>((**m).body)) {
          ++assigns_;
        }
      }
      if (std::chrono::steady_clock::now() - last_beat > 100ms) {
        last_beat = std::chrono::steady_clock::now();
        (void)d->send(proto::Message{proto::Heartbeat{}});
      }
    }
  }
  std::string endpoint_, id_;
  nlohmann::json capabilities_;
  std::atomic<bool> stop_{false};
  std::atomic<int> assigns_{0};
  std::thread thread_;
};

TEST(Reliability, PeersThatTakeJobsAndNeverAnswerLoseNothingBesideHealthyWorkers) {
  ScratchDir dir("silent");
  const auto db = dir / "s.db";
  // Twelve short jobs with 2.5 s leases (timeout 2 s + grace 0.5 s).
  const auto plan = write_bert_plan(dir / "silent.toml", "silent", 0.05,
                                    "[16, 20, 24, 28, 32, 36]", "[\"f32\", \"q8_0\"]", "both", "timeout_s = 2\n");
  // Health jobs off: with them, a silent peer never answers its health job and so never gets a
  // run job at all (PROTOCOL §5.11); this test is about the leases of run jobs.
  auto args = serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep", 0, "500");
  args.insert(args.end(), {"--health-interval", "0"});
  Process serve(args, dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  // The silent peers claim this machine's devices, so they can take every job.
  int code = -1;
  const auto caps = nlohmann::json::parse(run_capture({worker_binary().string(), "--log-level", "off", "--probe"}, &code), nullptr, false);
  ASSERT_EQ(code, 0);
  ASSERT_TRUE(caps.is_object());
  std::vector<std::unique_ptr<SilentPeer>> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(std::make_unique<SilentPeer>(ep, "silent-" + std::to_string(i), caps));
  }
  ASSERT_TRUE(wait_until([&] { return silent[0]->assigns() + silent[1]->assigns() + silent[2]->assigns() >= 3; }, 30s))
      << serve.log();
  Process w1(worker_args(ep, "healthy-a", dir), dir / "w1.log");
  Process w2(worker_args(ep, "healthy-b", dir), dir / "w2.log");

  ASSERT_EQ(serve.wait(120s), 0) << serve.log();
  expect_exactly_one_terminal_result_per_job(db, 12);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status = 'lost'"), 0) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE status <> 'pass'"), 0);
  // New unauthenticated peers hold one lease per device until they answer.
  for (const auto& p : silent) EXPECT_LE(p->assigns(), 3);
  EXPECT_GE(sql_int(db, "SELECT value FROM counters WHERE name = 'leases_silent'"), 3);
}

// A peer that registers, heartbeats, answers every ASSIGN with PROGRESS "started" (so the lease
// is answered and counts against the job, PROTOCOL §5.5) and then holds it without a RESULT:
// a worker whose job hangs while the worker itself stays alive. It states its credits only
// once `go` is set, so a test can have every such peer registered before any job is leased.
class HoldingPeer {
 public:
  HoldingPeer(std::string endpoint, std::string id, nlohmann::json capabilities, const std::atomic<bool>& go)
      : endpoint_(std::move(endpoint)), id_(std::move(id)), capabilities_(std::move(capabilities)), go_(go) {
    thread_ = std::thread([this] { loop(); });
  }
  ~HoldingPeer() {
    stop_ = true;
    thread_.join();
  }
  bool welcomed() const { return welcomed_.load(); }
  int assigns() const { return assigns_.load(); }
  int lease_expired_cancels() const { return lease_expired_cancels_.load(); }

 private:
  void loop() {
    auto d = DealerEndpoint::connect(endpoint_);
    if (!d.ok()) return;
    proto::Hello h;
    h.worker_id = id_;
    h.hostname = "holding";
    h.slots = 1;
    h.capabilities = capabilities_;
    (void)d->send(proto::Message{h});
    auto last_beat = std::chrono::steady_clock::now() - 1s;
    bool ready_sent = false;
    while (!stop_) {
      auto m = d->recv(20);
      if (m.ok() && m->has_value()) {
        const auto& body = (**m).body;
        if (std::holds_alternative<proto::Welcome>(body)) {
          welcomed_ = true;
        } else if (const auto* a = std::get_if<proto::Assign>(&body)) {
          ++assigns_;
          proto::Progress p;
          p.job_id = a->job_id;
          p.attempt = a->attempt;
          p.phase = "started";
          (void)d->send(proto::Message{p});
        } else if (const auto* c = std::get_if<proto::Cancel>(&body)) {
          if (c->reason.find("lease expired") != std::string::npos) ++lease_expired_cancels_;
        }
      }
      if (welcomed_ && go_ && !ready_sent) {
        proto::Ready r;
        r.credits = {{"cpu:0", 1}};
        r.window = std::map<std::string, int>{{"cpu:0", 1}};
        (void)d->send(proto::Message{r});
        ready_sent = true;
      }
      if (std::chrono::steady_clock::now() - last_beat > 100ms) {
        last_beat = std::chrono::steady_clock::now();
        (void)d->send(proto::Message{proto::Heartbeat{}});
      }
    }
  }
  std::string endpoint_, id_;
  nlohmann::json capabilities_;
  const std::atomic<bool>& go_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> welcomed_{false};
  std::atomic<int> assigns_{0};
  std::atomic<int> lease_expired_cancels_{0};
  std::thread thread_;
};

// The lease timer (§5.5): a job whose lease runs out on a worker that is alive (heartbeating)
// and answered it, but never sends a RESULT, is leased again on another worker; once its leases
// ran out on --max-attempts distinct workers it is settled `lost` and serve exits 4. Nothing
// but the timer can end these leases: the peers never die and never stop heartbeating.
TEST(Reliability, ALeaseThatRunsOutOnMaxAttemptsDistinctLiveWorkersEndsTheJobLost) {
  ScratchDir dir("leasetimer");
  const auto db = dir / "l.db";
  // One job; its lease is 1.3 s (timeout 1 s + grace 0.3 s).
  const auto plan = write_bert_plan(dir / "lt.toml", "lt", 0.05, "[16]", "[\"f32\"]", "perf", "timeout_s = 1\n");
  auto args = serve_args(plan, db, "tcp://127.0.0.1:*", dir / "ep", 0, "300");
  // Health jobs off: these hand-written peers answer no health job (PROTOCOL §5.11).
  args.insert(args.end(), {"--health-interval", "0", "--max-attempts", "2"});
  Process serve(args, dir / "serve.log");
  const std::string ep = wait_for_endpoint(dir / "ep");
  ASSERT_FALSE(ep.empty()) << serve.log();
  int code = -1;
  const auto caps = nlohmann::json::parse(run_capture({worker_binary().string(), "--log-level", "off", "--probe"}, &code), nullptr, false);
  ASSERT_EQ(code, 0);
  ASSERT_TRUE(caps.is_object());
  std::atomic<bool> go{false};
  HoldingPeer a(ep, "holding-a", caps, go);
  HoldingPeer b(ep, "holding-b", caps, go);
  ASSERT_TRUE(wait_until([&] { return a.welcomed() && b.welcomed(); }, 20s)) << serve.log();
  go = true;

  EXPECT_EQ(serve.wait(60s), 4) << serve.log();
  EXPECT_EQ(sql_rows(db, "SELECT status, state FROM jobs"), (std::vector<std::vector<std::string>>{{"lost", "done"}}))
      << serve.log();
  const std::string reason = sql_rows(db, "SELECT reason FROM jobs")[0][0];
  EXPECT_NE(reason.find("infrastructure retries exhausted after failures on 2 worker(s)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("last: lease expired"), std::string::npos) << reason;
  // Two attempts, one per worker, each ended by its lease running out (not by a lost worker).
  EXPECT_EQ(sql_rows(db, "SELECT worker_id, state, reason FROM attempts ORDER BY worker_id"),
            (std::vector<std::vector<std::string>>{{"holding-a", "expired", "lease expired"},
                                                   {"holding-b", "expired", "lease expired"}}))
      << serve.log();
  EXPECT_EQ(sql_rows(db, "SELECT attempt FROM attempts ORDER BY attempt"),
            (std::vector<std::vector<std::string>>{{"1"}, {"2"}}));
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'leases_expired'"), 2) << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'leases_silent'"), 0) << serve.log();
  // Each peer was told its lease ran out, and neither was ever declared dead.
  EXPECT_EQ(a.assigns(), 1);
  EXPECT_EQ(b.assigns(), 1);
  EXPECT_EQ(a.lease_expired_cancels(), 1);
  EXPECT_EQ(b.lease_expired_cancels(), 1);
  EXPECT_EQ(serve.log().find("worker lost"), std::string::npos) << serve.log();
}

}  // namespace
}  // namespace am::testing
