#include "analyzer/model/device.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <new>

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr const char* kExpected = "expected auto, cpu, cuda or cuda:N (N: a GPU index from 0)";

int visible_gpus() {
  const at::CUDAHooksInterface& cuda = at::detail::getCUDAHooks();
  return cuda.isBuilt() && cuda.hasCUDA() ? cuda.getNumGPUs() : 0;
}

// Why no GPU can be used, for the message of --device cuda.
std::string no_gpu_reason() {
  if (!at::detail::getCUDAHooks().isBuilt()) {
    return "this headscan's LibTorch is built without CUDA (a CPU-only LibTorch); build headscan against a "
           "CUDA-enabled one, such as the default torch wheel of PyPI (README, \"LibTorch: versions and your own\")";
  }
  return "LibTorch sees no GPU on this machine (no NVIDIA driver, no device, or CUDA_VISIBLE_DEVICES hides them)";
}

// The driver API's name of GPU `index`, through libcuda, which LibTorch has loaded once it uses the
// GPU: cuDeviceGet and cuDeviceGetName take only ints and a char buffer, so no CUDA header is needed.
std::string gpu_name(int index) {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return "";
  using DeviceGet = int (*)(int*, int);
  using DeviceGetName = int (*)(char*, int, int);
  const auto get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
  const auto get_name = reinterpret_cast<DeviceGetName>(dlsym(driver, "cuDeviceGetName"));
  std::string name;
  int device = 0;
  char buffer[256] = {};
  if (get != nullptr && get_name != nullptr && get(&device, index) == 0 &&
      get_name(buffer, static_cast<int>(sizeof buffer), device) == 0) {
    name = buffer;
  }
  dlclose(driver);
  return name;
}

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "CPU";
}

}  // namespace

c10::Device resolve_device(const std::string& name) {
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (name == "auto") return visible_gpus() > 0 ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  int index = 0;
  if (name.rfind("cuda", 0) != 0) throw InputError(fmt::format("--device {}: {}", name, kExpected));
  if (name != "cuda") {
    const std::string number = name.substr(5);
    const bool digits = name[4] == ':' && !number.empty() && number.size() <= 4 &&
                        number.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) throw InputError(fmt::format("--device {}: {}", name, kExpected));
    index = std::stoi(number);
  }
  const int gpus = visible_gpus();
  if (gpus == 0) {
    throw InputError(fmt::format("--device {}: {}; run with --device cpu (or auto, which takes a GPU when there is one)",
                                 name, no_gpu_reason()));
  }
  if (index >= gpus) {
    throw InputError(fmt::format("--device {}: LibTorch sees {} GPU(s) on this machine, cuda:0 to cuda:{}; give one of "
                                 "them (CUDA_VISIBLE_DEVICES renumbers the GPUs it leaves visible from 0)",
                                 name, gpus, gpus - 1));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string device_name(const c10::Device& device) {
  if (device.is_cpu()) return cpu_name();
  std::string name = gpu_name(device.index() < 0 ? 0 : device.index());
  return name.empty() ? device.str() : name;
}

// The caching allocator learns how many GPUs there are when CUDA is initialized, on the first tensor
// placed on one; before that, its statistics reject every device index ("Invalid device argument").
namespace {
void initialize_accelerator(const c10::Device& device) { at::globalContext().lazyInitDevice(device.type()); }
}  // namespace

std::int64_t peak_device_memory(const c10::Device& device) {
  if (!device.is_cuda()) return -1;
  initialize_accelerator(device);
  const auto stats = at::accelerator::getDeviceStats(device.index());
  return stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
}

void reset_peak_device_memory(const c10::Device& device) {
  if (!device.is_cuda()) return;
  initialize_accelerator(device);
  at::accelerator::resetPeakStats(device.index());
}

std::int64_t peak_host_memory() {
  // VmHWM of /proc/self/status: this process's own peak. getrusage's ru_maxrss would carry the peak
  // of a parent that exec'd headscan (a Python process holding gigabytes) over the exec.
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    long long kilobytes = -1;
    if (std::sscanf(line.c_str() + 6, "%lld", &kilobytes) != 1 || kilobytes < 0) return -1;
    return static_cast<std::int64_t>(kilobytes) * 1024;
  }
  return -1;
}

bool names_out_of_memory(const std::string& what) {
  return what.find("not enough memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos ||
         what.find("out of memory") != std::string::npos;
}

bool is_out_of_memory(const std::exception& error) {
  return dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr ||
         dynamic_cast<const std::bad_alloc*>(&error) != nullptr || names_out_of_memory(error.what());
}

}  // namespace headscan
