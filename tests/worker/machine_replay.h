// Test helpers: replaying the recorded machines of tests/data/machines and finding devices in a
// capability record.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "worker/probe.h"
#include "worker/recording.h"

namespace am::worker::testing {

inline std::filesystem::path machine_dir(std::string_view name) {
  return std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "tests/data/machines" / std::string(name);
}

// The capability record the default probes build from the named recording (an empty object,
// with a test failure, when it cannot be opened).
inline nlohmann::json replay_machine(std::string_view name) {
  auto recording = Recording::open(machine_dir(name));
  EXPECT_TRUE(recording.ok()) << recording.status().to_string();
  if (!recording.ok()) return nlohmann::json::object();
  return assemble_capabilities(default_probes(replay_options(*recording)));
}

// The device with `key`, or a null json (and a test failure) when the record has none.
inline nlohmann::json device_at(const nlohmann::json& record, std::string_view key) {
  for (const auto& d : record.value("devices", nlohmann::json::array())) {
    if (d.value("key", std::string()) == key) return d;
  }
  ADD_FAILURE() << "no device " << key << " in " << record.dump();
  return nullptr;
}

inline int count_backend(const nlohmann::json& record, std::string_view backend) {
  int n = 0;
  for (const auto& d : record.value("devices", nlohmann::json::array())) {
    n += d.value("backend", std::string()) == backend ? 1 : 0;
  }
  return n;
}

}  // namespace am::worker::testing
