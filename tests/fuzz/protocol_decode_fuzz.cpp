// Fuzz target: the wire protocol decoder (common/protocol.h decode()).
//
// Input: byte 0 picks the type frame (one of the twelve message names, or — for values past
// them — the rest of the input up to the first NUL is taken as the type frame itself); the
// remaining bytes are the msgpack body frame, exactly as a peer would send them.
// Properties: decode() never crashes or throws; whatever it accepts encodes again, and that
// encoding decodes to a message that encodes to the same bytes (a fixed point).
#include <cstdint>
#include <string>
#include <string_view>

#include "common/protocol.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr int kMessageTypes = 12;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  am::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace am::proto;
  if (size == 0) return 0;
  std::string_view rest = am::fuzz::as_view(data + 1, size - 1);
  std::string type;
  if (data[0] % 16 < kMessageTypes) {
    type = std::string(msg_type_name(static_cast<MsgType>(data[0] % 16)));
  } else {
    const std::size_t nul = rest.find('\0');
    type = std::string(rest.substr(0, nul));
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  }
  am::Result<Message> first = decode(type, rest);
  if (!first.ok()) {
    AM_FUZZ_CHECK(!first.status().message().empty(), "an error without a message");
    return 0;
  }
  if (first->type() == MsgType::kHello || first->type() == MsgType::kWelcome) {
    // An incompatible version is decoded only as far as its version fields (see decode()).
    const int major = first->type() == MsgType::kHello ? std::get<Hello>(first->body).version_major
                                                       : std::get<Welcome>(first->body).version_major;
    if (!version_compatible(major)) return 0;
  }
  const Frames once = encode(*first);
  AM_FUZZ_CHECK(once.type == type, "type frame changed: " + type + " -> " + once.type);
  am::Result<Message> second = decode(once.type, once.body);
  AM_FUZZ_CHECK(second.ok(), "re-encoded " + type + " does not decode: " + second.status().to_string());
  const Frames twice = encode(*second);
  AM_FUZZ_CHECK(twice.body == once.body, "encode(decode(encode(m))) differs from encode(m) for " + type);
  return 0;
}
