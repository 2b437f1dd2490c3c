// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/seed-*): valid inputs
// made with the project's own encoders and recorded machines, plus a few tricky hand-made ones.
// Run it after changing a format:  cmake --build build --target fuzz_make_corpus &&
//   build/tests/fuzz_make_corpus tests/fuzz/corpus
// Files it does not write (crash-* regressions, inputs a fuzzer found) are left alone.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/msgpack_json.h"
#include "common/protocol.h"
#include "kernels/weights/safetensors_writer.h"
#include "tests/common/sample_messages.h"
#include "worker/probe.h"
#include "worker/recording.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path g_out;

void put(const std::string& target, const std::string& name, std::string_view bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream out(dir / ("seed-" + name), std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string bytes_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

void protocol_corpus() {
  using namespace am::proto;
  for (uint64_t seed : {1u, 2u}) {
    for (const Message& m : am::proto::testing::sample_messages(seed)) {
      const Frames f = encode(m);
      const char type = static_cast<char>(m.type());
      put("protocol_decode", f.type + "-" + std::to_string(seed), std::string(1, type) + f.body);
    }
  }
  // A HELLO from another major version, a body with an unknown field and nil fields, and an
  // unknown type frame (selector byte past the twelve names: the type frame follows, NUL-ended).
  Hello future;
  future.version_major = 2;
  future.worker_id = "w-future";
  put("protocol_decode", "hello-major2", std::string(1, 0) + encode(Message{future}).body);
  // 1.4: a worker that runs external commands (HELLO.commands).
  Hello commands = std::get<Hello>(am::proto::testing::sample_messages(1)[0].body);
  commands.version_minor = 4;
  commands.commands = true;
  put("protocol_decode", "hello-commands", std::string(1, 0) + encode(Message{commands}).body);
  json ack = {{"job_id", "0123456789abcdef"}, {"attempt", 1}, {"extra", {1, 2, 3}}, {"nothing", nullptr}};
  put("protocol_decode", "ack-extra-fields", std::string(1, static_cast<char>(MsgType::kAck)) + json_to_msgpack(ack));
  json bad = {{"job_id", "0123456789abcdef"}, {"attempt", "1"}};
  put("protocol_decode", "result-attempt-string",
      std::string(1, static_cast<char>(MsgType::kResult)) + json_to_msgpack(bad));
  put("protocol_decode", "unknown-type", std::string(1, 15) + "HELLOX" + std::string(1, '\0') +
                                             encode(Message{Heartbeat{}}).body);
}

void msgpack_json_corpus() {
  using namespace am::proto;
  std::mt19937_64 rng(3);
  const json caps = am::proto::testing::sample_capabilities(rng);
  const json metrics = am::proto::testing::sample_metrics(rng);
  const json spec = std::get<Assign>(am::proto::testing::sample_messages(4)[5].body).spec;
  put("msgpack_json", "capabilities", json_to_msgpack(caps));
  put("msgpack_json", "metrics", json_to_msgpack(metrics));
  put("msgpack_json", "spec", json_to_msgpack(spec));
  put("msgpack_json", "capabilities-json", "J" + caps.dump());
  put("msgpack_json", "metrics-json", "J" + metrics.dump());
  // Tricky ones, hand-made msgpack: an int map key, duplicate keys, a bin value, float32, NaN,
  // invalid UTF-8, nesting exactly at and just past the depth limit.
  put("msgpack_json", "int-key", std::string("\x81\x01\xa1x", 4));
  put("msgpack_json", "dup-key", std::string("\x82\xa1" "a" "\x01\xa1" "a" "\x02", 7));
  put("msgpack_json", "bin", std::string("\x81\xa1" "b" "\xc4\x03" "abc", 8));
  put("msgpack_json", "float32", std::string("\x81\xa1" "f" "\xca\x3f\xc0\x00\x00", 8));
  put("msgpack_json", "nan", std::string("\x91\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", 10));
  put("msgpack_json", "bad-utf8", std::string("\x81\xa2\xc3\x28\xa3\xed\xa0\x80", 8));
  std::string deep(16, '\x91');
  put("msgpack_json", "depth-16", deep + "\xc0");
  put("msgpack_json", "depth-17", deep + "\x91\xc0");
  put("msgpack_json", "map32-huge-count", std::string("\xdf\xff\xff\xff\xff", 5));
}

void plan_corpus() {
  const fs::path plans = fs::path(ACCELMATRIX_SOURCE_DIR) / "jobs/plans";
  for (const auto& e : fs::directory_iterator(plans)) {
    if (e.path().extension() == ".toml") put("plan", e.path().filename().string(), read_all(e.path()));
  }
  put("plan", "overrides.toml",
      "[plan]\nname = \"scaled\"\nmode = \"accuracy\"\nseed = 3\n\n[defaults]\nbackends = [\"cpu\", \"opencl\"]\n"
      "precisions = [\"f32\", \"q4_0\"]\nbatch = [1, 2]\nseq_len = [16]\n\n"
      "[[models]]\nname = \"tinyllama-1.1b\"\noverrides = { layers = 2, hidden = 256, heads = 4, kv_heads = 1, "
      "intermediate = 512 }\nprecisions = [\"q8_0\"]\n\n[[models]]\nname = \"bert-tiny\"\ntags = { rack = \"a\" }\n");
  put("plan", "errors.toml",
      "[plan]\nname = \"broken\"\nunknown = 1\n\n[defaults]\nprecisions = [\"q5\"]\nbatch = [0]\n\n"
      "[[models]]\nname = \"bert-tny\"\n\n[[models]]\nname = \"bert-tiny\"\noverrides = { layers = \"two\" }\n");
  put("plan", "commands-errors.toml",
      "[plan]\nname = \"cmds\"\n\n[defaults]\nbackends = [\"cpu\"]\n\n"
      "[[commands]]\nname = \"a\"\nbackend = \"cpu\"\nargv = [\"true\"]\nprecision = \"Q4_K_M\"\n"
      "requires_tags = [\"gpu=a100\", \"gpu=h100\"]\n\n"
      "[[commands]]\nname = \"a\"\nbackend = \"cuda\"\nargv = [\"sh\", \"-c\", \"echo {}\"]\n"
      "output = \"llama-bench\"\nbatch = 0\ntimeout_s = -1\n\n"
      "[[commands]]\nname = \"no argv\"\nargs = \"x\"\nbackend = \"gpu\"\n\n"
      "[[commands]]\nname = \"b\"\nbackend = \"cpu\"\nargv = []\noutput = \"csv\"\n");
  put("plan", "selftest.toml",
      "[plan]\nname = \"diagnostics\"\nmode = \"accuracy\"\n\n[defaults]\nbackends = [\"cpu\"]\n"
      "precisions = [\"f32\"]\n\n[[models]]\nname = \"selftest:nan\"\n\n[[models]]\nname = \"selftest:pass\"\n");
}

void safetensors_corpus() {
  using namespace am::kernels;
  std::vector<float> a(24), b(6);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i) - 2.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0f / static_cast<float>(i + 1);
  const float one = 1.0f;
  auto encoded = [](const std::vector<SafetensorsTensorOut>& t, const std::map<std::string, std::string>& meta) {
    return bytes_of(encode_safetensors(t, meta).value());
  };
  put("safetensors", "f32-f16-bf16.safetensors",
      encoded({{"encoder.layer.0.attention.self.query.weight", SafetensorsDtype::kF32, {4, 6}, a.data()},
               {"encoder.layer.0.attention.self.query.bias", SafetensorsDtype::kF16, {6}, b.data()},
               {"embeddings.word_embeddings.weight", SafetensorsDtype::kBF16, {2, 3}, b.data()}},
              {{"format", "pt"}}));
  put("safetensors", "scalar.safetensors", encoded({{"scale", SafetensorsDtype::kF32, {}, &one}}, {}));
  put("safetensors", "4d.safetensors",
      encoded({{"conv.weight", SafetensorsDtype::kF16, {2, 1, 3, 4}, a.data()}}, {}));
  auto raw = [](const std::string& header, std::size_t data_bytes) {
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + header + std::string(data_bytes, '\x3c');
  };
  put("safetensors", "empty.safetensors", raw("{}", 0));
  put("safetensors", "i64-and-empty-tensor.safetensors",
      raw(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
          R"("none":{"dtype":"F32","shape":[0,5],"data_offsets":[16,16]},"__metadata__":{"k":"v"}})", 16));
  put("safetensors", "5d.safetensors",
      raw(R"({"t":{"dtype":"BF16","shape":[1,1,1,2,2],"data_offsets":[0,8]}})", 8));
  put("safetensors", "overlap.safetensors",
      raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12));
}

void capability_corpus() {
  const fs::path machines = fs::path(ACCELMATRIX_SOURCE_DIR) / "tests/data/machines";
  for (const auto& m : fs::directory_iterator(machines)) {
    const std::string name = m.path().filename().string();
    auto recording = am::worker::Recording::open(m.path());
    if (!recording.ok()) continue;
    const json record = am::worker::assemble_capabilities(am::worker::default_probes(am::worker::replay_options(*recording)));
    put("capability_record", "record-" + name, "record\n" + record.dump(1));
    for (const auto& a : fs::directory_iterator(m.path() / "answers")) {
      const std::string source = a.path().stem().string();
      put("capability_record", "answers-" + source + "-" + name, source + "\n" + read_all(a.path()));
    }
  }
  put("capability_record", "record-schema1",
      "record\n{\"schema\":1,\"devices\":[{\"key\":\"cpu:0\",\"backend\":\"cpu\",\"name\":\"x\",\"precisions\":[\"f32\"],"
      "\"memory_bytes\":18446744073709551615},{\"key\":\"\",\"backend\":\"cpu\"},7,{\"key\":\"opencl:0\","
      "\"backend\":\"opencl\",\"memory_bytes\":-5,\"schedulable\":\"yes\"}]}");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  (void)am::set_log_level("off");
  g_out = argv[1];
  protocol_corpus();
  msgpack_json_corpus();
  plan_corpus();
  safetensors_corpus();
  capability_corpus();
  return 0;
}
