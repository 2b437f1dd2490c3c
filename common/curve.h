// CURVE key handling and the process-wide ZAP authenticator behind CURVE servers.
//
// Contract:
// - Keys travel as Z85 text, kCurveKeyZ85Chars characters (32 raw bytes). validate_curve_key()
//   says what is wrong with a string that is not such a key; generate_curve_keypair() makes a
//   fresh pair (for `accelmatrix keys`); curve_public_key_from_secret() derives the public half.
// - ZapAllowList is an RAII registration with the process's ZAP handler (a thread serving
//   "inproc://zeromq.zap.01" on zmq_context()). While a ZapAllowList is alive, CURVE handshakes
//   on sockets whose ZMQ_ZAP_DOMAIN is domain() are accepted only for client public keys on its
//   list (any client key when the list is empty). The handler thread starts with the first
//   registration and stops with the last, so it exists exactly as long as a CURVE server needs
//   it; handshakes for an unregistered domain are refused. Destroy the ZapAllowList only after
//   the socket that uses it is closed (RouterEndpoint orders this itself).
// - Thread-safe: registrations may be created and destroyed from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace am {

inline constexpr std::size_t kCurveKeyZ85Chars = 40;

struct CurveKeyPair {
  std::string public_key;   // Z85
  std::string secret_key;   // Z85
};

// InvalidArgument naming `what` ("curve.secret_key: ...") unless `z85` is a well-formed key.
Status validate_curve_key(std::string_view z85, std::string_view what);
// Unsupported when libzmq was built without CURVE.
Result<CurveKeyPair> generate_curve_keypair();
Result<std::string> curve_public_key_from_secret(std::string_view secret_z85);
// True when this libzmq supports the CURVE mechanism.
bool curve_available();

class ZapAllowList {
 public:
  // Starts the ZAP handler if it is not running yet. Every key must be a valid Z85 key.
  static Result<ZapAllowList> create(const std::vector<std::string>& allowed_client_keys);
  ZapAllowList(ZapAllowList&&) noexcept;
  ZapAllowList& operator=(ZapAllowList&&) noexcept;
  ~ZapAllowList();

  // The ZAP domain to set on the server socket (unique per registration).
  const std::string& domain() const;
  // Handshakes refused for this domain so far (unknown client key or wrong mechanism).
  uint64_t denied() const;

 private:
  ZapAllowList();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace am
