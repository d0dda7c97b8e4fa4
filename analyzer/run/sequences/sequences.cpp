#include "analyzer/run/sequences/sequences.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace headscan {

std::size_t SequenceShape::framing() const { return (bos_id ? 1 : 0) + suffix_ids.size(); }

std::size_t SequenceShape::room() const {
  const auto length = static_cast<std::size_t>(std::max<std::int64_t>(max_length, 0));
  return length > framing() ? length - framing() : 1;
}

void SequenceShape::open(Sequence& sequence) const {
  if (!bos_id) return;
  sequence.ids.push_back(*bos_id);
  sequence.special.push_back(1);
}

void SequenceShape::close(Sequence& sequence) const {
  sequence.ids.insert(sequence.ids.end(), suffix_ids.begin(), suffix_ids.end());
  sequence.special.insert(sequence.special.end(), suffix_ids.size(), 1);
  sequence.suffix_length = suffix_ids.size();
}

Sequence make_window(const std::vector<Token>& tokens, std::size_t begin, std::size_t end, const Tokenizer& tokenizer,
                     const SequenceShape& shape, std::size_t line_number, std::size_t window) {
  Sequence sequence;
  sequence.line_number = line_number;
  sequence.window = window;
  sequence.ids.reserve(end - begin + shape.framing());
  shape.open(sequence);
  for (std::size_t i = begin; i < end; ++i) {
    sequence.ids.push_back(tokens[i].id);
    sequence.special.push_back(tokenizer.is_special(tokens[i].id) ? 1 : 0);
  }
  shape.close(sequence);
  return sequence;
}

std::vector<Sequence> make_sequences(const std::vector<Token>& tokens, const Tokenizer& tokenizer,
                                     const SequenceShape& shape, std::size_t line_number) {
  std::vector<Sequence> sequences;
  const std::size_t room = shape.room();
  for (std::size_t start = 0; start < tokens.size(); start += room) {
    const std::size_t stop = std::min(tokens.size(), start + room);
    sequences.push_back(make_window(tokens, start, stop, tokenizer, shape, line_number, sequences.size()));
  }
  return sequences;
}

Batcher::Batcher(std::size_t batch_size, bool allow_padding, std::size_t max_buffered)
    : batch_size_(std::max<std::size_t>(1, batch_size)),
      allow_padding_(allow_padding),
      max_buffered_(std::max(max_buffered, batch_size_)) {}

void Batcher::add(Sequence sequence) {
  auto& bucket = by_length_[sequence.ids.size()];
  bucket.push_back(std::move(sequence));
  ++buffered_;
  if (bucket.size() == batch_size_) {
    ready_.push_back(std::move(bucket));
    by_length_.erase(ready_.back().front().ids.size());
    buffered_ -= batch_size_;
  }
  if (buffered_ <= max_buffered_) return;
  if (allow_padding_) {
    for (auto& batch : take_all_sorted(/*keep_partial=*/true)) ready_.push_back(std::move(batch));
    return;
  }
  // Without padding the fullest bucket goes as a smaller batch.
  auto fullest = std::max_element(by_length_.begin(), by_length_.end(),
                                  [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  buffered_ -= fullest->second.size();
  ready_.push_back(std::move(fullest->second));
  by_length_.erase(fullest);
}

std::vector<std::vector<Sequence>> Batcher::take_ready() { return std::exchange(ready_, {}); }

std::vector<std::vector<Sequence>> Batcher::take_all_sorted(bool keep_partial) {
  std::vector<Sequence> all;
  all.reserve(buffered_);
  for (auto& [length, bucket] : by_length_) {
    for (auto& sequence : bucket) all.push_back(std::move(sequence));
  }
  by_length_.clear();
  buffered_ = 0;
  std::vector<std::vector<Sequence>> batches;
  for (std::size_t start = 0; start < all.size(); start += batch_size_) {
    const std::size_t stop = std::min(all.size(), start + batch_size_);
    if (keep_partial && stop - start < batch_size_) {
      for (std::size_t i = start; i < stop; ++i) add(std::move(all[i]));
      break;
    }
    batches.emplace_back(std::make_move_iterator(all.begin() + start), std::make_move_iterator(all.begin() + stop));
  }
  return batches;
}

std::vector<std::vector<Sequence>> Batcher::flush() {
  std::vector<std::vector<Sequence>> batches = take_ready();
  if (allow_padding_) {
    for (auto& batch : take_all_sorted(/*keep_partial=*/false)) batches.push_back(std::move(batch));
    return batches;
  }
  for (auto& [length, bucket] : by_length_) batches.push_back(std::move(bucket));
  by_length_.clear();
  buffered_ = 0;
  return batches;
}

void attach_words(std::vector<Sequence>& sequences, const std::vector<int>& token_word,
                  const ParsedSentence& sentence, const SequenceShape& shape) {
  const std::size_t offset = shape.bos_id ? 1 : 0;
  const std::size_t room = shape.room();
  // Sentence word → its token group: the words of a multiword token share one, and their tokens.
  std::vector<std::size_t> group(sentence.words.size(), 0);
  for (std::size_t word = 1; word < sentence.words.size(); ++word) {
    group[word] = group[word - 1] + (sentence.words[word].continues_multiword ? 0 : 1);
  }
  for (std::size_t window = 0; window < sequences.size(); ++window) {
    Sequence& sequence = sequences[window];
    const std::size_t start = window * room;
    auto words = std::make_shared<SequenceWords>();
    words->token_word.assign(sequence.ids.size(), -1);  // BOS and the suffix belong to no word
    // Token group → local word, for the groups with a token in this window.
    std::vector<int> local(sentence.words.empty() ? 0 : group.back() + 1, -1);
    for (std::size_t position = offset; position < sequence.ids.size() - sequence.suffix_length; ++position) {
      const int word = token_word.at(start + position - offset);
      if (word < 0) continue;
      int& local_word = local[group[static_cast<std::size_t>(word)]];
      if (local_word < 0) local_word = words->words++;
      words->token_word[position] = local_word;
    }
    for (std::size_t dependent = 0; dependent < sentence.words.size(); ++dependent) {
      const ParsedWord& word = sentence.words[dependent];
      if (word.head < 0 || word.relation.empty()) continue;
      const int dependent_local = local[group[dependent]];
      const int head_local = local[group[static_cast<std::size_t>(word.head)]];
      // An arc inside one multiword token joins two words of the same tokens: not scored.
      if (dependent_local < 0 || head_local < 0 || dependent_local == head_local) continue;
      words->arcs.push_back(
          WordArc{dependent_local, head_local, word.relation, word.head - static_cast<int>(dependent)});
    }
    sequence.words = std::move(words);
  }
}

}  // namespace headscan
