#include "analyzer/run/sequences/probes.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <torch/torch.h>

namespace headscan {

namespace {

constexpr std::int64_t kMaxRepeatLength = 25;

// Byte-fallback pieces such as <0xE4> stand for part of a character, not a token of text.
bool is_byte_piece(const std::string& piece) {
  return piece.size() == 6 && piece[0] == '<' && piece[1] == '0' && piece[2] == 'x' && piece[5] == '>';
}

std::vector<std::int64_t> probe_vocabulary(const Tokenizer& tokenizer, std::int64_t model_vocabulary) {
  std::vector<std::int64_t> ids;
  const std::int64_t end = model_vocabulary > 0 ? std::min(model_vocabulary, tokenizer.vocab_size()) : tokenizer.vocab_size();
  for (std::int64_t id = 0; id < end; ++id) {
    if (tokenizer.is_special(id)) continue;
    const std::string piece = tokenizer.id_to_piece(id);
    if (piece.empty() || is_byte_piece(piece)) continue;
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

ProbeSet make_probes(const Tokenizer& tokenizer, const SequenceShape& shape, std::uint64_t seed, int count,
                     std::int64_t model_vocabulary) {
  ProbeSet probes;
  const auto room = static_cast<std::int64_t>(shape.room());
  probes.repeats = room >= 4 * 4 ? 4 : 2;
  const std::int64_t longest = std::min(kMaxRepeatLength, room / probes.repeats);
  const std::vector<std::int64_t> vocabulary = probe_vocabulary(tokenizer, model_vocabulary);
  if (longest < 2) {
    probes.skipped_because = fmt::format("max_length {} leaves no room for 2 repeats of 2 tokens", shape.max_length);
    return probes;
  }
  if (static_cast<std::int64_t>(vocabulary.size()) < longest) {
    probes.skipped_because = fmt::format("the vocabulary has {} usable tokens, fewer than the {} a probe needs",
                                         vocabulary.size(), longest);
    return probes;
  }
  const std::int64_t shortest = std::max<std::int64_t>(2, (longest * 6 + 9) / 10);
  std::mt19937_64 random(seed);
  for (int k = 0; k < count; ++k) {
    const std::int64_t length = count > 1 ? longest - (longest - shortest) * k / (count - 1) : longest;
    // Partial Fisher-Yates over the vocabulary: |R| distinct ids.
    std::vector<std::int64_t> pool = vocabulary;
    std::vector<std::int64_t> repeat;
    for (std::int64_t n = 0; n < length; ++n) {
      const std::size_t pick = n + random() % (pool.size() - n);
      std::swap(pool[n], pool[pick]);
      repeat.push_back(pool[n]);
    }
    Sequence sequence;
    sequence.line_number = static_cast<std::size_t>(k);
    shape.open(sequence);
    for (int r = 0; r < probes.repeats; ++r) {
      sequence.ids.insert(sequence.ids.end(), repeat.begin(), repeat.end());
      sequence.special.insert(sequence.special.end(), repeat.size(), 0);
    }
    shape.close(sequence);
    probes.sequences.push_back(std::move(sequence));
    probes.repeat_lengths.push_back(static_cast<int>(length));
  }
  return probes;
}

RepeatLoss::RepeatLoss(int repeats) : sums_(repeats, 0.0), counts_(repeats, 0) {}

void RepeatLoss::add(const at::Tensor& logits, const std::vector<Sequence>& batch, const ProbeSet& probes,
                     bool has_bos) {
  TORCH_CHECK(logits.dim() == 3 && logits.size(0) == static_cast<std::int64_t>(batch.size()),
              "logits must be [B,T,V] for the probe batch, got ", logits.sizes());
  const at::Tensor log_probs = torch::log_softmax(logits.to(torch::kFloat), /*dim=*/-1);
  const int offset = has_bos ? 1 : 0;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const Sequence& sequence = batch[b];
    const int length = probes.repeat_lengths.at(sequence.line_number);
    const auto count = static_cast<std::int64_t>(sequence.ids.size());
    const at::Tensor targets = torch::tensor(sequence.ids, torch::kInt64).slice(0, 1).to(logits.device());  // token at t = 1..
    const at::Tensor losses = -log_probs[static_cast<std::int64_t>(b)]
                                   .slice(0, 0, count - 1)
                                   .gather(/*dim=*/1, targets.unsqueeze(1))
                                   .squeeze(1)
                                   .to(torch::kCPU, torch::kDouble)
                                   .contiguous();  // losses[t-1] = loss of the token at t
    const double* loss = losses.data_ptr<double>();
    for (std::int64_t t = 1; t < count; ++t) {
      const std::int64_t repeat = (t - offset) / length;
      if (t < offset || repeat >= static_cast<std::int64_t>(sums_.size())) continue;
      sums_[repeat] += loss[t - 1];
      ++counts_[repeat];
    }
  }
}

std::vector<double> RepeatLoss::mean() const {
  std::vector<double> means;
  for (std::size_t r = 0; r < sums_.size(); ++r) means.push_back(counts_[r] ? sums_[r] / counts_[r] : 0.0);
  return means;
}

}  // namespace headscan
