// One Vulkan compute device made ready to run the backend's shaders: instance, logical device,
// one compute queue, device buffers, a pipeline cache, and one command buffer that records
// dispatches until submit().
//
// Contract:
//   - list_vulkan_devices(): every physical device the loader reports, with what the backend's
//     supports() and the bench depend on. Unsupported "no Vulkan device found: <why>" without a
//     loader, an instance or a device (VK_ICD_FILENAMES=/nonexistent/x.json gives that).
//   - select_vulkan_device(): ACCELMATRIX_VULKAN_DEVICE=<index> (as listed; malformed or out of
//     range is InvalidArgument naming it), else the first discrete GPU, else the first
//     integrated GPU, else the first device (lavapipe is VK_PHYSICAL_DEVICE_TYPE_CPU: software).
//   - Buffers: create_buffer(bytes) is device-local memory (on lavapipe and other unified-memory
//     devices it is host-visible too and transfers are a memcpy); staging buffers are
//     host-visible and coherent. A buffer above maxStorageBufferRange is Unsupported naming the
//     limit (a shader could not address it).
//   - Recording: dispatch()/copy() append to the current command buffer with a full
//     compute/transfer barrier after each command, so commands run in the order recorded.
//     submit() runs everything recorded and waits; upload()/download() submit pending work
//     first, so host reads see every earlier dispatch. submit_timed() returns the recorded
//     work's device time: timestamp queries when the queue has them, else the wall clock
//     around the fence wait (timing() says which).
//   - pipeline(name, bindings, spec): one VkPipeline per (shader, specialization constants),
//     built on first use and cached for the device's lifetime. Shader `name` is a SPIR-V blob
//     embedded at build time (vk_spirv.h); constant_id i gets spec[i]; every shader takes
//     `bindings` storage buffers at set 0, bindings 0.., and up to kPushConstantBytes of push
//     constants.
//   - Single-threaded; the destructor waits for the device to go idle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/device_profile.h"
#include "kernels/vulkan/vk_api.h"
#include "kernels/vulkan/vk_handles.h"

namespace am::kernels::vulkan {

inline constexpr const char* kVulkanDeviceEnv = "ACCELMATRIX_VULKAN_DEVICE";
// Set (and not "0"): every device uses the portable shaders only (no integer dot products), as
// VulkanDeviceOptions::portable_shaders does; CI runs that path on lavapipe too.
inline constexpr const char* kVulkanPortableEnv = "ACCELMATRIX_VULKAN_PORTABLE";
// Vulkan guarantees 128 bytes of push constants on every device.
inline constexpr uint32_t kPushConstantBytes = 128;
// Descriptor sets per pool before the recorded work is flushed and the pool reset.
inline constexpr uint32_t kDescriptorSetsPerPool = 1024;
inline constexpr uint32_t kMaxBindings = 8;
// host_input() copies at most this many bytes (larger inputs go through upload()); after
// kHostInputsPerSubmit buffers handed out the recorded work is submitted.
inline constexpr std::size_t kHostInputMaxBytes = std::size_t{4} << 20;
inline constexpr std::size_t kHostInputsPerSubmit = 512;
// host_input() buffers are at least this many bytes (powers of two), and a free one serves an
// input of up to kHostInputReuseFactor times less than its size.
inline constexpr std::size_t kHostInputMinBytes = 256;
inline constexpr std::size_t kHostInputReuseFactor = 4;
// Host<->device copies of non-mappable buffers go through a staging buffer of at most this size.
inline constexpr std::size_t kStagingChunkBytes = std::size_t{64} << 20;

struct VulkanDeviceInfo {
  int index = 0;
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t vendor_id = 0;
  uint32_t api_version = 0;
  std::string driver;            // "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"
  bool software = false;         // a CPU renderer (lavapipe, SwiftShader)
  bool fp16 = false;             // shaderFloat16
  bool int8 = false;             // shaderInt8
  bool int_dot = false;          // shaderIntegerDotProduct (VK_KHR_shader_integer_dot_product)
  // VK_NV_cooperative_matrix lists 16x16x16 f16 x f16 + f32 at subgroup scope, subgroups are 32
  // wide and shared memory holds gemm_coopmat.comp's tiles: the f16 GEMM runs on matrix units.
  bool coopmat_f16 = false;
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // compute-stage subgroupAdd & co.
  uint32_t timestamp_valid_bits = 0;  // of the compute queue family chosen
  float timestamp_period_ns = 0.0f;
  uint32_t max_shared_bytes = 0;
  uint32_t max_workgroup_invocations = 0;
  uint64_t max_storage_buffer_range = 0;
  uint32_t queue_family = 0;

  // "llvmpipe (LLVM 15.0.6, 256 bits) [vulkan:0, cpu]"
  std::string label() const;
  const char* type_name() const;
};

Result<std::vector<VulkanDeviceInfo>> list_vulkan_devices();
// True when kVulkanPortableEnv asks for the portable shaders.
bool portable_shaders_forced();
Result<VulkanDeviceInfo> select_vulkan_device();

// A VkBuffer with its own memory. `mapped` is non-null when the memory is host-visible.
struct Buffer {
  BufferHandle buffer;
  MemoryHandle memory;
  void* mapped = nullptr;
  std::size_t bytes = 0;
  VkBuffer get() const { return buffer.get(); }
  explicit operator bool() const { return static_cast<bool>(buffer); }
};

struct Pipeline {
  ShaderModuleHandle module;
  DescriptorSetLayoutHandle set_layout;
  PipelineLayoutHandle layout;
  PipelineHandle pipeline;
  uint32_t bindings = 0;
  std::string name;
};

enum class Timing { kTimestamps, kWallClock };

struct VulkanDeviceOptions {
  // Never map device buffers, even where their memory is host-visible (lavapipe, integrated
  // GPUs, resizable BAR): every transfer then goes through the staging buffer and
  // vkCmdCopyBuffer, the path of a discrete GPU's VRAM. The tests turn it on to check that path
  // on lavapipe.
  bool staging_transfers = false;
  // Portable shaders only: no integer dot products even where the device has them (the tests
  // check both paths on the same device).
  bool portable_shaders = false;
  // Device time per command (device_profile.h), where the queue has timestamps: a timestamp
  // after every dispatch, copy and fill, read back at each submit. Also on when
  // ACCELMATRIX_DEVICE_PROFILE is set.
  bool profile = false;
};

class VulkanDevice {
 public:
  static Result<std::unique_ptr<VulkanDevice>> create(const VulkanDeviceInfo& info,
                                                      const VulkanDeviceOptions& options = {});
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  const VulkanDeviceInfo& info() const { return info_; }
  Timing timing() const { return timestamps_ ? Timing::kTimestamps : Timing::kWallClock; }

  Result<Buffer> create_buffer(std::size_t bytes);
  Result<Buffer> create_staging(std::size_t bytes);
  Status upload(const Buffer& dst, const void* src, std::size_t bytes, std::size_t offset = 0);
  // A host-visible buffer holding a copy of `src` (at most kHostInputMaxBytes) for the commands
  // recorded next: unlike upload() nothing waits, since no recorded command uses the buffer
  // handed out. For an op's small host inputs (ids, masks, positions, rope tables). Handed-out
  // buffers stay valid (and unused by later calls) until recycle_host_inputs().
  Result<const Buffer*> host_input(const void* src, std::size_t bytes);
  // Makes the handed-out host-input buffers reusable. Call only between ops (no pointer from
  // host_input() still held) and when nothing is pending(): the work that read them is done.
  void recycle_host_inputs();
  Status download(const Buffer& src, void* dst, std::size_t bytes, std::size_t offset = 0);

  Result<const Pipeline*> pipeline(const std::string& name, uint32_t bindings,
                                   std::span<const int32_t> spec = {});

  // Records one dispatch. `buffers` bind to bindings 0.. in order (as many as the pipeline
  // has); `push` (push_bytes <= kPushConstantBytes) is the shader's push-constant block.
  Status dispatch(const Pipeline& p, std::initializer_list<VkBuffer> buffers, const void* push,
                  uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  Status copy(VkBuffer src, VkBuffer dst, std::size_t bytes, std::size_t src_offset = 0,
              std::size_t dst_offset = 0);
  // Records zeroing of dst's first `bytes` (a multiple of 4).
  Status fill_zero(VkBuffer dst, std::size_t bytes);
  // Commands are recorded and not yet submitted (after submit() or a transfer, false: every
  // buffer used so far is free to reuse or destroy).
  bool pending() const { return recording_; }
  Status submit();
  // Seconds the recorded work took on the device (see the contract for the clock).
  Result<double> submit_timed();
  // Submits what is recorded and waits until the device has finished everything: call before
  // freeing buffers that submitted work may still use. After a failed submit or fence wait
  // (timeout, device lost) the device is unusable: this and every later call return that error.
  Status wait_idle();

  // Off: dispatch()/copy() record no barrier after the command, so independent commands may
  // overlap (the bench's back-to-back matrix-vector products). The caller guarantees that no
  // command reads or writes what another one of the same batch writes. On by default.
  void set_barriers(bool on) { barriers_ = on; }

  // The largest group count in one dimension (maxComputeWorkGroupCount[0]).
  uint32_t max_groups_x() const { return max_groups_x_; }
  // Integer dot products are enabled: the *_dot shader variants may be used.
  bool int_dot() const { return int_dot_; }
  // Cooperative matrices are enabled: f16 GEMMs use gemm_coopmat.comp.
  bool coopmat_f16() const { return coopmat_f16_; }
  // Profiling is on (VulkanDeviceOptions::profile and the queue has timestamps).
  bool profiling() const { return profiling_; }
  // Device time per shader ("copy", "fill" for transfers) of the work submitted since the last
  // take (device_profile.h). Empty when profiling is off.
  std::vector<DeviceKernelTime> take_profile() { return profile_.take(); }

 private:
  VulkanDevice() = default;
  Status begin_if_needed();
  // Records `st` as the device's permanent failure when it is an error (see wait_idle()).
  Status fail_on_error(Status st);
  // kDevice: device-local (shader operands); kStaging: host-cached, mapped (transfers);
  // kHostInput: mapped memory the shaders read directly — device-local host-visible memory (a
  // PCIe BAR) where the device has it, so each invocation's read stays on the device, else
  // plain host-visible memory.
  enum class BufferUse { kDevice, kStaging, kHostInput };
  Result<Buffer> make_buffer(std::size_t bytes, BufferUse use);
  Result<VkDescriptorSet> allocate_set(const Pipeline& p);
  Result<Buffer*> staging(std::size_t bytes);
  void barrier();
  // Profiling: makes room for one more command's timestamp (submits when the slots are full);
  // then, after the command is recorded, writes its timestamp.
  Status reserve_profile_slot();
  void note_command(const std::string& name);
  Status read_profile();

  VulkanDeviceInfo info_;
  VulkanDeviceOptions options_;
  bool int_dot_ = false;
  bool coopmat_f16_ = false;
  std::shared_ptr<const VulkanLoader> loader_;
  InstanceFns ifn_{};
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  // Declaration order is destruction order in reverse: the instance and device outlive every
  // object below them.
  InstanceHandle instance_;
  LogicalDeviceHandle device_;
  DeviceFns fn{};
  VkQueue queue_ = VK_NULL_HANDLE;
  CommandPoolHandle command_pool_;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  FenceHandle fence_;
  DescriptorPoolHandle descriptor_pool_;
  QueryPoolHandle query_pool_;
  bool timestamps_ = false;
  bool profiling_ = false;
  std::vector<const std::string*> profiled_;  // the recorded commands' names, in order
  DeviceProfile profile_;
  bool recording_ = false;
  Status failed_ = Status::Ok();   // the first error after which the queue state is unknown
  bool barriers_ = true;
  uint32_t recorded_ = 0;
  uint32_t max_groups_x_ = 65535;
  Buffer staging_;
  // host_input() buffers: free ones, and those handed out since the last submit.
  std::vector<Buffer> inputs_free_;
  std::deque<Buffer> inputs_used_;  // a deque: handed-out pointers stay valid as it grows
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace am::kernels::vulkan
