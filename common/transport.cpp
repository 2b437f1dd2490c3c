#include "common/transport.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <utility>

#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <zmq.hpp>

#include "common/clock.h"
#include "common/curve.h"
#include "common/log.h"
#include "common/reliability.h"

namespace am {

namespace {

// Messages a DEALER queues while its peer is slow or away before send() reports kUnavailable.
constexpr int kDealerSendHwm = 1000;
// At most one warning per interval per endpoint about dropped input; the rest go to debug.
constexpr int64_t kDropWarnIntervalMs = 1000;
// Frames per wire message: ROUTER sees [identity][type][body], DEALER sees [type][body].
constexpr std::size_t kRouterParts = 3;
constexpr std::size_t kDealerParts = 2;
// Bytes of a routing identity shown in log lines.
constexpr std::size_t kMaxIdentityShown = 16;

std::shared_ptr<spdlog::logger> transport_log() { return get_logger("common/transport"); }

Status zmq_status(const zmq::error_t& e, const std::string& what) {
  const std::string msg = what + ": " + e.what();
  switch (e.num()) {
    case EINVAL:
    case EPROTONOSUPPORT:
    case ENOCOMPATPROTO: return invalid_argument(msg);
    case EAGAIN:
    case ETERM:
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case ENODEV: return unavailable(msg);
    default: return io_error(msg);
  }
}


// Counts and reports dropped input without letting a flood of garbage flood the log.
class DropReporter {
 public:
  void oversized(RejectionCounters& c, const std::string& where, std::size_t parts) {
    ++c.oversized;
    report(where + ": dropped a message with a frame above " + std::to_string(proto::kMaxFrameBytes) +
           " bytes (" + std::to_string(parts) + " frames)");
  }
  void malformed(RejectionCounters& c, const std::string& where, const std::string& why) {
    ++c.malformed;
    report(where + ": dropped a malformed message: " + why);
  }

 private:
  void report(const std::string& line) {
    const int64_t now = steady_ms();
    if (now - last_warn_ms_ >= kDropWarnIntervalMs) {
      if (suppressed_ > 0) {
        transport_log()->warn("{} ({} more dropped since the last warning)", line, suppressed_);
      } else {
        transport_log()->warn("{}", line);
      }
      last_warn_ms_ = now;
      suppressed_ = 0;
    } else {
      ++suppressed_;
      transport_log()->debug("{}", line);
    }
  }

  int64_t last_warn_ms_ = -kDropWarnIntervalMs;
  uint64_t suppressed_ = 0;
};

// One multipart message read off a socket. Only the first `keep` frames are retained; the rest
// are counted and discarded so that a peer sending many frames cannot make us hold them.
struct Inbound {
  std::vector<zmq::message_t> parts;
  std::size_t count = 0;
  bool oversized = false;
};

// Reads one whole multipart message without blocking; count == 0 when none was waiting.
void read_multipart(zmq::socket_t& sock, std::size_t keep, Inbound& in) {
  in.parts.clear();
  in.count = 0;
  in.oversized = false;
  bool more = true;
  while (more) {
    zmq::message_t part;
    // Parts of a multipart message are delivered together, so after the first one the rest
    // are already here; a would-block can only happen before the first.
    if (!sock.recv(part, zmq::recv_flags::dontwait)) return;
    ++in.count;
    more = part.more();
    if (part.size() > proto::kMaxFrameBytes) in.oversized = true;
    if (!in.oversized && in.parts.size() < keep) in.parts.push_back(std::move(part));
  }
}

// The shared receive loop. `accept` validates one Inbound and returns true when it produced
// the caller's message. Policy: dropped input does not end the wait; the loop keeps polling
// until the deadline, and once the deadline has passed it returns at the next drop.
template <typename Accept>
Result<bool> receive_loop(zmq::socket_t& sock, int timeout_ms, std::size_t keep, Accept&& accept) {
  const int64_t deadline = steady_ms() + std::max(timeout_ms, 0);
  Inbound in;
  bool first = true;
  for (;;) {
    long wait_ms = -1;
    if (timeout_ms >= 0) {
      wait_ms = static_cast<long>(std::max<int64_t>(deadline - steady_ms(), 0));
      if (!first && wait_ms == 0) return false;
    }
    first = false;
    zmq_pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(wait_ms)) == 0) return false;
      read_multipart(sock, keep, in);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      return zmq_status(e, "recv");
    }
    if (in.count == 0) continue;
    if (accept(in)) return true;
  }
}

void apply_common_options(zmq::socket_t& sock) {
  sock.set(zmq::sockopt::linger, 0);
  // The library's own per-frame cap: a peer sending a bigger frame is disconnected before the
  // frame is buffered. We check sizes again on receipt because inproc transports skip it.
  sock.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(proto::kMaxFrameBytes));
}

// IPv6 only for a bracketed IPv6 address (tcp://[::1]:7450, common/endpoint.h). Not for every
// socket: with ZMQ_IPV6 on, libzmq resolves a host name to its IPv6 address first, so a worker
// told "localhost" would knock at ::1 while the coordinator listens on 127.0.0.1 only.
void enable_ipv6_if_needed(zmq::socket_t& sock, const std::string& endpoint) {
  if (endpoint.rfind("tcp://[", 0) == 0) sock.set(zmq::sockopt::ipv6, true);
}

Status send_frames(zmq::socket_t& sock, const std::string* identity, const proto::Message& msg,
                   const char* what) {
  proto::Frames frames = proto::encode(msg);
  if (frames.body.size() > proto::kMaxFrameBytes) {
    return resource_exhausted(std::string(what) + " " + frames.type + ": encoded body of " +
                              std::to_string(frames.body.size()) + " bytes exceeds the frame limit of " +
                              std::to_string(proto::kMaxFrameBytes));
  }
  try {
    // Only the first frame can be refused for a full queue: once it is accepted, libzmq
    // accepts the remaining frames of the same message.
    if (identity != nullptr) {
      if (!sock.send(zmq::buffer(*identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        return unavailable(std::string(what) + ": send queue full");
      }
    }
    const auto type_flags = identity != nullptr
                                ? zmq::send_flags::sndmore
                                : zmq::send_flags::sndmore | zmq::send_flags::dontwait;
    if (!sock.send(zmq::buffer(frames.type), type_flags)) {
      return unavailable(std::string(what) + ": send queue full (" +
                         std::to_string(kDealerSendHwm) + " messages waiting)");
    }
    sock.send(zmq::buffer(frames.body), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    return zmq_status(e, std::string(what) + " " + frames.type);
  }
  return Status::Ok();
}

}  // namespace

std::string hex_identity(std::string_view id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : id.substr(0, kMaxIdentityShown)) {
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  if (id.size() > kMaxIdentityShown) out += "..";
  return out.empty() ? "-" : out;
}

namespace {

// libzmq names each ROUTER peer that brings no routing id of its own "\0" followed by a 32-bit
// counter, and aborts the whole process (an assertion in its I/O thread) when that name is
// already held by a peer that chose it for itself. The counter starts at rand(), which libzmq
// never seeds: in every process it started at 0x6b8b4567, so a peer that first connected under
// the next twenty names took the coordinator down with the next honest connection. Seeded from
// the kernel's random source before the first socket exists, the next name is unguessable: a
// peer holding n names hits it with odds n / 2^32 per connection (docs/PROTOCOL.md §1).
void seed_routing_id_counter() {
  unsigned int seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) {
    // No entropy source (a very old kernel): time and pid still differ between processes.
    seed = static_cast<unsigned int>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           static_cast<unsigned int>(getpid()) * 2654435761u;
  }
  std::srand(seed);
}

}  // namespace

zmq::context_t& zmq_context() {
  // Deliberately never destroyed: zmq_ctx_term() blocks until every socket is closed, so a
  // context destroyed at exit would hang the process whenever a thread still owns an endpoint.
  static zmq::context_t* const ctx = [] {
    seed_routing_id_counter();
    return new zmq::context_t();
  }();
  return *ctx;
}

// libzmq aborts (an assertion, not an error) when it cannot make a descriptor it needs for
// itself: its I/O thread's epoll, a socket's mailbox, a resolver's socket. Checked before the
// first socket of the process: the soft limit is raised to the hard one, and a process still
// allowed fewer than this many open files is refused with an error instead of aborting later.
namespace {
constexpr rlim_t kMinOpenFiles = 64;
}  // namespace

Status check_descriptor_limit() {
  static const Status checked = [] {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return Status::Ok();
    if (limit.rlim_cur < limit.rlim_max) {
      rlimit raised = limit;
      raised.rlim_cur = limit.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < kMinOpenFiles) {
      return resource_exhausted("this process may open only " + std::to_string(limit.rlim_cur) +
                                " files (ulimit -n); ZeroMQ needs at least " + std::to_string(kMinOpenFiles) +
                                " to run without aborting");
    }
    return Status::Ok();
  }();
  return checked;
}

bool finish_pending_sends(int64_t max_wait_ms) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  // Detached: zmq_ctx_term blocks for as long as any socket is open, and the caller is about
  // to exit, which ends the thread whatever it is doing.
  std::thread([done] {
    zmq_context().close();
    done->set_value();
  }).detach();
  return finished.wait_for(std::chrono::milliseconds(max_wait_ms)) == std::future_status::ready;
}

// ---------------------------------------------------------------------------------------------
// RouterEndpoint

struct RouterEndpoint::Impl {
  // Declared before the socket so that it is destroyed after it: the socket must not outlive
  // the allow-list its handshakes are checked against.
  std::optional<ZapAllowList> zap;
  zmq::socket_t socket;
  std::string endpoint;
  RejectionCounters rejections;
  DropReporter drops;
  std::function<std::string(const std::string&)> namer;
};

RouterEndpoint::RouterEndpoint() = default;
RouterEndpoint::RouterEndpoint(RouterEndpoint&&) noexcept = default;
RouterEndpoint& RouterEndpoint::operator=(RouterEndpoint&&) noexcept = default;
RouterEndpoint::~RouterEndpoint() = default;

Result<RouterEndpoint> RouterEndpoint::bind(const std::string& endpoint,
                                            const CurveServerConfig* curve) {
  AM_RETURN_IF_ERROR(check_descriptor_limit());
  auto impl = std::make_unique<Impl>();
  if (curve != nullptr) {
    if (!curve_available()) return unsupported("CURVE requested but libzmq lacks CURVE support");
    AM_RETURN_IF_ERROR(validate_curve_key(curve->public_key, "curve.public_key"));
    AM_RETURN_IF_ERROR(validate_curve_key(curve->secret_key, "curve.secret_key"));
    AM_ASSIGN_OR_RETURN(std::string derived, curve_public_key_from_secret(curve->secret_key));
    if (derived != curve->public_key) {
      return invalid_argument("curve.public_key does not belong to curve.secret_key");
    }
    AM_ASSIGN_OR_RETURN(ZapAllowList zap, ZapAllowList::create(curve->allowed_client_keys));
    impl->zap.emplace(std::move(zap));
  }
  try {
    impl->socket = zmq::socket_t(zmq_context(), zmq::socket_type::router);
    apply_common_options(impl->socket);
    // Replies to peers that are gone are dropped instead of failing the coordinator's loop.
    impl->socket.set(zmq::sockopt::router_mandatory, false);
    if (impl->zap) {
      impl->socket.set(zmq::sockopt::curve_server, true);
      impl->socket.set(zmq::sockopt::curve_publickey, curve->public_key);
      impl->socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
      impl->socket.set(zmq::sockopt::zap_domain, impl->zap->domain());
    }
    enable_ipv6_if_needed(impl->socket, endpoint);
    impl->socket.bind(endpoint);
    impl->endpoint = impl->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return zmq_status(e, "bind " + endpoint);
  }
  transport_log()->debug("ROUTER bound at {}{}", impl->endpoint, impl->zap ? " (CURVE)" : "");
  RouterEndpoint ep;
  ep.impl_ = std::move(impl);
  return ep;
}

void RouterEndpoint::name_peers(std::function<std::string(const std::string& identity)> namer) {
  if (impl_) impl_->namer = std::move(namer);
}

std::string RouterEndpoint::bound_endpoint() const { return impl_ ? impl_->endpoint : std::string(); }

Status RouterEndpoint::send(const std::string& peer, const proto::Message& msg) {
  if (!impl_) return failed_precondition("RouterEndpoint used after move");
  if (peer.empty()) return invalid_argument("ROUTER send: empty peer identity");
  return send_frames(impl_->socket, &peer, msg, "ROUTER send");
}

Result<std::optional<Envelope>> RouterEndpoint::recv(int timeout_ms) {
  if (!impl_) return failed_precondition("RouterEndpoint used after move");
  std::optional<Envelope> out;
  AM_ASSIGN_OR_RETURN(bool got, receive_loop(impl_->socket, timeout_ms, kRouterParts, [&](Inbound& in) {
    std::string peer = in.parts.empty() ? std::string() : in.parts[0].to_string();
    // Who sent it, as far as the socket and the server know: the routing identity, the TCP
    // address (any frame of the connection carries it) and the worker registered on it.
    auto where = [&] {
      std::string w = "ROUTER " + impl_->endpoint + " peer " + hex_identity(peer);
      if (in.parts.size() > 1) {
        if (const char* addr = zmq_msg_gets(in.parts.back().handle(), "Peer-Address")) w += std::string(" at ") + addr;
      }
      if (impl_->namer) {
        if (std::string name = impl_->namer(peer); !name.empty()) w += " (" + name + ")";
      }
      return w;
    };
    if (in.oversized) {
      impl_->drops.oversized(impl_->rejections, where(), in.count);
      return false;
    }
    if (in.count != kRouterParts) {
      impl_->drops.malformed(impl_->rejections, where(),
                             "expected [identity][type][body], got " + std::to_string(in.count) +
                                 " frames");
      return false;
    }
    Result<proto::Message> decoded =
        proto::decode(in.parts[1].to_string_view(), in.parts[2].to_string_view());
    if (!decoded.ok()) {
      impl_->drops.malformed(impl_->rejections, where(), decoded.status().message());
      return false;
    }
    std::string user_id;
    if (impl_->zap) {
      // Every message of a CURVE connection carries the ZAP reply's user id as metadata.
      if (const char* uid = zmq_msg_gets(in.parts[1].handle(), "User-Id")) user_id = uid;
    }
    // "Peer-Address" is set for TCP connections only (IPC and inproc peers are on this host).
    std::string peer_address;
    if (const char* addr = zmq_msg_gets(in.parts[1].handle(), "Peer-Address")) peer_address = addr;
    out = Envelope{std::move(peer), std::move(decoded).value(), std::move(user_id), std::move(peer_address)};
    return true;
  }));
  if (!got) return std::optional<Envelope>();
  return out;
}

bool is_loopback_address(std::string_view a) {
  return a.substr(0, 4) == "127." || a == "::1" || a.substr(0, 11) == "::ffff:127.";
}

const RejectionCounters& RouterEndpoint::rejections() const {
  static const RejectionCounters kNone;
  return impl_ ? impl_->rejections : kNone;
}

// ---------------------------------------------------------------------------------------------
// DealerEndpoint

struct DealerEndpoint::Impl {
  zmq::socket_t socket;
  std::string endpoint;
  RejectionCounters rejections;
  DropReporter drops;
};

DealerEndpoint::DealerEndpoint() = default;
DealerEndpoint::DealerEndpoint(DealerEndpoint&&) noexcept = default;
DealerEndpoint& DealerEndpoint::operator=(DealerEndpoint&&) noexcept = default;
DealerEndpoint::~DealerEndpoint() = default;

Result<DealerEndpoint> DealerEndpoint::connect(const std::string& endpoint,
                                               const CurveClientConfig* curve) {
  if (curve != nullptr) {
    if (!curve_available()) return unsupported("CURVE requested but libzmq lacks CURVE support");
    AM_RETURN_IF_ERROR(validate_curve_key(curve->server_public_key, "curve.server_public_key"));
    AM_RETURN_IF_ERROR(validate_curve_key(curve->public_key, "curve.public_key"));
    AM_RETURN_IF_ERROR(validate_curve_key(curve->secret_key, "curve.secret_key"));
    AM_ASSIGN_OR_RETURN(std::string derived, curve_public_key_from_secret(curve->secret_key));
    if (derived != curve->public_key) {
      return invalid_argument("curve.public_key does not belong to curve.secret_key");
    }
  }
  AM_RETURN_IF_ERROR(check_descriptor_limit());
  auto impl = std::make_unique<Impl>();
  impl->endpoint = endpoint;
  try {
    impl->socket = zmq::socket_t(zmq_context(), zmq::socket_type::dealer);
    apply_common_options(impl->socket);
    impl->socket.set(zmq::sockopt::sndhwm, kDealerSendHwm);
    // Queue messages while the connection is (re)established rather than refusing them; the
    // protocol's own heartbeats decide when a peer is gone.
    impl->socket.set(zmq::sockopt::immediate, false);
    impl->socket.set(zmq::sockopt::reconnect_ivl, static_cast<int>(reliability::kReconnectInitialMs));
    impl->socket.set(zmq::sockopt::reconnect_ivl_max, static_cast<int>(reliability::kReconnectMaxMs));
    if (curve != nullptr) {
      impl->socket.set(zmq::sockopt::curve_serverkey, curve->server_public_key);
      impl->socket.set(zmq::sockopt::curve_publickey, curve->public_key);
      impl->socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
    }
    enable_ipv6_if_needed(impl->socket, endpoint);
    impl->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return zmq_status(e, "connect " + endpoint);
  }
  DealerEndpoint ep;
  ep.impl_ = std::move(impl);
  return ep;
}

Status DealerEndpoint::send(const proto::Message& msg) {
  if (!impl_) return failed_precondition("DealerEndpoint used after move");
  return send_frames(impl_->socket, nullptr, msg, "DEALER send");
}

Result<std::optional<proto::Message>> DealerEndpoint::recv(int timeout_ms) {
  if (!impl_) return failed_precondition("DealerEndpoint used after move");
  std::optional<proto::Message> out;
  AM_ASSIGN_OR_RETURN(bool got, receive_loop(impl_->socket, timeout_ms, kDealerParts, [&](Inbound& in) {
    auto where = [&] { return "DEALER " + impl_->endpoint; };
    if (in.oversized) {
      impl_->drops.oversized(impl_->rejections, where(), in.count);
      return false;
    }
    if (in.count != kDealerParts) {
      impl_->drops.malformed(impl_->rejections, where(),
                             "expected [type][body], got " + std::to_string(in.count) + " frames");
      return false;
    }
    Result<proto::Message> decoded =
        proto::decode(in.parts[0].to_string_view(), in.parts[1].to_string_view());
    if (!decoded.ok()) {
      impl_->drops.malformed(impl_->rejections, where(), decoded.status().message());
      return false;
    }
    out = std::move(decoded).value();
    return true;
  }));
  if (!got) return std::optional<proto::Message>();
  return out;
}

void DealerEndpoint::flush_on_close(int64_t linger_ms) {
  if (!impl_) return;
  try {
    impl_->socket.set(zmq::sockopt::linger, static_cast<int>(linger_ms));
  } catch (const zmq::error_t&) {
    // Only a closed context refuses this; then there is nothing left to flush.
  }
}

void* DealerEndpoint::pollable() const { return impl_ ? impl_->socket.handle() : nullptr; }

const RejectionCounters& DealerEndpoint::rejections() const {
  static const RejectionCounters kNone;
  return impl_ ? impl_->rejections : kNone;
}

}  // namespace am
