// The encoder-only family as a ModelGraph: BERT over seeded token ids, output = final hidden
// states per token.
#include <memory>
#include <optional>
#include <string>

#include "kernels/models/encoder_only.h"
#include "kernels/models/families.h"
#include "kernels/models/encoder_only_checkpoint.h"

namespace am::kernels {
namespace {

class EncoderOnlyGraph final : public ModelGraph {
 public:
  EncoderOnlyGraph(EncoderModel model, EncoderInput input)
      : model_(std::move(model)), input_(std::move(input)) {}

  std::vector<std::pair<Op, WeightFormat>> required_ops() const override { return model_.required_ops(); }
  std::size_t weights_bytes() const override { return model_.weights_bytes(); }
  int64_t samples_per_run() const override { return input_.batch; }
  int64_t tokens_per_run() const override { return input_.batch * input_.seq; }

  Result<GraphOutput> forward(Backend& be) const override {
    AM_ASSIGN_OR_RETURN(Tensor hidden, model_.forward_resident(input_, be));
    hidden.reshape(Shape{input_.batch * input_.seq, model_.config().hidden});
    GraphOutput out;
    out.output = std::move(hidden);
    return out;
  }

 private:
  EncoderModel model_;
  EncoderInput input_;
};

}  // namespace

Result<std::unique_ptr<ModelGraph>> build_encoder_only_graph(const jobs::JobSpec& spec,
                                                             Precision precision,
                                                             const ExecContext& ctx) {
  AM_ASSIGN_OR_RETURN(EncoderConfig config, encoder_config_from_json(spec.model_config));
  const FormatPlan format = format_plan_for(precision);
  EncoderInput input = make_synthetic_encoder_input(config, spec.batch, spec.seq_len, spec.seed);
  AM_RETURN_IF_ERROR(validate_encoder_input(config, input));
  // model_config "weights_path" names a BERT safetensors checkpoint; without it, seeded weights.
  AM_ASSIGN_OR_RETURN(std::optional<std::string> checkpoint, checkpoint_path_from(spec.model_config, "encoder-only"));
  AM_ASSIGN_OR_RETURN(EncoderModel model, checkpoint ? load_bert_checkpoint(*checkpoint, config, format, ctx)
                                                     : EncoderModel::create_synthetic(config, format, spec.seed, ctx));
  return std::unique_ptr<ModelGraph>(std::make_unique<EncoderOnlyGraph>(std::move(model), std::move(input)));
}

}  // namespace am::kernels
