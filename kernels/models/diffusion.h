// The diffusion family: a Stable-Diffusion-style UNet denoiser run for `steps` DDIM steps on a
// seeded latent.
//
// Keys: sample_size (latent side), in_channels, out_channels, block_channels (array, one per
// level; SD: [320, 640, 1280, 1280]), layers_per_block, attention_levels (how many leading
// levels carry spatial transformers; SD: 3), attention_heads, cross_attention_dim, text_len
// (length of the text-encoder states), norm_groups, norm_eps (default 1e-5), steps,
// train_timesteps (default 1000), beta_start / beta_end (default 0.00085 / 0.012, SD's
// scaled-linear schedule), guidance_scale (optional, 0-100; SD's pipelines use 7.5).
// Structure (diffusers' UNet2DConditionModel): sinusoidal timestep embedding -> linear, SiLU,
// linear; conv_in; down levels of ResNet blocks (GroupNorm, SiLU, conv3x3, + projected time
// embedding, GroupNorm, SiLU, conv3x3, 1x1 shortcut when widths differ) with spatial
// transformers (GroupNorm, proj_in, LayerNorm + self-attention, LayerNorm + cross-attention to
// the text states, LayerNorm + GEGLU feed-forward, proj_out, residual) and stride-2 conv
// downsampling; a mid block (ResNet, transformer, ResNet); up levels consuming the skip
// connections (channel concatenation) with nearest-neighbour 2x upsampling + conv3x3; GroupNorm,
// SiLU, conv_out (the spatial transformers' GroupNorm uses eps 1e-6, as Transformer2DModel
// builds it). With guidance_scale g, every step is classifier-free guided: one UNet pass
// over a doubled batch, unconditional text states (seeded; SD: the empty prompt's encoding) for
// the first half and the conditional ones for the second, then eps = eps_u + g (eps_c - eps_u).
// Without the key, one conditional pass per step. The scheduler is diffusers' DDIMScheduler
// (eta = 0, epsilon prediction, no sample clipping, "leading" timestep spacing) with steps_offset
// (default 0; SD's scheduler config: 1) and set_alpha_to_one (default true; SD: false, so the
// last step's previous alpha is alphas_cumprod[0]); the update is scalar arithmetic on the host
// between UNet passes.
// weights_path: a diffusers UNet2DConditionModel checkpoint (names in diffusion.cpp, UnetReader):
// the .safetensors file, or the unet/ directory, whose config.json then sets the UNet's keys
// (hf_config.h); the sampling settings stay the plan's.
// Input: `batch` seeded N(0,1) latents and seeded N(0,1) text states. Output: the final latent
// [batch*sample_size^2, out_channels], logits=false.
#pragma once

#include <vector>

#include "kernels/models/model.h"

namespace am::kernels {

Result<std::unique_ptr<ModelGraph>> build_diffusion_graph(const jobs::JobSpec& spec, Precision precision,
                                                          const ExecContext& ctx);

// Inputs given instead of the seeded ones (reference checks): the initial latent
// [batch*sample_size^2, in_channels] channels-last, the text-encoder states [batch*text_len,
// cross_attention_dim], and with guidance the unconditional states of the same shape.
struct DiffusionInputs {
  std::vector<float> latent, text, uncond_text;
};
Result<std::unique_ptr<ModelGraph>> build_diffusion_graph_on(const jobs::JobSpec& spec, Precision precision,
                                                             const ExecContext& ctx, const DiffusionInputs* given);

}  // namespace am::kernels
