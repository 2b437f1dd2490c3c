#include "jobs/command_spec.h"

#include <array>

#include "jobs/names.h"

namespace am::jobs {
namespace {

constexpr std::array<std::string_view, 2> kReaders = {kOutputAccelmatrixJson, kOutputLlamaBench};

Status field_error(std::string_view field, std::string_view what) {
  return invalid_argument("spec.command." + std::string(field) + ": " + std::string(what));
}

}  // namespace

std::span<const std::string_view> known_output_readers() { return kReaders; }

bool is_known_output_reader(std::string_view name) {
  for (std::string_view r : kReaders) {
    if (r == name) return true;
  }
  return false;
}

nlohmann::json command_to_json(const CommandSpec& c) {
  nlohmann::json doc = {{"name", c.name}, {"argv", c.argv}, {"output", c.output}};
  if (!c.precision_label.empty()) doc["precision_label"] = c.precision_label;
  return doc;
}

Result<CommandSpec> command_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return invalid_argument("spec.command: expected an object, got " + std::string(doc.type_name()));
  CommandSpec c;
  auto name = doc.find("name");
  if (name == doc.end() || !name->is_string()) return field_error("name", "missing or not a string");
  c.name = name->get<std::string>();
  if (!is_valid_identifier(c.name)) {
    return field_error("name", "'" + c.name + "' is not a valid name (1-64 of letters, digits, '.', '_', '-')");
  }
  auto argv = doc.find("argv");
  if (argv == doc.end() || !argv->is_array()) return field_error("argv", "missing or not an array of strings");
  if (argv->empty()) return field_error("argv", "empty: it needs at least the program");
  if (argv->size() > kMaxCommandArgs) {
    return field_error("argv", std::to_string(argv->size()) + " arguments exceed the limit of " +
                                   std::to_string(kMaxCommandArgs));
  }
  for (std::size_t i = 0; i < argv->size(); ++i) {
    const auto& a = (*argv)[i];
    const std::string where = "argv[" + std::to_string(i) + "]";
    if (!a.is_string()) return field_error(where, "expected a string, got " + std::string(a.type_name()));
    std::string s = a.get<std::string>();
    if (s.size() > kMaxCommandArgBytes) return field_error(where, "longer than 16 KiB");
    if (s.find('\0') != std::string::npos) return field_error(where, "contains a NUL byte");
    if (i == 0 && s.empty()) return field_error(where, "the program is empty");
    c.argv.push_back(std::move(s));
  }
  auto output = doc.find("output");
  if (output != doc.end()) {
    if (!output->is_string()) return field_error("output", "expected a string");
    c.output = output->get<std::string>();
  }
  if (!is_known_output_reader(c.output)) {
    return field_error("output", "unknown reader '" + c.output + "' (expected one of " +
                                     join_names(known_output_readers()) + ")");
  }
  if (auto label = doc.find("precision_label"); label != doc.end()) {
    if (!label->is_string()) return field_error("precision_label", "expected a string");
    c.precision_label = label->get<std::string>();
    if (c.precision_label.size() > kMaxCommandLabelBytes) return field_error("precision_label", "longer than 256 bytes");
  }
  return c;
}

}  // namespace am::jobs
