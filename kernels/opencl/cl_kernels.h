// The OpenCL C source of every kernel the OpenCL backend launches, and the constants shared
// between that source and the host code that sizes its launches.
//
// Contract: opencl_kernel_source() is OpenCL C 1.2 (no half arithmetic, no subgroups, no
// extensions), compiled at run time with the -D options from kernel_build_options(). Kernel
// names and argument orders are documented beside each kernel in cl_kernels.cpp and are the
// backend's private business.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace am::kernels::opencl {

// Work-group sizes picked per device (each a power of two no larger than the device allows).
struct KernelConfig {
  int matmul_group = 64;  // work-items per matmul work-group (along output columns)
  int row_group = 64;     // work-items per row for layer/RMS norm and softmax
  int attention_group = 64;  // work-items per (sample, head, query) in attention
  bool correctly_rounded_divide = false;  // device supports -cl-fp32-correctly-rounded-divide-sqrt
  // Float-weight matmuls (f32/f16/bf16) with one output column per work-item (CPU devices:
  // kernels/opencl/cl_kernels.cpp, FLOAT_MATMUL_COLUMN) instead of four (GPUs).
  bool column_matmul = false;
};

// Rows of x each matmul work-item computes (reusing each weight it loads that many times); the
// "_r1" kernels compute one, for decode steps and other inputs with fewer rows.
inline constexpr int kMatmulRows = 4;
// Output columns per matmul work-item (a 4-wide vector); weights are padded to a multiple.
inline constexpr int kMatmulColumns = 4;
// Keys scored per pass of the attention kernel (its local scratch holds this many floats).
inline constexpr int kAttentionChunk = 256;
// The block size of q8_0 and q4_0 (GGUF's QK8_0 / QK4_0).
inline constexpr int kQuantBlock = 32;
// The super-block of q2_k / q3_k and of their q8 activations (GGUF's QK_K), and the values per
// int sum of those activations (the bsum of the q2_k min term).
inline constexpr int kKQuantBlock = 256;
inline constexpr int kKQuantSumGroup = 16;
// States each selective_scan work-item keeps in registers: state_size may be up to this many
// times the row work-group.
inline constexpr int kScanStatesPerItem = 4;

std::string_view opencl_kernel_source();
// The kernels of the ops beyond the BERT encoder's (rope, routing, pooling, matmul_nt), in a
// second source string of the same program.
std::string_view opencl_sequence_kernel_source();
// The kernels of the vision, speech, diffusion and state-space ops (conv1d, conv2d, group_norm,
// pool2d, selective_scan, time_mix) and the k-quant matmuls, a third source string.
std::string_view opencl_spatial_kernel_source();
std::string kernel_build_options(const KernelConfig& config);
KernelConfig kernel_config_for(std::size_t max_work_group_size, bool correctly_rounded_divide, bool column_matmul);

}  // namespace am::kernels::opencl
