#include "jobs/toml_support.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

namespace am::jobs::detail {
namespace {

// Enough to show what is wrong with a hand-written file without drowning the terminal.
constexpr std::size_t kMaxReportedErrors = 25;

std::string position(const std::filesystem::path& file, const toml::source_region& where) {
  std::string out = file.string();
  if (where.begin.line > 0) {
    out += ":" + std::to_string(where.begin.line);
    if (where.begin.column > 0) out += ":" + std::to_string(where.begin.column);
  }
  return out;
}

}  // namespace

Result<std::string> read_text_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return not_found(file.string() + ": no such file");
  if (std::filesystem::is_directory(file, ec)) {
    return invalid_argument(file.string() + ": is a directory, not a TOML file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return io_error(file.string() + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error(file.string() + ": read failed");
  return text.str();
}

Result<toml::table> parse_toml_file(const std::filesystem::path& file) {
  AM_ASSIGN_OR_RETURN(std::string text, read_text_file(file));
  return parse_toml_text(text, file);
}

Result<toml::table> parse_toml_text(const std::string& text, const std::filesystem::path& file) {
  try {
    return toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    return invalid_argument(position(file, e.source()) + ": " + std::string(e.description()));
  } catch (const std::exception& e) {
    return invalid_argument(file.string() + ": " + e.what());
  }
}

void ErrorList::add(const toml::source_region& where, std::string_view what) {
  push(where.begin.line, where.begin.column, position(file_, where) + ": " + std::string(what));
}

void ErrorList::add_unplaced(std::string_view what) {
  push(0, 0, file_.string() + ": " + std::string(what));
}

// A setting shared by several models can trip the same check once per model; say it once.
void ErrorList::push(uint32_t line, uint32_t column, std::string text) {
  const bool seen = std::any_of(messages_.begin(), messages_.end(),
                                [&](const Message& m) { return m.text == text; });
  if (!seen) messages_.push_back(Message{line, column, std::move(text)});
}

Status ErrorList::status() const {
  if (messages_.empty()) return Status::Ok();
  // toml++ hands out table keys in sorted order, not file order; users read top to bottom.
  std::vector<const Message*> sorted;
  for (const Message& m : messages_) sorted.push_back(&m);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Message* a, const Message* b) {
    return std::tie(a->line, a->column) < std::tie(b->line, b->column);
  });
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < kMaxReportedErrors; ++i) {
    if (i > 0) text += '\n';
    text += sorted[i]->text;
  }
  if (sorted.size() > kMaxReportedErrors) {
    text += "\n... and " + std::to_string(sorted.size() - kMaxReportedErrors) + " more errors";
  }
  return invalid_argument(std::move(text));
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::vector<std::string> key_names(const toml::table& table) {
  std::vector<std::string> out;
  for (const auto& [key, value] : table) out.emplace_back(key.str());
  return out;
}

namespace {

std::optional<nlohmann::json> scalar_to_json(const toml::node& node, std::string& why) {
  if (const auto* v = node.as_integer()) return nlohmann::json(v->get());
  if (const auto* v = node.as_string()) return nlohmann::json(v->get());
  if (const auto* v = node.as_boolean()) return nlohmann::json(v->get());
  if (const auto* v = node.as_floating_point()) {
    if (!std::isfinite(v->get())) {
      why = "non-finite floats are not allowed";
      return std::nullopt;
    }
    return nlohmann::json(v->get());
  }
  why = "expected an integer, float, string or boolean, got " + std::string(type_name(node));
  return std::nullopt;
}

}  // namespace

std::optional<nlohmann::json> config_value_to_json(const toml::node& node, std::string& why) {
  const auto* arr = node.as_array();
  if (arr == nullptr) return scalar_to_json(node, why);
  nlohmann::json out = nlohmann::json::array();
  for (const toml::node& el : *arr) {
    auto v = scalar_to_json(el, why);
    if (!v) {
      why = "array element: " + why;
      return std::nullopt;
    }
    out.push_back(std::move(*v));
  }
  return out;
}

}  // namespace am::jobs::detail
