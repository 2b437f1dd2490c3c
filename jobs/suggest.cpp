#include "jobs/suggest.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace am::jobs {
namespace {

constexpr std::size_t kMaxSuggestDistance = 3;

// Optimal string alignment distance: like Levenshtein but a swap of two neighbours counts as
// one edit, the most common typo ("precisoins").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::vector<std::string> closest_names(std::string_view word,
                                       const std::vector<std::string>& candidates,
                                       std::size_t max_results) {
  const std::size_t limit = std::clamp<std::size_t>(word.size() / 3, 1, kMaxSuggestDistance);
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // (distance, index)
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string& c = candidates[i];
    if (c == word) continue;
    std::size_t dist = edit_distance(word, c);
    const bool contains = word.size() >= 3 && (c.find(word) != std::string::npos ||
                                               word.find(c) != std::string_view::npos);
    if (dist <= limit || contains) scored.emplace_back(dist, i);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& [dist, i] : scored) {
    if (out.size() >= max_results) break;
    out.push_back(candidates[i]);
  }
  return out;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::vector<std::string> close = closest_names(word, candidates);
  if (close.empty()) return "";
  std::string out = " (did you mean ";
  for (std::size_t i = 0; i < close.size(); ++i) {
    if (i > 0) out += i + 1 == close.size() ? " or " : ", ";
    out += "'" + close[i] + "'";
  }
  return out + "?)";
}

}  // namespace am::jobs
