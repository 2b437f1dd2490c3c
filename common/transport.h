// The ZeroMQ transport: RAII endpoints that speak whole protocol messages.
//
// Contract:
// - RouterEndpoint (coordinator side) binds a ROUTER socket; each received message comes with
//   the peer's routing identity. DealerEndpoint (worker/client side) connects a DEALER socket.
// - recv() returns std::nullopt on timeout. Frames that are oversized (> proto::kMaxFrameBytes),
//   have the wrong frame count, or fail proto::decode() are dropped, logged, and counted in
//   `rejections()`; they never surface as errors and never crash the caller.
// - send() never blocks indefinitely: a message to a peer that is gone is dropped (ROUTER
//   mandatory off), and a full DEALER queue yields kUnavailable.
// - Endpoints are move-only and not thread-safe: use each from one thread.
// - CURVE: when `curve` is given, the ROUTER is a CURVE server (with a ZAP allow-list of client
//   public keys when `allowed_client_keys` is non-empty) and the DEALER a CURVE client.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol.h"
#include "common/status.h"

namespace zmq { class context_t; class socket_t; }

namespace am {

struct RejectionCounters {
  uint64_t oversized = 0;       // frame above the size limit
  uint64_t malformed = 0;       // wrong frame count, unknown type, undecodable body
  uint64_t total() const { return oversized + malformed; }
};

struct CurveServerConfig {
  std::string public_key;                 // Z85, 40 chars
  std::string secret_key;                 // Z85, 40 chars
  std::vector<std::string> allowed_client_keys;  // Z85; empty = any client with the server key
};
struct CurveClientConfig {
  std::string server_public_key;
  std::string public_key;
  std::string secret_key;
};

// One process-wide ZeroMQ context, created on first use. Never touched by job child processes:
// they are spawned with exec, not forked.
zmq::context_t& zmq_context();

// Before the first socket (bind() and connect() call it too): raises the soft open-file limit to
// the hard one, and returns kResourceExhausted when the process may still open too few files
// for libzmq, which aborts instead of failing when it runs out of descriptors for itself. The
// verdict is taken once per process.
Status check_descriptor_limit();

// At process end, once every endpoint is closed: gives what endpoints closed with
// `DealerEndpoint::flush_on_close` still queue (a worker's last BYE) up to `max_wait_ms` to
// reach the wire, by terminating the shared context on a helper thread (zmq_ctx_term waits for
// lingering messages). Returns false when that did not finish in time, e.g. because a thread
// still holds a socket. Without this, the process exits with the messages still in ZeroMQ's
// queues and they are lost. No ZeroMQ use may follow.
bool finish_pending_sends(int64_t max_wait_ms);

struct Envelope {
  std::string peer;             // ROUTER routing identity (opaque bytes)
  proto::Message message;
  // Under CURVE: the client public key (Z85) the ZAP handler authenticated for the connection
  // this message came on (ZeroMQ's "User-Id" message property, set from the ZAP reply).
  // Empty without CURVE.
  std::string user_id;
  // The TCP peer's IP address as ZeroMQ reports it ("127.0.0.1", "::1", "10.0.0.7"); empty for
  // IPC and inproc connections, which are on this host by construction.
  std::string peer_address;
};

// True for a loopback IP address as Envelope::peer_address spells it: 127.0.0.0/8, ::1,
// ::ffff:127.x.x.x. False for anything else, the empty string included (a TCP message without
// a peer address is not trusted to be local).
bool is_loopback_address(std::string_view address);

// A routing identity for log lines: its first 16 bytes in hex ("-" when empty).
std::string hex_identity(std::string_view identity);

class RouterEndpoint {
 public:
  // endpoint like "tcp://*:7450" or "tcp://127.0.0.1:*" (ephemeral port).
  static Result<RouterEndpoint> bind(const std::string& endpoint,
                                     const CurveServerConfig* curve = nullptr);
  RouterEndpoint(RouterEndpoint&&) noexcept;
  RouterEndpoint& operator=(RouterEndpoint&&) noexcept;
  ~RouterEndpoint();

  // The resolved endpoint ("tcp://127.0.0.1:40123"), useful after binding port "*".
  std::string bound_endpoint() const;
  Status send(const std::string& peer, const proto::Message& msg);
  Result<std::optional<Envelope>> recv(int timeout_ms);
  const RejectionCounters& rejections() const;
  // Names a routing identity in the lines about input dropped from it (e.g. "worker w1"; ""
  // when unknown). The lines always give the identity and, for TCP, the peer's address.
  void name_peers(std::function<std::string(const std::string& identity)> namer);

 private:
  RouterEndpoint();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class DealerEndpoint {
 public:
  static Result<DealerEndpoint> connect(const std::string& endpoint,
                                       const CurveClientConfig* curve = nullptr);
  DealerEndpoint(DealerEndpoint&&) noexcept;
  DealerEndpoint& operator=(DealerEndpoint&&) noexcept;
  ~DealerEndpoint();

  Status send(const proto::Message& msg);
  Result<std::optional<proto::Message>> recv(int timeout_ms);
  const RejectionCounters& rejections() const;
  // Endpoints close with linger 0, dropping what is still queued. After this, closing keeps
  // queued messages for up to `linger_ms` so they can still be sent (see finish_pending_sends).
  void flush_on_close(int64_t linger_ms);
  // The underlying ZeroMQ socket (a `void*` for zmq_poll), so one thread can wait on many
  // endpoints at once (tests/sim_fleet drives hundreds of simulated workers that way). Only for
  // polling: reading or writing it directly would bypass the checks above.
  void* pollable() const;

 private:
  DealerEndpoint();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace am
