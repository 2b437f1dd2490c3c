// One message of every type with non-trivial, seeded values, and a field-by-field comparison.
// Shared by the codec and transport tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/protocol.h"

namespace am::proto::testing {

inline std::string random_token(std::mt19937_64& rng, std::size_t len) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-_:.";
  std::uniform_int_distribution<std::size_t> pick(0, sizeof(kChars) - 2);
  std::string s;
  for (std::size_t i = 0; i < len; ++i) s += kChars[pick(rng)];
  return s;
}

// A capability-record-shaped document with seeded numbers.
inline nlohmann::json sample_capabilities(std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> mem(1LL << 30, 1LL << 40);
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < 3; ++i) {
    devices.push_back({{"key", "cpu:" + std::to_string(i)},
                       {"backend", i == 0 ? "cpu" : "opencl"},
                       {"name", "Device \xc3\xa9" + random_token(rng, 6)},  // non-ASCII UTF-8
                       {"software", i == 2},
                       {"compute_units", static_cast<int>(rng() % 128) + 1},
                       {"memory_bytes", mem(rng)},
                       {"precisions", {"f32", "f16", "q8_0"}},
                       {"hardware_class", "cpu-" + random_token(rng, 16)}});
  }
  return {{"schema", 1},
          {"host", {{"hostname", "box-" + random_token(rng, 5)}, {"os", "Debian 12"}, {"kernel", "6.1.0"}}},
          {"cpu", {{"vendor", "GenuineIntel"}, {"isa", {{"avx2", true}, {"avx512f", false}}},
                   {"isa_level", "x86-64-v3"}}},
          {"topology", {{"packages", 1}, {"cores", 8}, {"pus", 16},
                        {"caches", {{{"level", 2}, {"size_bytes", 1 << 20}, {"count", 8}}}},
                        {"numa_nodes", nlohmann::json::array()}}},
          {"devices", devices},
          {"negative", -static_cast<int64_t>(rng() % 100000) - 1},
          {"big_unsigned", UINT64_MAX - (rng() % 1000)},
          {"nothing", nullptr}};
}

inline nlohmann::json sample_metrics(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> ms(0.1, 50.0);
  nlohmann::json samples = nlohmann::json::array();
  for (int i = 0; i < 20; ++i) samples.push_back(ms(rng));
  return {{"latency_ms", {{"median", ms(rng)}, {"p90", ms(rng)}, {"min", ms(rng)}, {"count", 20},
                          {"samples", samples}}},
          {"accuracy", {{"nmse", ms(rng) * 1e-6}, {"cosine", 0.999}, {"top1_agreement", 1.0}}},
          {"memory", {{"weights_bytes", static_cast<int64_t>(rng() % (1ULL << 40))}}},
          {"threads", 4},
          {"seed", rng()}};
}

// One message of each of the twelve types, in MsgType order.
inline std::vector<Message> sample_messages(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Message> out;
  Hello hello;
  hello.version_minor = 3;
  hello.worker_id = "w-" + random_token(rng, 12);
  hello.hostname = "host-" + random_token(rng, 8);
  hello.build = "accelmatrix 0.1.0 (" + random_token(rng, 12) + ")";
  hello.capabilities = sample_capabilities(rng);
  hello.tags = {{"rack", random_token(rng, 3)}, {"owner", "lab \xe2\x9c\x93"}};
  hello.slots = 3;
  hello.held = {{"0123456789abcdef", 2}, {"fedcba9876543210", 1}};
  out.push_back({hello});

  Welcome welcome;
  welcome.heartbeat_interval_ms = 1000 + static_cast<int64_t>(rng() % 1000);
  welcome.heartbeat_liveness = 5;
  welcome.lease_grace_ms = 30'000;
  welcome.run_id = "run-" + random_token(rng, 10);
  out.push_back({welcome});

  out.push_back({Reject{"protocol major version 2 is not supported (coordinator speaks 1)", true}});
  out.push_back({Heartbeat{}});

  Ready ready;
  ready.credits = {{"cpu:0", 2}, {"opencl:1", static_cast<int>(rng() % 7) + 1}};
  out.push_back({ready});

  Assign assign;
  assign.job_id = random_token(rng, 16);
  assign.attempt = 2;
  assign.lease_ms = 150'000;
  assign.device = "cpu:0";
  assign.spec = {{"model", "bert-tiny"}, {"architecture", "encoder-only"},
                 {"model_config", {{"layers", 2}, {"hidden", 128}, {"norm_eps", 1e-12},
                                   {"activation", "gelu"}}},
                 {"scaled", false}, {"backend", "cpu"}, {"precision", "q8_0"}, {"batch", 1},
                 {"seq_len", 32}, {"mode", "both"}, {"seed", rng()}, {"min_time_s", 0.5},
                 {"timeout_s", 120.0}, {"memory_limit_mb", 0}};
  out.push_back({assign});

  out.push_back({Progress{assign.job_id, 2, "measuring"}});

  JobResult result;
  result.job_id = assign.job_id;
  result.attempt = 2;
  result.status = am::ResultStatus::kDegraded;
  result.reason = "nmse 3.1e-3 above pass tolerance 1e-3";
  result.metrics = sample_metrics(rng);
  result.log_tail = "line 1\nline 2 \xf0\x9f\x94\xa5\n" + random_token(rng, 300);
  result.started_at_ms = 1'700'000'000'000 + static_cast<int64_t>(rng() % 100000);
  result.finished_at_ms = result.started_at_ms + 4321;
  out.push_back({result});

  out.push_back({Ack{assign.job_id, 2}});
  out.push_back({Cancel{assign.job_id, 2, "job cancelled by the operator"}});
  out.push_back({Drain{"coordinator shutting down"}});
  out.push_back({Bye{"worker stopping (SIGTERM)"}});
  Control control;
  control.request_id = "req-" + random_token(rng, 12);
  control.op = "cancel";
  control.args = {{"id", random_token(rng, 16)}, {"extend", false}};
  out.push_back({control});
  Reply reply;
  reply.request_id = control.request_id;
  reply.ok = true;
  reply.data = {{"run_id", "smoke"}, {"cancelled", 3}, {"workers", nlohmann::json::array({"a", "b"})}};
  out.push_back({reply});
  Reply refused;
  refused.request_id = "req-2";
  refused.ok = false;
  refused.code = "permission_denied";
  refused.error = "this CURVE key is not on the coordinator's admin allow-list";
  out.push_back({refused});
  return out;
}

#define AM_FIELD_EQ(field)                                                                \
  if (!(a.field == b.field)) {                                                           \
    return ::testing::AssertionFailure() << #field << " differs";                         \
  }

inline ::testing::AssertionResult bodies_equal(const Hello& a, const Hello& b) {
  AM_FIELD_EQ(version_major) AM_FIELD_EQ(version_minor) AM_FIELD_EQ(worker_id)
  AM_FIELD_EQ(hostname) AM_FIELD_EQ(build) AM_FIELD_EQ(capabilities) AM_FIELD_EQ(tags)
  AM_FIELD_EQ(slots) AM_FIELD_EQ(held) AM_FIELD_EQ(secret) AM_FIELD_EQ(commands)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Welcome& a, const Welcome& b) {
  AM_FIELD_EQ(version_major) AM_FIELD_EQ(version_minor) AM_FIELD_EQ(heartbeat_interval_ms)
  AM_FIELD_EQ(heartbeat_liveness) AM_FIELD_EQ(lease_grace_ms) AM_FIELD_EQ(run_id)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Reject& a, const Reject& b) {
  AM_FIELD_EQ(reason) AM_FIELD_EQ(retry)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Heartbeat&, const Heartbeat&) {
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Ready& a, const Ready& b) {
  AM_FIELD_EQ(credits) AM_FIELD_EQ(window) AM_FIELD_EQ(seen)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Assign& a, const Assign& b) {
  AM_FIELD_EQ(job_id) AM_FIELD_EQ(attempt) AM_FIELD_EQ(lease_ms) AM_FIELD_EQ(device) AM_FIELD_EQ(spec)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Progress& a, const Progress& b) {
  AM_FIELD_EQ(job_id) AM_FIELD_EQ(attempt) AM_FIELD_EQ(phase)
  return ::testing::AssertionSuccess();
}
// A RESULT's metrics as text whichever side holds them: decoded messages carry the text,
// built ones the tree (JobResult's contract: the text is to_json_text() of the tree).
inline std::string metrics_text(const JobResult& r) {
  return r.metrics_json.empty() ? to_json_text(r.metrics) : r.metrics_json;
}
inline ::testing::AssertionResult bodies_equal(const JobResult& a, const JobResult& b) {
  AM_FIELD_EQ(job_id) AM_FIELD_EQ(attempt) AM_FIELD_EQ(status) AM_FIELD_EQ(reason)
  AM_FIELD_EQ(log_tail) AM_FIELD_EQ(started_at_ms) AM_FIELD_EQ(finished_at_ms)
  if (metrics_text(a) != metrics_text(b)) {
    return ::testing::AssertionFailure() << "metrics differ: " << metrics_text(a) << " vs " << metrics_text(b);
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Ack& a, const Ack& b) {
  AM_FIELD_EQ(job_id) AM_FIELD_EQ(attempt)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Cancel& a, const Cancel& b) {
  AM_FIELD_EQ(job_id) AM_FIELD_EQ(attempt) AM_FIELD_EQ(reason)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Drain& a, const Drain& b) {
  AM_FIELD_EQ(reason)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Bye& a, const Bye& b) {
  AM_FIELD_EQ(reason)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Control& a, const Control& b) {
  AM_FIELD_EQ(request_id) AM_FIELD_EQ(op) AM_FIELD_EQ(args)
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult bodies_equal(const Reply& a, const Reply& b) {
  AM_FIELD_EQ(request_id) AM_FIELD_EQ(ok) AM_FIELD_EQ(error) AM_FIELD_EQ(code) AM_FIELD_EQ(data)
  return ::testing::AssertionSuccess();
}
#undef AM_FIELD_EQ

inline ::testing::AssertionResult messages_equal(const Message& a, const Message& b) {
  if (a.type() != b.type()) {
    return ::testing::AssertionFailure() << "type " << msg_type_name(a.type()) << " vs "
                                         << msg_type_name(b.type());
  }
  return std::visit(
      [&](const auto& body_a) {
        using T = std::decay_t<decltype(body_a)>;
        return bodies_equal(body_a, std::get<T>(b.body)) << " in " << msg_type_name(a.type());
      },
      a.body);
}

}  // namespace am::proto::testing
