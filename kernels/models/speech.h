// The speech family: Whisper (log-mel encoder-decoder) and Wav2Vec2 (raw-audio encoder).
//
// Config keys (InvalidArgument naming the key on any problem):
//   style  "whisper" (default) | "wav2vec2"
//   Whisper: layers (encoder), decoder_layers (default layers), hidden, heads, intermediate,
//     vocab, n_mels (80), max_source_positions (1500), max_target_positions (448),
//     activation ("gelu"), norm_eps (1e-5), decode_steps (8).
//     Input: seeded log-mel features [batch, 2*seq_len frames, n_mels] (stored channels-last);
//     conv1d(k3, pad 1) + GELU, conv1d(k3, stride 2, pad 1) + GELU -> seq_len encoder positions,
//     sinusoidal positions, pre-LN encoder; decoder: a 4-token prompt (Whisper's start-of-
//     transcript sequence, seeded ids) then decode_steps teacher-forced steps with self- and
//     cross-attention caches. Output = logits [batch * (decode_steps + 1), vocab].
//   Wav2Vec2: layers, hidden, heads, intermediate, conv_dim (512), conv_kernel
//     ([10,3,3,3,3,2,2]), conv_stride ([5,2,2,2,2,2,2]), feat_extract_norm ("group": GroupNorm
//     in the first conv layer, as wav2vec2-base | "layer": LayerNorm after every conv),
//     pos_conv_kernel (128), pos_conv_groups (16), activation ("gelu"), norm_eps (1e-5),
//     conv_bias (false; true for the "layer" variants).
//     Input: seeded normalised audio with exactly the samples that give seq_len frames;
//     output = final hidden states [batch * seq_len, hidden].
// Convolution weights are drawn with He (fan-in) scaling; transformer weights N(0, 0.02).
// Checkpoints (weights_path): a Hugging Face WhisperForConditionalGeneration or Wav2Vec2Model /
// Wav2Vec2ForCTC checkpoint (names in speech.cpp, load_whisper and load_wav2vec2; the positional
// conv's weight normalisation is applied on load).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/models/model.h"

namespace am::kernels {

// Inputs given instead of the job's seeded ones (reference checks, tests/reference/). Whisper:
// log-mel features [batch * 2*seq_len frames, n_mels] channels-last, the 4-token prompt
// [batch*4] and the forced tokens [batch*decode_steps]. Wav2Vec2: features = the raw audio,
// batch * (the samples that give seq_len frames); prompt and forced unused.
struct SpeechInputs {
  std::vector<float> features;
  std::vector<int32_t> prompt, forced;
};
// The speech graph of `spec` over `given` inputs (null = seeded, as build_speech_graph()).
Result<std::unique_ptr<ModelGraph>> build_speech_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                          const ExecContext& ctx, const SpeechInputs* given);

}  // namespace am::kernels
