// Fuzz target: the msgpack <-> JSON bridge (common/msgpack_json.h) that carries the protocol's
// nested documents (capability record, job spec, metrics).
//
// Input: when the first byte is 'J', the rest is JSON text: it is parsed (nlohmann, no
// exceptions) and, if valid, packed with json_to_msgpack(). Otherwise the whole input is a
// msgpack value for msgpack_to_json(), as it arrives from a peer.
// Properties: nothing crashes or throws; whatever msgpack_to_json() accepts packs again, and
// packing is a fixed point (pack(unpack(pack(doc))) == pack(doc)); a packed JSON document
// within the bounds unpacks again.
#include <cstdint>
#include <string>

#include "common/msgpack_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  am::fuzz::quiet_logs();
  return 0;
}

namespace {

void check_fixed_point(const nlohmann::json& doc, const char* origin) {
  using namespace am::proto;
  const std::string packed = json_to_msgpack(doc);
  am::Result<nlohmann::json> again = msgpack_to_json(packed);
  // A document that came from msgpack_to_json() is within the bounds, so its packing must
  // come back. One parsed from JSON text may exceed them; then a clean error is all we ask.
  if (!again.ok()) {
    AM_FUZZ_CHECK(std::string(origin) == "json",
                  "packed document does not unpack: " + again.status().to_string());
    return;
  }
  const std::string repacked = json_to_msgpack(*again);
  AM_FUZZ_CHECK(repacked == packed, std::string("packing is not a fixed point (from ") + origin + ")");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace am::proto;
  const std::string_view bytes = am::fuzz::as_view(data, size);
  if (!bytes.empty() && bytes.front() == 'J') {
    nlohmann::json doc = nlohmann::json::parse(bytes.substr(1), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;
    check_fixed_point(doc, "json");
    return 0;
  }
  am::Result<nlohmann::json> doc = msgpack_to_json(bytes);
  if (!doc.ok()) {
    AM_FUZZ_CHECK(!doc.status().message().empty(), "an error without a message");
    return 0;
  }
  check_fixed_point(*doc, "msgpack");
  return 0;
}
