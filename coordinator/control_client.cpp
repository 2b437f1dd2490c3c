#include "coordinator/control_client.h"

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <unistd.h>

#include <sodium.h>

#include "common/clock.h"
#include "common/curve_files.h"
#include "common/endpoint.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "coordinator/db_lock.h"

namespace am::coord {
namespace {

std::string this_host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// "tcp://0.0.0.0:7450" -> "tcp://HOST:7450" (a coordinator bound to every interface).
std::string connectable(const std::string& endpoint, const std::string& host) {
  for (const char* wildcard : {"tcp://0.0.0.0:", "tcp://*:"}) {
    const std::string w = wildcard;
    if (endpoint.rfind(w, 0) == 0) return "tcp://" + host + ":" + endpoint.substr(w.size());
  }
  return endpoint;
}

std::string random_request_id() {
  unsigned char bytes[8];
  randombytes_buf(bytes, sizeof bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "req-";
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
  }
  return out;
}

}  // namespace

Result<std::string> resolve_control_endpoint(const ControlTarget& t) {
  if (!t.coordinator.empty()) {
    AM_RETURN_IF_ERROR(validate_endpoint(t.coordinator, EndpointUse::kConnect).with_context("--coordinator"));
    return t.coordinator;
  }
  std::optional<DbHolder> holder = read_db_holder(t.db);
  std::error_code ec;
  if (!holder && !std::filesystem::exists(t.db, ec)) {
    return unavailable("no coordinator is running on " + t.db + ": there is no such database (--db names the "
                       "database a coordinator was started with; default accelmatrix.db in the current "
                       "directory); start one with `accelmatrix serve` or `run`, or name one with "
                       "--coordinator tcp://HOST:PORT");
  }
  if (!holder) {
    return unavailable("no coordinator is running on " + t.db +
                       " (its lock file names none); start one with `accelmatrix serve` or `run`, name one with "
                       "--coordinator tcp://HOST:PORT, or see what the database holds with `accelmatrix runs`");
  }
  const std::string here = this_host();
  if (holder->host == here && holder->pid > 0 && ::kill(static_cast<pid_t>(holder->pid), 0) != 0 && errno == ESRCH) {
    return unavailable("the coordinator recorded for " + t.db + " (" + holder->describe() +
                       ") is not running; see what the database holds with `accelmatrix runs`");
  }
  if (holder->endpoint.empty()) {
    return unavailable("the coordinator of " + t.db + " (" + holder->describe() + ") has not bound its endpoint yet");
  }
  return connectable(holder->endpoint, holder->host == here ? std::string("127.0.0.1") : holder->host);
}

Result<nlohmann::json> control_request(const ControlTarget& t, const std::string& op, const nlohmann::json& args) {
  AM_ASSIGN_OR_RETURN(std::string endpoint, resolve_control_endpoint(t));
  if (sodium_init() < 0) return internal_error("libsodium failed to initialise");
  std::optional<CurveClientConfig> curve;
  if (!t.curve_key.empty() || !t.curve_server.empty()) {
    if (t.curve_key.empty() || t.curve_server.empty()) {
      return invalid_argument("--curve-key and --curve-server go together");
    }
    AM_ASSIGN_OR_RETURN(CurveKeyPair pair, load_curve_keypair(t.curve_key));
    AM_ASSIGN_OR_RETURN(std::string server_key, load_curve_public_key(t.curve_server));
    curve = CurveClientConfig{server_key, pair.public_key, pair.secret_key};
  }
  AM_ASSIGN_OR_RETURN(DealerEndpoint dealer, DealerEndpoint::connect(endpoint, curve ? &*curve : nullptr));
  proto::Control c;
  c.request_id = random_request_id();
  c.op = op;
  c.args = args;
  AM_RETURN_IF_ERROR(dealer.send(proto::Message{c}));
  const int64_t deadline = steady_ms() + t.timeout_ms;
  for (;;) {
    const int64_t left = deadline - steady_ms();
    if (left <= 0) break;
    AM_ASSIGN_OR_RETURN(std::optional<proto::Message> msg, dealer.recv(static_cast<int>(left)));
    if (!msg) break;
    const auto* reply = std::get_if<proto::Reply>(&msg->body);
    if (reply == nullptr || reply->request_id != c.request_id) continue;   // not ours
    if (reply->ok) return reply->data;
    if (reply->code == "not_found") return not_found(reply->error);
    if (reply->code == "invalid_argument") return invalid_argument(reply->error);
    if (reply->code == "permission_denied") return failed_precondition("refused: " + reply->error);
    if (reply->code == "failed_precondition") return failed_precondition(reply->error);
    return internal_error("coordinator: " + reply->error);
  }
  // The coordinator may have died while we waited (its lock file still names it).
  if (t.coordinator.empty()) {
    if (auto again = resolve_control_endpoint(t); !again.ok()) return again.status();
  }
  return unavailable("no answer from a coordinator at " + endpoint + " within " + std::to_string(t.timeout_ms) +
                     " ms" +
                     (curve ? " (under CURVE a key the coordinator does not admit gets no connection at all)"
                            : " (a coordinator that uses CURVE answers only to --curve-key/--curve-server)"));
}

}  // namespace am::coord
