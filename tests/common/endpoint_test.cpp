// common/endpoint.h: the one endpoint check of run, serve (--bind) and the worker (--coordinator).
#include <gtest/gtest.h>

#include "common/endpoint.h"

namespace am {
namespace {

void expect_refused(const std::string& endpoint, EndpointUse use, const std::string& why) {
  const Status st = validate_endpoint(endpoint, use);
  ASSERT_FALSE(st.ok()) << endpoint;
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'" + endpoint + "'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("expected tcp://HOST:PORT"), std::string::npos) << st.message();
}

TEST(Endpoint, PortsOutsideOneTo65535AreRefusedForBothUses) {
  for (EndpointUse use : {EndpointUse::kBind, EndpointUse::kConnect}) {
    expect_refused("tcp://127.0.0.1:99999", use, "port 99999 is outside 1-65535");
    expect_refused("tcp://host:0", use, "port 0 is outside 1-65535");
    expect_refused("tcp://host:65536", use, "outside 1-65535");
    expect_refused("tcp://host:123456789012345678901234567890", use, "outside 1-65535");
    expect_refused("tcp://host:-1", use, "is not a number");
    expect_refused("tcp://host:80x", use, "is not a number");
  }
  EXPECT_TRUE(validate_endpoint("tcp://host:1", EndpointUse::kConnect).ok());
  EXPECT_TRUE(validate_endpoint("tcp://host:65535", EndpointUse::kConnect).ok());
}

TEST(Endpoint, MalformedEndpointsAreRefusedWithTheExpectedForm) {
  for (EndpointUse use : {EndpointUse::kBind, EndpointUse::kConnect}) {
    expect_refused("garbage", use, "no transport");
    expect_refused("", use, "no transport");
    expect_refused("tcp://:80", use, "no host");
    expect_refused("tcp://host", use, "no ':PORT'");
    expect_refused("tcp://host:", use, "no port");
    expect_refused("udp://host:7450", use, "unsupported transport 'udp'");
    expect_refused("tcp://host :7450", use, "space");
    expect_refused("tcp://ho/st:7450", use, "not a host name");
    expect_refused("tcp://999.1.1.1:7450", use, "not an IPv4 address");
    expect_refused("tcp://::1:7450", use, "in brackets");
    expect_refused("tcp://[::1:7450", use, "unclosed");
    expect_refused("tcp://[zz::1]:7450", use, "not an IPv6 address");
    expect_refused("tcp://[::1]7450", use, "no ':PORT'");
    expect_refused("ipc://", use, "no path");
  }
}

TEST(Endpoint, WellFormedEndpointsParseIntoTheirParts) {
  auto a = parse_endpoint("tcp://127.0.0.1:7450", EndpointUse::kConnect);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->transport, "tcp");
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7450);
  auto b = parse_endpoint("tcp://[::1]:7450", EndpointUse::kConnect);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 7450);
  EXPECT_TRUE(validate_endpoint("tcp://coordinator.lab.example:7450", EndpointUse::kConnect).ok());
  EXPECT_TRUE(validate_endpoint("tcp://[fe80::1%eth0]:7450", EndpointUse::kConnect).ok());
  auto c = parse_endpoint("ipc:///run/accelmatrix.sock", EndpointUse::kBind);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->transport, "ipc");
  EXPECT_EQ(c->path, "/run/accelmatrix.sock");
}

TEST(Endpoint, WildcardsAreForBindingOnly) {
  auto any_port = parse_endpoint("tcp://127.0.0.1:*", EndpointUse::kBind);
  ASSERT_TRUE(any_port.ok());
  EXPECT_FALSE(any_port->port.has_value());
  EXPECT_TRUE(validate_endpoint("tcp://*:7450", EndpointUse::kBind).ok());
  expect_refused("tcp://*:7450", EndpointUse::kConnect, "for binding");
  expect_refused("tcp://127.0.0.1:*", EndpointUse::kConnect, "for binding");
}

TEST(Endpoint, ExpectedFormsNameTheWildcardsOnlyForBinding) {
  EXPECT_NE(expected_endpoint_forms(EndpointUse::kBind).find("tcp://*:PORT"), std::string::npos);
  EXPECT_EQ(expected_endpoint_forms(EndpointUse::kConnect).find("*"), std::string::npos);
}

}  // namespace
}  // namespace am
