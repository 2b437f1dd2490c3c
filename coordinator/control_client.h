// The client side of CONTROL (docs/PROTOCOL.md §5.10): `accelmatrix status`, `submit`,
// `cancel`, `drain` and `release` send one request to a live coordinator and wait for its REPLY.
//
// Contract:
// - The coordinator is `coordinator` when given (tcp://HOST:PORT or ipc://PATH), else the one
//   holding `db` (its endpoint is in the database's lock file, coordinator/db_lock.h; a wildcard
//   bind address becomes 127.0.0.1 on the holder's own host, its host name elsewhere).
// - control_request() connects a DEALER (a CURVE client when curve_key and curve_server are
//   given), sends CONTROL and returns REPLY.data. Errors: kInvalidArgument for bad arguments or
//   an endpoint that can never be valid; kNotFound / kFailedPrecondition / kInvalidArgument as
//   the coordinator answered (`not_found`, `permission_denied` and `failed_precondition` map to
//   kNotFound, kFailedPrecondition and kFailedPrecondition); kUnavailable when no coordinator
//   is recorded or none answered within timeout_ms (the message says which and where).
// - Not thread-safe; one request at a time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace am::coord {

// How long a control client waits for the REPLY.
inline constexpr int kControlReplyTimeoutMs = 5000;
// How long `submit` waits: the coordinator expands and stores the plan before it answers, and a
// plan of a million jobs takes it tens of seconds (docs/SCALE.md); five seconds made such a
// submit exit 4 while the coordinator went on and stored it. A dead coordinator found through
// --db is still reported at once (no live holder of the database).
inline constexpr int kSubmitReplyTimeoutMs = 300'000;

struct ControlTarget {
  std::string coordinator;             // explicit endpoint; empty: from db's lock file
  std::string db = "accelmatrix.db";
  std::string curve_key;               // admin's .key file
  std::string curve_server;            // the coordinator's .pub file
  int timeout_ms = kControlReplyTimeoutMs;
};

Result<std::string> resolve_control_endpoint(const ControlTarget& target);

Result<nlohmann::json> control_request(const ControlTarget& target, const std::string& op,
                                       const nlohmann::json& args = nlohmann::json::object());

}  // namespace am::coord
