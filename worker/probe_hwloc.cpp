// The hwloc topology probe (logger "worker/probe/hwloc").
//
// Record part written: "topology": {"packages", "cores", "pus", "caches": [...], "numa_nodes":
// [...], "memory_bytes_hwloc"}. Counts are of what this process may run on: the topology is
// restricted to the process's CPU binding (taskset, cpuset cgroups), because a job can only ever
// use those cores and a worker started under `taskset -c 0-3` on a 64-core box is a 4-core device.
// Recording saves the topology as restricted, so replaying it yields the same counts.
#include <hwloc.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "common/log.h"
#include "worker/probe.h"
#include "worker/recording.h"

namespace am::worker {
namespace {

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

// Owns one loaded hwloc topology.
class Topology {
 public:
  static Result<Topology> load(const ProbeOptions& options) {
    Topology topo;
    if (hwloc_topology_init(&topo.handle_) != 0) {
      topo.handle_ = nullptr;
      return internal_error("hwloc_topology_init failed");
    }
    // Instruction caches are filtered out by default; the record lists them too.
    hwloc_topology_set_icache_types_filter(topo.handle_, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (!options.hwloc_xml.empty() &&
        hwloc_topology_set_xml(topo.handle_, options.hwloc_xml.c_str()) != 0) {
      return io_error("hwloc cannot read topology XML " + options.hwloc_xml.string());
    }
    if (options.replay && options.hwloc_xml.empty()) {
      // Discovering the live machine here would mix it into the recorded one.
      return not_found("recording " + options.replay->dir().string() + " has no hwloc topology");
    }
    if (hwloc_topology_load(topo.handle_) != 0) {
      return internal_error("hwloc_topology_load failed");
    }
    return topo;
  }

  Topology(Topology&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Topology& operator=(Topology&&) = delete;
  Topology(const Topology&) = delete;
  ~Topology() {
    if (handle_ != nullptr) hwloc_topology_destroy(handle_);
  }

  hwloc_topology_t get() const { return handle_; }

 private:
  Topology() = default;
  hwloc_topology_t handle_ = nullptr;
};

// Narrows the topology to the CPUs this process is bound to. A recorded (XML) topology is not
// this system, so there is no binding to apply.
Status restrict_to_binding(hwloc_topology_t topo) {
  if (!hwloc_topology_is_thissystem(topo)) return Status::Ok();
  Bitmap set(hwloc_bitmap_alloc());
  if (!set) return resource_exhausted("hwloc_bitmap_alloc failed");
  if (hwloc_get_cpubind(topo, set.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    // Some kernels/containers refuse the query; the whole allowed topology is then the answer.
    get_logger("worker/probe/hwloc")->debug("cpu binding unavailable; using the whole topology");
    return Status::Ok();
  }
  if (hwloc_bitmap_iszero(set.get())) return Status::Ok();
  if (hwloc_topology_restrict(topo, set.get(), 0) != 0) {
    return internal_error("hwloc_topology_restrict to the process binding failed");
  }
  return Status::Ok();
}

// The topology as hwloc XML, for a recording.
Result<std::string> export_xml(hwloc_topology_t topo) {
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(topo, &buffer, &length, 0) != 0 || buffer == nullptr) {
    return internal_error("hwloc_topology_export_xmlbuffer failed");
  }
  // length counts the terminating NUL.
  std::string xml(buffer, length > 0 ? static_cast<std::size_t>(length - 1) : 0);
  hwloc_free_xmlbuffer(topo, buffer);
  return xml;
}

const char* cache_type_name(hwloc_obj_cache_type_t t) {
  switch (t) {
    case HWLOC_OBJ_CACHE_DATA: return "data";
    case HWLOC_OBJ_CACHE_INSTRUCTION: return "instruction";
    case HWLOC_OBJ_CACHE_UNIFIED: return "unified";
  }
  return "unified";
}

nlohmann::json describe_caches(hwloc_topology_t topo) {
  // Identical caches (one L1d per core, ...) collapse into one entry with a count.
  using Key = std::tuple<unsigned, std::string, uint64_t, unsigned>;
  std::map<Key, int> counts;
  static constexpr hwloc_obj_type_t kCacheTypes[] = {
      HWLOC_OBJ_L1CACHE,  HWLOC_OBJ_L2CACHE,  HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
      HWLOC_OBJ_L5CACHE,  HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2ICACHE, HWLOC_OBJ_L3ICACHE};
  for (hwloc_obj_type_t type : kCacheTypes) {
    for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topo, type, nullptr); obj != nullptr;
         obj = hwloc_get_next_obj_by_type(topo, type, obj)) {
      const auto& c = obj->attr->cache;
      ++counts[Key{c.depth, cache_type_name(c.type), c.size, c.linesize}];
    }
  }
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& [key, count] : counts) {
    const auto& [level, type, size, line] = key;
    caches.push_back({{"level", level},
                      {"type", type},
                      {"size_bytes", size},
                      {"line_bytes", line},
                      {"count", count}});
  }
  return caches;
}

class HwlocProbe final : public Probe {
 public:
  explicit HwlocProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "hwloc"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    AM_ASSIGN_OR_RETURN(Topology topo, Topology::load(options_));
    AM_RETURN_IF_ERROR(restrict_to_binding(topo.get()));
    hwloc_topology_t t = topo.get();
    if (options_.recorder && !options_.replay) {
      AM_ASSIGN_OR_RETURN(std::string xml, export_xml(t));
      options_.recorder->add_hwloc_xml(xml);
    }

    nlohmann::json numa = nlohmann::json::array();
    uint64_t numa_total = 0;
    for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr);
         obj != nullptr; obj = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, obj)) {
      const uint64_t bytes = obj->attr->numanode.local_memory;
      numa_total += bytes;
      numa.push_back({{"os_index", obj->os_index}, {"memory_bytes", bytes}});
    }

    const int pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    if (pus <= 0) return internal_error("hwloc found no processing units");
    // Some virtual machines expose no Core objects; each PU is then its own core.
    const int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    const int packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);

    nlohmann::json& topology = record["topology"];
    if (!topology.is_object()) topology = nlohmann::json::object();
    topology["packages"] = packages > 0 ? packages : 1;
    topology["cores"] = cores > 0 ? cores : pus;
    topology["pus"] = pus;
    topology["caches"] = describe_caches(t);
    topology["numa_nodes"] = std::move(numa);
    topology["memory_bytes_hwloc"] = numa_total;
    get_logger("worker/probe/hwloc")
        ->debug("{} package(s), {} core(s), {} PU(s), {} bytes NUMA memory",
                topology["packages"].get<int>(), topology["cores"].get<int>(), pus, numa_total);
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_hwloc_probe(const ProbeOptions& options) {
  return std::make_unique<HwlocProbe>(options);
}

}  // namespace am::worker
