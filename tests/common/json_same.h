// Test helper: two JSON documents equal value for value with the same nlohmann types all the
// way down (5 and 5u compare equal, so == alone would not see a reader that made every integer
// signed); doubles compared bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace am::testing {

inline void expect_same_json(const nlohmann::json& a, const nlohmann::json& b, const std::string& at) {
  ASSERT_EQ(a.type(), b.type()) << "at " << at;
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << "at " << at;
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << "at " << at << "." << it.key();
      expect_same_json(*it, b.at(it.key()), at + "." + it.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << "at " << at;
    for (std::size_t i = 0; i < a.size(); ++i) expect_same_json(a[i], b[i], at + "[" + std::to_string(i) + "]");
  } else if (a.is_number_float()) {
    EXPECT_EQ(a.get<double>(), b.get<double>()) << "at " << at;
  } else {
    EXPECT_EQ(a, b) << "at " << at;
  }
}

}  // namespace am::testing
