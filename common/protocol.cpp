#include "common/protocol.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include "common/msgpack_json.h"
#include "common/utf8.h"

namespace am::proto {

namespace {

constexpr std::array<std::string_view, 14> kTypeNames = {
    "HELLO", "WELCOME", "REJECT", "HEARTBEAT", "READY", "ASSIGN",
    "PROGRESS", "RESULT", "ACK", "CANCEL", "DRAIN", "BYE", "CONTROL", "REPLY"};

// Field bounds beyond the header's size limits; docs/PROTOCOL.md lists the same numbers.
constexpr int64_t kMaxSlots = 1024;                              // HELLO.slots
constexpr int64_t kMaxCreditsPerDevice = 1024;                   // READY.credits values
constexpr int64_t kMaxLiveness = 1000;                           // WELCOME.heartbeat_liveness
constexpr int64_t kMaxDurationMs = 7LL * 24 * 60 * 60 * 1000;    // any *_ms duration: 7 days
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// msgpack's own string limit is looser than the per-field limits so that an ordinary overrun is
// reported by the field check, which can name the field; the frame limit bounds the total anyway.
constexpr std::size_t kUnpackStringSlack = 2;

// Body map nesting: the body itself is one level above each nested document. The unpacker's
// depth bound leaves a few levels of slack for the same reason as the string slack above: the
// document check then reports ordinary overruns with their path.
constexpr int kBodyDepth = 1;
constexpr int kUnpackDepthSlack = 4;

// ---------------------------------------------------------------------------------------------
// Encoding

// Every field is a str key followed by its value; `out` is the body being built.
void put_key(msgpack::sbuffer& out, std::string_view key) {
  Packer pk(out);
  pk.pack_str(static_cast<uint32_t>(key.size()));
  pk.pack_str_body(key.data(), static_cast<uint32_t>(key.size()));
}

void put(msgpack::sbuffer& out, std::string_view key, const std::string& v) {
  put_key(out, key);
  pack_utf8_string(out, v);
}
void put(msgpack::sbuffer& out, std::string_view key, int64_t v) {
  put_key(out, key);
  Packer(out).pack_int64(v);
}
void put(msgpack::sbuffer& out, std::string_view key, int v) {
  put(out, key, static_cast<int64_t>(v));
}
void put(msgpack::sbuffer& out, std::string_view key, bool v) {
  put_key(out, key);
  if (v) Packer(out).pack_true(); else Packer(out).pack_false();
}
void put(msgpack::sbuffer& out, std::string_view key, const nlohmann::json& doc) {
  put_key(out, key);
  pack_json(out, doc);
}
// A RESULT's metrics as sent: the tree, or for a decoded message (tree empty, text given) the
// text read back, so encode(decode(x)) sends what x sent. Text that does not parse (only a
// caller's own doing) sends the empty map.
void put_metrics(msgpack::sbuffer& out, const JobResult& m) {
  if (!m.metrics.empty() || m.metrics_json.empty()) {
    put(out, "metrics", m.metrics);
    return;
  }
  const nlohmann::json doc = nlohmann::json::parse(m.metrics_json, nullptr, /*allow_exceptions=*/false);
  put(out, "metrics", doc.is_object() ? doc : nlohmann::json::object());
}

template <typename V>
void put_map(msgpack::sbuffer& out, std::string_view key, const std::map<std::string, V>& m) {
  put_key(out, key);
  Packer(out).pack_map(static_cast<uint32_t>(m.size()));
  for (const auto& [k, v] : m) {
    pack_utf8_string(out, k);
    if constexpr (std::is_same_v<V, std::string>) pack_utf8_string(out, v); else Packer(out).pack_int64(v);
  }
}

// The log tail is by definition the end of the output: keep the last bytes that fit, whole
// characters only, so the decoder's limit holds even after repair.
std::string clipped_log_tail(const std::string& tail) {
  if (tail.size() <= kMaxLogTailBytes) return tail;
  return utf8_tail(tail, kMaxLogTailBytes);
}

struct Encoder {
  msgpack::sbuffer& out;
  Packer pk{out};
  void operator()(const Hello& m) {
    pk.pack_map(9 + (m.secret.empty() ? 0 : 1) + (m.commands ? 1 : 0) + (m.host_id.empty() ? 0 : 1) +
                (m.draining ? 1 : 0));
    put(out, "version_major", m.version_major);
    put(out, "version_minor", m.version_minor);
    put(out, "worker_id", m.worker_id);
    put(out, "hostname", m.hostname);
    put(out, "build", m.build);
    put(out, "capabilities", m.capabilities);
    put_map(out, "tags", m.tags);
    put(out, "slots", m.slots);
    put_map(out, "held", m.held);
    if (!m.secret.empty()) put(out, "secret", m.secret);
    if (m.commands) put(out, "commands", true);
    if (!m.host_id.empty()) put(out, "host_id", m.host_id);
    if (m.draining) put(out, "draining", true);
  }
  void operator()(const Welcome& m) {
    pk.pack_map(6);
    put(out, "version_major", m.version_major);
    put(out, "version_minor", m.version_minor);
    put(out, "heartbeat_interval_ms", m.heartbeat_interval_ms);
    put(out, "heartbeat_liveness", m.heartbeat_liveness);
    put(out, "lease_grace_ms", m.lease_grace_ms);
    put(out, "run_id", m.run_id);
  }
  void operator()(const Reject& m) {
    pk.pack_map(2);
    put(out, "reason", m.reason);
    put(out, "retry", m.retry);
  }
  void operator()(const Heartbeat&) { pk.pack_map(0); }
  void operator()(const Ready& m) {
    if (!m.window) {
      pk.pack_map(1);
      put_map(out, "credits", m.credits);
      return;
    }
    pk.pack_map(m.credits.empty() ? 2 : 3);
    if (!m.credits.empty()) put_map(out, "credits", m.credits);
    put_map(out, "window", *m.window);
    put(out, "seen", m.seen);
  }
  void operator()(const Assign& m) {
    pk.pack_map(5);
    put(out, "job_id", m.job_id);
    put(out, "attempt", m.attempt);
    put(out, "lease_ms", m.lease_ms);
    put(out, "device", m.device);
    put(out, "spec", m.spec);
  }
  void operator()(const Progress& m) {
    pk.pack_map(3);
    put(out, "job_id", m.job_id);
    put(out, "attempt", m.attempt);
    put(out, "phase", m.phase);
  }
  void operator()(const JobResult& m) {
    pk.pack_map(8);
    put(out, "job_id", m.job_id);
    put(out, "attempt", m.attempt);
    put(out, "status", std::string(to_string(m.status)));
    put(out, "reason", m.reason);
    put_metrics(out, m);
    put(out, "log_tail", clipped_log_tail(m.log_tail));
    put(out, "started_at_ms", m.started_at_ms);
    put(out, "finished_at_ms", m.finished_at_ms);
  }
  void operator()(const Ack& m) {
    pk.pack_map(2);
    put(out, "job_id", m.job_id);
    put(out, "attempt", m.attempt);
  }
  void operator()(const Cancel& m) {
    pk.pack_map(3);
    put(out, "job_id", m.job_id);
    put(out, "attempt", m.attempt);
    put(out, "reason", m.reason);
  }
  void operator()(const Drain& m) {
    pk.pack_map(1);
    put(out, "reason", m.reason);
  }
  void operator()(const Bye& m) {
    pk.pack_map(1);
    put(out, "reason", m.reason);
  }
  void operator()(const Control& m) {
    pk.pack_map(3);
    put(out, "request_id", m.request_id);
    put(out, "op", m.op);
    put(out, "args", m.args.is_object() ? m.args : nlohmann::json::object());
  }
  void operator()(const Reply& m) {
    pk.pack_map(5);
    put(out, "request_id", m.request_id);
    put(out, "ok", m.ok);
    put(out, "error", m.error);
    put(out, "code", m.code);
    put(out, "data", m.data);
  }
};

// ---------------------------------------------------------------------------------------------
// Decoding

std::string_view desc(const msgpack::object& o) { return msgpack_type_name(o); }

// "integer >= 1" for fields bounded only by their storage type, else the explicit range.
std::string describe_range(int64_t lo, int64_t hi) {
  if (hi == kInt64Max || hi == kInt32Max) return "integer >= " + std::to_string(lo);
  return "integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

// Printable ASCII without whitespace, as promised for every id on the wire.
std::string id_problem(std::string_view s) {
  if (s.empty()) return "must not be empty";
  if (s.size() > kMaxIdBytes) {
    return "id of " + std::to_string(s.size()) + " bytes exceeds the limit of " +
           std::to_string(kMaxIdBytes);
  }
  for (unsigned char c : s) {
    if (c < 0x21 || c > 0x7E) return "must be printable ASCII without whitespace";
  }
  return {};
}

namespace {

enum class Need { kRequired, kOptional };

// Reads the fields of one body map. Every error names "<TYPE>.<field>".
class FieldReader {
 public:
  explicit FieldReader(std::string_view type) : type_(type) {}

  Status init(const msgpack::object& body) {
    if (body.type != msgpack::type::MAP) {
      return invalid_argument(std::string(type_) + ": body must be a msgpack map, got " +
                              std::string(desc(body)));
    }
    fields_.reserve(body.via.map.size);
    for (uint32_t i = 0; i < body.via.map.size; ++i) {
      const msgpack::object_kv& kv = body.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) {
        return invalid_argument(std::string(type_) + ": field names must be strings, got " +
                                std::string(desc(kv.key)));
      }
      std::string_view name(kv.key.via.str.ptr, kv.key.via.str.size);
      fields_.emplace_back(name, &kv.val);
    }
    std::sort(fields_.begin(), fields_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < fields_.size(); ++i) {
      if (fields_[i].first == fields_[i - 1].first) {
        return error(printable(fields_[i].first), "duplicate field");
      }
    }
    return Status::Ok();
  }

  std::string path(std::string_view field) const {
    return std::string(type_) + "." + std::string(field);
  }

  Status error(std::string_view field, const std::string& what) const {
    return invalid_argument(path(field) + ": " + what);
  }

  // True when the field is present and not nil.
  bool has(std::string_view field) const {
    auto found = find(field, Need::kOptional);
    return found.ok() && *found != nullptr;
  }

  // nil counts as absent, so encoders that write None/null for "not set" interoperate.
  Result<const msgpack::object*> find(std::string_view field, Need need) const {
    auto it = std::lower_bound(fields_.begin(), fields_.end(), field,
                               [](const auto& f, std::string_view k) { return f.first < k; });
    const bool present = it != fields_.end() && it->first == field &&
                         it->second->type != msgpack::type::NIL;
    if (!present) {
      if (need == Need::kRequired) return error(field, "missing required field");
      return static_cast<const msgpack::object*>(nullptr);
    }
    return it->second;
  }

  template <typename T>
  Status integer(std::string_view field, Need need, int64_t lo, int64_t hi, T& out) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find(field, need));
    if (o == nullptr) return Status::Ok();
    return integer_value(field, *o, lo, hi, out);
  }

  template <typename T>
  Status integer_value(std::string_view field, const msgpack::object& o, int64_t lo, int64_t hi,
                       T& out) const {
    if (o.type == msgpack::type::POSITIVE_INTEGER && o.via.u64 <= static_cast<uint64_t>(hi) &&
        static_cast<int64_t>(o.via.u64) >= lo) {
      out = static_cast<T>(o.via.u64);
      return Status::Ok();
    }
    if (o.type == msgpack::type::NEGATIVE_INTEGER && o.via.i64 >= lo && o.via.i64 <= hi) {
      out = static_cast<T>(o.via.i64);
      return Status::Ok();
    }
    std::string got = (o.type == msgpack::type::POSITIVE_INTEGER)   ? std::to_string(o.via.u64)
                      : (o.type == msgpack::type::NEGATIVE_INTEGER) ? std::to_string(o.via.i64)
                                                                    : std::string(desc(o));
    if (o.type == msgpack::type::POSITIVE_INTEGER && o.via.u64 > static_cast<uint64_t>(hi) &&
        (hi == kInt32Max || hi == kInt64Max)) {
      got += " (above the maximum " + std::to_string(hi) + ")";
    }
    return error(field, "expected " + describe_range(lo, hi) + ", got " + got);
  }

  Status attempt(std::string_view field, int& out) const {
    return integer(field, Need::kRequired, 1, kInt32Max, out);
  }

  Status boolean(std::string_view field, Need need, bool& out) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find(field, need));
    if (o == nullptr) return Status::Ok();
    if (o->type != msgpack::type::BOOLEAN) {
      return error(field, "expected bool, got " + std::string(desc(*o)));
    }
    out = o->via.boolean;
    return Status::Ok();
  }

  Status string(std::string_view field, Need need, std::size_t max_bytes, std::string& out) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find(field, need));
    if (o == nullptr) return Status::Ok();
    return string_value(field, *o, max_bytes, out);
  }

  Status string_value(std::string_view field, const msgpack::object& o, std::size_t max_bytes,
                      std::string& out) const {
    if (o.type != msgpack::type::STR) {
      return error(field, "expected string, got " + std::string(desc(o)));
    }
    if (o.via.str.size > max_bytes) {
      return resource_exhausted(path(field) + ": string of " + std::to_string(o.via.str.size) +
                                " bytes exceeds the limit of " + std::to_string(max_bytes));
    }
    out = repair_utf8(std::string_view(o.via.str.ptr, o.via.str.size));
    return Status::Ok();
  }

  Status id(std::string_view field, Need need, std::string& out) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find(field, need));
    if (o == nullptr) return Status::Ok();
    return id_value(field, *o, out);
  }

  Status id_value(std::string_view field, const msgpack::object& o, std::string& out) const {
    if (o.type != msgpack::type::STR) {
      return error(field, "expected id string, got " + std::string(desc(o)));
    }
    std::string_view s(o.via.str.ptr, o.via.str.size);
    if (std::string problem = id_problem(s); !problem.empty()) return error(field, problem);
    out.assign(s);
    return Status::Ok();
  }

  // The field when present and a map; nullptr when absent.
  Result<const msgpack::object*> find_map(std::string_view field, Need need) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find(field, need));
    if (o != nullptr && o->type != msgpack::type::MAP) {
      return error(field, "expected map, got " + std::string(desc(*o)));
    }
    return o;
  }

  Status document(std::string_view field, Need need, nlohmann::json& out) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find_map(field, need));
    if (o == nullptr) return Status::Ok();
    nlohmann::json doc;
    AM_RETURN_IF_ERROR(msgpack_object_to_json(*o, path(field), doc));
    out = std::move(doc);
    return Status::Ok();
  }

  // A map document written straight to JSON text (msgpack_object_to_json_text); absent: "{}".
  Status document_text(std::string_view field, Need need, std::string& out) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find_map(field, need));
    if (o == nullptr) {
      out = "{}";
      return Status::Ok();
    }
    std::string text;
    AM_RETURN_IF_ERROR(msgpack_object_to_json_text(*o, path(field), text));
    out = std::move(text);
    return Status::Ok();
  }

  // A map with id keys and values checked by `value_fn(key_path, value)`.
  template <typename Fn>
  Status id_keyed_map(std::string_view field, Need need, Fn&& value_fn) const {
    AM_ASSIGN_OR_RETURN(const msgpack::object* o, find(field, need));
    if (o == nullptr) return Status::Ok();
    if (o->type != msgpack::type::MAP) {
      return error(field, "expected map, got " + std::string(desc(*o)));
    }
    for (uint32_t i = 0; i < o->via.map.size; ++i) {
      const msgpack::object_kv& kv = o->via.map.ptr[i];
      std::string key;
      AM_RETURN_IF_ERROR(id_value(std::string(field) + " key", kv.key, key));
      AM_RETURN_IF_ERROR(value_fn(std::string(field) + "." + key, key, kv.val));
    }
    return Status::Ok();
  }

  Status string_map(std::string_view field, Need need, std::map<std::string, std::string>& out) const {
    std::map<std::string, std::string> m;
    AM_RETURN_IF_ERROR(id_keyed_map(field, need, [&](const std::string& p, std::string& key,
                                                     const msgpack::object& v) -> Status {
      std::string value;
      AM_RETURN_IF_ERROR(string_value(p, v, kMaxStringBytes, value));
      if (!m.emplace(std::move(key), std::move(value)).second) return error(p, "duplicate key");
      return Status::Ok();
    }));
    out = std::move(m);
    return Status::Ok();
  }

  // {id: integer in [min, max]}: READY.credits (>= 0) and HELLO.held (attempts, >= 1).
  Status int_map(std::string_view field, Need need, int64_t min, int64_t max,
                 std::map<std::string, int>& out) const {
    std::map<std::string, int> m;
    AM_RETURN_IF_ERROR(id_keyed_map(field, need, [&](const std::string& p, std::string& key,
                                                     const msgpack::object& v) -> Status {
      int value = 0;
      AM_RETURN_IF_ERROR(integer_value(p, v, min, max, value));
      if (!m.emplace(std::move(key), value).second) return error(p, "duplicate key");
      return Status::Ok();
    }));
    out = std::move(m);
    return Status::Ok();
  }

 private:
  static std::string printable(std::string_view s) {
    std::string out;
    for (unsigned char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?';
    return out;
  }

  std::string_view type_;
  std::vector<std::pair<std::string_view, const msgpack::object*>> fields_;
};

Status read_versions(const FieldReader& r, int& major, int& minor) {
  AM_RETURN_IF_ERROR(r.integer("version_major", Need::kRequired, 0, kInt32Max, major));
  return r.integer("version_minor", Need::kRequired, 0, kInt32Max, minor);
}

Result<Message> decode_hello(const FieldReader& r) {
  Hello m;
  AM_RETURN_IF_ERROR(read_versions(r, m.version_major, m.version_minor));
  // A HELLO of another major version is only read as far as its version so that the
  // coordinator can refuse it with a reason instead of dropping it as malformed.
  if (m.version_major != kVersionMajor) return Message{std::move(m)};
  AM_RETURN_IF_ERROR(r.id("worker_id", Need::kRequired, m.worker_id));
  AM_RETURN_IF_ERROR(r.string("hostname", Need::kOptional, kMaxStringBytes, m.hostname));
  AM_RETURN_IF_ERROR(r.string("build", Need::kOptional, kMaxStringBytes, m.build));
  AM_RETURN_IF_ERROR(r.document("capabilities", Need::kOptional, m.capabilities));
  AM_RETURN_IF_ERROR(r.string_map("tags", Need::kOptional, m.tags));
  AM_RETURN_IF_ERROR(r.integer("slots", Need::kRequired, 1, kMaxSlots, m.slots));
  AM_RETURN_IF_ERROR(r.int_map("held", Need::kOptional, 1, kInt32Max, m.held));
  AM_RETURN_IF_ERROR(r.id("secret", Need::kOptional, m.secret));
  AM_RETURN_IF_ERROR(r.boolean("commands", Need::kOptional, m.commands));
  AM_RETURN_IF_ERROR(r.id("host_id", Need::kOptional, m.host_id));
  AM_RETURN_IF_ERROR(r.boolean("draining", Need::kOptional, m.draining));
  if (!m.secret.empty() && m.secret.size() < kMinSecretBytes) {
    return r.error("secret", "expected at least " + std::to_string(kMinSecretBytes) +
                                 " characters, got " + std::to_string(m.secret.size()));
  }
  return Message{std::move(m)};
}

Result<Message> decode_welcome(const FieldReader& r) {
  Welcome m;
  AM_RETURN_IF_ERROR(read_versions(r, m.version_major, m.version_minor));
  if (m.version_major != kVersionMajor) return Message{std::move(m)};
  AM_RETURN_IF_ERROR(
      r.integer("heartbeat_interval_ms", Need::kRequired, 1, kMaxDurationMs, m.heartbeat_interval_ms));
  AM_RETURN_IF_ERROR(
      r.integer("heartbeat_liveness", Need::kRequired, 1, kMaxLiveness, m.heartbeat_liveness));
  AM_RETURN_IF_ERROR(r.integer("lease_grace_ms", Need::kRequired, 0, kMaxDurationMs, m.lease_grace_ms));
  // Informational (it names the plan being run), so any short string will do.
  AM_RETURN_IF_ERROR(r.string("run_id", Need::kOptional, kMaxStringBytes, m.run_id));
  return Message{std::move(m)};
}

Result<Message> decode_reject(const FieldReader& r) {
  Reject m;
  AM_RETURN_IF_ERROR(r.string("reason", Need::kRequired, kMaxStringBytes, m.reason));
  AM_RETURN_IF_ERROR(r.boolean("retry", Need::kOptional, m.retry));
  return Message{std::move(m)};
}

Result<Message> decode_ready(const FieldReader& r) {
  Ready m;
  std::map<std::string, int> window;
  AM_RETURN_IF_ERROR(r.int_map("window", Need::kOptional, 0, kMaxCreditsPerDevice, window));
  const bool has_window = r.has("window");
  // 1.0/1.1 peers send only credits; since 1.2 a READY carries a window (credits optional).
  AM_RETURN_IF_ERROR(r.int_map("credits", has_window ? Need::kOptional : Need::kRequired, 0,
                               kMaxCreditsPerDevice, m.credits));
  if (has_window) {
    m.window = std::move(window);
    AM_RETURN_IF_ERROR(r.integer("seen", Need::kOptional, 0, kInt64Max, m.seen));
  }
  return Message{std::move(m)};
}

Result<Message> decode_assign(const FieldReader& r) {
  Assign m;
  AM_RETURN_IF_ERROR(r.id("job_id", Need::kRequired, m.job_id));
  AM_RETURN_IF_ERROR(r.attempt("attempt", m.attempt));
  AM_RETURN_IF_ERROR(r.integer("lease_ms", Need::kRequired, 1, kMaxDurationMs, m.lease_ms));
  AM_RETURN_IF_ERROR(r.id("device", Need::kRequired, m.device));
  AM_RETURN_IF_ERROR(r.document("spec", Need::kRequired, m.spec));
  return Message{std::move(m)};
}

Result<Message> decode_progress(const FieldReader& r) {
  Progress m;
  AM_RETURN_IF_ERROR(r.id("job_id", Need::kRequired, m.job_id));
  AM_RETURN_IF_ERROR(r.attempt("attempt", m.attempt));
  AM_RETURN_IF_ERROR(r.string("phase", Need::kRequired, kMaxStringBytes, m.phase));
  return Message{std::move(m)};
}

Result<Message> decode_result(const FieldReader& r) {
  JobResult m;
  AM_RETURN_IF_ERROR(r.id("job_id", Need::kRequired, m.job_id));
  AM_RETURN_IF_ERROR(r.attempt("attempt", m.attempt));
  std::string status;
  AM_RETURN_IF_ERROR(r.string("status", Need::kRequired, kMaxStringBytes, status));
  const std::optional<ResultStatus> parsed = parse_result_status(status);
  if (!parsed) {
    return r.error("status", "expected one of " + result_status_names() + ", got '" +
                                 status.substr(0, 64) + "'");
  }
  m.status = *parsed;
  AM_RETURN_IF_ERROR(r.string("reason", Need::kOptional, kMaxStringBytes, m.reason));
  AM_RETURN_IF_ERROR(r.document_text("metrics", Need::kOptional, m.metrics_json));
  AM_RETURN_IF_ERROR(r.string("log_tail", Need::kOptional, kMaxLogTailBytes, m.log_tail));
  AM_RETURN_IF_ERROR(r.integer("started_at_ms", Need::kOptional, 0, kInt64Max, m.started_at_ms));
  AM_RETURN_IF_ERROR(r.integer("finished_at_ms", Need::kOptional, 0, kInt64Max, m.finished_at_ms));
  return Message{std::move(m)};
}

Result<Message> decode_ack(const FieldReader& r) {
  Ack m;
  AM_RETURN_IF_ERROR(r.id("job_id", Need::kRequired, m.job_id));
  AM_RETURN_IF_ERROR(r.attempt("attempt", m.attempt));
  return Message{std::move(m)};
}

Result<Message> decode_cancel(const FieldReader& r) {
  Cancel m;
  AM_RETURN_IF_ERROR(r.id("job_id", Need::kRequired, m.job_id));
  AM_RETURN_IF_ERROR(r.attempt("attempt", m.attempt));
  AM_RETURN_IF_ERROR(r.string("reason", Need::kOptional, kMaxStringBytes, m.reason));
  return Message{std::move(m)};
}

template <typename T>
Result<Message> decode_reason_only(const FieldReader& r) {
  T m;
  AM_RETURN_IF_ERROR(r.string("reason", Need::kOptional, kMaxStringBytes, m.reason));
  return Message{std::move(m)};
}

Result<Message> decode_control(const FieldReader& r) {
  Control m;
  AM_RETURN_IF_ERROR(r.id("request_id", Need::kRequired, m.request_id));
  AM_RETURN_IF_ERROR(r.id("op", Need::kRequired, m.op));
  AM_RETURN_IF_ERROR(r.document("args", Need::kOptional, m.args));
  return Message{std::move(m)};
}

Result<Message> decode_reply(const FieldReader& r) {
  Reply m;
  AM_RETURN_IF_ERROR(r.id("request_id", Need::kRequired, m.request_id));
  AM_RETURN_IF_ERROR(r.boolean("ok", Need::kRequired, m.ok));
  AM_RETURN_IF_ERROR(r.string("error", Need::kOptional, kMaxStringBytes, m.error));
  AM_RETURN_IF_ERROR(r.string("code", Need::kOptional, kMaxStringBytes, m.code));
  AM_RETURN_IF_ERROR(r.document("data", Need::kOptional, m.data));
  return Message{std::move(m)};
}

Result<Message> decode_body(MsgType type, const FieldReader& r) {
  switch (type) {
    case MsgType::kHello: return decode_hello(r);
    case MsgType::kWelcome: return decode_welcome(r);
    case MsgType::kReject: return decode_reject(r);
    case MsgType::kHeartbeat: return Message{Heartbeat{}};
    case MsgType::kReady: return decode_ready(r);
    case MsgType::kAssign: return decode_assign(r);
    case MsgType::kProgress: return decode_progress(r);
    case MsgType::kResult: return decode_result(r);
    case MsgType::kAck: return decode_ack(r);
    case MsgType::kCancel: return decode_cancel(r);
    case MsgType::kDrain: return decode_reason_only<Drain>(r);
    case MsgType::kBye: return decode_reason_only<Bye>(r);
    case MsgType::kControl: return decode_control(r);
    case MsgType::kReply: return decode_reply(r);
  }
  return internal_error("unhandled message type");
}

// Type frames come from untrusted peers and end up in logs: show a short, printable excerpt.
std::string excerpt(std::string_view s) {
  constexpr std::size_t kMaxShown = 32;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s.substr(0, kMaxShown)) {
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace

std::string_view msg_type_name(MsgType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kTypeNames.size() ? kTypeNames[i] : std::string_view("UNKNOWN");
}

std::optional<MsgType> msg_type_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == name) return static_cast<MsgType>(i);
  }
  return std::nullopt;
}

bool version_compatible(int major) { return major == kVersionMajor; }

MsgType Message::type() const {
  // The variant's alternatives are declared in MsgType order.
  static_assert(std::variant_size_v<Body> == kTypeNames.size());
  return static_cast<MsgType>(body.index());
}

Frames encode(const Message& msg) {
  msgpack::sbuffer buf;
  std::visit(Encoder{buf}, msg.body);
  return Frames{std::string(msg_type_name(msg.type())), std::string(buf.data(), buf.size())};
}

Result<Message> decode(std::string_view type_frame, std::string_view body_frame) {
  const std::optional<MsgType> type = msg_type_from_name(type_frame);
  if (!type) return invalid_argument("unknown message type '" + excerpt(type_frame) + "'");
  const std::string_view name = msg_type_name(*type);
  if (body_frame.size() > kMaxFrameBytes) {
    return resource_exhausted(std::string(name) + ": body of " + std::to_string(body_frame.size()) +
                              " bytes exceeds the frame limit of " + std::to_string(kMaxFrameBytes));
  }
  try {
    const std::size_t max_string = std::max(kMaxStringBytes, kMaxLogTailBytes) * kUnpackStringSlack;
    AM_ASSIGN_OR_RETURN(msgpack::object_handle handle,
                        unpack_bounded(body_frame, unpack_limits_for({}, kBodyDepth + kUnpackDepthSlack, max_string), name));
    FieldReader reader(name);
    AM_RETURN_IF_ERROR(reader.init(handle.get()));
    return decode_body(*type, reader);
  } catch (const std::bad_alloc&) {
    return resource_exhausted(std::string(name) + ": out of memory while decoding");
  } catch (const std::exception& e) {
    return internal_error(std::string(name) + ": unexpected decode failure: " + e.what());
  }
}

}  // namespace am::proto
