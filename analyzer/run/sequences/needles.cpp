#include "analyzer/run/sequences/needles.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/torch.h>

namespace headscan {
namespace {

// The room a haystack has: the window less BOS (a causal model's needle probes take no suffix)
// and the two needles.
std::int64_t haystack_room(const SequenceShape& shape) {
  return static_cast<std::int64_t>(shape.room()) - 2 * kNeedleLength;
}

}  // namespace

std::int64_t needle_text_wanted(const SequenceShape& shape) {
  return std::max<std::int64_t>(0, haystack_room(shape)) * kHaystacks;
}

NeedleSet make_needles(const Tokenizer& tokenizer, const SequenceShape& shape, const std::vector<std::int64_t>& text,
                       std::uint64_t seed) {
  NeedleSet set;
  const std::int64_t length = haystack_room(shape);
  if (length < kNeedleLength) {
    set.skipped_because = fmt::format("max_length {} leaves no room for a haystack of {} tokens beside two needles of {}",
                                      shape.max_length, kNeedleLength, kNeedleLength);
    return set;
  }
  if (text.empty()) {
    set.skipped_because = "the corpus gave no text token to build haystacks from";
    return set;
  }
  set.haystack_length = length;
  std::vector<std::int64_t> vocabulary;
  for (std::int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_special(id)) continue;
    const std::string piece = tokenizer.id_to_piece(id);
    // Byte-fallback pieces such as <0xE4> stand for part of a character, not a token of text.
    const bool byte_piece = piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>';
    if (!piece.empty() && !byte_piece) vocabulary.push_back(id);
  }
  std::mt19937_64 random(seed ^ 0x6e6565646c65ULL);  // "needle": its own stream, apart from the probes'
  const auto text_size = static_cast<std::int64_t>(text.size());
  for (int h = 0; h < kHaystacks; ++h) {
    std::vector<std::int64_t> haystack;
    for (std::int64_t t = 0; t < length; ++t) haystack.push_back(text[static_cast<std::size_t>((h * length + t) % text_size)]);
    const std::unordered_set<std::int64_t> in_haystack(haystack.begin(), haystack.end());
    std::vector<std::int64_t> pool;
    for (const std::int64_t id : vocabulary) {
      if (in_haystack.count(id) == 0) pool.push_back(id);
    }
    if (static_cast<std::int64_t>(pool.size()) < kNeedleLength) {
      set.skipped_because = fmt::format("the vocabulary has {} usable tokens outside a haystack, fewer than a needle's {}",
                                        pool.size(), kNeedleLength);
      set.sequences.clear();
      set.probes.clear();
      return set;
    }
    for (int depth = 0; depth < static_cast<int>(kNeedleDepths.size()); ++depth) {
      NeedleProbe probe;
      probe.haystack = h;
      probe.depth = depth;
      // Partial Fisher-Yates: kNeedleLength distinct ids.
      for (std::int64_t n = 0; n < kNeedleLength; ++n) {
        const std::size_t pick = static_cast<std::size_t>(n) + random() % (pool.size() - static_cast<std::size_t>(n));
        std::swap(pool[static_cast<std::size_t>(n)], pool[pick]);
        probe.needle.push_back(pool[static_cast<std::size_t>(n)]);
      }
      const auto before = static_cast<std::int64_t>(std::lround(kNeedleDepths[static_cast<std::size_t>(depth)] *
                                                                static_cast<double>(length)));
      Sequence sequence;
      sequence.line_number = set.probes.size();
      SequenceShape causal_shape = shape;
      causal_shape.suffix_ids.clear();
      causal_shape.open(sequence);
      probe.inserted = static_cast<std::int64_t>(sequence.ids.size()) + before;
      sequence.ids.insert(sequence.ids.end(), haystack.begin(), haystack.begin() + before);
      sequence.ids.insert(sequence.ids.end(), probe.needle.begin(), probe.needle.end());
      sequence.ids.insert(sequence.ids.end(), haystack.begin() + before, haystack.end());
      probe.final_start = static_cast<std::int64_t>(sequence.ids.size());
      sequence.ids.insert(sequence.ids.end(), probe.needle.begin(), probe.needle.end());
      sequence.special.resize(sequence.ids.size(), 0);
      causal_shape.close(sequence);
      set.sequences.push_back(std::move(sequence));
      set.probes.push_back(std::move(probe));
    }
  }
  return set;
}

at::Tensor needle_targets(const at::Tensor& logits, const std::vector<Sequence>& batch, const NeedleSet& needles,
                          std::vector<std::int64_t>& events, std::vector<std::int64_t>& candidates) {
  TORCH_CHECK(logits.dim() == 3 && logits.size(0) == static_cast<std::int64_t>(batch.size()),
              "logits must be [B,T,V] for the needle batch, got ", logits.sizes());
  const at::Tensor predicted = logits.argmax(/*dim=*/-1).to(torch::kCPU).contiguous();  // [B, T]
  const auto* top = predicted.data_ptr<std::int64_t>();
  const std::int64_t columns = predicted.size(1);
  at::Tensor targets = torch::full({predicted.size(0), columns}, -1, torch::kInt64);
  auto* target = targets.data_ptr<std::int64_t>();
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const NeedleProbe& probe = needles.probes.at(batch[b].line_number);
    const auto depth = static_cast<std::size_t>(probe.depth);
    // The query at final-needle token k (1-based) sits at final_start + k − 1 and predicts token k + 1.
    for (std::int64_t k = 1; k < kNeedleLength; ++k) {
      const std::int64_t query = probe.final_start + k - 1;
      ++candidates[depth];
      const std::int64_t row = static_cast<std::int64_t>(b) * columns + query;
      if (top[row] != probe.needle[static_cast<std::size_t>(k)]) continue;
      ++events[depth];
      target[row] = probe.inserted + k;
    }
  }
  return targets.to(logits.device());
}

}  // namespace headscan
