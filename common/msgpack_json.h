// Bridges msgpack values and nlohmann::json documents for the wire protocol's nested documents
// (capability record, job spec, metrics), with the protocol's bounds enforced on the way in.
//
// Contract:
// - pack_json() appends any json value as msgpack: null -> nil, bool, integers (signed/unsigned,
//   smallest encoding), doubles always as float64 (even integral ones, unlike msgpack-cxx's
//   pack_double(), so a float stays a float for every reader; NaN/Inf carried as-is), strings
//   (invalid UTF-8 repaired to U+FFFD), arrays, objects (string keys, in the json's key order),
//   binary -> bin. It never throws except std::bad_alloc.
// - msgpack_object_to_json() converts a decoded msgpack value back. Supported: nil, bool,
//   integers, float32/64, str, array, map with str keys. It rejects bin/ext values, non-string
//   or duplicate map keys, containers nested deeper than `limits.max_depth` (the value itself is
//   depth 1 when it is a container), maps/arrays above `limits.max_entries`, and strings (keys
//   included) above `limits.max_string_bytes`. Invalid UTF-8 in strings is repaired, not
//   rejected. Errors name the path inside the document, prefixed by `path` ("HELLO.capabilities"
//   -> "HELLO.capabilities.devices[2].name: ..."). Never throws.
// - msgpack_object_to_json_text() is msgpack_object_to_json() followed by to_json_text(), in one
//   pass without the tree.
// - json_to_msgpack()/msgpack_to_json() are the byte-level conveniences (one whole value).
// Thread-safe: all functions are pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "common/protocol.h"
#include "common/status.h"
#include "common/utf8.h"

namespace am::proto {

struct DocLimits {
  int max_depth = kMaxNestingDepth;
  std::size_t max_entries = kMaxMapEntries;
  std::size_t max_string_bytes = kMaxStringBytes;
};

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_json(msgpack::sbuffer& out, const nlohmann::json& doc);
// Appends `s` as a msgpack str, repaired first (common/utf8.h).
void pack_utf8_string(msgpack::sbuffer& out, std::string_view s);
// Appends `v` as a msgpack float64 (0xcb + 8 bytes big-endian).
void pack_float64(msgpack::sbuffer& out, double v);

Status msgpack_object_to_json(const msgpack::object& obj, std::string_view path,
                              nlohmann::json& out, const DocLimits& limits = {});
// The same conversion written straight to JSON text: the bytes to_json_text() (common/json_text.h)
// writes for the tree msgpack_object_to_json() would build (members sorted by key as that tree
// holds them), under the same checks with the same first error, and no tree in between (the
// coordinator stores a result's metrics this way: docs/SCALE.md). Appends to `out`; on an error
// `out` holds a partial text. Never throws (out of memory is the tree's kResourceExhausted).
Status msgpack_object_to_json_text(const msgpack::object& obj, std::string_view path, std::string& out,
                                   const DocLimits& limits = {});

std::string json_to_msgpack(const nlohmann::json& doc);
// Parses exactly one msgpack value filling all of `bytes` (trailing bytes are an error).
Result<nlohmann::json> msgpack_to_json(std::string_view bytes, const DocLimits& limits = {});

// The unpack limits matching `limits` plus `extra_depth` enclosing containers, with a string
// limit of `max_string_bytes` (the largest string anywhere in the value).
msgpack::unpack_limit unpack_limits_for(const DocLimits& limits, int extra_depth,
                                        std::size_t max_string_bytes);

// Parses one msgpack value filling all of `bytes` under `limit`; strings reference `bytes`, so
// the handle must not outlive it. Maps msgpack's exceptions to InvalidArgument /
// ResourceExhausted statuses prefixed by `what`.
Result<msgpack::object_handle> unpack_bounded(std::string_view bytes,
                                              const msgpack::unpack_limit& limit,
                                              std::string_view what);

// "nil", "bool", "integer", "float", "string", "binary", "array", "map" or "ext", for errors.
std::string_view msgpack_type_name(const msgpack::object& o);

}  // namespace am::proto
