// [[commands]] in a plan (docs/PLANS.md, "External commands"): each entry is one job whose
// identity includes the command's name, argv and reader; every bad key is an error naming the
// file, the line, the entry's index and the key.
#include <string>

#include <gtest/gtest.h>

#include "jobs/plan.h"
#include "temp_dir.h"

namespace am::jobs {
namespace {

using testing::TempDir;

class CommandPlan : public ::testing::Test {
 protected:
  void SetUp() override { dir_.write("models/.keep", ""); }
  Result<Plan> load(const std::string& text) {
    file_ = dir_.write("plans/cmd.toml", text);
    return load_plan(file_, dir_.path() / "models");
  }
  // The plan's error text, or a failure when it loaded.
  std::string error_of(const std::string& text) {
    auto plan = load(text);
    if (plan.ok()) {
      ADD_FAILURE() << "plan loaded but should not have:\n" << text;
      return {};
    }
    return plan.status().message();
  }
  TempDir dir_;
  std::filesystem::path file_;
};

constexpr const char* kHeader = "[plan]\nname = \"cmd\"\nmode = \"perf\"\n";

TEST_F(CommandPlan, AnEntryIsOneJobWithItsLabels) {
  auto plan = load(std::string(kHeader) + R"(
[defaults]
timeout_s = 30
[[commands]]
name = "ort-bert"
argv = ["python3", "bench.py", "--provider", "cuda"]
backend = "cuda"
requires_tags = ["gpu=a100"]
memory_limit_mb = 2048
model = "bert-tiny"
precision = "f16"
batch = 8
seq_len = 128
[[commands]]
name = "llama"
argv = ["llama-bench", "-o", "json"]
backend = "cpu"
output = "llama-bench"
precision = "Q4_K_M"
timeout_s = 5
mode = "accuracy"
)");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->jobs.size(), 2u);
  const JobSpec& ort = plan->jobs[0].spec;
  ASSERT_TRUE(ort.command.has_value());
  EXPECT_EQ(ort.command->name, "ort-bert");
  EXPECT_EQ(ort.command->argv, (std::vector<std::string>{"python3", "bench.py", "--provider", "cuda"}));
  EXPECT_EQ(ort.command->output, "accelmatrix-json");
  EXPECT_EQ(ort.model, "bert-tiny");
  EXPECT_EQ(ort.architecture, "external");
  EXPECT_EQ(ort.backend, "cuda");
  EXPECT_EQ(ort.precision, Precision::kF16);
  EXPECT_EQ(ort.batch, 8);
  EXPECT_EQ(ort.seq_len, 128);
  EXPECT_EQ(ort.mode, "perf");
  EXPECT_DOUBLE_EQ(ort.timeout_s, 30.0);
  EXPECT_EQ(ort.memory_limit_mb, 2048);
  EXPECT_EQ(ort.required_tags, (std::map<std::string, std::string>{{"gpu", "a100"}}));

  const JobSpec& llama = plan->jobs[1].spec;
  EXPECT_EQ(llama.model, "llama");               // no model label: the command's name
  EXPECT_EQ(llama.precision, Precision::kExternal);
  EXPECT_EQ(llama.command->precision_label, "Q4_K_M");
  EXPECT_EQ(llama.command->output, "llama-bench");
  EXPECT_EQ(llama.mode, "accuracy");
  EXPECT_DOUBLE_EQ(llama.timeout_s, 5.0);

  // The spec travels as JSON and comes back the same.
  for (const PlannedJob& j : plan->jobs) {
    auto back = job_spec_from_json(to_json(j.spec));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(to_json(*back), to_json(j.spec));
  }
}

TEST_F(CommandPlan, AChangedArgvOrReaderIsANewJobAndTheSamePlanTheSameJob) {
  const std::string base = std::string(kHeader) + "[[commands]]\nname = \"c\"\nbackend = \"cpu\"\n";
  auto a = load(base + "argv = [\"sh\", \"-c\", \"echo 1\"]\n");
  auto again = load(base + "argv = [\"sh\", \"-c\", \"echo 1\"]\n");
  auto b = load(base + "argv = [\"sh\", \"-c\", \"echo 2\"]\n");
  auto c = load(base + "argv = [\"sh\", \"-c\", \"echo 1\"]\noutput = \"llama-bench\"\n");
  ASSERT_TRUE(a.ok() && again.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->jobs[0].job_id, again->jobs[0].job_id);
  EXPECT_EQ(plan_hash(a->jobs), plan_hash(again->jobs));
  EXPECT_NE(a->jobs[0].job_id, b->jobs[0].job_id);
  EXPECT_NE(a->jobs[0].job_id, c->jobs[0].job_id);
  EXPECT_NE(plan_hash(a->jobs), plan_hash(b->jobs));
}

TEST_F(CommandPlan, ModelsAndCommandsMix) {
  auto plan = load(std::string(kHeader) +
                   "[[models]]\nname = \"selftest:pass\"\n[[commands]]\nname = \"c\"\nargv = [\"true\"]\nbackend = \"cpu\"\n");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->jobs.size(), 2u);
}

struct BadCase {
  const char* what;
  const char* entry;     // the [[commands]] table's body
  const char* expected;  // a fragment of the error
};

class BadCommand : public CommandPlan, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadCommand, IsAnErrorNamingFileLineIndexAndKey) {
  const BadCase& c = GetParam();
  // The bad entry is the second, so the index in the message is 1.
  const std::string text = std::string(kHeader) +
                           "[[commands]]\nname = \"ok\"\nargv = [\"true\"]\nbackend = \"cpu\"\n"
                           "[[commands]]\n" + c.entry;
  const std::string error = error_of(text);
  EXPECT_NE(error.find("cmd.toml:"), std::string::npos) << error;
  EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
}

INSTANTIATE_TEST_SUITE_P(
    Keys, BadCommand,
    ::testing::Values(
        BadCase{"missing argv", "name = \"x\"\nbackend = \"cpu\"\n", "commands[1]: [[commands]] entry is missing 'argv'"},
        BadCase{"missing name", "argv = [\"true\"]\nbackend = \"cpu\"\n", "commands[1]: [[commands]] entry is missing 'name'"},
        BadCase{"missing backend", "name = \"x\"\nargv = [\"true\"]\n", "commands[1]: [[commands]] entry is missing 'backend'"},
        BadCase{"argv a string", "name = \"x\"\nargv = \"sh -c true\"\nbackend = \"cpu\"\n",
                "commands[1].argv: expected an array of strings (no shell"},
        BadCase{"argv empty", "name = \"x\"\nargv = []\nbackend = \"cpu\"\n", "commands[1].argv: empty"},
        BadCase{"argv of numbers", "name = \"x\"\nargv = [\"sh\", 3]\nbackend = \"cpu\"\n",
                "commands[1].argv[1]: expected a string, got integer"},
        BadCase{"empty program", "name = \"x\"\nargv = [\"\"]\nbackend = \"cpu\"\n", "commands[1].argv[0]: the program is empty"},
        BadCase{"unknown reader", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\noutput = \"csv\"\n",
                "commands[1].output: unknown reader 'csv' (expected one of accelmatrix-json, llama-bench)"},
        BadCase{"duplicate name", "name = \"ok\"\nargv = [\"true\"]\nbackend = \"cpu\"\n",
                "commands[1].name: duplicate command name 'ok' (first used at line 4)"},
        BadCase{"bad name", "name = \"a b\"\nargv = [\"true\"]\nbackend = \"cpu\"\n", "commands[1].name: 'a b' is not a valid name"},
        BadCase{"unknown backend", "name = \"x\"\nargv = [\"true\"]\nbackend = \"tpu\"\n", "commands[1].backend: unknown backend 'tpu'"},
        BadCase{"backend not a string", "name = \"x\"\nargv = [\"true\"]\nbackend = [\"cpu\"]\n",
                "commands[1].backend: expected a string, got array"},
        BadCase{"timeout zero", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\ntimeout_s = 0\n", "commands[1].timeout_s:"},
        BadCase{"timeout a string", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\ntimeout_s = \"5\"\n",
                "commands[1].timeout_s: expected a number"},
        BadCase{"negative memory", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nmemory_limit_mb = -1\n",
                "commands[1].memory_limit_mb: must be at least 0"},
        BadCase{"unknown mode", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nmode = \"fast\"\n", "commands[1].mode: unknown mode 'fast'"},
        BadCase{"tags not KEY=VALUE", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nrequires_tags = [\"gpu\"]\n",
                "commands[1].requires_tags[0]: expected KEY=VALUE"},
        BadCase{"tags a table", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nrequires_tags = { gpu = \"a\" }\n",
                "commands[1].requires_tags: expected an array of \"KEY=VALUE\" strings"},
        BadCase{"empty model", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nmodel = \"\"\n", "commands[1].model: must be 1 to 256 bytes"},
        BadCase{"precision a number", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nprecision = 16\n",
                "commands[1].precision: expected a string, got integer"},
        BadCase{"batch zero", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nbatch = 0\n", "commands[1].batch: must be at least 1"},
        BadCase{"unknown key", "name = \"x\"\nargv = [\"true\"]\nbackend = \"cpu\"\nargs = [\"a\"]\n",
                "commands[1]: unknown key 'args' in [[commands]] (did you mean 'argv'?)"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.what;
      for (char& ch : name) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST_F(CommandPlan, CommandsMustBeAnArrayOfTables) {
  // At the top level, before [plan]: after it the key would be [plan]'s own (unknown) key.
  const std::string error = error_of("commands = \"x\"\n" + std::string(kHeader));
  EXPECT_NE(error.find("cmd.toml:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("'commands' must be an array of tables ([[commands]]), got string"), std::string::npos) << error;
  const std::string empty = error_of("commands = []\n" + std::string(kHeader));
  EXPECT_NE(empty.find("commands: empty list"), std::string::npos) << empty;
}

// Every problem at once: a duplicate name was only reported once the first entry's own error
// was fixed.
TEST_F(CommandPlan, ADuplicateNameIsReportedBesideTheFirstEntrysOwnError) {
  const std::string error = error_of(std::string(kHeader) +
                                     "[[commands]]\nname = \"c1\"\nargv = []\nbackend = \"cpu\"\n"
                                     "[[commands]]\nname = \"c1\"\nargv = [\"true\"]\nbackend = \"cpu\"\n");
  EXPECT_NE(error.find("commands[0].argv: empty"), std::string::npos) << error;
  EXPECT_NE(error.find("commands[1].name: duplicate command name 'c1'"), std::string::npos) << error;
}

TEST_F(CommandPlan, APlanNeedsAModelOrACommand) {
  EXPECT_NE(error_of(kHeader).find("no [[models]] or [[commands]] entries"), std::string::npos);
}

}  // namespace
}  // namespace am::jobs
