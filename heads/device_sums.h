#pragma once
// Sums a batch's statistics computed on the attention's device, brought to the host together:
// one copy per batch instead of one synchronization per layer and statistic, which on a GPU would
// stall the model's forward at every layer. Each pending tensor is small ([H] sums and a count,
// per layer and statistic); what receives it on the host adds it to exact, mergeable totals.
//
// Receivers run in the order their tensors were added; a receiver may throw (an InputError about
// the attention, say), and the rest of the batch is then dropped.

#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

namespace headscan {

class DeviceSums {
 public:
  // values: 1-D, any device and numeric dtype; its values, as doubles, go to `receive` at flush().
  using Receiver = std::function<void(const double* values, std::int64_t count)>;
  void add(const at::Tensor& values, Receiver receive);

  // Brings every pending tensor to the host in one copy and hands each its values, in order.
  void flush();
  // Drops what is pending (a batch that failed).
  void clear();
  bool empty() const { return pending_.empty(); }

 private:
  std::vector<at::Tensor> pending_;
  std::vector<Receiver> receivers_;
};

// Adds `values` to `sums` when given, else hands them to `receive` at once: classifiers fed
// outside a ClassifierSet (tests, benchmarks) see their statistics without a flush.
void add_or_receive(DeviceSums* sums, const at::Tensor& values, DeviceSums::Receiver receive);

}  // namespace headscan
