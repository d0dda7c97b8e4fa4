#pragma once
// Word-level attention (Clark et al. 2019, §4.1) and its argmax, the syntactic classifier's core.

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace headscan {

struct SequenceWords;

// For each query word, the other word it attends to most, on the attention's device. Words are
// SequenceWords' local words: the words of a multiword token, which share their tokens, are one,
// so none of them is a candidate for another, and the lowest index stands for all. attention: [B, H, T, T];
// token_word: [B, T] int64, the sequence's local word of each token, or `words` (the largest word
// count in the batch) for tokens that belong to no word. Attention to a word is the sum over its
// tokens' columns, attention from a word the mean over its tokens' rows, both as products with the
// one-hot token → word matrix; the argmax is over the other words of the same sequence
// (`word_counts[b]` of them, [B] int64), ties to the lowest index.
// Returns [B, H, words] int64; entries of query words a sequence does not have are meaningless.
at::Tensor predicted_words(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                           const at::Tensor& word_counts);

// The same over row blocks (heads/row_block.h): word_attention() of each block [B, H, Q, T] from
// row first_row, [B, H, words, words], the attention from the block's tokens of each word to each
// word; summed over the blocks of a layer (a query word's tokens may lie in two blocks), they are
// the whole attention's, and most_attended_words() of the sum is predicted_words().
at::Tensor word_attention(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                          std::int64_t first_row);
at::Tensor most_attended_words(const at::Tensor& word_attention, const at::Tensor& word_counts);

}  // namespace headscan
