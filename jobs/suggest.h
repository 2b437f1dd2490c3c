// "Did you mean ...?" for misspelt names (models, keys, override keys).
//
// Contract: pure functions, thread-safe. A candidate is "close" when its edit distance to the
// word is at most a third of the word's length (at least 1, at most 3) or when one contains the
// other; results are ordered closest first, ties by candidate order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace am::jobs {

std::vector<std::string> closest_names(std::string_view word,
                                       const std::vector<std::string>& candidates,
                                       std::size_t max_results = 3);

// " (did you mean 'a' or 'b'?)", or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace am::jobs
