#include "analyzer/run/sequences/batch_tensors.h"

#include <algorithm>
#include <limits>

#include <torch/torch.h>

namespace headscan {

BatchTensors to_tensors(const std::vector<Sequence>& batch, std::int64_t pad_id, const at::Tensor& idf_table,
                        const c10::Device& device, std::int64_t min_length) {
  std::size_t length = static_cast<std::size_t>(std::max<std::int64_t>(min_length, 0));
  for (const auto& sequence : batch) length = std::max(length, sequence.ids.size());
  const auto rows = static_cast<std::int64_t>(batch.size());
  const auto columns = static_cast<std::int64_t>(length);
  BatchTensors tensors;
  tensors.ids = torch::full({rows, columns}, pad_id, torch::kInt64);
  tensors.valid = torch::zeros({rows, columns}, torch::kBool);
  tensors.queries = torch::zeros({rows, columns}, torch::kBool);
  tensors.special = torch::zeros({rows, columns}, torch::kBool);
  auto ids = tensors.ids.accessor<std::int64_t, 2>();
  auto valid = tensors.valid.accessor<bool, 2>();
  auto queries = tensors.queries.accessor<bool, 2>();
  auto special = tensors.special.accessor<bool, 2>();
  for (std::int64_t b = 0; b < rows; ++b) {
    const Sequence& sequence = batch[b];
    for (std::size_t t = 0; t < sequence.ids.size(); ++t) {
      ids[b][t] = sequence.ids[t];
      valid[b][t] = true;
      queries[b][t] = t + sequence.suffix_length < sequence.ids.size();
      special[b][t] = sequence.special[t] != 0;
    }
  }
  tensors.mask = tensors.valid.to(torch::kInt64);
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  if (idf_table.defined()) {
    const at::Tensor in_table = tensors.ids.clamp(0, idf_table.size(0) - 1);
    tensors.idf = idf_table.index_select(0, in_table.flatten()).view({rows, columns});
    tensors.idf.masked_fill_(~tensors.valid | tensors.special | (tensors.ids >= idf_table.size(0)), minus_infinity);
  } else {
    tensors.idf = torch::full({rows, columns}, minus_infinity, torch::kFloat);
  }
  if (!device.is_cpu()) {
    for (at::Tensor* tensor : {&tensors.ids, &tensors.valid, &tensors.queries, &tensors.special, &tensors.mask, &tensors.idf}) {
      *tensor = tensor->to(device);
    }
  }
  return tensors;
}

}  // namespace headscan
