#pragma once
// The row block a classifier's observe() receives (heads/classifier.h): one layer's attention
// [B, H, Q, T] for the queries first_row .. first_row + Q − 1 over all T keys. Positions stay
// absolute: the batch's per-position tensors [B, T] are read at the block's rows, and a key's
// index is its position.

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace headscan {

struct BatchContext;

struct RowBlock {
  std::int64_t first = 0;   // the block's first query
  std::int64_t rows = 0;    // Q
  std::int64_t length = 0;  // T: the keys, the sequence's positions
  std::int64_t end() const { return first + rows; }
  // The layer's last block: what accumulates over a layer's blocks is complete after it.
  bool last() const { return end() == length; }
};

// The block of `attention` [B, H, Q, T] from row `first_row`; throws when it is not a row block of
// a [T, T] attention (first_row < 0 or first_row + Q > T).
RowBlock row_block(const at::Tensor& attention, std::int64_t first_row);
RowBlock row_block(const at::Tensor& attention, const BatchContext& context);

// Queries `from` .. `to` − 1 of a per-position tensor [..., T] (its last dimension): [..., to − from].
at::Tensor positions(const at::Tensor& per_position, std::int64_t from, std::int64_t to);
// The block's queries of a per-position tensor [..., T]: [..., Q].
inline at::Tensor block_rows(const at::Tensor& per_position, const RowBlock& block) {
  return positions(per_position, block.first, block.end());
}

// A[i, i + offset] for the block's queries i whose key i + offset is a position (0 ≤ i + offset < T):
// `weights` [B, H, to − from] for the queries from .. to − 1 (none when to ≤ from).
struct OffsetWeights {
  at::Tensor weights;
  std::int64_t from = 0;
  std::int64_t to = 0;
  bool empty() const { return to <= from; }
};
OffsetWeights weights_at_offset(const at::Tensor& attention, const RowBlock& block, std::int64_t offset);

}  // namespace headscan
