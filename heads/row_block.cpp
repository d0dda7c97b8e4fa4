#include "heads/row_block.h"

#include <algorithm>

#include <torch/torch.h>

#include "heads/classifier.h"

namespace headscan {

RowBlock row_block(const at::Tensor& attention, std::int64_t first_row) {
  TORCH_CHECK(attention.dim() == 4, "attention must be a row block [B,H,Q,T], got ", attention.sizes());
  const RowBlock block{first_row, attention.size(2), attention.size(3)};
  TORCH_CHECK(first_row >= 0 && block.end() <= block.length, "a row block [B,H,Q,T] of attention ", attention.sizes(),
              " from row ", first_row, " reaches past the last of its T = ", block.length, " rows");
  return block;
}

RowBlock row_block(const at::Tensor& attention, const BatchContext& context) {
  return row_block(attention, context.first_row);
}

at::Tensor positions(const at::Tensor& per_position, std::int64_t from, std::int64_t to) {
  return per_position.narrow(/*dim=*/-1, from, std::max<std::int64_t>(0, to - from));
}

OffsetWeights weights_at_offset(const at::Tensor& attention, const RowBlock& block, std::int64_t offset) {
  OffsetWeights found;
  found.from = std::max(block.first, -offset);
  found.to = std::min(block.end(), block.length - offset);
  if (found.empty()) return found;
  // Row k of the rows from `from` is query from + k, whose key from + k + offset lies on the
  // diagonal from + offset ≥ 0 of those rows; the diagonal holds all of them, since to + offset ≤ T.
  found.weights = attention.narrow(/*dim=*/2, found.from - block.first, found.to - found.from)
                      .diagonal(/*offset=*/found.from + offset, /*dim1=*/-2, /*dim2=*/-1);
  return found;
}

}  // namespace headscan
