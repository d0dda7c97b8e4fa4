#pragma once
// Word-level attention (Clark et al. 2019, §4.1) and its argmax, the syntactic classifier's core.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace headscan {

// The word each of a batch's query words attends to most, over one layer's row blocks [B, H, Q, T]
// (heads/row_block.h). Words are SequenceWords' local words: the words of a multiword token, which
// share their tokens, are one. Attention to a word is the sum over its tokens' columns, attention
// from a word the sum over its tokens' rows (the mean's divisor is the same along a row, so the
// argmax is too); the argmax is over the other words of the same sequence, ties to the lowest index.
//
// Each row block is summed per row over each word's columns (a scatter-add over the keys,
// [B, H, q, W + 1] for q rows at a time, column W taking the tokens of no word) and the rows of each
// query word added up in row order. A query word is scored when the row of its last token has been
// seen, and dropped: between blocks only the partial sums of the query words begun and not ended
// are kept, [H, n, W + 1] for those few words, never the layer's [B, H, W, W]. Each sum's additions
// run in the same order whatever the blocks, on every device (no atomics), so the predictions are
// the same whatever Q.
class MostAttendedWords {
 public:
  // token_word: [B * T] row-major, each token's local word, `words` (the largest word count of the
  // batch) for tokens of no word; word_counts: [B]; queries: the query words, b * words + word.
  // The tensors are made once on `device`.
  MostAttendedWords(const std::vector<std::int64_t>& token_word, std::int64_t batch, std::int64_t length,
                    std::int64_t words, const std::vector<std::int64_t>& word_counts,
                    const std::vector<std::int64_t>& queries, const c10::Device& device);

  // One row block [B, H, Q, T] from row first_row. A layer's blocks come in row order from row 0;
  // a block from row 0 begins a layer.
  void observe(const at::Tensor& attention, std::int64_t first_row);
  // After a layer's last block (complete() true): [H, queries] int64, each query word's predicted word.
  bool complete() const { return predicted_.defined() && next_row_ == length_; }
  const at::Tensor& predicted() const { return predicted_; }
  // The query words whose row sums are held between blocks: those begun and not yet ended, and
  // any other words ending before the last of them.
  std::int64_t held_words() const { return open_.defined() ? open_.size(1) : 0; }

 private:
  void observe_rows(const at::Tensor& attention, std::int64_t first_row);

  std::int64_t batch_ = 0, length_ = 0, words_ = 0;
  // Query words in slots ordered by their last token's row: the words ended by a row are a prefix.
  std::vector<std::int64_t> slot_last_;   // per slot, its last token's row (-1: no token)
  std::vector<std::int64_t> opened_;      // per row t, the highest slot with a token at or before t (-1: none)
  at::Tensor token_word_;                 // [B, T] int64
  at::Tensor token_slot_;                 // [B, T] int64: the slot of the token's word, -1 for none
  at::Tensor slot_word_, slot_count_;     // [K] int64: the slot's word and its sequence's word count
  at::Tensor slot_query_;                 // [K] int64: the slot's index in the queries given
  // The layer so far: rows seen, slots scored, and the row sums of slots scored_ .. scored_ + n − 1.
  std::int64_t next_row_ = 0;
  std::int64_t scored_ = 0;
  at::Tensor open_;                       // [H, n, W + 1] float
  at::Tensor predicted_;                  // [H, K] int64, in the queries' order
};

// For each query word, the other word it attends to most, on the attention's device: the whole
// attention [B, H, T, T] as one block, every word a query word. token_word: [B, T] int64, the
// sequence's local word of each token, or `words` (the largest word count in the batch) for tokens
// that belong to no word; word_counts: [B] int64. Returns [B, H, words] int64; entries of query
// words a sequence does not have are meaningless.
at::Tensor predicted_words(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                           const at::Tensor& word_counts);

}  // namespace headscan
