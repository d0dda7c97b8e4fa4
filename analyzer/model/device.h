#pragma once
// Where a run computes (--device): the model, its batches, the attention capture, every statistic
// and the causal passes run on one device, and only per-head sums leave it (DESIGN.md, "Scale").

#include <cstdint>
#include <exception>
#include <string>

#include <c10/core/Device.h>

namespace headscan {

// "auto" (the first GPU LibTorch sees, else the CPU), "cpu", "cuda" (the first GPU) or "cuda:N".
// Throws InputError for another name, for a GPU on a machine where LibTorch sees none (or was
// built without CUDA), and for a GPU index beyond those it sees.
c10::Device resolve_device(const std::string& name);

// For heads.json: the GPU's name ("NVIDIA H100 80GB HBM3"), or the CPU's model name.
std::string device_name(const c10::Device& device);

// The most bytes LibTorch's caching allocator held on a GPU since the last reset; -1 on the CPU.
std::int64_t peak_device_memory(const c10::Device& device);
void reset_peak_device_memory(const c10::Device& device);

// The most bytes of memory this process has held resident so far (VmHWM of /proc/self/status; -1
// where there is none): the host's peak, which on the CPU includes every tensor of the run.
std::int64_t peak_host_memory();

// Whether a message says an allocation failed.
bool names_out_of_memory(const std::string& what);
// Whether `error` is an allocation failure (LibTorch's OutOfMemoryError, std::bad_alloc, or a
// message that says so, as the TorchScript interpreter rewraps them).
bool is_out_of_memory(const std::exception& error);

}  // namespace headscan
