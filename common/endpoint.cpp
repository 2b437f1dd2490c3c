#include "common/endpoint.h"

#include <arpa/inet.h>

#include <cctype>

namespace am {
namespace {

constexpr std::string_view kTcp = "tcp://";
constexpr std::string_view kIpc = "ipc://";
constexpr std::size_t kMaxHostNameBytes = 253;   // DNS name limit
constexpr std::size_t kMaxLabelBytes = 63;       // DNS label limit
constexpr std::size_t kMaxPortDigits = 5;        // "65535"

Status refuse(std::string_view endpoint, EndpointUse use, const std::string& what) {
  return invalid_argument("endpoint '" + std::string(endpoint) + "': " + what + "; expected " +
                          expected_endpoint_forms(use));
}

bool all_digits_and_dots(std::string_view s) {
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

// A host name or interface name: dot-separated labels of letters, digits, '-' and '_'.
bool valid_host_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxHostNameBytes) return false;
  std::size_t label = 0;
  for (char c : s) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    if (++label > kMaxLabelBytes) return false;
  }
  return label > 0;
}

bool valid_ipv4(const std::string& s) {
  in_addr a{};
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool valid_ipv6(std::string s) {
  if (auto zone = s.find('%'); zone != std::string::npos) {
    if (zone + 1 == s.size()) return false;
    s.resize(zone);   // fe80::1%eth0: the zone names an interface
  }
  in6_addr a{};
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

Result<ParsedEndpoint> parse_tcp(std::string_view endpoint, EndpointUse use) {
  std::string_view rest = endpoint.substr(kTcp.size());
  ParsedEndpoint out;
  out.transport = "tcp";
  std::string_view host, port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return refuse(endpoint, use, "unclosed '[' in the host");
    host = rest.substr(1, close - 1);
    rest.remove_prefix(close + 1);
    if (rest.empty() || rest.front() != ':') return refuse(endpoint, use, "no ':PORT' after the host");
    port = rest.substr(1);
    if (!valid_ipv6(std::string(host))) {
      return refuse(endpoint, use, "'[" + std::string(host) + "]' is not an IPv6 address");
    }
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) return refuse(endpoint, use, "no ':PORT'");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.empty()) return refuse(endpoint, use, "no host before ':PORT'");
    if (host.find(':') != std::string_view::npos) {
      return refuse(endpoint, use, "an IPv6 address must be in brackets, e.g. tcp://[::1]:7450");
    }
    if (host == "*") {
      if (use == EndpointUse::kConnect) {
        return refuse(endpoint, use, "'*' (every interface) is for binding; name the coordinator's host");
      }
    } else if (all_digits_and_dots(host)) {
      if (!valid_ipv4(std::string(host))) {
        return refuse(endpoint, use, "'" + std::string(host) + "' is not an IPv4 address");
      }
    } else if (!valid_host_name(host)) {
      return refuse(endpoint, use, "'" + std::string(host) + "' is not a host name");
    }
  }
  out.host = std::string(host);
  if (port.empty()) return refuse(endpoint, use, "no port after ':'");
  if (port == "*") {
    if (use == EndpointUse::kConnect) {
      return refuse(endpoint, use, "port '*' (any free port) is for binding; give the coordinator's port");
    }
    return out;
  }
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return refuse(endpoint, use, "port '" + std::string(port) + "' is not a number");
    }
  }
  uint32_t value = 0;
  if (port.size() > kMaxPortDigits) {
    value = kMaxPort + 1;   // too many digits to be a port; no overflow
  } else {
    for (char c : port) value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value < kMinPort || value > kMaxPort) {
    return refuse(endpoint, use, "port " + std::string(port) + " is outside " + std::to_string(kMinPort) + "-" +
                                     std::to_string(kMaxPort));
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

}  // namespace

std::string expected_endpoint_forms(EndpointUse use) {
  if (use == EndpointUse::kBind) {
    return "tcp://HOST:PORT, tcp://*:PORT or tcp://HOST:* (any free port), PORT 1-65535, or ipc://PATH";
  }
  return "tcp://HOST:PORT with PORT 1-65535 (e.g. tcp://127.0.0.1:7450), or ipc://PATH";
}

Result<ParsedEndpoint> parse_endpoint(std::string_view endpoint, EndpointUse use) {
  for (char c : endpoint) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c))) {
      return refuse(endpoint, use, "contains a space or control character");
    }
  }
  if (endpoint.starts_with(kTcp)) return parse_tcp(endpoint, use);
  if (endpoint.starts_with(kIpc)) {
    const std::string_view path = endpoint.substr(kIpc.size());
    if (path.empty()) return refuse(endpoint, use, "no path after ipc://");
    if (path.size() > kMaxIpcPathBytes) {
      return refuse(endpoint, use, "the socket path is longer than " + std::to_string(kMaxIpcPathBytes) + " bytes");
    }
    ParsedEndpoint out;
    out.transport = "ipc";
    out.path = std::string(path);
    return out;
  }
  if (endpoint.find("://") == std::string_view::npos) return refuse(endpoint, use, "no transport");
  return refuse(endpoint, use, "unsupported transport '" +
                                   std::string(endpoint.substr(0, endpoint.find("://"))) + "'");
}

Status validate_endpoint(std::string_view endpoint, EndpointUse use) {
  auto parsed = parse_endpoint(endpoint, use);
  return parsed.ok() ? Status::Ok() : parsed.status();
}

}  // namespace am
