#pragma once
// A batch of sequences as the tensors the model and the classifiers take.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analyzer/run/sequences/sequences.h"

namespace headscan {

struct BatchTensors {
  at::Tensor ids;      // [B, T] int64, right-padded with pad_id
  at::Tensor valid;    // [B, T] bool: false on padding
  at::Tensor queries;  // [B, T] bool: rows that count as queries: valid and not the template's suffix
  at::Tensor special;  // [B, T] bool
  at::Tensor mask;     // [B, T] int64: 1 on real tokens (the model's attention_mask)
  at::Tensor idf;      // [B, T] float: idf of each token, -inf on special tokens and padding
};

// Right-pads to the longest sequence, and to `min_length` columns when the batch is shorter (a
// model that takes no shorter input: ModelMetadata::min_length). Padding is never attended by real tokens: either the model
// takes an attention mask, or it is causal and padding comes after every real token.
// `idf_table` is [V] float (undefined: every idf is -inf). The tensors are made on the host and
// moved to `device`, where the model and the statistics run.
BatchTensors to_tensors(const std::vector<Sequence>& batch, std::int64_t pad_id, const at::Tensor& idf_table,
                        const c10::Device& device = c10::Device(c10::kCPU), std::int64_t min_length = 0);

}  // namespace headscan
