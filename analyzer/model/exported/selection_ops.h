#pragma once
// Operators of headscan's for the parts of a model's computation that torch.export cannot keep
// length-dynamic in Python, computed here as the model computes them.
//
//   headscan::index_topk(Tensor scores, int topk) -> Tensor
//     DeepSeek-V3.2's indexer selection (headscan/_export/deepseek.py): transformers'
//     scores.topk(min(topk, keys), dim=-1).indices for scores [..., keys], as int64 [..., topk]:
//     with fewer than topk keys every key is selected, and the columns beyond them are key 0
//     again (the model scatters the selection into a mask, where a key given twice is the same).

namespace headscan {

// Called by the exported-program loader so that the linker keeps the operators' registration.
void link_selection_ops();

}  // namespace headscan
