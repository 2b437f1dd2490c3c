#include "jobs/catalog.h"

#include <string>

#include <gtest/gtest.h>

#include "jobs/job_spec.h"
#include "temp_dir.h"

namespace am::jobs {
namespace {

using nlohmann::json;
using testing::TempDir;

const std::filesystem::path kSourceCatalog = std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models";

// A valid catalog file; tests break one line of it at a time. Line numbers matter below.
std::string toy_model(const std::string& name, const std::string& extra_model = "",
                      const std::string& extra_config = "") {
  // Without extras: [model] on line 1, [config] on line 7, extra_config from line 14.
  return "[model]\n"
         "name = \"" + name + "\"\n"
         "architecture = \"encoder-only\"\n"
         "family = \"bert\"\n"
         "source = \"example/" + name + "\"\n" +
         extra_model +
         "\n[config]\n"
         "layers = 4\n"
         "hidden = 64\n"
         "heads = 4\n"
         "max_positions = 128\n"
         "norm_eps = 1e-5\n"
         "activation = \"gelu\"\n" +
         extra_config;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(Catalog, LoadsBertTinyWithItsPublishedConfiguration) {
  auto m = load_model(kSourceCatalog, "bert-tiny");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->name, "bert-tiny");
  EXPECT_EQ(m->architecture, "encoder-only");
  EXPECT_EQ(m->family, "bert");
  EXPECT_EQ(m->source, "google/bert_uncased_L-2_H-128_A-2");
  EXPECT_FALSE(m->description.empty());
  EXPECT_EQ(m->config["layers"], 2);
  EXPECT_EQ(m->config["hidden"], 128);
  EXPECT_EQ(m->config["heads"], 2);
  EXPECT_EQ(m->config["intermediate"], 512);
  EXPECT_EQ(m->config["vocab"], 30522);
  EXPECT_EQ(m->config["max_positions"], 512);
  EXPECT_EQ(m->config["type_vocab"], 2);
  EXPECT_EQ(m->config["activation"], "gelu");
  EXPECT_DOUBLE_EQ(m->config["norm_eps"].get<double>(), 1e-12);
  EXPECT_EQ(m->file, kSourceCatalog / "bert-tiny.toml");
}

// BERT parameter count from its config: embeddings (word, position, token type, LayerNorm),
// per layer Q/K/V/O + two LayerNorms + feed-forward, and the pooler.
int64_t bert_parameters(const json& c) {
  const int64_t h = c["hidden"], i = c["intermediate"], v = c["vocab"], p = c["max_positions"],
                t = c["type_vocab"], l = c["layers"];
  const int64_t embeddings = (v + p + t) * h + 2 * h;
  const int64_t attention = 4 * (h * h + h) + 2 * h;
  const int64_t feed_forward = (h * i + i) + (i * h + h) + 2 * h;
  const int64_t pooler = h * h + h;
  return embeddings + l * (attention + feed_forward) + pooler;
}

TEST(Catalog, BertTinyStatedParameterCountMatchesItsConfig) {
  auto m = load_model(kSourceCatalog, "bert-tiny");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->parameters, bert_parameters(m->config));
  EXPECT_EQ(m->parameters, 4385920);
}

TEST(Catalog, SourceTreeCatalogLoadsCompletely) {
  auto all = load_catalog(kSourceCatalog);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_FALSE(all->empty());
  for (const ModelEntry& m : *all) {
    EXPECT_TRUE(is_known_architecture(m.architecture)) << m.name;
    EXPECT_FALSE(m.source.empty()) << m.name;
  }
}

TEST(Catalog, LoadCatalogReturnsEveryModelSortedByName) {
  TempDir dir;
  dir.write("zeta.toml", toy_model("zeta"));
  dir.write("alpha.toml", toy_model("alpha"));
  dir.write("README.md", "not a model");
  auto all = load_catalog(dir.path());
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "alpha");
  EXPECT_EQ((*all)[1].name, "zeta");
  auto names = list_models(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"alpha", "zeta"}));
}

TEST(Catalog, ConfigKeepsValueTypesAndArrays) {
  TempDir dir;
  dir.write("toy.toml", toy_model("toy", "parameters = 1234\n",
                                  "depths = [3, 4, 6, 3]\ntie_embeddings = true\n"));
  auto m = load_model(dir.path(), "toy");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->parameters, 1234);
  EXPECT_TRUE(m->config["layers"].is_number_integer());
  EXPECT_TRUE(m->config["norm_eps"].is_number_float());
  EXPECT_EQ(m->config["depths"], json::array({3, 4, 6, 3}));
  EXPECT_EQ(m->config["tie_embeddings"], true);
}

TEST(Catalog, UnknownModelIsNotFoundAndSuggestsCloseName) {
  auto m = load_model(kSourceCatalog, "bert-tiy");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("unknown model 'bert-tiy'"), std::string::npos);
  EXPECT_NE(m.status().message().find("did you mean 'bert-tiny'"), std::string::npos)
      << m.status().message();
}

TEST(Catalog, NameThatEscapesTheDirectoryIsUnknown) {
  TempDir dir;
  dir.write("models/toy.toml", toy_model("toy"));
  dir.write("secret.toml", toy_model("secret"));
  auto m = load_model(dir.path() / "models", "../secret");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

TEST(Catalog, MissingDirectoryIsNotFound) {
  TempDir dir;
  auto all = load_catalog(dir.path() / "nope");
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kNotFound);
  EXPECT_NE(all.status().message().find("nope"), std::string::npos);
}

// Each case writes one broken file and expects "<file>:<line>:" and a phrase in the error.
struct BrokenCatalogFile {
  const char* label;
  std::string text;
  std::string position;  // ":LINE:" or ":LINE:COL:"; "" for errors without a line
  std::string phrase;
};

class CatalogErrors : public ::testing::TestWithParam<BrokenCatalogFile> {};

TEST_P(CatalogErrors, ReportFileLineAndProblem) {
  const BrokenCatalogFile& c = GetParam();
  TempDir dir;
  const auto file = dir.write("toy.toml", c.text);
  auto m = load_model(dir.path(), "toy");
  ASSERT_FALSE(m.ok()) << c.label;
  const std::string& msg = m.status().message();
  EXPECT_EQ(msg.rfind(file.string() + c.position, 0), 0u) << c.label << ": " << msg;
  EXPECT_NE(msg.find(c.phrase), std::string::npos) << c.label << ": " << msg;
  // load_catalog stops at the same problem.
  auto all = load_catalog(dir.path());
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().message(), msg);
}

INSTANTIATE_TEST_SUITE_P(
    EveryProblem, CatalogErrors,
    ::testing::Values(
        BrokenCatalogFile{"syntax", "[model]\nname = \"toy\"\narchitecture = \n", ":3:", ""},
        BrokenCatalogFile{"unknown model key", toy_model("toy", "famliy = \"bert\"\n"), ":6:1:",
                          "unknown key 'model.famliy' (did you mean 'family'?)"},
        BrokenCatalogFile{"unknown architecture",
                          "[model]\nname = \"toy\"\narchitecture = \"transformer\"\nfamily = \"x\"\n"
                          "source = \"y\"\n[config]\nlayers = 1\n",
                          ":3:16:", "unknown architecture 'transformer'"},
        BrokenCatalogFile{"name differs from file", toy_model("other"), ":2:8:",
                          "does not match the file name 'toy.toml'"},
        BrokenCatalogFile{"wrong type", "[model]\nname = \"toy\"\narchitecture = \"encoder-only\"\n"
                                        "family = 3\nsource = \"y\"\n[config]\nlayers = 1\n",
                          ":4:10:", "model.family: expected a string, got integer"},
        BrokenCatalogFile{"missing source",
                          "[model]\nname = \"toy\"\narchitecture = \"encoder-only\"\nfamily = \"x\"\n"
                          "[config]\nlayers = 1\n",
                          ":1:1:", "[model] is missing 'source'"},
        BrokenCatalogFile{"bad parameters", toy_model("toy", "parameters = -5\n"), ":6:14:",
                          "model.parameters: expected a positive integer, got -5"},
        BrokenCatalogFile{"nested config table", toy_model("toy", "", "[config.vision]\nlayers = 2\n"),
                          ":14:", "config.vision: expected an integer, float, string or boolean"},
        BrokenCatalogFile{"date value", toy_model("toy", "", "released = 2019-08-01\n"), ":14:12:",
                          "config.released: expected an integer, float, string or boolean, got date"},
        BrokenCatalogFile{"zero size", toy_model("toy", "", "intermediate = 0\n"), ":14:16:",
                          "config.intermediate: a size must be a positive integer"},
        BrokenCatalogFile{"hidden not divisible by heads",
                          replace_once(toy_model("toy"), "heads = 4", "heads = 3"), ":7:1:",
                          "hidden (64) is not divisible by heads (3)"},
        BrokenCatalogFile{"unknown table", toy_model("toy", "", "[weights]\npath = \"x\"\n"), ":14:2:",
                          "unknown top-level key 'weights'"},
        BrokenCatalogFile{"missing config", "[model]\nname = \"toy\"\narchitecture = \"vision\"\n"
                                            "family = \"x\"\nsource = \"y\"\n",
                          ": missing [config] table", "missing [config] table"}));

TEST(CatalogSizeKeys, RecognisesSizeNamesAndSuffixes) {
  for (const char* key : {"layers", "hidden", "heads", "intermediate", "vocab", "max_positions",
                          "encoder_layers", "kv_heads", "type_vocab", "head_dim", "num_experts",
                          "experts_per_token", "ssm_state_size", "image_size"}) {
    EXPECT_TRUE(is_size_key(key)) << key;
  }
  for (const char* key : {"norm_eps", "activation", "patch_size", "rope_theta", "layers_", "xlayers",
                          "eos_token_id"}) {
    EXPECT_FALSE(is_size_key(key)) << key;
  }
}

TEST(CatalogConfigCheck, AcceptsConsistentAndRejectsInconsistentConfigs) {
  EXPECT_TRUE(check_model_config(json{{"hidden", 128}, {"heads", 2}, {"activation", "gelu"}}).ok());
  EXPECT_TRUE(check_model_config(json{{"depths", json::array({3, 4, 6, 3})}}).ok());
  EXPECT_FALSE(check_model_config(json{{"hidden", 130}, {"heads", 4}}).ok());
  EXPECT_FALSE(check_model_config(json{{"layers", 0}}).ok());
  EXPECT_FALSE(check_model_config(json{{"layers", 2.5}}).ok());
  EXPECT_FALSE(check_model_config(json{{"encoder_layers", json::array()}}).ok());
}

}  // namespace
}  // namespace am::jobs
