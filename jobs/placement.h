// Where a planned job runs (DECISIONS.md "Job identity and placement", docs/PLANS.md
// "Placement"): the one vocabulary of placements and the placement targets that become part of a
// job's identity.
//
// A plan's job is a template: (model, backend, precision, shape, mode, ...). Its placement says
// how many jobs the coordinator makes of it:
//   - each-class  (the default): one job per hardware class that has a device of the job's
//                 backend — identical boxes share it; a class that registers later gets its own;
//   - each-device: one job per device of the job's backend — to find a bad box among identical
//                 ones;
//   - any:        one job, run once on whichever capable device takes it first.
// The job made for a class or a device carries that target in its identity
// (compute_job_id(run, spec, target)), so resume and exactly-once hold per class and per device.
// An `any` job's target is empty, which keeps the ids of plans from before placements existed.
//
// Contract: pure functions, thread-safe; the strings are the stored and transported forms.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace am::jobs {

enum class Placement { kEachClass, kEachDevice, kAny };

std::string_view to_string(Placement p);                       // "each-class", "each-device", "any"
std::optional<Placement> parse_placement(std::string_view s);
std::span<const std::string_view> known_placements();          // in the order above

// Placement targets: "class:<hardware class>" and "device:<worker id>/<device key>"; "" for any.
std::string class_target(std::string_view hardware_class);
std::string device_target(std::string_view worker_id, std::string_view device_key);

struct ParsedTarget {
  Placement placement = Placement::kAny;
  std::string hardware_class;     // kEachClass
  std::string worker_id;          // kEachDevice
  std::string device_key;         // kEachDevice
};
// The target of a stored job read back; nullopt for a string no build ever wrote.
std::optional<ParsedTarget> parse_target(std::string_view target);

}  // namespace am::jobs
