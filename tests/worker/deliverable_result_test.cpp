#include <gtest/gtest.h>

#include "worker/deliverable_result.h"

namespace am::worker {
namespace {

proto::JobResult sample_result() {
  proto::JobResult r;
  r.job_id = "0123456789abcdef";
  r.attempt = 2;
  r.status = am::ResultStatus::kPass;
  r.metrics = {{"latency_ms", {{"median", 1.25}, {"count", 10}}}};
  r.log_tail = "last line\n";
  return r;
}

TEST(DeliverableResult, LeavesAResultWithinTheLimitsUnchanged) {
  auto r = sample_result();
  EXPECT_TRUE(ensure_deliverable(r));
  EXPECT_EQ(r.status, am::ResultStatus::kPass);
  EXPECT_EQ(r.metrics["latency_ms"]["median"], 1.25);
}

TEST(DeliverableResult, TurnsAnUndecodableResultIntoAnErrorThatSaysWhy) {
  auto r = sample_result();
  // More array entries than the decoder accepts in one document.
  r.metrics["latency_ms"]["samples"] = std::vector<double>(proto::kMaxMapEntries + 1, 0.5);
  EXPECT_FALSE(ensure_deliverable(r));
  EXPECT_EQ(r.status, am::ResultStatus::kError);
  EXPECT_NE(r.reason.find("could not deliver"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.metrics.empty());
  EXPECT_EQ(r.log_tail, "last line\n");
  // And what it became is deliverable.
  auto frames = proto::encode(proto::Message{r});
  EXPECT_TRUE(proto::decode(frames.type, frames.body).ok());
}

TEST(DeliverableResult, TurnsAnOversizedResultIntoAnError) {
  auto r = sample_result();
  nlohmann::json big = nlohmann::json::object();
  for (int i = 0; i < 80; ++i) big["k" + std::to_string(i)] = std::string(proto::kMaxStringBytes - 16, 'x');
  r.metrics["blob"] = big;   // ~5 MiB of strings, each within the string limit
  EXPECT_FALSE(ensure_deliverable(r));
  EXPECT_EQ(r.status, am::ResultStatus::kError);
  EXPECT_NE(r.reason.find("frame limit"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace am::worker
