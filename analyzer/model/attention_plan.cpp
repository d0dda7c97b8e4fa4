#include "analyzer/model/attention_plan.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <c10/core/DeviceGuard.h>

namespace headscan {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kCpuCap = 8 * kMiB;
constexpr std::int64_t kGpuCap = 1024 * kMiB;
constexpr std::int64_t kFloor = kMiB;
constexpr std::int64_t kShareOfFree = 16;

// MemAvailable of /proc/meminfo: what the kernel can give without swapping.
std::int64_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::int64_t kilobytes = -1;
    fields >> kilobytes;
    return kilobytes < 0 ? -1 : kilobytes * 1024;
  }
  return -1;
}

// cuMemGetInfo of the driver API, through libcuda, which LibTorch has loaded once it uses a GPU (as
// device.cpp reads the GPU's name): it takes two size_t pointers, so no CUDA header is needed. It
// reports on the context current on this thread, which the device guard makes the GPU's primary one.
std::int64_t driver_free_memory(const c10::Device& device) {
  using MemGetInfo = int (*)(std::size_t*, std::size_t*);
  static const MemGetInfo get_info = [] {
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return driver == nullptr ? nullptr : reinterpret_cast<MemGetInfo>(dlsym(driver, "cuMemGetInfo_v2"));
  }();
  if (get_info == nullptr) return -1;
  const c10::DeviceGuard guard(device);
  std::size_t free = 0;
  std::size_t total = 0;
  if (get_info(&free, &total) != 0) return -1;
  return static_cast<std::int64_t>(free);
}

}  // namespace

std::int64_t free_memory_bytes(const c10::Device& device) {
  if (device.is_cpu()) return available_host_memory();
  if (!device.is_cuda()) return -1;
  const std::int64_t free = driver_free_memory(device);
  if (free < 0) return -1;
  // The caching allocator keeps freed blocks reserved: they are free for the next tensor too. Its
  // statistics know the GPUs once CUDA is initialized (device.cpp, peak_device_memory).
  at::globalContext().lazyInitDevice(device.type());
  const auto stats = at::accelerator::getDeviceStats(device.has_index() ? device.index() : 0);
  const auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const std::int64_t cached = stats.reserved_bytes[aggregate].current - stats.allocated_bytes[aggregate].current;
  return free + std::max<std::int64_t>(cached, 0);
}

std::int64_t attention_block_budget(const c10::Device& device) {
  const std::int64_t cap = device.is_cpu() ? kCpuCap : kGpuCap;
  const std::int64_t free = free_memory_bytes(device);
  if (free < 0) return cap;
  return std::max(kFloor, std::min(cap, free / kShareOfFree));
}

std::int64_t attention_block_rows(std::int64_t requested, std::int64_t rows_of_heads, std::int64_t length,
                                  std::int64_t keys, std::int64_t element_size, std::int64_t budget_bytes) {
  if (length <= 1) return std::max<std::int64_t>(length, 1);
  if (requested > 0) return std::min(requested, length);
  const std::int64_t row_bytes = std::max<std::int64_t>(rows_of_heads, 1) * std::max<std::int64_t>(keys, 1) *
                                 std::max<std::int64_t>(element_size, 4);
  const std::int64_t fitting = std::max<std::int64_t>(budget_bytes / row_bytes, 1);
  if (fitting >= length) return length;
  const std::int64_t blocks = (length + fitting - 1) / fitting;
  return (length + blocks - 1) / blocks;
}

}  // namespace headscan
