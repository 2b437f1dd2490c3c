#include "worker/deliverable_result.h"

namespace am::worker {

bool ensure_deliverable(proto::JobResult& r) {
  const proto::Frames frames = proto::encode(proto::Message{r});
  if (frames.body.size() > proto::kMaxFrameBytes) {
    r.reason = "worker could not deliver the job's result: " + std::to_string(frames.body.size()) +
               " bytes exceed the " + std::to_string(proto::kMaxFrameBytes) + "-byte frame limit";
  } else if (auto check = proto::decode(frames.type, frames.body); !check.ok()) {
    r.reason = "worker could not deliver the job's result: " + check.status().message();
  } else {
    return true;
  }
  r.status = ResultStatus::kError;
  r.metrics = nlohmann::json::object();
  return false;
}

}  // namespace am::worker
