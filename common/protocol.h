// The accelmatrix wire protocol, v1: message types, version constants and the typed bodies.
//
// Contract: this header is the one definition shared by coordinator and worker; docs/PROTOCOL.md
// is its prose twin and must match it. Every message on the wire is a ZeroMQ multipart message
// [type][body] where `type` is the ASCII message name (e.g. "HELLO") and `body` is a msgpack map
// with the named fields below. Unknown fields are ignored (forward compatibility); missing
// required fields, wrong types, oversized strings/arrays or ids that are not well-formed make
// decode() return an error — it never throws and never crashes on any input.
// Nested documents (capability record, job spec, metrics) travel as msgpack maps and are handed
// to the application as nlohmann::json, bounded in depth and size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result_status.h"
#include "common/status.h"

namespace am::proto {

inline constexpr int kVersionMajor = 1;
inline constexpr int kVersionMinor = 6;   // 1.1: HELLO.held; 1.2: HELLO.secret, READY.window/seen;
                                          // 1.3: CONTROL/REPLY (admin clients, §5.10);
                                          // 1.4: HELLO.commands, ASSIGN.spec.command;
                                          // 1.5: HELLO.host_id, ASSIGN.spec.placement (§5.12);
                                          // 1.6: HELLO.draining (§5.7)

// Size limits enforced on decode. A frame larger than kMaxFrameBytes is dropped before parsing.
inline constexpr std::size_t kMaxFrameBytes = 4u << 20;       // 4 MiB
inline constexpr std::size_t kMaxStringBytes = 64u << 10;     // any single string field
inline constexpr std::size_t kMaxLogTailBytes = 64u << 10;    // RESULT.log_tail
inline constexpr std::size_t kMaxIdBytes = 128;               // worker ids, job ids
inline constexpr std::size_t kMinSecretBytes = 32;            // HELLO.secret, when present
inline constexpr std::size_t kMaxMapEntries = 4096;           // any map or array
inline constexpr int kMaxNestingDepth = 16;                   // nested documents

// What is wrong with `s` as an id on the wire (a worker id, a job id, a tag key): "" when it is
// 1..kMaxIdBytes bytes of printable ASCII without whitespace, else the reason.
std::string id_problem(std::string_view s);

enum class MsgType {
  kHello,      // worker -> coordinator
  kWelcome,    // coordinator -> worker
  kReject,     // coordinator -> worker
  kHeartbeat,  // both ways
  kReady,      // worker -> coordinator: grants credits
  kAssign,     // coordinator -> worker
  kProgress,   // worker -> coordinator
  kResult,     // worker -> coordinator
  kAck,        // coordinator -> worker
  kCancel,     // coordinator -> worker
  kDrain,      // coordinator -> worker
  kBye,        // worker -> coordinator
  kControl,    // admin client -> coordinator (since 1.3)
  kReply,      // coordinator -> admin client (since 1.3)
};

std::string_view msg_type_name(MsgType t);                 // "HELLO", ...
std::optional<MsgType> msg_type_from_name(std::string_view name);

struct Hello {
  int version_major = kVersionMajor;
  int version_minor = kVersionMinor;
  std::string worker_id;          // stable across restarts (kept on disk by the worker)
  std::string hostname;
  std::string build;              // "accelmatrix 0.1.0 (abcdef123456)"
  nlohmann::json capabilities = nlohmann::json::object();  // capability record
  std::map<std::string, std::string> tags;
  int slots = 1;                  // jobs it may run at once
  // Attempts this worker holds — running, or finished with the result not yet ACKed — as
  // {job_id: attempt}. On (re-)registration the coordinator reclaims at once every lease of
  // this worker that is not listed (an ASSIGN lost with a dead connection, or a restarted
  // worker). Since 1.1; absent means "nothing held".
  std::map<std::string, int> held;
  // Since 1.2: the worker's registration secret (32..128 printable ASCII characters, kept in
  // its state dir). Without CURVE, a worker id is bound to the secret of its first WELCOME and
  // a later HELLO for that id must carry the same secret (docs/PROTOCOL.md §5.8). Empty = none.
  std::string secret;
  // Since 1.4: the worker runs external command jobs (accelmatrix-worker --allow-commands). A
  // coordinator sends a job whose spec has `command` only to a worker that said true here;
  // absent (older workers) means false.
  bool commands = false;
  // Since 1.5: the machine the worker runs on (/etc/machine-id, docs/PROTOCOL.md §5.12). Workers
  // on one machine send the same id, so the coordinator knows that their cpu and software
  // devices share cores (exclusive perf jobs). Empty = unknown: the worker counts as its own host.
  std::string host_id;
  // Since 1.6: the worker got DRAIN (from this coordinator or one before a restart) and is
  // finishing its jobs before it leaves; the new session is draining at once. Absent: false.
  bool draining = false;
};

struct Welcome {
  int version_major = kVersionMajor;
  int version_minor = kVersionMinor;
  int64_t heartbeat_interval_ms = 0;
  int heartbeat_liveness = 0;     // peer dead after this many silent intervals
  int64_t lease_grace_ms = 0;     // lease = job timeout + this grace
  std::string run_id;
};

struct Reject {
  std::string reason;
  bool retry = false;             // true: send HELLO again (e.g. coordinator restarted)
};

struct Heartbeat {};

struct Ready {
  // 1.0/1.1 (legacy): additional jobs the worker can accept now, per device key ("cpu:0").
  // Credits add up; they are reset to zero when the coordinator sends WELCOME. Ignored when
  // `window` is present.
  std::map<std::string, int> credits;
  // Since 1.2: the worker's credit window — how many jobs it can accept on each device now,
  // counting every ASSIGN it has received on this session (absolute, not an increment), and
  // `seen`, the number of ASSIGNs it has received since this session's WELCOME. The
  // coordinator's credits for a device are window - (ASSIGNs sent on the session - seen).
  // A READY with a window replaces the previous one, so repeating it is harmless.
  std::optional<std::map<std::string, int>> window;
  int64_t seen = 0;
};

struct Assign {
  std::string job_id;
  int attempt = 0;                // 1-based
  int64_t lease_ms = 0;           // the coordinator reclaims the job this long after ASSIGN
  std::string device;             // device key the credit came from
  nlohmann::json spec = nlohmann::json::object();   // jobs::JobSpec as a document
};

struct Progress {
  std::string job_id;
  int attempt = 0;
  std::string phase;              // "started", "reference", "measuring", ...
};

struct JobResult {
  std::string job_id;
  int attempt = 0;
  ResultStatus status = ResultStatus::kError;   // common/result_status.h; a string on the wire
  std::string reason;             // why, for every status other than pass
  // The latency/accuracy/memory documents. The sender fills `metrics`, which encode() sends;
  // decode() leaves it empty and gives the document as JSON text in `metrics_json` instead (the
  // bytes to_json_text() writes for that tree, "{}" when absent), which the coordinator stores
  // as it is: a tree of ~1.6 KiB of metrics per result, built and written out again, was a
  // quarter of storing a result (docs/SCALE.md). encode() sends `metrics_json` read back when
  // `metrics` is empty, so a decoded RESULT re-encodes to the same document, except that NaN
  // and infinities, null in JSON text, go out as nil.
  nlohmann::json metrics = nlohmann::json::object();
  std::string metrics_json;
  std::string log_tail;           // last bytes of the job process's output
  int64_t started_at_ms = 0;      // unix epoch milliseconds
  int64_t finished_at_ms = 0;
};

struct Ack {
  std::string job_id;
  int attempt = 0;
};

struct Cancel {
  std::string job_id;
  int attempt = 0;
  std::string reason;
};

struct Drain {
  std::string reason;
};

struct Bye {
  std::string reason;
};

// Since 1.3: a request from an admin client (`accelmatrix status`, `submit`, `cancel`, `drain`,
// `release`) on its own DEALER connection; never part of a worker session. The coordinator
// answers each with one REPLY carrying the same request_id. Operations and their arguments:
// docs/PROTOCOL.md §5.10.
struct Control {
  std::string request_id;         // id chosen by the client, echoed in REPLY
  std::string op;                 // "status" | "submit" | "cancel" | "drain" | "release"
  nlohmann::json args = nlohmann::json::object();
};

struct Reply {
  std::string request_id;
  bool ok = false;
  std::string error;              // why, when !ok
  // When !ok: "invalid_argument" | "not_found" | "failed_precondition" | "permission_denied" |
  // "internal" — so a client can tell a bad request from a refusal.
  std::string code;
  nlohmann::json data = nlohmann::json::object();
};

using Body = std::variant<Hello, Welcome, Reject, Heartbeat, Ready, Assign, Progress, JobResult,
                          Ack, Cancel, Drain, Bye, Control, Reply>;

struct Message {
  Body body;
  MsgType type() const;
};

// Encodes to the two wire frames: type name and msgpack body.
struct Frames {
  std::string type;
  std::string body;
};
Frames encode(const Message& msg);

// Decodes and validates. Error messages name the message type and the offending field,
// e.g. "RESULT.attempt: expected integer >= 1, got string". Required vs optional fields and
// every bound are listed in docs/PROTOCOL.md §3; a nil field counts as absent. A HELLO or
// WELCOME whose version_major is not kVersionMajor is decoded only as far as its two version
// fields (the rest keep their defaults), so the receiver can refuse it with a reason: check
// version_compatible() before using any other field.
Result<Message> decode(std::string_view type_frame, std::string_view body_frame);

// True when a peer speaking `major` can talk to us.
bool version_compatible(int major);

}  // namespace am::proto
