// Making sure a RESULT can reach the coordinator.
//
// A RESULT the coordinator's decoder would refuse (a metrics document beyond the protocol's
// limits, say) is dropped there and never ACKed, so the job would wait for its lease to run out.
// ensure_deliverable() checks a result with the same encoder and decoder the coordinator uses;
// when it would be refused, it turns the result into status "error" with a reason naming why,
// keeps the log tail and drops the metrics. Returns true when the result was left unchanged.
#pragma once

#include "common/protocol.h"

namespace am::worker {

bool ensure_deliverable(proto::JobResult& result);

}  // namespace am::worker
