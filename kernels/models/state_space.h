// The state-space family: Mamba (variant "mamba", the default) and RWKV-4 (variant "rwkv"),
// both recurrent language models run as a prefill over a seeded prompt (seq_len tokens) and then
// `decode_steps` teacher-forced decode steps, each carrying the recurrent state.
//
// Mamba keys: layers, hidden, intermediate (= expand * hidden), state_size, conv_kernel,
//   dt_rank, vocab, norm_eps (default 1e-5), decode_steps (default 8). Block: RMSNorm ->
//   in_proj (x and z halves) -> depthwise causal conv1d (carried window) -> SiLU -> x_proj
//   (dt, B, C) -> dt_proj -> selective_scan (softplus dt, A = -exp(A_log), D skip, carried state)
//   -> * SiLU(z) -> out_proj -> residual; final RMSNorm; LM head tied to the embedding.
// RWKV keys: layers, hidden, intermediate, vocab, norm_eps (default 1e-5), decode_steps.
//   Block: LayerNorm -> time-mix (token shift with learned mixes, K/V/R projections, WKV
//   recurrence (time_mix op), sigmoid(R) gate, output projection) -> residual; LayerNorm ->
//   channel-mix (token shift, squared ReLU key, sigmoid receptance) -> residual. Embedding
//   LayerNorm (ln0), final LayerNorm, untied head.
// Initialisation follows the reference implementations (Mamba: dt bias = softplus^-1 of
// dt ~ logU(1e-3, 1e-1), A_log = log(1..N), D = 1, out_proj scaled by 1/sqrt(layers); RWKV-4:
// the layer-dependent decay / bonus / mix schedules). Output: logits [batch*(steps+1), vocab]
// (row b*(steps+1)+t: sample b's t-th prediction), logits=true; PhaseTimes filled.
//
// Checkpoints: weights_path may name a Hugging Face MambaForCausalLM or RwkvForCausalLM (RWKV-4)
// safetensors file (names in state_space.cpp, MambaLm::load and RwkvLm::load).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_state_space_graph(const jobs::JobSpec& spec, Precision precision,
                                                            const ExecContext& ctx);
// The same graph over given tokens (prompt [batch*seq_len], forced [batch*decode_steps]; null =
// the job's seeded ones), for the reference checks (tests/reference/).
Result<std::unique_ptr<ModelGraph>> build_state_space_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                               const ExecContext& ctx,
                                                               const std::vector<int32_t>* prompt,
                                                               const std::vector<int32_t>* forced);

}  // namespace am::kernels
