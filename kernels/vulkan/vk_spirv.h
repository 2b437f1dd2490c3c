// The SPIR-V of every shader in kernels/vulkan/shaders/, compiled by glslc at build time and
// embedded by cmake/embed_spirv.cmake (the generated vk_spirv_blobs.cpp defines these).
//
// Contract: find_spirv(name) is the words of the shader variant `name` (the .comp file's stem,
// plus a suffix for variants compiled with other defines, as listed in kernels/CMakeLists.txt),
// or an empty span when no such shader was built. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace am::kernels::vulkan {

std::span<const uint32_t> find_spirv(std::string_view name);

}  // namespace am::kernels::vulkan
