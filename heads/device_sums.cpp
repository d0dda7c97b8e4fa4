#include "heads/device_sums.h"

#include <torch/torch.h>

namespace headscan {

void DeviceSums::add(const at::Tensor& values, Receiver receive) {
  TORCH_CHECK(values.dim() == 1, "pending sums must be 1-D, got ", values.sizes());
  pending_.push_back(values.to(at::kDouble));
  receivers_.push_back(std::move(receive));
}

void DeviceSums::flush() {
  if (pending_.empty()) return;
  std::vector<at::Tensor> pending = std::move(pending_);
  std::vector<Receiver> receivers = std::move(receivers_);
  clear();
  // One tensor on the device, one copy to the host: the only synchronization of the batch.
  const at::Tensor host = torch::cat(pending).to(torch::kCPU).contiguous();
  const double* values = host.data_ptr<double>();
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const std::int64_t count = pending[i].numel();
    receivers[i](values, count);
    values += count;
  }
}

void DeviceSums::clear() {
  pending_.clear();
  receivers_.clear();
}

void add_or_receive(DeviceSums* sums, const at::Tensor& values, DeviceSums::Receiver receive) {
  if (sums != nullptr) {
    sums->add(values, std::move(receive));
    return;
  }
  DeviceSums now;
  now.add(values, std::move(receive));
  now.flush();
}

}  // namespace headscan
