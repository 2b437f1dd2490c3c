#include "jobs/selftest_models.h"

#include <array>

namespace am::jobs {
namespace {

constexpr std::array<SelftestMode, 14> kModes = {{
    {"pass", "passes at once with a small metrics document"},
    {"fail", "reports status fail with the reason \"selftest: deliberate failure\""},
    {"nan", "produces an output holding NaN values; the accuracy check stores it as fail"},
    {"inf", "produces an output holding +/-Inf values; the accuracy check stores it as fail"},
    {"noisy", "prints 100 KiB of numbered lines to stdout and stderr, then passes"},
    {"fds", "passes, reporting the file descriptors and device-selection variables the job process inherited"},
    {"segv", "dies of SIGSEGV (stored as crash)"},
    {"abort", "calls abort(): SIGABRT (stored as crash)"},
    {"sigkill", "dies of SIGKILL, as the kernel's OOM killer would kill it"},
    {"hang", "sleeps until killed (stored as timeout)"},
    {"stubborn", "ignores SIGTERM and sleeps; only SIGKILL ends it (stored as timeout)"},
    {"exit3", "exits with code 3 without a result (stored as error)"},
    {"noresult", "exits 0 without writing a result (stored as error)"},
    {"alloc", "allocates memory until allocation fails (stored as oom); capped at 512 MiB when "
              "the job has no memory limit"},
}};

}  // namespace

std::span<const SelftestMode> selftest_modes() { return kModes; }

bool is_selftest_model(std::string_view model) { return model.starts_with(kSelftestModelPrefix); }

std::string_view shown_architecture(std::string_view model, std::string_view architecture) {
  return is_selftest_model(model) ? kSelftestShownArchitecture : architecture;
}

std::string selftest_mode_names() {
  std::string out;
  for (const SelftestMode& m : kModes) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

Status check_selftest_model(std::string_view model) {
  if (is_selftest_model(model)) {
    const std::string_view mode = model.substr(kSelftestModelPrefix.size());
    for (const SelftestMode& m : kModes) {
      if (m.name == mode) return Status::Ok();
    }
  }
  return not_found("unknown diagnostic model '" + std::string(model) + "' (known: selftest:<mode> with mode one of " +
                   selftest_mode_names() + ")");
}

}  // namespace am::jobs
