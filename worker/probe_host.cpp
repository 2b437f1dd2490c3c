// The host probe (logger "worker/probe/host"): "host": {"hostname", "os", "kernel"}.
#include <sys/utsname.h>
#include <unistd.h>

#include <climits>
#include <sstream>
#include <string>

#include "common/log.h"
#include "worker/probe.h"
#include "worker/probe_files.h"

namespace am::worker {
namespace {

// PRETTY_NAME from os-release ("Debian GNU/Linux 12 (bookworm)"), quotes removed.
std::string os_pretty_name(const ProbeOptions& options) {
  for (const char* file : {"/etc/os-release", "/usr/lib/os-release"}) {
    auto text = read_probe_file(rooted(options.root, file));
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

class HostProbe final : public Probe {
 public:
  explicit HostProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "host"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    utsname u{};
    if (uname(&u) != 0) return io_error("uname failed");
    char host[HOST_NAME_MAX + 1] = {};
    // A truncated name is not NUL-terminated; the zeroed extra byte keeps it a string.
    if (gethostname(host, HOST_NAME_MAX) != 0) return io_error("gethostname failed");
    std::string os = os_pretty_name(options_);
    if (os.empty()) os = u.sysname;
    record["host"] = {{"hostname", std::string(host)}, {"os", os}, {"kernel", std::string(u.release)}};
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
