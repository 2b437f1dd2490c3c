#include "common/curve.h"

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <zmq.hpp>

#include "common/clock.h"
#include "common/log.h"
#include "common/transport.h"

namespace am {

namespace {

constexpr std::size_t kCurveKeyBytes = 32;
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr const char* kZapVersion = "1.0";
// How often the handler thread looks at its stop flag while idle; bounds shutdown latency.
constexpr int64_t kZapPollMs = 50;
// One log line per this interval per domain at most: refused clients retry every reconnect.
constexpr int64_t kDenialLogIntervalMs = 5000;

std::shared_ptr<spdlog::logger> zap_log() { return get_logger("common/curve"); }

struct DomainPolicy {
  std::set<std::string> allowed;   // Z85 client public keys
  bool allow_any = false;
  std::atomic<uint64_t> denied{0};
  std::atomic<int64_t> last_denial_log_ms{0};
};

// Serves ZAP requests for every registered domain from one REP socket.
class ZapHandler {
 public:
  static Result<std::shared_ptr<ZapHandler>> start() {
    auto handler = std::shared_ptr<ZapHandler>(new ZapHandler());
    std::promise<Status> bound;
    std::future<Status> bound_result = bound.get_future();
    handler->thread_ = std::thread([h = handler.get(), p = std::move(bound)]() mutable {
      h->run(std::move(p));
    });
    Status st = bound_result.get();
    if (!st.ok()) {
      handler->thread_.join();
      return st;
    }
    return handler;
  }

  ~ZapHandler() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  void add(const std::string& domain, std::shared_ptr<DomainPolicy> policy) {
    std::lock_guard lock(mu_);
    domains_[domain] = std::move(policy);
  }
  void remove(const std::string& domain) {
    std::lock_guard lock(mu_);
    domains_.erase(domain);
  }

 private:
  ZapHandler() = default;

  void run(std::promise<Status> bound) {
    bool reported = false;
    try {
      zmq::socket_t rep(zmq_context(), zmq::socket_type::rep);
      rep.set(zmq::sockopt::linger, 0);
      rep.bind(kZapEndpoint);
      bound.set_value(Status::Ok());
      reported = true;
      serve(rep);
      // Unbind explicitly: inproc endpoints are otherwise released asynchronously by the
      // reaper, and a handler started right after this one must be able to bind again.
      rep.unbind(kZapEndpoint);
    } catch (const std::exception& e) {
      if (!reported) {
        bound.set_value(unavailable(std::string("ZAP handler: cannot serve ") + kZapEndpoint +
                                    ": " + e.what()));
      } else {
        // Only context termination gets here (process shutdown). From now on libzmq would
        // admit CURVE clients without asking ZAP, so say so at the loudest level.
        zap_log()->error("ZAP handler stopped, CURVE allow-lists no longer enforced: {}", e.what());
      }
    }
  }

  void serve(zmq::socket_t& rep) {
    std::vector<zmq::message_t> request;
    while (!stop_.load()) {
      zmq_pollitem_t item{rep.handle(), 0, ZMQ_POLLIN, 0};
      try {
        if (zmq::poll(&item, 1, std::chrono::milliseconds(kZapPollMs)) == 0) continue;
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      request.clear();
      bool more = true;
      while (more) {
        zmq::message_t part;
        if (!rep.recv(part, zmq::recv_flags::dontwait)) break;
        more = part.more();
        request.push_back(std::move(part));
      }
      if (request.empty()) continue;
      reply(rep, request);
    }
  }

  // ZAP (RFC 27): request = version, request id, domain, address, identity, mechanism,
  // credentials...; reply = version, request id, status code, status text, user id, metadata.
  void reply(zmq::socket_t& rep, const std::vector<zmq::message_t>& req) {
    std::string request_id = req.size() > 1 ? req[1].to_string() : std::string();
    std::string code = "400";
    std::string text = "malformed ZAP request";
    std::string user_id;
    if (req.size() >= 6 && req[0].to_string_view() == kZapVersion) {
      const std::string domain = req[2].to_string();
      std::shared_ptr<DomainPolicy> policy;
      {
        std::lock_guard lock(mu_);
        auto it = domains_.find(domain);
        if (it != domains_.end()) policy = it->second;
      }
      const bool is_curve = req[5].to_string_view() == "CURVE" && req.size() >= 7 &&
                            req[6].size() == kCurveKeyBytes;
      if (!policy) {
        text = "unknown ZAP domain";
      } else if (!is_curve) {
        text = "CURVE required";
        note_denial(*policy, domain, "a non-CURVE handshake");
      } else {
        std::array<char, kCurveKeyZ85Chars + 1> z85{};
        zmq_z85_encode(z85.data(), static_cast<const uint8_t*>(req[6].data()), kCurveKeyBytes);
        const std::string key(z85.data());
        if (policy->allow_any || policy->allowed.count(key) != 0) {
          code = "200";
          text = "OK";
          user_id = key;
        } else {
          text = "client key not on the allow-list";
          note_denial(*policy, domain, "client key " + key);
        }
      }
    }
    try {
      rep.send(zmq::buffer(std::string_view(kZapVersion)), zmq::send_flags::sndmore);
      rep.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
      rep.send(zmq::buffer(code), zmq::send_flags::sndmore);
      rep.send(zmq::buffer(text), zmq::send_flags::sndmore);
      rep.send(zmq::buffer(user_id), zmq::send_flags::sndmore);
      rep.send(zmq::message_t(), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      zap_log()->warn("ZAP reply failed: {}", e.what());
    }
  }

  void note_denial(DomainPolicy& policy, const std::string& domain, const std::string& who) {
    policy.denied.fetch_add(1);
    const int64_t now = steady_ms();
    if (now - policy.last_denial_log_ms.load() >= kDenialLogIntervalMs) {
      policy.last_denial_log_ms.store(now);
      zap_log()->warn("refused CURVE handshake on {} from {} ({} refused so far)", domain, who,
                      policy.denied.load());
    }
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<DomainPolicy>> domains_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The running handler is shared by all registrations. Acquiring and the final release both
// hold this mutex, so a new handler never tries to bind while the old one still holds the
// endpoint.
std::mutex g_handler_mu;
std::weak_ptr<ZapHandler> g_handler;

Result<std::shared_ptr<ZapHandler>> acquire_handler() {
  std::lock_guard lock(g_handler_mu);
  if (auto running = g_handler.lock()) return running;
  AM_ASSIGN_OR_RETURN(std::shared_ptr<ZapHandler> started, ZapHandler::start());
  g_handler = started;
  return started;
}

void release_handler(std::shared_ptr<ZapHandler>& handler) {
  std::lock_guard lock(g_handler_mu);
  handler.reset();   // joins the thread when this was the last registration
}

std::atomic<uint64_t> g_next_domain{0};

}  // namespace

bool curve_available() { return zmq_has("curve") != 0; }

Status validate_curve_key(std::string_view z85, std::string_view what) {
  if (z85.size() != kCurveKeyZ85Chars) {
    return invalid_argument(std::string(what) + ": expected a " + std::to_string(kCurveKeyZ85Chars) +
                            "-character Z85 CURVE key, got " + std::to_string(z85.size()) +
                            " characters");
  }
  std::array<uint8_t, kCurveKeyBytes> raw{};
  const std::string text(z85);
  if (zmq_z85_decode(raw.data(), text.c_str()) == nullptr) {
    return invalid_argument(std::string(what) + ": not valid Z85 text");
  }
  return Status::Ok();
}

Result<CurveKeyPair> generate_curve_keypair() {
  if (!curve_available()) return unsupported("this libzmq was built without CURVE support");
  std::array<char, kCurveKeyZ85Chars + 1> pub{};
  std::array<char, kCurveKeyZ85Chars + 1> sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0) {
    return internal_error(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{std::string(pub.data()), std::string(sec.data())};
}

Result<std::string> curve_public_key_from_secret(std::string_view secret_z85) {
  if (!curve_available()) return unsupported("this libzmq was built without CURVE support");
  AM_RETURN_IF_ERROR(validate_curve_key(secret_z85, "secret key"));
  std::array<char, kCurveKeyZ85Chars + 1> pub{};
  const std::string secret(secret_z85);
  if (zmq_curve_public(pub.data(), secret.c_str()) != 0) {
    return internal_error(std::string("zmq_curve_public failed: ") + zmq_strerror(zmq_errno()));
  }
  return std::string(pub.data());
}

struct ZapAllowList::Impl {
  std::shared_ptr<ZapHandler> handler;
  std::shared_ptr<DomainPolicy> policy;
  std::string domain;

  ~Impl() {
    if (!handler) return;
    handler->remove(domain);
    release_handler(handler);
  }
};

ZapAllowList::ZapAllowList() = default;
ZapAllowList::ZapAllowList(ZapAllowList&&) noexcept = default;
ZapAllowList& ZapAllowList::operator=(ZapAllowList&&) noexcept = default;
ZapAllowList::~ZapAllowList() = default;

Result<ZapAllowList> ZapAllowList::create(const std::vector<std::string>& allowed_client_keys) {
  if (!curve_available()) return unsupported("this libzmq was built without CURVE support");
  auto policy = std::make_shared<DomainPolicy>();
  for (std::size_t i = 0; i < allowed_client_keys.size(); ++i) {
    AM_RETURN_IF_ERROR(validate_curve_key(allowed_client_keys[i],
                                          "allowed_client_keys[" + std::to_string(i) + "]"));
    policy->allowed.insert(allowed_client_keys[i]);
  }
  policy->allow_any = allowed_client_keys.empty();
  AM_ASSIGN_OR_RETURN(std::shared_ptr<ZapHandler> handler, acquire_handler());
  ZapAllowList list;
  list.impl_ = std::make_unique<Impl>();
  list.impl_->domain = "accelmatrix-" + std::to_string(g_next_domain.fetch_add(1));
  list.impl_->policy = policy;
  handler->add(list.impl_->domain, policy);
  list.impl_->handler = std::move(handler);
  return list;
}

const std::string& ZapAllowList::domain() const {
  static const std::string kNone;
  return impl_ ? impl_->domain : kNone;
}

uint64_t ZapAllowList::denied() const { return impl_ ? impl_->policy->denied.load() : 0; }

}  // namespace am
