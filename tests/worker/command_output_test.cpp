// The readers that turn a command's output into a result (worker/command_output.h): the
// accelmatrix-json schema is validated strictly, and a recorded llama-bench -o json document
// becomes latency samples and a throughput.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "worker/command_output.h"

namespace am::worker {
namespace {

TEST(ResultDocument, AFullDocumentBecomesMetrics) {
  auto r = read_result_document(R"({"schema": 1, "status": "pass", "latency_ms": [4.0, 2.0, 3.0],
      "throughput": {"value": 2000, "unit": "tokens/s"}, "accuracy": {"nmse": 1e-6, "cosine": 0.999},
      "peak_memory_bytes": 1048576, "notes": "ort 1.17"})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, ResultStatus::kPass);
  EXPECT_DOUBLE_EQ(r->metrics["latency_ms"]["median"].get<double>(), 3.0);
  EXPECT_EQ(r->metrics["latency_ms"]["count"].get<int>(), 3);
  EXPECT_EQ(r->metrics["latency_ms"]["samples"].size(), 3u);
  EXPECT_DOUBLE_EQ(r->metrics["throughput"]["tokens_per_s"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(r->metrics["accuracy"]["nmse"].get<double>(), 1e-6);
  EXPECT_EQ(r->metrics["memory"]["peak_bytes"].get<int64_t>(), 1048576);
  EXPECT_EQ(r->metrics["notes"], "ort 1.17");
}

TEST(ResultDocument, ItemsPerSecondIsSamplesPerSecond) {
  auto r = read_result_document(R"({"status": "degraded", "reason": "slow", "throughput": {"value": 12.5, "unit": "items/s"}})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, ResultStatus::kDegraded);
  EXPECT_EQ(r->reason, "slow");
  EXPECT_DOUBLE_EQ(r->metrics["throughput"]["samples_per_s"].get<double>(), 12.5);
}

TEST(ResultDocument, EveryViolationIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"latency_ms": [1]})", "status: missing"},
      {R"({"status": "great"})", "status: expected one of pass"},
      {R"({"status": "skipped"})", "status: expected one of pass"},
      {R"({"status": "pass", "latency_ms": [1, "fast"]})", "latency_ms[1]: expected a finite number > 0"},
      {R"({"status": "pass", "latency_ms": [1, -2]})", "latency_ms[1]: expected a finite number > 0"},
      {R"({"status": "pass", "latency_ms": []})", "latency_ms: empty"},
      {R"({"status": "pass", "latency_ms": 3})", "latency_ms: expected an array"},
      {R"({"status": "pass", "throughput": {"value": 1, "unit": "flops"}})", "throughput.unit"},
      {R"({"status": "pass", "throughput": {"value": 0, "unit": "tokens/s"}})", "throughput.value"},
      {R"({"status": "pass", "accuracy": {"cosine": 2}})", "accuracy.cosine"},
      {R"({"status": "pass", "accuracy": {"top5": 0.9}})", "accuracy.top5: unknown key"},
      {R"({"status": "pass", "peak_memory_bytes": -1})", "peak_memory_bytes"},
      {R"({"status": "pass", "notes": 5})", "notes: expected a string"},
      {R"({"status": "pass", "schema": 2})", "schema: expected 1"},
      {R"({"status": "pass", "latency": [1]})", "latency: unknown key"},
  };
  for (const auto& [text, fragment] : cases) {
    auto r = read_result_document(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << text << " -> " << r.status().message();
  }
}

TEST(ResultFromStdout, TheLastBraceLineIsTheDocument) {
  auto r = read_result_from_stdout("warming up\n{\"status\": \"fail\"}\nprogress 50%\n  {\"status\": \"pass\", \"latency_ms\": [1.5]}\ndone\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, ResultStatus::kPass);
  EXPECT_DOUBLE_EQ(r->metrics["latency_ms"]["median"].get<double>(), 1.5);
}

TEST(ResultFromStdout, GarbageSaysWhatIsMissing) {
  auto none = read_result_from_stdout("hello\nworld\n");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no line of its stdout starts with '{'"), std::string::npos);
  auto broken = read_result_from_stdout("{status: pass}\n");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("not valid JSON"), std::string::npos) << broken.status().message();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LlamaBench, ARecordedRunBecomesSamplesAndThroughput) {
  const std::string text =
      read_file(std::string(ACCELMATRIX_SOURCE_DIR) + "/tests/data/commands/llama-bench-tinyllama-q4_0.json");
  ASSERT_FALSE(text.empty());
  auto r = read_llama_bench(text);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, ResultStatus::kPass);
  // The first test (pp512): five repetitions, in ms.
  const auto& lat = r->metrics["latency_ms"];
  EXPECT_EQ(lat["count"].get<int>(), 5);
  EXPECT_NEAR(lat["samples"][0].get<double>(), 27.012443, 1e-9);
  EXPECT_NEAR(lat["median"].get<double>(), 27.323710, 1e-9);
  EXPECT_DOUBLE_EQ(r->metrics["throughput"]["tokens_per_s"].get<double>(), 18710.96);
  ASSERT_EQ(r->metrics["llama_bench"].size(), 2u);
  EXPECT_EQ(r->metrics["llama_bench"][1]["n_gen"].get<int>(), 128);
  EXPECT_DOUBLE_EQ(r->metrics["llama_bench"][1]["avg_ts"].get<double>(), 319.02);
  EXPECT_NEAR(r->metrics["llama_bench"][1]["median_ms"].get<double>(), 400.884210, 1e-9);
  EXPECT_EQ(r->metrics["llama_bench"][0]["model_type"], "llama 1B Q4_0");
  EXPECT_NE(r->metrics["notes"].get<std::string>().find("2 test(s)"), std::string::npos);
}

TEST(LlamaBench, MalformedOutputIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"| model | size |", "not valid JSON"},
      {"{}", "expected a JSON array of tests"},
      {"[]", "no tests"},
      {R"([{"n_prompt": 512, "n_gen": 0, "avg_ts": 10}])", "llama-bench[0].samples_ns"},
      {R"([{"n_prompt": 512, "n_gen": 0, "samples_ns": [1]}])", "llama-bench[0].avg_ts"},
      {R"([{"n_gen": 0, "avg_ts": 1, "samples_ns": [1]}])", "llama-bench[0].n_prompt"},
      {R"([{"n_prompt": 1, "n_gen": 0, "avg_ts": 1, "samples_ns": [1, "x"]}])", "llama-bench[0].samples_ns[1]"},
  };
  for (const auto& [text, fragment] : cases) {
    auto r = read_llama_bench(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << text << " -> " << r.status().message();
  }
}

}  // namespace
}  // namespace am::worker
