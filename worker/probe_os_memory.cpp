// The OS memory probe (logger "worker/probe/memory").
//
// Record part written, inside "topology": "memory_bytes_os" (MemTotal of /proc/meminfo),
// "memory_bytes_cgroup" (only when a cgroup memory limit applies), "memory_limit_bytes" and
// "memory_limit_source" ("os" | "cgroup" | "hwloc").
//
// Why a second opinion next to hwloc: inside virtual machines hwloc's NUMA memory can be far
// below what the guest kernel actually manages (seen: 5.9 GB from hwloc vs 23.5 GiB MemTotal),
// because it reads firmware tables describing the boot-time layout, not ballooned or hot-plugged
// memory. MemTotal is what the kernel will hand out, so it is the trustworthy ceiling; a cgroup
// limit (containers, systemd slices) lowers it further because the OOM killer enforces it.
#include <charconv>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "common/log.h"
#include "worker/probe.h"
#include "worker/probe_files.h"

namespace am::worker {
namespace {

// cgroup v1 reports "no limit" as the largest page-aligned signed 64-bit value; anything this
// large is no limit on any real machine.
constexpr uint64_t kCgroupUnlimitedBytes = uint64_t{1} << 60;
constexpr uint64_t kBytesPerKiB = 1024;

std::optional<uint64_t> parse_u64(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> meminfo_total_bytes(const ProbeOptions& options) {
  auto text = read_machine_file(options, "/proc/meminfo");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:") {
      // The kernel always prints kB (KiB) here.
      return unit.find("kB") != std::string::npos ? value * kBytesPerKiB : value;
    }
  }
  return std::nullopt;
}

// The tightest limit found in `file` in the cgroup directory of this process and each of its
// ancestors up to the mount point (a parent's limit binds its children too).
std::optional<uint64_t> tightest_limit(const ProbeOptions& options, std::string_view mount,
                                       std::string cgroup_path, std::string_view file) {
  std::optional<uint64_t> best;
  while (true) {
    std::string absolute(mount);
    if (!cgroup_path.empty() && cgroup_path != "/") {
      if (cgroup_path.front() != '/') absolute += '/';
      absolute += cgroup_path;
    }
    absolute += '/';
    absolute += file;
    // Inside a cgroup namespace, groups outside it show as "/../x"; their files are not visible.
    const bool outside = absolute.find("/../") != std::string::npos;
    if (auto text = outside ? std::nullopt : read_machine_file(options, absolute)) {
      // cgroup v2 writes "max" for no limit; parse_u64 rejects it.
      if (auto v = parse_u64(*text); v && *v < kCgroupUnlimitedBytes) {
        if (!best || *v < *best) best = *v;
      }
    }
    if (cgroup_path.empty() || cgroup_path == "/") break;
    const auto slash = cgroup_path.find_last_of('/');
    cgroup_path = slash == std::string::npos ? std::string() : cgroup_path.substr(0, slash);
  }
  return best;
}

std::optional<uint64_t> cgroup_limit_bytes(const ProbeOptions& options) {
  auto text = read_machine_file(options, "/proc/self/cgroup");
  if (!text) return std::nullopt;
  std::optional<uint64_t> best;
  auto consider = [&best](std::optional<uint64_t> v) {
    if (v && (!best || *v < *best)) best = v;
  };
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // "hierarchy-id:controllers:path"; cgroup v2's unified hierarchy has id 0 and no controllers.
    const auto c1 = line.find(':');
    const auto c2 = c1 == std::string::npos ? std::string::npos : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string path = line.substr(c2 + 1);
    if (controllers.empty()) {
      consider(tightest_limit(options, "/sys/fs/cgroup", path, "memory.max"));
      continue;
    }
    std::istringstream list(controllers);
    std::string controller;
    while (std::getline(list, controller, ',')) {
      if (controller == "memory") {
        consider(tightest_limit(options, "/sys/fs/cgroup/memory", path, "memory.limit_in_bytes"));
      }
    }
  }
  return best;
}

class OsMemoryProbe final : public Probe {
 public:
  explicit OsMemoryProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "memory"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    const std::optional<uint64_t> os = meminfo_total_bytes(options_);
    const std::optional<uint64_t> cgroup = cgroup_limit_bytes(options_);
    std::optional<uint64_t> hwloc;
    if (auto topo = record.find("topology"); topo != record.end() && topo->is_object()) {
      if (auto h = topo->find("memory_bytes_hwloc"); h != topo->end() && h->is_number_unsigned()) {
        if (h->get<uint64_t>() > 0) hwloc = h->get<uint64_t>();
      }
    }

    uint64_t limit = 0;
    std::string source;
    if (os) {
      limit = *os;
      source = "os";
    } else if (hwloc) {
      limit = *hwloc;
      source = "hwloc";
    }
    if (cgroup && (limit == 0 || *cgroup < limit)) {
      limit = *cgroup;
      source = "cgroup";
    }
    if (limit == 0) {
      return not_found("no memory figure: " + rooted(options_.root, "/proc/meminfo").string() +
                       " unreadable, no cgroup limit, no hwloc NUMA memory");
    }

    nlohmann::json& topology = record["topology"];
    if (!topology.is_object()) topology = nlohmann::json::object();
    if (os) topology["memory_bytes_os"] = *os;
    if (cgroup) topology["memory_bytes_cgroup"] = *cgroup;
    topology["memory_limit_bytes"] = limit;
    topology["memory_limit_source"] = source;
    auto log = get_logger("worker/probe/memory");
    if (os && hwloc && *hwloc < *os) {
      log->debug("hwloc reports {} bytes of NUMA memory, the OS {}; jobs are limited by the {}",
                 *hwloc, *os, source);
    }
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_os_memory_probe(const ProbeOptions& options) {
  return std::make_unique<OsMemoryProbe>(options);
}

}  // namespace am::worker
