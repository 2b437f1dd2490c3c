// Precisions and weight formats: the one table every layer reads.
//
// A job's *precision* says how its model's weights are stored. Every precision but "mixed" is a
// single *weight format* for every linear layer; "mixed" is a policy that stores each tensor in a
// format chosen by its role (the "4-bit mixed" of hardware compatibility reports). The kernels
// (kernels/formats/weight_format.h), the memory estimate, the plan validator, the probes and the
// reports all read this table; nothing else restates a name, a block size or a bit count.
//
// Contract:
//   - Precision and WeightFormat are closed enums. They become strings only at the edges (TOML,
//     msgpack, SQLite, reports) through to_string() and parse_precision()/parse_weight_format(),
//     which agree exactly with the table; parse returns nullopt for any other text (no case
//     folding, no whitespace trimming).
//   - all_precisions() lists the precisions in their canonical (report) order: f32 f16 bf16 q8_0
//     q4_0 q4_1 q3_k q2_k mixed. all_weight_formats() lists the storage formats in the order of
//     the WeightFormat enum.
//   - Block geometry is GGUF's for q8_0/q4_0/q4_1/q2_k/q3_k (docs/FORMATS.md has every layout byte
//     by byte); the float formats have block size 1.
//   - Everything here is constexpr data or a pure function: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace am::jobs {

// How one weight tensor is stored. The enumerator order is an internal detail (it is not
// persisted anywhere; the names are).
enum class WeightFormat : uint8_t { kF32, kQ8_0, kF16, kBF16, kQ4_0, kQ4_1, kQ2_K, kQ3_K };

// A job's precision: a format for all weights, or the mixed per-role policy.
// kExternal is the label of an external command job whose precision is none of ours
// (jobs/command_spec.h). It is not in all_precisions() and parse_precision() never returns it:
// no backend supports it and no plan may ask for it outside [[commands]].
enum class Precision : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ3_K, kQ2_K, kMixed, kExternal };

// Where a weight tensor sits in a model; the mixed policy is defined over these.
enum class TensorRole { kAttention, kFeedForward, kEmbedding, kOutput, kOther };

enum class FormatKind {
  kFloat,           // f32, f16, bf16: one value per weight
  kBlockQuantized,  // integer quants with per-block scales
  kPolicy,          // a per-role choice of formats (mixed)
};

struct WeightFormatInfo {
  WeightFormat format;
  std::string_view name;     // "q4_0"
  FormatKind kind;           // kFloat or kBlockQuantized
  int64_t block_size;        // weights per block: 1, 32 or 256
  std::size_t block_bytes;   // stored bytes per block, scales included
};

struct PrecisionInfo {
  Precision precision;
  std::string_view name;     // "q4_0", "mixed"
  FormatKind kind;
  // The one format of every tensor; nullopt for the mixed policy (use format_for_role()).
  std::optional<WeightFormat> format;
  // The column group hardware compatibility reports file it under: "32-bit", "16-bit",
  // "8-bit", "4-bit", "4-bit mixed", "3-bit", "2-bit".
  std::string_view group;
};

std::span<const PrecisionInfo> all_precisions();
std::span<const WeightFormatInfo> all_weight_formats();

const PrecisionInfo& precision_info(Precision p);
const WeightFormatInfo& weight_format_info(WeightFormat f);

std::string_view to_string(Precision p);
std::string_view to_string(WeightFormat f);
std::string_view to_string(TensorRole r);     // "attention", "feed-forward", ...
std::optional<Precision> parse_precision(std::string_view name);
// parse_precision(), plus "external" (Precision::kExternal): for stored and received specs,
// where a command job's label may appear.
std::optional<Precision> parse_precision_label(std::string_view name);
std::optional<WeightFormat> parse_weight_format(std::string_view name);

// The precision that stores every tensor in `f` (f32 -> Precision::kF32, ...).
Precision precision_of(WeightFormat f);

// The format a tensor of `role` is stored in at precision `p`. For mixed: attention, embedding,
// output and other tensors q8_0, feed-forward tensors q4_0. Every other precision gives its one
// format to every role.
WeightFormat format_for_role(Precision p, TensorRole role);

// Every role, for callers that must check each format a precision can produce.
std::span<const TensorRole> all_tensor_roles();

// The distinct formats precision `p` stores weights in (one for all but mixed).
std::vector<WeightFormat> formats_of(Precision p);

// Stored bits per weight for rows that fill whole blocks, scales included (4.5 for q4_0).
double bits_per_weight(WeightFormat f);
// Stored bytes of one row of k weights in `f`, the last block zero-padded.
std::size_t row_bytes(WeightFormat f, int64_t k);

// "f32, f16, ..., mixed" — for "expected one of ..." messages.
std::string precision_names();

// The names, for streams (test failure messages, diagnostics).
std::ostream& operator<<(std::ostream& out, Precision p);
std::ostream& operator<<(std::ostream& out, WeightFormat f);

}  // namespace am::jobs
