// Fuzz target: the readers of capability records and recorded machines.
//
// A capability record is built by the worker's probes from what a machine answered — replayed
// from a recorded machine (worker/recording.h) in tests and `--probe --replay` — and read by the
// coordinator from every HELLO (coordinator/matching.h devices_from_capabilities()). Both take
// documents from outside: hand-edited recordings and untrusted peers.
//
// Input: a first line naming what the rest is, then the bytes:
//   "record\n<JSON>"      a capability record as the coordinator receives it: it travels through
//                         a HELLO (encode + decode, the protocol's bounds) and is read into
//                         devices; each device's hardware class is recomputed.
//   "<source>\n<bytes>"   the answers file answers/<source>.json (cpu, host, sysconf, opencl,
//                         vulkan, cuda, rocm, openvino, qnn) of a recorded machine: the other files
//                         come from the recording tests/data/machines/rtx4090-workstation. The
//                         recording is opened, every probe but hwloc replays it (hwloc's XML is
//                         a library's parser, not ours, and costs milliseconds), and the record
//                         goes the "record" way.
// Properties: nothing crashes or throws; every device read from a record has a key and backend.
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/protocol.h"
#include "coordinator/matching.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/capability.h"
#include "worker/probe.h"
#include "worker/recording.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kMachine = "rtx4090-workstation";

struct Template {
  fs::path dir;                                // the scratch copy of the recording
  std::map<std::string, std::string> answers;  // source -> original bytes
};

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_all(const fs::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Copies the recording once, without its hwloc topology.
const Template& recording_template() {
  static const Template t = [] {
    Template out;
    const fs::path src = fs::path(ACCELMATRIX_SOURCE_DIR) / "tests/data/machines" / kMachine;
    out.dir = am::fuzz::scratch_dir() / "machine";
    fs::remove_all(out.dir);
    fs::copy(src, out.dir, fs::copy_options::recursive);
    json manifest = json::parse(read_all(out.dir / "manifest.json"));
    manifest.erase("hwloc_xml");
    write_all(out.dir / "manifest.json", manifest.dump(2));
    for (const auto& source : manifest.at("answers")) {
      const std::string name = source.get<std::string>();
      out.answers[name] = read_all(out.dir / "answers" / (name + ".json"));
    }
    return out;
  }();
  return t;
}

void read_record(const json& record) {
  // The coordinator sees the record only after it crossed the wire inside a HELLO.
  am::proto::Hello hello;
  hello.worker_id = "fuzz-worker";
  hello.capabilities = record;
  const am::proto::Frames frames = am::proto::encode(am::proto::Message{hello});
  am::Result<am::proto::Message> decoded = am::proto::decode(frames.type, frames.body);
  if (!decoded.ok()) return;  // beyond the protocol's bounds: refused, as a peer's would be
  const json& received = std::get<am::proto::Hello>(decoded->body).capabilities;
  const json cpu = received.is_object() && received.contains("cpu") ? received["cpu"] : json();
  for (const am::coord::DeviceInfo& d : am::coord::devices_from_capabilities(received, {{"rack", "a"}})) {
    AM_FUZZ_CHECK(!d.key.empty() && !d.backend.empty(), "a device without key or backend");
    AM_FUZZ_CHECK(d.memory_bytes >= 0, "negative memory for " + d.key);
  }
  if (received.is_object() && received.contains("devices") && received["devices"].is_array()) {
    for (const json& device : received["devices"]) (void)am::worker::hardware_class_id(device, cpu);
  }
}

std::vector<std::unique_ptr<am::worker::Probe>> replay_probes(const am::worker::ProbeOptions& o) {
  std::vector<std::unique_ptr<am::worker::Probe>> probes;
  probes.push_back(am::worker::make_host_probe(o));
  probes.push_back(am::worker::make_cpu_isa_probe(o));
  probes.push_back(am::worker::make_os_memory_probe(o));
  probes.push_back(am::worker::make_cpu_device_probe(o));
  probes.push_back(am::worker::make_opencl_probe(o));
  probes.push_back(am::worker::make_vulkan_probe(o));
  probes.push_back(am::worker::make_cuda_probe(o));
  probes.push_back(am::worker::make_rocm_probe(o));
  probes.push_back(am::worker::make_openvino_probe(o));
  probes.push_back(am::worker::make_qnn_probe(o));
  return probes;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  am::fuzz::quiet_logs();
  (void)recording_template();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = am::fuzz::as_view(data, size);
  const std::size_t eol = input.find('\n');
  if (eol == std::string_view::npos) return 0;
  const std::string what(input.substr(0, eol));
  const std::string_view bytes = input.substr(eol + 1);

  if (what == "record") {
    json record = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (!record.is_discarded()) read_record(record);
    return 0;
  }
  const Template& t = recording_template();
  auto original = t.answers.find(what);
  if (original == t.answers.end()) return 0;
  const fs::path file = t.dir / "answers" / (what + ".json");
  write_all(file, bytes);
  am::Result<std::shared_ptr<const am::worker::Recording>> recording = am::worker::Recording::open(t.dir);
  if (recording.ok()) {
    const json record = am::worker::assemble_capabilities(replay_probes(am::worker::replay_options(*recording)));
    read_record(record);
  }
  write_all(file, original->second);
  return 0;
}
