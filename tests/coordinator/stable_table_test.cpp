// StableTable (coordinator/stable_table.h): entries found by their own key, never moved while in
// the table, erased slots reused; checked against a std::map over random operations.
#include "coordinator/stable_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace am::coord {
namespace {

struct Entry {
  std::string id;
  int value = 0;
};

using Table = StableTable<Entry, &Entry::id, 8>;   // small chunks: growth happens often

std::string id_of(int k) { return "job-" + std::to_string(k) + "-0123456789abcdef"; }   // past SSO

TEST(StableTable, FindsInsertsAndErasesLikeAMapWhileEntriesStayPut) {
  Table table;
  std::map<std::string, int> model;
  std::map<std::string, const Entry*> address;
  std::mt19937 rng(42);
  for (int step = 0; step < 5000; ++step) {
    const std::string id = id_of(static_cast<int>(rng() % 300));
    Entry* e = table.find(id);
    ASSERT_EQ(e != nullptr, model.count(id) > 0) << id;
    switch (rng() % 3) {
      case 0:   // insert or replace
        if (e == nullptr) {
          Entry& in = table.insert(Entry{id, step});
          address[id] = &in;
        } else {
          Entry& in = table.replace(*e, Entry{id, step});
          EXPECT_EQ(&in, e);   // replaced in place
        }
        model[id] = step;
        break;
      case 1:   // erase
        if (e != nullptr) {
          table.erase(*e);
          model.erase(id);
          address.erase(id);
        }
        break;
      default:  // read
        if (e != nullptr) {
          EXPECT_EQ(e->value, model[id]);
          EXPECT_EQ(e, address[id]) << "an entry moved";
        }
    }
    ASSERT_EQ(table.size(), model.size());
  }
  for (const auto& [id, value] : model) {
    const Entry* e = table.find(id);
    ASSERT_NE(e, nullptr) << id;
    EXPECT_EQ(e->value, value);
    EXPECT_EQ(e->id, id);
    EXPECT_EQ(e, address[id]);
  }
}

TEST(StableTable, AnErasedSlotIsResetAndReused) {
  Table table;
  Entry& a = table.insert(Entry{id_of(1), 7});
  Entry* where = &a;
  table.erase(a);
  EXPECT_EQ(table.find(id_of(1)), nullptr);
  EXPECT_TRUE(where->id.empty());   // reset, so nothing stale is found through old pointers
  Entry& b = table.insert(Entry{id_of(2), 9});
  EXPECT_EQ(&b, where);
  EXPECT_EQ(table.find(id_of(2)), &b);
  EXPECT_EQ(table.size(), 1u);
}

}  // namespace
}  // namespace am::coord
