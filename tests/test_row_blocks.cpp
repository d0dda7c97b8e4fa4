// Statistics on row blocks: every classifier of the set, fed a layer's attention [B, H, T, T] whole
// and in row blocks [B, H, Q, T] of Q = 1, 7 and T rows (context.first_row set), saves the same
// statistics and gives the same heads; and the row summary of a block equals its tensor definition
// on the same rows of the whole matrix.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "analyzer/corpus/sequence_words.h"
#include "heads/classifier_set.h"
#include "heads/exact_sum.h"
#include "heads/registry.h"
#include "heads/row_summary.h"
#include "heads/syntactic.h"

using namespace headscan;

namespace {

constexpr int kLayers = 2;
constexpr std::int64_t kHeads = 3;

// One batch of a source with its per-position tensors and the attention of every layer.
struct PlantedBatch {
  BatchSource source = BatchSource::corpus;
  at::Tensor ids, valid, queries, special, idf, punctuation, needle_targets;
  std::vector<SequenceWords> words;
  std::vector<const SequenceWords*> per_sequence;
  std::vector<at::Tensor> attention;  // per layer, [B, H, T, T]

  // The same batch with its tensors on `device` (the words stay on the host, pointed to anew).
  PlantedBatch to(const c10::Device& device) const {
    PlantedBatch moved = *this;
    for (at::Tensor* tensor : {&moved.ids, &moved.valid, &moved.queries, &moved.special, &moved.idf,
                               &moved.punctuation, &moved.needle_targets}) {
      if (tensor->defined()) *tensor = tensor->to(device);
    }
    for (at::Tensor& layer : moved.attention) layer = layer.to(device);
    moved.per_sequence.clear();
    for (const SequenceWords& sequence : moved.words) moved.per_sequence.push_back(&sequence);
    return moved;
  }
};

// Random attention over the keys each query sees (valid, and j ≤ i when causal), with head 0 leaning
// on the previous token and head 1 on the token after an earlier occurrence, so that argmax-based
// statistics have hits; padded query rows see every valid key.
std::vector<at::Tensor> planted_attention(const at::Tensor& ids, const at::Tensor& valid, bool causal) {
  const std::int64_t batch = ids.size(0);
  const std::int64_t length = ids.size(1);
  std::vector<at::Tensor> layers;
  for (int layer = 0; layer < kLayers; ++layer) {
    at::Tensor scores = torch::randn({batch, kHeads, length, length}) * 2;
    for (std::int64_t i = 1; i < length; ++i) scores.select(2, i).select(2, i - 1).select(1, 0).add_(6.0 + layer);
    const at::Tensor same = ids.unsqueeze(2) == ids.unsqueeze(1);  // [B, T, T]
    at::Tensor after_same = torch::zeros_like(same);
    after_same.slice(2, 1).copy_(same.slice(2, 0, length - 1));
    scores.select(1, 1).add_(after_same.to(torch::kFloat) * 5);
    at::Tensor visible = valid.unsqueeze(1).expand({batch, length, length}).clone();
    if (causal) visible &= torch::ones({length, length}, torch::kBool).tril();
    scores.masked_fill_(~visible.unsqueeze(1), -std::numeric_limits<float>::infinity());
    layers.push_back(torch::softmax(scores, -1));
  }
  return layers;
}

// Two sequences of 20 positions, the second 15 long and padded: BOS, tokens of a small vocabulary
// (so that tokens repeat), a suffix [SEP] (id 2, a key only) in bidirectional models, punctuation,
// idf of a few levels (ties at the maximum), words of 1–3 tokens with arcs both ways.
PlantedBatch corpus_batch(bool causal) {
  PlantedBatch made;
  const std::int64_t length = 20;
  const std::vector<std::int64_t> lengths = {20, 15};
  made.ids = torch::randint(3, 9, {2, length}, torch::kInt64);
  made.valid = torch::zeros({2, length}, torch::kBool);
  made.special = torch::zeros({2, length}, torch::kBool);
  made.queries = torch::zeros({2, length}, torch::kBool);
  for (std::int64_t b = 0; b < 2; ++b) {
    const std::int64_t n = lengths[static_cast<std::size_t>(b)];
    made.valid[b].slice(0, 0, n).fill_(true);
    made.queries[b].slice(0, 0, n).fill_(true);
    made.ids[b][0] = 1;
    made.special[b][0] = true;
    if (!causal) {
      made.ids[b][n - 1] = 2;
      made.special[b][n - 1] = true;
      made.queries[b][n - 1] = false;
    }
    made.ids[b].slice(0, n).fill_(0);
  }
  made.idf = (torch::randint(1, 4, {2, length}).to(torch::kFloat) * 0.5)
                 .masked_fill(made.special | ~made.valid, -std::numeric_limits<float>::infinity());
  made.punctuation = (made.ids == 4) | (made.ids == 7);
  // Words: runs of 1, 2 and 3 tokens after BOS, up to the sequence's content.
  made.words.resize(2);
  const std::vector<std::string> relations = {"nsubj", "obj", "amod"};
  for (std::int64_t b = 0; b < 2; ++b) {
    SequenceWords& words = made.words[static_cast<std::size_t>(b)];
    const std::int64_t content_end = lengths[static_cast<std::size_t>(b)] - (causal ? 0 : 1);
    words.token_word.assign(static_cast<std::size_t>(length), -1);
    std::int64_t position = 1;
    for (int word = 0; position < content_end; ++word) {
      const std::int64_t span = std::min<std::int64_t>(1 + (word + b) % 3, content_end - position);
      for (std::int64_t t = 0; t < span; ++t) words.token_word[static_cast<std::size_t>(position + t)] = word;
      position += span;
      words.words = word + 1;
    }
    for (int word = 0; word < words.words; ++word) {
      const int head = (word * 5 + 3 + static_cast<int>(b)) % words.words;
      if (head == word) continue;
      words.arcs.push_back(WordArc{word, head, relations[static_cast<std::size_t>(word) % relations.size()], head - word});
    }
    made.per_sequence.push_back(&words);
  }
  made.attention = planted_attention(made.ids, made.valid, causal);
  return made;
}

// Probes BOS + R R R R with R of 4 tokens, the two sequences with different R.
PlantedBatch probe_batch(bool causal) {
  PlantedBatch made;
  made.source = BatchSource::probe;
  const at::Tensor repeat = torch::randint(10, 40, {2, 4}, torch::kInt64);
  made.ids = torch::cat({torch::ones({2, 1}, torch::kInt64), repeat.repeat({1, 4})}, 1);  // [2, 17]
  made.valid = torch::ones_like(made.ids, torch::kBool);
  made.queries = made.valid;
  made.special = torch::zeros_like(made.valid);
  made.special.select(1, 0).fill_(true);
  made.idf = torch::ones({2, 17}).masked_fill(made.special, -std::numeric_limits<float>::infinity());
  made.attention = planted_attention(made.ids, made.valid, causal);
  return made;
}

// Needle probes: a needle of 3 tokens at 3..5, copied at the end; copy events at the final needle's
// tokens 1 and 2, the model copying needle tokens 4 and 5.
PlantedBatch needle_batch(bool causal) {
  PlantedBatch made;
  made.source = BatchSource::needle;
  made.ids = torch::randint(10, 40, {2, 16}, torch::kInt64);
  made.ids.select(1, 0).fill_(1);
  made.ids.slice(1, 13, 16).copy_(made.ids.slice(1, 3, 6));
  made.valid = torch::ones_like(made.ids, torch::kBool);
  made.queries = made.valid;
  made.special = torch::zeros_like(made.valid);
  made.special.select(1, 0).fill_(true);
  made.idf = torch::ones({2, 16}).masked_fill(made.special, -std::numeric_limits<float>::infinity());
  made.needle_targets = torch::full({2, 16}, -1, torch::kInt64);
  made.needle_targets.select(1, 13).fill_(4);
  made.needle_targets.select(1, 14).fill_(5);
  made.attention = planted_attention(made.ids, made.valid, causal);
  return made;
}

struct Feed {
  std::vector<PlantedBatch> batches;
  bool causal = true;
};

Feed planted_feed(bool causal) {
  torch::manual_seed(causal ? 11 : 12);
  Feed feed;
  feed.causal = causal;
  for (int index = 0; index < 2; ++index) feed.batches.push_back(corpus_batch(causal));
  feed.batches.push_back(probe_batch(causal));
  // Enough copy events for retrieval to score (kMinimumCopyEvents per layer).
  for (std::int64_t index = 0; index < (kMinimumCopyEvents + 3) / 4; ++index) feed.batches.push_back(needle_batch(causal));
  return feed;
}

struct Outcome {
  nlohmann::json saved;
  nlohmann::ordered_json heads;
};

// The whole set fed every batch, each layer in blocks of `rows` rows (0: the whole matrix at once).
// Blocks are copies, as headscan's attention op hands them over: each its own memory, which the
// allocator may give the next block again.
Outcome run_blocks(const Feed& feed, std::int64_t rows) {
  ClassifierSet set;
  const Thresholds thresholds = resolve_thresholds({{"streaming_sink", 2}, {"streaming_window", 4}, {"syntactic_support", 2}});
  set.begin(ModelShape{kLayers, static_cast<int>(kHeads), feed.causal}, thresholds);
  std::int64_t counters[3] = {0, 0, 0};
  for (const PlantedBatch& batch : feed.batches) {
    BatchContext context{batch.ids,
                         batch.valid,
                         batch.queries,
                         batch.special,
                         batch.idf,
                         feed.causal,
                         /*has_bos=*/true,
                         batch.source,
                         counters[static_cast<int>(batch.source)]++,
                         batch.per_sequence.empty() ? nullptr : &batch.per_sequence,
                         nullptr,
                         nullptr,
                         batch.punctuation.defined() ? &batch.punctuation : nullptr,
                         batch.needle_targets.defined() ? &batch.needle_targets : nullptr};
    set.begin_batch();
    for (int layer = 0; layer < kLayers; ++layer) {
      const at::Tensor& attention = batch.attention[static_cast<std::size_t>(layer)];
      const std::int64_t length = attention.size(3);
      const std::int64_t step = rows > 0 ? rows : length;
      for (std::int64_t first = 0; first < length; first += step) {
        BatchContext block = context;
        block.first_row = first;
        set.observe(layer, attention.narrow(2, first, std::min(step, length - first)).contiguous(), block);
      }
    }
    set.end_batch();
  }
  return Outcome{set.save(), set.finalize(thresholds, static_cast<int>(kHeads))};
}

// Equal JSON: the same structure, strings, booleans and whole numbers (counts); numbers that are
// not whole within `tolerance`; under a key "sum" or "sums", [high, low] pairs are exact sums
// (heads/exact_sum.h), compared by value within `tolerance`.
void check_equal(const nlohmann::json& whole, const nlohmann::json& blocked, const std::string& path, double tolerance,
                 bool sums = false) {
  INFO(path);
  if (sums && whole.is_array()) {
    const auto a = ExactSum::parse(whole);
    const auto b = ExactSum::parse(blocked);
    if (a && b) {
      CHECK(std::fabs(a->value() - b->value()) <= tolerance * std::max(1.0, std::fabs(a->value())));
      return;
    }
  }
  REQUIRE(whole.type_name() == blocked.type_name());
  if (whole.is_object()) {
    REQUIRE(whole.size() == blocked.size());
    for (auto item = whole.begin(); item != whole.end(); ++item) {
      REQUIRE(blocked.contains(item.key()));
      check_equal(item.value(), blocked.at(item.key()), path + "." + item.key(), tolerance,
                  sums || item.key() == "sum" || item.key() == "sums");
    }
  } else if (whole.is_array()) {
    REQUIRE(whole.size() == blocked.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      check_equal(whole[i], blocked[i], path + "[" + std::to_string(i) + "]", tolerance, sums);
    }
  } else if (whole.is_number_float()) {
    CHECK(std::fabs(whole.get<double>() - blocked.get<double>()) <= tolerance);
  } else {
    CHECK(whole == blocked);
  }
}

// Scores that show the feed reaches every kind of statistic (so that equality is not of nulls).
void check_not_vacuous(const nlohmann::ordered_json& heads, bool causal) {
  const auto& scores = heads[0]["scores"];
  for (const char* name : {"previous_token", "first_token", "entropy", "confidence", "mean_distance", "self",
                           "induction", "duplicate_token", "induction_text", "rare_word", "separator", "punctuation"}) {
    INFO(name);
    CHECK(scores.at(name).is_number());
  }
  CHECK(scores.at("positional").is_object());
  CHECK_FALSE(scores.at("syntactic").empty());
  if (causal) {
    CHECK(scores.at("streaming").is_number());
    CHECK(scores.at("retrieval").is_number());
  }
}

}  // namespace

TEST_CASE("every classifier saves the same statistics and gives the same heads whatever the row blocks",
          "[row-blocks][classifiers]") {
  for (const bool causal : {true, false}) {
    const Feed feed = planted_feed(causal);
    const Outcome whole = run_blocks(feed, 0);
    check_not_vacuous(whole.heads, causal);
    for (const std::int64_t rows : {1, 7, 20}) {
      INFO((causal ? "causal" : "bidirectional") << ", blocks of " << rows << " rows");
      const Outcome blocked = run_blocks(feed, rows);
      check_equal(whole.saved, blocked.saved, "statistics", 1e-9);
      // Scores are rounded to 6 decimals: a value at a rounding boundary may move by one unit.
      check_equal(nlohmann::json(whole.heads), nlohmann::json(blocked.heads), "heads", 1e-6 + 1e-9);
    }
  }
}

TEST_CASE("the row summary of a block equals the definition on the same rows of the whole attention",
          "[row-blocks][row-summary]") {
  torch::manual_seed(5);
  for (const bool causal : {true, false}) {
    const std::int64_t length = 23;
    at::Tensor scores = torch::randn({2, 3, length, length}) * 3;
    if (causal) {
      scores.masked_fill_(torch::ones({length, length}, torch::kBool).triu(1), -std::numeric_limits<float>::infinity());
    }
    const at::Tensor attention = torch::softmax(scores, -1);
    const RowSummary whole = summarize_rows_by_tensor_ops(attention, causal);
    for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{7}, length}) {
      for (std::int64_t first = 0; first < length; first += rows) {
        const std::int64_t q = std::min(rows, length - first);
        INFO((causal ? "causal" : "bidirectional") << ", rows " << first << " .. " << first + q - 1);
        const at::Tensor block = attention.narrow(2, first, q).contiguous();
        const auto expected = [&](const at::Tensor& values) { return values.narrow(2, first, q); };
        const RowSummary definition = summarize_rows_by_tensor_ops(block, causal, first);
        const RowSummary fused = summarize_rows(block, causal, first);
        const RowSummary chunked = summarize_rows_in_chunks(block, causal, /*chunk_elements=*/q * length, first);
        for (const RowSummary* summary : {&definition, &fused, &chunked}) {
          CHECK(torch::allclose(summary->entropy, expected(whole.entropy), 1e-5, 1e-6));
          CHECK(torch::equal(summary->max, expected(whole.max)));
          CHECK(torch::equal(summary->argmax, expected(whole.argmax)));
          CHECK(torch::allclose(summary->distance, expected(whole.distance), 1e-5, 1e-5));
        }
      }
    }
  }
}

TEST_CASE("a row block past the attention's rows is refused", "[row-blocks]") {
  const at::Tensor block = torch::full({1, 1, 3, 5}, 0.2);
  CHECK_THROWS_WITH(summarize_rows(block, /*causal=*/false, /*first_row=*/3),
                    Catch::Contains("reaches past the last of its T = 5 rows"));
  CHECK_NOTHROW(summarize_rows(block, /*causal=*/false, /*first_row=*/2));
}

namespace {

// The word-level argmax by its definition, in double: attention to a word the sum over its tokens'
// columns, from a word the sum over its tokens' rows (products with the one-hot token → word
// matrix), the argmax over the sequence's other words, ties to the lowest index. attention
// [B, H, T, T], token_word [B, T] (`words` for none), word_counts [B]: [B, H, words].
at::Tensor defined_predictions(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                               const at::Tensor& word_counts) {
  const at::Tensor membership = token_word.unsqueeze(-1).eq(torch::arange(words)).to(torch::kDouble).unsqueeze(1);
  const at::Tensor word_attention =
      torch::matmul(membership.transpose(-2, -1), torch::matmul(attention.to(torch::kDouble), membership));
  const at::Tensor column = torch::arange(words);
  const at::Tensor excluded = (column.view({1, 1, 1, words}) >= word_counts.view({-1, 1, 1, 1})) |
                              (column.view({1, 1, words, 1}) == column.view({1, 1, 1, words}));
  return word_attention.masked_fill(excluded, -std::numeric_limits<double>::infinity()).argmax(-1);
}

// Words of 1–3 tokens after BOS, a token of no word now and then, up to `content` tokens of
// `length`: [length] local words, `none` for tokens of no word; returns the word count.
std::int64_t planted_words(std::vector<std::int64_t>& token_word, std::int64_t offset, std::int64_t length,
                           std::int64_t content, std::int64_t none, int seed) {
  std::int64_t word = 0;
  for (std::int64_t t = 0; t < length; ++t) token_word[static_cast<std::size_t>(offset + t)] = none;
  for (std::int64_t t = 1; t < content; ++word) {
    if ((word + seed) % 13 == 5) ++t;  // a token of no word before this one
    const std::int64_t span = 1 + (word * 7 + seed) % 3;
    for (std::int64_t k = 0; k < span && t < content; ++k, ++t) token_word[static_cast<std::size_t>(offset + t)] = word;
  }
  return word;
}

}  // namespace

TEST_CASE("the syntactic word argmax of hundreds of words is the definition's whatever the row blocks",
          "[row-blocks][syntax]") {
  torch::manual_seed(21);
  const std::int64_t length = 601, heads = 2;
  const std::vector<std::int64_t> content = {length, 450};  // the second sequence padded
  // The words: the largest count is the batch's `words`, the marker of tokens of no word.
  std::vector<std::int64_t> token_word(static_cast<std::size_t>(2 * length));
  std::vector<std::int64_t> counts(2);
  for (std::int64_t b = 0; b < 2; ++b) {
    counts[static_cast<std::size_t>(b)] = planted_words(token_word, b * length, length, content[static_cast<std::size_t>(b)], -1, static_cast<int>(b));
  }
  const std::int64_t words = *std::max_element(counts.begin(), counts.end());
  for (std::int64_t& word : token_word) word = word < 0 ? words : word;
  const at::Tensor token_words = torch::tensor(token_word).view({2, length});
  const at::Tensor word_counts = torch::tensor(counts);
  REQUIRE(words > 250);
  // The query words: every word but one in five, in an order of their own.
  std::vector<std::int64_t> queries;
  for (std::int64_t b = 1; b >= 0; --b) {
    for (std::int64_t word = counts[static_cast<std::size_t>(b)] - 1; word >= 0; --word) {
      if (word % 5 != 2) queries.push_back(b * words + word);
    }
  }
  const at::Tensor query_index = torch::tensor(queries);
  for (const bool causal : {true, false}) {
    at::Tensor valid = torch::ones({2, length, length}, torch::kBool);
    valid[1].slice(1, content[1]).fill_(false);
    if (causal) valid &= torch::ones({length, length}, torch::kBool).tril();
    // Random attention, whose word sums are distinct, and uniform attention over the visible keys,
    // whose words of equal token counts tie exactly: the lowest index wins.
    for (const bool uniform : {false, true}) {
      const at::Tensor scores = uniform ? torch::zeros({2, heads, length, length}) : torch::randn({2, heads, length, length}) * 3;
      const at::Tensor attention =
          torch::softmax(scores.masked_fill(~valid.unsqueeze(1), -std::numeric_limits<float>::infinity()), -1);
      // [H, K]: the definition at the query words.
      const at::Tensor expected = defined_predictions(attention, token_words, words, word_counts)
                                      .permute({1, 0, 2})
                                      .reshape({heads, -1})
                                      .index_select(1, query_index);
      at::Tensor first;
      for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{7}, std::int64_t{64}, length}) {
        INFO((causal ? "causal" : "bidirectional") << (uniform ? ", uniform" : ", random") << ", blocks of " << rows);
        MostAttendedWords most_attended(token_word, 2, length, words, counts, queries, c10::Device(c10::kCPU));
        for (std::int64_t row = 0; row < length; row += rows) {
          CHECK_FALSE(most_attended.complete());
          most_attended.observe(attention.narrow(2, row, std::min(rows, length - row)).contiguous(), row);
          // Held between blocks: the words of the two sequences that straddle the boundary, and
          // a word of the other sequence that ends before one of them.
          CHECK(most_attended.held_words() <= 4);
        }
        REQUIRE(most_attended.complete());
        CHECK(most_attended.held_words() == 0);
        CHECK(torch::equal(most_attended.predicted(), expected));
        // The same additions in the same order whatever the blocks: the same predictions.
        if (!first.defined()) first = most_attended.predicted().clone();
        CHECK(torch::equal(most_attended.predicted(), first));
      }
    }
  }
}

TEST_CASE("syntactic word sums hold only the words straddling a block: 3072 words of 4096 tokens in blocks of 64",
          "[row-blocks][syntax]") {
  // The layer's word attention [B, H, W, W] would be 75 MB here; the words held between blocks are
  // at most the one that straddles the boundary, [H, 1, W + 1]. Each query word's tokens put most
  // of their attention on a planted target word, another per head.
  torch::manual_seed(22);
  const std::int64_t length = 4096, heads = 2;
  std::vector<std::int64_t> token_word(static_cast<std::size_t>(length));
  std::int64_t words = 0;
  for (std::int64_t t = 1; t < length; ++words) {
    for (std::int64_t k = 0; k < (words % 3 == 2 ? 2 : 1) && t < length; ++k, ++t) token_word[static_cast<std::size_t>(t)] = words;
  }
  token_word[0] = words;
  REQUIRE(words == 3072);
  const at::Tensor token_words = torch::tensor(token_word);
  const auto target = [&](std::int64_t head, std::int64_t word) { return (word + 1 + 5 * head) % words; };
  // [H, T]: the planted target of each token's word (of BOS: BOS, a word of none).
  at::Tensor row_target = torch::empty({heads, length}, torch::kInt64);
  for (std::int64_t head = 0; head < heads; ++head) {
    for (std::int64_t t = 0; t < length; ++t) {
      const std::int64_t word = token_word[static_cast<std::size_t>(t)];
      row_target[head][t] = word == words ? words : target(head, word);
    }
  }
  const at::Tensor planted = row_target.unsqueeze(-1).eq(token_words.view({1, 1, length}));  // [H, T, T]
  const at::Tensor attention = torch::softmax(torch::randn({1, heads, length, length}) + planted.unsqueeze(0) * 8.0, -1);
  std::vector<std::int64_t> queries;
  for (std::int64_t word = 0; word < words; ++word) queries.push_back((word * 1009) % words);  // 1009 prime to 3072
  MostAttendedWords most_attended(token_word, 1, length, words, {words}, queries, c10::Device(c10::kCPU));
  for (std::int64_t row = 0; row < length; row += 64) {
    most_attended.observe(attention.narrow(2, row, 64).contiguous(), row);
    CHECK(most_attended.held_words() <= 1);
  }
  REQUIRE(most_attended.complete());
  at::Tensor expected = torch::empty({heads, words}, torch::kInt64);
  for (std::int64_t head = 0; head < heads; ++head) {
    for (std::int64_t k = 0; k < words; ++k) expected[head][k] = target(head, queries[static_cast<std::size_t>(k)]);
  }
  CHECK(torch::equal(most_attended.predicted(), expected));
}

TEST_CASE("syntactic word sums refuse row blocks out of order", "[row-blocks][syntax]") {
  const std::vector<std::int64_t> token_word = {2, 0, 1, 1};
  MostAttendedWords most_attended(token_word, 1, 4, 2, {2}, {0, 1}, c10::Device(c10::kCPU));
  const at::Tensor attention = torch::full({1, 1, 4, 4}, 0.25);
  CHECK_THROWS_WITH(most_attended.observe(attention.narrow(2, 2, 2), 2), Catch::Contains("must start at row 0 and follow each other"));
  most_attended.observe(attention.narrow(2, 0, 1), 0);
  CHECK_THROWS_WITH(most_attended.observe(attention.narrow(2, 2, 2), 2), Catch::Contains("row 1 was next"));
  most_attended.observe(attention.narrow(2, 1, 3), 1);
  CHECK(most_attended.complete());
  CHECK(most_attended.predicted().equal(torch::tensor({1, 0}, torch::kInt64).view({1, 2})));
}

// On a GPU the statistics are the tensor definitions (the row summary's, index_put_ for the target
// keys): the same equality there. Tagged [gpu]: run by tests/gpu/run_if_gpu.sh where LibTorch sees a
// GPU; hidden ([.gpu]) from a plain run of the test binary.
TEST_CASE("gpu: every classifier gives the same statistics whatever the row blocks", "[.gpu]") {
  REQUIRE(torch::cuda::is_available());
  for (const bool causal : {true, false}) {
    Feed feed = planted_feed(causal);
    for (PlantedBatch& batch : feed.batches) batch = batch.to(c10::Device(c10::kCUDA, 0));
    const Outcome whole = run_blocks(feed, 0);
    check_not_vacuous(whole.heads, causal);
    for (const std::int64_t rows : {1, 7}) {
      INFO((causal ? "causal" : "bidirectional") << ", blocks of " << rows << " rows on the GPU");
      const Outcome blocked = run_blocks(feed, rows);
      check_equal(whole.saved, blocked.saved, "statistics", 1e-9);
      check_equal(nlohmann::json(whole.heads), nlohmann::json(blocked.heads), "heads", 1e-6 + 1e-9);
    }
  }
}
