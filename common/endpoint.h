// ZeroMQ endpoint validation: one check used by `accelmatrix run`, `accelmatrix serve` (--bind)
// and `accelmatrix-worker` (--coordinator), so that an endpoint that can never work is refused at
// once with the expected form, instead of binding a port modulo 65536 or reconnecting forever.
//
// Accepted forms:
//   tcp://HOST:PORT     HOST a host name, an IPv4 address or a bracketed IPv6 address
//                       ([::1]); PORT 1-65535 (decimal)
//   tcp://*:PORT        bind only: every interface
//   tcp://HOST:*        bind only: any free port (the bound endpoint says which)
//   ipc://PATH          a Unix socket path (at most kMaxIpcPathBytes bytes; ZeroMQ on Linux)
// Anything else (another transport, no port, port 0 or above 65535, junk after the port, spaces)
// is refused with kInvalidArgument naming the endpoint, what is wrong and the expected form.
//
// Validation is syntactic: a well-formed host name that does not resolve, or a port in use, is
// left to ZeroMQ (a worker keeps retrying such an endpoint; it may become reachable).
// Contract: pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace am {

enum class EndpointUse { kBind, kConnect };

inline constexpr uint32_t kMinPort = 1;
inline constexpr uint32_t kMaxPort = 65535;
// sockaddr_un.sun_path is 108 bytes on Linux, one of them the terminating NUL.
inline constexpr std::size_t kMaxIpcPathBytes = 107;

struct ParsedEndpoint {
  std::string transport;        // "tcp" or "ipc"
  std::string host;             // tcp: "*", a name, an IPv4 address, or an IPv6 address without brackets
  std::optional<uint16_t> port; // tcp: nullopt = "*" (any free port, bind only)
  std::string path;             // ipc
};

// The expected forms, for messages and --help: "tcp://HOST:PORT" (connect) or
// "tcp://HOST:PORT, tcp://*:PORT or tcp://HOST:* (any free port)" (bind), each "or ipc://PATH".
std::string expected_endpoint_forms(EndpointUse use);

Result<ParsedEndpoint> parse_endpoint(std::string_view endpoint, EndpointUse use);

// parse_endpoint() without the parts.
Status validate_endpoint(std::string_view endpoint, EndpointUse use);

}  // namespace am
