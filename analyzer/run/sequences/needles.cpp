#include "analyzer/run/sequences/needles.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/torch.h>

namespace headscan {
namespace {

// The room a haystack has in a probe of `length` tokens: the window less BOS (a causal model's
// needle probes take no suffix) and the two needles.
std::int64_t haystack_room(const SequenceShape& shape, std::int64_t length) {
  SequenceShape probe_shape = shape;
  probe_shape.max_length = length;
  return static_cast<std::int64_t>(probe_shape.room()) - 2 * kNeedleLength;
}

// The tokenizer's ids a needle may hold: not special, and not a byte-fallback piece such as <0xE4>,
// which stands for part of a character rather than a token of text.
std::vector<std::int64_t> needle_vocabulary(const Tokenizer& tokenizer, std::int64_t model_vocabulary) {
  std::vector<std::int64_t> vocabulary;
  const std::int64_t end = model_vocabulary > 0 ? std::min(model_vocabulary, tokenizer.vocab_size()) : tokenizer.vocab_size();
  for (std::int64_t id = 0; id < end; ++id) {
    if (tokenizer.is_special(id)) continue;
    const std::string piece = tokenizer.id_to_piece(id);
    const bool byte_piece = piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>';
    if (!piece.empty() && !byte_piece) vocabulary.push_back(id);
  }
  return vocabulary;
}

// One length's haystacks and needles; the needles drawn from `random`, haystack by haystack.
NeedleSet make_needle_set(const SequenceShape& shape, const std::vector<std::int64_t>& text,
                          const std::vector<std::int64_t>& vocabulary, std::int64_t probe_length,
                          std::mt19937_64& random) {
  NeedleSet set;
  set.length = probe_length;
  const std::int64_t length = haystack_room(shape, probe_length);
  if (length < kNeedleLength) {
    set.skipped_because = fmt::format("probes of {} tokens leave no room for a haystack of {} tokens beside two needles "
                                      "of {}",
                                      probe_length, kNeedleLength, kNeedleLength);
    return set;
  }
  if (text.empty()) {
    set.skipped_because = "the corpus gave no text token to build haystacks from";
    return set;
  }
  set.haystack_length = length;
  const auto text_size = static_cast<std::int64_t>(text.size());
  for (int h = 0; h < kHaystacks; ++h) {
    std::vector<std::int64_t> haystack;
    haystack.reserve(static_cast<std::size_t>(length));
    for (std::int64_t t = 0; t < length; ++t) haystack.push_back(text[static_cast<std::size_t>((h * length + t) % text_size)]);
    const std::unordered_set<std::int64_t> in_haystack(haystack.begin(), haystack.end());
    std::vector<std::int64_t> pool;
    for (const std::int64_t id : vocabulary) {
      if (in_haystack.count(id) == 0) pool.push_back(id);
    }
    if (static_cast<std::int64_t>(pool.size()) < kNeedleLength) {
      set.skipped_because = fmt::format("the vocabulary has {} usable tokens outside a haystack, fewer than a needle's {}",
                                        pool.size(), kNeedleLength);
      set.haystacks.clear();
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
      const std::int64_t framing = shape.bos_id ? 1 : 0;
      probe.inserted = framing + before;
      probe.final_start = framing + length + kNeedleLength;
      set.probes.push_back(std::move(probe));
    }
    set.haystacks.push_back(std::move(haystack));
  }
  return set;
}

}  // namespace

const NeedleProbe& NeedleSet::probe(int haystack, int depth) const {
  return probes.at(static_cast<std::size_t>(haystack) * kNeedleDepths.size() + static_cast<std::size_t>(depth));
}

Sequence NeedleSet::sequence(int haystack, int depth, const SequenceShape& shape) const {
  const NeedleProbe& chosen = probe(haystack, depth);
  const std::vector<std::int64_t>& text = haystacks.at(static_cast<std::size_t>(haystack));
  const auto before = static_cast<std::ptrdiff_t>(chosen.inserted - (shape.bos_id ? 1 : 0));
  Sequence sequence;
  sequence.line_number = static_cast<std::size_t>(haystack) * kNeedleDepths.size() + static_cast<std::size_t>(depth);
  SequenceShape causal_shape = shape;
  causal_shape.max_length = length;
  causal_shape.suffix_ids.clear();
  causal_shape.open(sequence);
  sequence.ids.insert(sequence.ids.end(), text.begin(), text.begin() + before);
  sequence.ids.insert(sequence.ids.end(), chosen.needle.begin(), chosen.needle.end());
  sequence.ids.insert(sequence.ids.end(), text.begin() + before, text.end());
  sequence.ids.insert(sequence.ids.end(), chosen.needle.begin(), chosen.needle.end());
  sequence.special.resize(sequence.ids.size(), 0);
  causal_shape.close(sequence);
  TORCH_CHECK(static_cast<std::int64_t>(sequence.ids.size()) >= chosen.final_start + kNeedleLength,
              "needle probe of ", sequence.ids.size(), " tokens has its final needle at ", chosen.final_start);
  return sequence;
}

int NeedleSummary::probes() const {
  int total = 0;
  for (const auto& length : cells) {
    for (const NeedleCell& cell : length) total += cell.probes;
  }
  return total;
}

std::int64_t NeedleSummary::events() const {
  std::int64_t total = 0;
  for (const auto& length : cells) {
    for (const NeedleCell& cell : length) total += cell.events;
  }
  return total;
}

std::int64_t& NeedleSummary::hits(int layer, int head, std::size_t length, std::size_t depth) {
  const std::size_t index =
      ((static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(head)) *
           lengths.size() + length) * kNeedleDepths.size() + depth;
  return head_hits.at(index);
}

std::int64_t NeedleSummary::hits(int layer, int head, std::size_t length, std::size_t depth) const {
  return const_cast<NeedleSummary*>(this)->hits(layer, head, length, depth);
}

std::int64_t needle_text_wanted(const SequenceShape& shape, const std::vector<std::int64_t>& lengths) {
  std::int64_t longest = 0;
  for (const std::int64_t length : lengths) longest = std::max(longest, haystack_room(shape, length));
  return longest * kHaystacks;
}

std::vector<NeedleSet> make_needles(const Tokenizer& tokenizer, const SequenceShape& shape,
                                    const std::vector<std::int64_t>& text, const std::vector<std::int64_t>& lengths,
                                    std::uint64_t seed, std::int64_t model_vocabulary) {
  const std::vector<std::int64_t> vocabulary = needle_vocabulary(tokenizer, model_vocabulary);
  std::mt19937_64 random(seed ^ 0x6e6565646c65ULL);  // "needle": its own stream, apart from the probes'
  std::vector<NeedleSet> sets;
  for (const std::int64_t length : lengths) sets.push_back(make_needle_set(shape, text, vocabulary, length, random));
  return sets;
}

std::vector<std::int64_t> needle_query_rows(const std::vector<const NeedleProbe*>& probes) {
  std::vector<std::int64_t> rows;
  for (const NeedleProbe* probe : probes) {
    // The query at final-needle token k (1-based) sits at final_start + k − 1 and predicts token k + 1.
    for (std::int64_t k = 1; k < kNeedleLength; ++k) rows.push_back(probe->final_start + k - 1);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

at::Tensor needle_targets(const at::Tensor& logits, const std::vector<std::int64_t>& rows, std::int64_t columns,
                          const std::vector<const NeedleProbe*>& probes, std::vector<std::int64_t>& events) {
  const auto row_count = static_cast<std::int64_t>(rows.size());
  TORCH_CHECK(logits.dim() == 3 && logits.size(0) == static_cast<std::int64_t>(probes.size()) &&
                  logits.size(1) == row_count,
              "logits must be [B,R,V] for the needle batch of ", probes.size(), " probes at ", row_count,
              " rows, got ", logits.sizes());
  const at::Tensor predicted = logits.argmax(/*dim=*/-1).to(torch::kCPU).contiguous();  // [B, R]
  const auto* top = predicted.data_ptr<std::int64_t>();
  at::Tensor targets = torch::full({predicted.size(0), columns}, -1, torch::kInt64);
  auto* target = targets.data_ptr<std::int64_t>();
  events.assign(probes.size(), 0);
  for (std::size_t b = 0; b < probes.size(); ++b) {
    const NeedleProbe& probe = *probes[b];
    TORCH_CHECK(probe.final_start + kNeedleLength <= columns, "needle batch of ", columns,
                " columns is shorter than its probe's final needle at ", probe.final_start);
    for (std::int64_t k = 1; k < kNeedleLength; ++k) {
      const std::int64_t query = probe.final_start + k - 1;
      const auto found = std::lower_bound(rows.begin(), rows.end(), query);
      TORCH_CHECK(found != rows.end() && *found == query, "the needle batch's logits lack row ", query);
      const std::int64_t at_row = static_cast<std::int64_t>(b) * row_count + (found - rows.begin());
      if (top[at_row] != probe.needle[static_cast<std::size_t>(k)]) continue;
      ++events[b];
      target[static_cast<std::int64_t>(b) * columns + query] = probe.inserted + k;
    }
  }
  return targets.to(logits.device());
}

}  // namespace headscan
