// The host probe (logger "worker/probe/host"): "host": {"hostname", "os", "kernel", "host_id"}.
// Answers source "host": {"hostname", "sysname", "release", "machine"} from uname/gethostname;
// the OS name comes from /etc/os-release and the host id from /etc/machine-id (machine files).
//
// host_id names the machine, not the worker: every worker started on one box (run --workers N,
// or one per GPU) sends the same id in HELLO, which is how the coordinator knows that their cpu
// and software devices share the same cores (docs/PROTOCOL.md §5.12). machine-id is made once
// per installation and survives reboots and hostname changes; without it (a minimal container)
// the hostname stands in, hashed, so the id stays a short printable token.
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <sstream>
#include <string>

#include "common/hash.h"
#include "common/log.h"
#include "worker/probe.h"
#include "worker/probe_files.h"
#include "worker/probe_json.h"

namespace am::worker {
namespace {

constexpr std::size_t kMachineIdDigits = 32;   // machine-id(5): 128 bits as lowercase hex

// PRETTY_NAME from os-release ("Debian GNU/Linux 12 (bookworm)"), quotes removed.
std::string os_pretty_name(const ProbeOptions& options) {
  for (const char* file : {"/etc/os-release", "/usr/lib/os-release"}) {
    auto text = read_machine_file(options, file);
    if (!text) continue;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      static constexpr std::string_view kKey = "PRETTY_NAME=";
      if (line.rfind(kKey, 0) != 0) continue;
      std::string value = line.substr(kKey.size());
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      if (!value.empty()) return value;
    }
  }
  return {};
}

// The machine's id: machine-id (32 hex digits, systemd's and D-Bus's locations), else "host-"
// and a hash of the hostname.
std::string host_id(const ProbeOptions& options, const std::string& hostname) {
  for (const char* file : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    auto text = read_machine_file(options, file);
    if (!text) continue;
    std::string id;
    for (char c : *text) {
      if (std::isxdigit(static_cast<unsigned char>(c))) id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (id.size() == kMachineIdDigits) return id;
  }
  return "host-" + hex64(fnv1a64(hostname));
}

nlohmann::json gather_host() {
  nlohmann::json answers = nlohmann::json::object();
  utsname u{};
  if (uname(&u) == 0) {
    answers["sysname"] = std::string(u.sysname);
    answers["release"] = std::string(u.release);
    answers["machine"] = std::string(u.machine);
  } else {
    answers["error"] = "uname failed";
  }
  char host[HOST_NAME_MAX + 1] = {};
  // A truncated name is not NUL-terminated; the zeroed extra byte keeps it a string.
  if (gethostname(host, HOST_NAME_MAX) == 0) answers["hostname"] = std::string(host);
  return answers;
}

class HostProbe final : public Probe {
 public:
  explicit HostProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "host"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    AM_ASSIGN_OR_RETURN(nlohmann::json answers, probe_answers(options_, "host", gather_host));
    if (json_string(answers, "release").empty()) {
      return io_error("no kernel release: " + json_string(answers, "error"));
    }
    std::string os = os_pretty_name(options_);
    if (os.empty()) os = json_string(answers, "sysname");
    const std::string hostname = json_string(answers, "hostname");
    record["host"] = {{"hostname", hostname},
                      {"os", os},
                      {"kernel", json_string(answers, "release")},
                      {"host_id", host_id(options_, hostname)}};
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_host_probe(const ProbeOptions& options) {
  return std::make_unique<HostProbe>(options);
}

}  // namespace am::worker
