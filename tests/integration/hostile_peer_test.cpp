// A running coordinator facing peers that misbehave: garbage frames, a wrong protocol version,
// messages before HELLO, and results for jobs it never leased to them. It must answer with
// REJECTs where the protocol says so, store nothing forged, and still finish the run.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include <zmq.hpp>

#include "common/protocol.h"
#include "common/transport.h"
#include "tests/integration/harness.h"
#include "tests/integration/run_helpers.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;


TEST(HostilePeers, CoordinatorRejectsAndSurvivesThenFinishesTheRun) {
  ScratchDir dir("hostile");
  const auto db = dir / "h.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_file(dir / "hostile.toml",
                               "[plan]\nname = \"hostile\"\nmode = \"both\"\nseed = 3\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\"]\n"
                               "batch = [1]\nseq_len = [16]\nmin_reps = 3\nmin_time_s = 0.05\n\n"
                               "[[models]]\nname = \"bert-tiny\"\n");
  Process serve({coordinator_binary().string(), "--log-level", "info", "serve", "--plan",
                 plan.string(), "--db", db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog",
                 (source_dir() / "jobs/models").string(), "--exit-when-done", "--endpoint-file",
                 ep_file.string(), "--expect-workers", "0"},
                dir / "serve.log");
  std::string ep;
  ASSERT_TRUE(wait_until([&] {
    ep = read_file(ep_file);
    if (!ep.empty() && ep.back() == '\n') ep.pop_back();
    return !ep.empty();
  }, 20s));

  // 1. Raw garbage: wrong frame counts, unknown types, undecodable bodies.
  {
    zmq::socket_t raw(zmq_context(), zmq::socket_type::dealer);
    raw.set(zmq::sockopt::linger, 2000);   // deliver the garbage before the socket closes
    raw.connect(ep);
    for (int i = 0; i < 50; ++i) {
      std::string junk(static_cast<std::size_t>(1 + i * 7), static_cast<char>(i * 31));
      raw.send(zmq::buffer(junk), zmq::send_flags::none);                      // one frame
      raw.send(zmq::str_buffer("HELLO"), zmq::send_flags::sndmore);            // bad body
      raw.send(zmq::buffer(junk), zmq::send_flags::none);
      raw.send(zmq::str_buffer("NOT_A_TYPE"), zmq::send_flags::sndmore);
      raw.send(zmq::str_buffer("\x80"), zmq::send_flags::none);
    }
  }

  // 2. A message before HELLO gets REJECT{retry}; a HELLO of another major version is refused.
  auto d = DealerEndpoint::connect(ep);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->send(proto::Message{proto::Heartbeat{}}).ok());
  auto rej = expect_message<proto::Reject>(*d);
  ASSERT_TRUE(rej.has_value());
  EXPECT_TRUE(rej->retry);
  proto::Hello wrong;
  wrong.version_major = proto::kVersionMajor + 1;
  wrong.worker_id = "time-traveller";
  wrong.hostname = "future";
  ASSERT_TRUE(d->send(proto::Message{wrong}).ok());
  auto rej2 = expect_message<proto::Reject>(*d);
  ASSERT_TRUE(rej2.has_value());
  EXPECT_FALSE(rej2->retry);
  EXPECT_NE(rej2->reason.find("version"), std::string::npos) << rej2->reason;

  // 3. A registered peer forging a result for a job never leased to it: dropped, not stored.
  proto::Hello hello;
  hello.worker_id = "forger";
  hello.hostname = "nowhere";
  hello.capabilities = {{"devices", nlohmann::json::array()}};   // can run nothing
  ASSERT_TRUE(d->send(proto::Message{hello}).ok());
  ASSERT_TRUE(expect_message<proto::Welcome>(*d).has_value());
  // The plan's job: no job is made of it until a worker with a cpu device registers (placement
  // each-class), so the forger names the plan job's id.
  const auto plan_job = sql_rows(db, "SELECT job_id FROM plan_jobs");
  ASSERT_EQ(plan_job.size(), 1u);
  const auto job_id = plan_job[0][0];
  proto::JobResult forged;
  forged.job_id = job_id;
  forged.attempt = 1;
  forged.status = am::ResultStatus::kFail;
  forged.reason = "forged";
  ASSERT_TRUE(d->send(proto::Message{forged}).ok());
  // Once the coordinator has dealt with it, it says so; only then is "nothing stored" a verdict.
  ASSERT_TRUE(wait_until([&] { return serve.log().find("dropping RESULT for " + job_id + " attempt 1 from forger") !=
                                      std::string::npos; }, 20s))
      << serve.log();
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 0);

  // 4. An honest worker still gets the job done.
  Process worker({worker_binary().string(), "--coordinator", ep, "--id", "honest", "--state-dir",
                  (dir / "state").string()},
                 dir / "worker.log");
  ASSERT_EQ(serve.wait(60s), 0) << serve.log();
  EXPECT_EQ(sql_rows(db, "SELECT status FROM jobs")[0][0], "pass");
  EXPECT_EQ(sql_rows(db, "SELECT a.worker_id FROM jobs j JOIN attempts a ON a.job_id = j.job_id "
                         "AND a.attempt = j.terminal_attempt")[0][0], "honest");
  // What was dropped and refused is counted, logged at exit and kept in the database.
  EXPECT_GE(sql_int(db, "SELECT value FROM counters WHERE name = 'frames_dropped_malformed'"), 100);
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'hellos_refused_version'"), 1);
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'results_dropped_forged'"), 1);
  EXPECT_GE(sql_int(db, "SELECT value FROM counters WHERE name = 'messages_before_hello'"), 1);
  EXPECT_NE(serve.log().find("counters: "), std::string::npos);
  // The refused HELLO, and the peer that registered but never took a job, left no worker row.
  EXPECT_EQ(sql_rows(db, "SELECT worker_id FROM workers"), (std::vector<std::vector<std::string>>{{"honest"}}));
}


// A coordinator serving a one-job bert-tiny plan (`name`) that waits for no worker, logging at
// info level, with its endpoint.
struct ServedPlan {
  std::filesystem::path db;
  std::unique_ptr<Process> serve;
  std::string endpoint;
};

ServedPlan serve_one_job(const ScratchDir& dir, const std::string& name) {
  ServedPlan p;
  p.db = dir / "h.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_file(dir / (name + ".toml"),
                               "[plan]\nname = \"" + name + "\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
                               "precisions = [\"f32\"]\nbatch = [1]\nseq_len = [16]\n\n[[models]]\nname = \"bert-tiny\"\n");
  p.serve = std::make_unique<Process>(
      std::vector<std::string>{coordinator_binary().string(), "--log-level", "info", "serve", "--plan", plan.string(),
                               "--db", p.db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog", catalog_dir(),
                               "--endpoint-file", ep_file.string(), "--expect-workers", "0"},
      dir / "serve.log");
  p.endpoint = wait_for_endpoint(ep_file);
  return p;
}

// libzmq names a peer that brings no routing id "\0" + a 32-bit counter and aborts the process
// when that name is already held by a peer that chose it. Unseeded, the counter started at
// rand()'s first value (0x6b8b4567) in every process: peers holding the next names, then any
// honest connection, aborted the coordinator (common/transport.cpp seeds it).
TEST(HostilePeers, PeersHoldingTheRoutersNextGeneratedNamesDoNotTakeItDown) {
  ScratchDir dir("hostile-names");
  ServedPlan served = serve_one_job(dir, "names");
  ASSERT_FALSE(served.endpoint.empty()) << served.serve->log();
  Process& serve = *served.serve;
  const std::string& ep = served.endpoint;

  // The names an unseeded counter hands out next (and a few around them).
  constexpr uint32_t kUnseededFirst = 0x6b8b4567u;
  std::vector<zmq::socket_t> squatters;
  for (uint32_t i = 0; i < 64; ++i) {
    const uint32_t n = kUnseededFirst - 4 + i;
    const std::string name{'\0', static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                           static_cast<char>(n >> 8), static_cast<char>(n)};
    zmq::socket_t s(zmq_context(), zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, zmq::buffer(name));
    s.connect(ep);
    ASSERT_TRUE(s.send(zmq::str_buffer("HEARTBEAT"), zmq::send_flags::sndmore));
    ASSERT_TRUE(s.send(zmq::str_buffer("\x80"), zmq::send_flags::none));
    squatters.push_back(std::move(s));
  }
  // Each squatter is named once its frames arrive, and answered (a REJECT: no HELLO yet): only
  // then do honest peers (no routing id) connect.
  for (std::size_t i = 0; i < squatters.size(); ++i) {
    zmq::pollitem_t item{squatters[i].handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(10000)), 1) << "squatter " << i << " got no answer\n"
                                                                      << serve.log();
  }
  for (int k = 0; k < 8; ++k) {
    auto d = DealerEndpoint::connect(ep);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d->send(proto::Message{proto::Heartbeat{}}).ok());
    auto rej = expect_message<proto::Reject>(*d);
    ASSERT_TRUE(rej.has_value()) << "honest peer " << k << " got no answer\n" << serve.log();
    EXPECT_TRUE(rej->retry);
  }
  EXPECT_TRUE(serve.running()) << serve.log();
}

// What a peer can make the coordinator say is counted in full but logged rate-limited: a READY
// naming thousands of unknown devices is one warning, a PROGRESS for an attempt never leased to
// its sender is counted and logged (PROTOCOL §5.5), and a storm of refused HELLOs does not write
// a line each; the lines name the peer by routing identity and address.
TEST(HostilePeers, WhatPeersProvokeIsCountedInFullAndLoggedRateLimited) {
  ScratchDir dir("hostile-log");
  ServedPlan served = serve_one_job(dir, "log");
  ASSERT_FALSE(served.endpoint.empty()) << served.serve->log();
  Process& serve = *served.serve;
  const std::string& ep = served.endpoint;
  const std::filesystem::path& db = served.db;
  const auto count_lines = [&](const std::string& needle) {
    const std::string log = serve.log();
    int n = 0;
    for (std::size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };

  auto d = DealerEndpoint::connect(ep);
  ASSERT_TRUE(d.ok());
  proto::Hello hello;
  hello.worker_id = "loud";
  hello.hostname = "nowhere";
  hello.capabilities = {{"devices", nlohmann::json::array()}};
  ASSERT_TRUE(d->send(proto::Message{hello}).ok());
  ASSERT_TRUE(expect_message<proto::Welcome>(*d).has_value());

  constexpr int kReadies = 5, kKeysPerReady = 2000;
  for (int m = 0; m < kReadies; ++m) {
    proto::Ready ready;
    ready.window.emplace();
    for (int k = 0; k < kKeysPerReady; ++k) (*ready.window)["made-up:" + std::to_string(k)] = 1;
    ASSERT_TRUE(d->send(proto::Message{ready}).ok());
  }
  proto::Progress forged;
  forged.job_id = sql_rows(db, "SELECT job_id FROM plan_jobs").at(0).at(0);
  forged.attempt = 1;
  forged.phase = "measuring";
  ASSERT_TRUE(d->send(proto::Message{forged}).ok());

  constexpr int kRefused = 200;
  for (int i = 0; i < kRefused; ++i) {
    proto::Hello wrong;
    wrong.version_major = proto::kVersionMajor + 1;
    ASSERT_TRUE(d->send(proto::Message{wrong}).ok());
  }
  ASSERT_TRUE(wait_until([&] { return count_lines("dropping PROGRESS for " + forged.job_id) == 1; }, 20s))
      << serve.log();
  ASSERT_TRUE(wait_until([&] { return count_lines("rejecting HELLO") > 0; }, 20s)) << serve.log();
  std::this_thread::sleep_for(500ms);
  serve.terminate();
  ASSERT_NE(serve.wait(30s), -1);

  EXPECT_EQ(count_lines("unknown device(s)"), kReadies) << serve.log();
  EXPECT_EQ(count_lines("names " + std::to_string(kKeysPerReady) + " unknown device(s)"), kReadies);
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'progress_dropped_forged'"), 1);
  EXPECT_EQ(sql_int(db, "SELECT value FROM counters WHERE name = 'hellos_refused_version'"), kRefused);
  EXPECT_GE(sql_int(db, "SELECT value FROM counters WHERE name = 'messages_unexpected'"), kReadies);
  // Every refusal was counted; few were written, each naming where it came from.
  const int written = count_lines("rejecting HELLO");
  EXPECT_LT(written, kRefused / 2) << serve.log();
  EXPECT_NE(serve.log().find("rejecting HELLO of worker '' from worker loud (peer "), std::string::npos)
      << serve.log();
  EXPECT_NE(serve.log().find(" at 127.0.0.1: protocol version"), std::string::npos) << serve.log();
}

}  // namespace
}  // namespace am::testing
