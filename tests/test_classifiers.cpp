// Classifiers on hand-made attention tensors: masks for padding and BOS, merging of statistics,
// labels and their order.
#include <algorithm>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "analyzer/errors.h"
#include "heads/registry.h"

using namespace headscan;

namespace {

// Two sequences of lengths 5 and 3 (padded to 5); head 0 attends the previous token, head 1
// uniformly over visible keys (causal). Rows of padded queries hold garbage that must not count.
struct Batch {
  at::Tensor ids = torch::zeros({2, 5}, torch::kInt64);
  at::Tensor valid = torch::tensor({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, torch::kBool).view({2, 5});
  at::Tensor special = torch::tensor({1, 0, 0, 0, 0, 1, 0, 0, 0, 0}, torch::kBool).view({2, 5});
  // Each token of sequence 0 is rarer than the one before; -inf on BOS and padding.
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor idf = torch::tensor({-inf, 1.0, 2.0, 3.0, 4.0, -inf, 5.0, 1.0, -inf, -inf}).view({2, 5});
  at::Tensor attention = torch::zeros({2, 2, 5, 5});

  Batch() {
    for (int b = 0; b < 2; ++b) {
      for (int i = 0; i < 5; ++i) {
        attention[b][0][i][std::max(0, i - 1)] = 1;
        for (int j = 0; j <= i; ++j) attention[b][1][i][j] = 1.0 / (i + 1);
      }
    }
    attention[1][0][3].fill_(0.2);  // padded queries of sequence 1
    attention[1][0][4].fill_(0.2);
  }
  BatchContext context() const { return BatchContext{ids, valid, valid, special, idf, true, true, BatchSource::corpus, 0}; }
};

nlohmann::ordered_json finalize(const HeadClassifier& classifier, int layer, int head, std::vector<std::string>& labels) {
  nlohmann::ordered_json scores = nlohmann::ordered_json::object();
  HeadVerdict verdict{scores, labels};
  const Thresholds thresholds = resolve_thresholds({});
  classifier.finalize(layer, head, thresholds, verdict);
  return scores;
}

}  // namespace

TEST_CASE("scores count real queries only", "[classifiers]") {
  Batch batch;
  auto classifiers = make_classifiers();
  for (auto& classifier : classifiers) {
    classifier->begin(ModelShape{1, 2});
    if (classifier->source() == BatchSource::corpus) classifier->observe(0, batch.attention, batch.context());
  }
  std::vector<std::string> labels;
  nlohmann::ordered_json scores = nlohmann::ordered_json::object();
  HeadVerdict verdict{scores, labels};
  const Thresholds thresholds = resolve_thresholds({});
  for (const auto& classifier : classifiers) classifier->finalize(0, 0, thresholds, verdict);
  // Head 0: content queries 1..4 and 1..2 all attend i-1; query 0 attends itself.
  CHECK(scores["previous_token"].get<double>() == Approx(1.0));
  CHECK(scores["first_token"].get<double>() == Approx(2.0 / 6));
  CHECK(scores["self"].get<double>() == Approx(2.0 / 8));
  CHECK(scores["mean_distance"].get<double>() == Approx(6.0 / 8));
  CHECK(scores["positional"]["offset"] == -1);
  CHECK(scores["positional"]["argmax_rate"].get<double>() == Approx(1.0));
  // Only queries 3 and 4 of sequence 0 see 3 content keys; each attends a token less rare than itself.
  CHECK(scores["rare_word"].get<double>() == Approx(0.0));
  // Their rarest visible token is the query's own, one of 3 and one of 4 keys.
  CHECK(scores["rare_word_baseline"].get<double>() == Approx((1.0 / 3 + 1.0 / 4) / 2));
  CHECK((labels == std::vector<std::string>{"previous-token", "positional"}));

  labels.clear();
  scores = nlohmann::ordered_json::object();
  for (const auto& classifier : classifiers) classifier->finalize(0, 1, thresholds, verdict);
  // Head 1: uniform; normalized entropy is 1 for every query with two or more keys.
  CHECK(scores["entropy"].get<double>() == Approx(1.0));
  const double confidence = (1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1 + 1.0 / 2 + 1.0 / 3) / 8;
  CHECK(scores["confidence"].get<double>() == Approx(confidence));
  CHECK((labels == std::vector<std::string>{"broad"}));
}

TEST_CASE("the template's suffix is a key, never a query", "[classifiers]") {
  // The batch above with a suffix ([SEP]) as the last token of each sequence: position 4 of
  // sequence 0 and 2 of sequence 1. Queries: 0..3 and 0..1; content queries: 1..3 and 1.
  Batch batch;
  batch.special = torch::tensor({1, 0, 0, 0, 1, 1, 0, 1, 0, 0}, torch::kBool).view({2, 5});
  const at::Tensor queries = torch::tensor({1, 1, 1, 1, 0, 1, 1, 0, 0, 0}, torch::kBool).view({2, 5});
  const double inf = std::numeric_limits<double>::infinity();
  batch.idf = torch::tensor({-inf, 1.0, 2.0, 3.0, -inf, -inf, 5.0, -inf, -inf, -inf}).view({2, 5});
  const BatchContext context{batch.ids, batch.valid, queries, batch.special, batch.idf, true, true,
                             BatchSource::corpus, 0};
  auto classifiers = make_classifiers();
  for (auto& classifier : classifiers) {
    classifier->begin(ModelShape{1, 2});
    if (classifier->source() == BatchSource::corpus) classifier->observe(0, batch.attention, context);
  }
  std::vector<std::string> labels;
  nlohmann::ordered_json scores = nlohmann::ordered_json::object();
  HeadVerdict verdict{scores, labels};
  const Thresholds thresholds = resolve_thresholds({});
  for (const auto& classifier : classifiers) classifier->finalize(0, 0, thresholds, verdict);
  CHECK(scores["previous_token"].get<double>() == Approx(1.0));
  CHECK(scores["first_token"].get<double>() == Approx(2.0 / 4));  // not 2/6: the suffix rows are out
  CHECK(scores["self"].get<double>() == Approx(2.0 / 6));
  CHECK(scores["mean_distance"].get<double>() == Approx(4.0 / 6));
  CHECK(scores["positional"]["weight"].get<double>() == Approx(1.0));
  // Only query 3 of sequence 0 sees 3 content keys (the suffix is special): it attends idf 2 of 1, 2, 3.
  CHECK(scores["rare_word"].get<double>() == Approx(0.0));
  CHECK(scores["rare_word_baseline"].get<double>() == Approx(1.0 / 3));

  labels.clear();
  scores = nlohmann::ordered_json::object();
  for (const auto& classifier : classifiers) classifier->finalize(0, 1, thresholds, verdict);
  CHECK(scores["entropy"].get<double>() == Approx(1.0));
  const double confidence = (1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1 + 1.0 / 2) / 6;
  CHECK(scores["confidence"].get<double>() == Approx(confidence));
}

TEST_CASE("statistics of two halves merge into those of the whole", "[classifiers]") {
  Batch batch;
  const at::Tensor first_half = batch.attention.slice(0, 0, 1);
  const at::Tensor second_half = batch.attention.slice(0, 1, 2);
  for (auto& factory : {make_previous_token_classifier, make_positional_classifier, make_entropy_classifier,
                        make_rare_word_classifier}) {
    auto whole = factory();
    auto part_a = factory();
    auto part_b = factory();
    for (auto* classifier : {whole.get(), part_a.get(), part_b.get()}) classifier->begin(ModelShape{1, 2});
    whole->observe(0, batch.attention, batch.context());
    const BatchContext context_a{batch.ids.slice(0, 0, 1), batch.valid.slice(0, 0, 1), batch.valid.slice(0, 0, 1), batch.special.slice(0, 0, 1),
                                 batch.idf.slice(0, 0, 1), true, true, BatchSource::corpus, 0};
    const BatchContext context_b{batch.ids.slice(0, 1, 2), batch.valid.slice(0, 1, 2), batch.valid.slice(0, 1, 2), batch.special.slice(0, 1, 2),
                                 batch.idf.slice(0, 1, 2), true, true, BatchSource::corpus, 0};
    part_a->observe(0, first_half, context_a);
    part_b->observe(0, second_half, context_b);
    part_a->merge(part_b->save());
    for (int head = 0; head < 2; ++head) {
      std::vector<std::string> labels_whole, labels_merged;
      CHECK(finalize(*whole, 0, head, labels_whole) == finalize(*part_a, 0, head, labels_merged));
      CHECK(labels_whole == labels_merged);
    }
    auto other_shape = factory();
    other_shape->begin(ModelShape{2, 2});
    CHECK_THROWS_AS(other_shape->merge(whole->save()), InputError);
  }
}

namespace {

// Two causal sequences of 6 and 5 tokens (padded to 6) for rare_word, idf per position:
//   sequence 0: BOS 2 2 2 3 3     sequence 1: BOS 1 4 1 1 pad
// Head 0 attends the last visible key of maximal idf, head 1 itself, head 2 BOS.
struct RareWordBatch {
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor ids = torch::zeros({2, 6}, torch::kInt64);
  at::Tensor valid = torch::tensor({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, torch::kBool).view({2, 6});
  at::Tensor special = torch::tensor({1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}, torch::kBool).view({2, 6});
  at::Tensor idf = torch::tensor({-inf, 2.0, 2.0, 2.0, 3.0, 3.0, -inf, 1.0, 4.0, 1.0, 1.0, -inf}).view({2, 6});

  // Causal: keys j <= i; bidirectional: every real key.
  at::Tensor attention(bool causal) const {
    at::Tensor attention = torch::zeros({2, 3, 6, 6});
    const at::Tensor values = idf.to(torch::kDouble);
    const auto rows = values.accessor<double, 2>();
    for (int b = 0; b < 2; ++b) {
      const int length = b == 0 ? 6 : 5;
      for (int i = 0; i < length; ++i) {
        int rarest = 0;
        for (int j = 1; j < (causal ? i + 1 : length); ++j) {
          if (rarest == 0 || rows[b][j] >= rows[b][rarest]) rarest = j;
        }
        attention[b][0][i][rarest] = 1;
        attention[b][1][i][i] = 1;
        attention[b][2][i][0] = 1;
      }
      for (int i = length; i < 6; ++i) attention[b].select(/*dim=*/1, i).fill_(1.0 / 6);  // padded queries
    }
    return attention;
  }
  BatchContext context(bool causal) const {
    return BatchContext{ids, valid, valid, special, idf, causal, true, BatchSource::corpus, 0};
  }
};

// The rare_word scores and labels of the three heads after observing `batch` on two layers.
std::vector<std::pair<nlohmann::ordered_json, std::vector<std::string>>> rare_word_verdicts(
    const RareWordBatch& batch, bool causal, const Thresholds& overrides = {}) {
  auto classifier = make_rare_word_classifier();
  classifier->begin(ModelShape{2, 3, causal});
  for (int layer = 0; layer < 2; ++layer) classifier->observe(layer, batch.attention(causal), batch.context(causal));
  const Thresholds thresholds = resolve_thresholds(overrides);
  std::vector<std::pair<nlohmann::ordered_json, std::vector<std::string>>> verdicts(3);
  for (int head = 0; head < 3; ++head) {
    verdicts[head].first = nlohmann::ordered_json::object();
    HeadVerdict verdict{verdicts[head].first, verdicts[head].second};
    classifier->finalize(1, head, thresholds, verdict);
  }
  return verdicts;
}

}  // namespace

TEST_CASE("rare_word against its chance baseline", "[classifiers][rare_word]") {
  const RareWordBatch batch;
  SECTION("causal: a query whose visible keys all tie at the maximal idf is left out") {
    // Counted queries (visible content keys n, of maximal idf k): sequence 0 query 4 (n 4, k 1) and
    // query 5 (5, 2); query 3 sees 2 2 2, all maximal, and is left out; sequence 1 query 3 (3, 1)
    // and query 4 (4, 1).
    const auto verdicts = rare_word_verdicts(batch, /*causal=*/true);
    const double baseline = (1.0 / 4 + 2.0 / 5 + 1.0 / 3 + 1.0 / 4) / 4;
    for (const auto& [scores, labels] : verdicts) {
      REQUIRE(scores.contains("rare_word_baseline"));
      CHECK(scores["rare_word_baseline"].get<double>() == Approx(baseline).epsilon(1e-5));
      // rare_word_baseline comes right after rare_word.
      CHECK(std::next(scores.find("rare_word")).key() == "rare_word_baseline");
    }
    CHECK(verdicts[0].first["rare_word"].get<double>() == Approx(1.0));
    CHECK(verdicts[0].second == std::vector<std::string>{"rare-word"});
    // Itself: the maximum at queries 4 and 5 of sequence 0 only (3/5 if query 3 counted).
    CHECK(verdicts[1].first["rare_word"].get<double>() == Approx(0.5));
    CHECK(verdicts[1].second.empty());
    CHECK(verdicts[2].first["rare_word"].get<double>() == Approx(0.0));
    CHECK(verdicts[2].second.empty());
  }
  SECTION("bidirectional: every real key is visible") {
    // Sequence 0: 5 content keys, 2 of idf 3, for its 6 queries; sequence 1: 4, 1 of idf 4, for 5.
    const auto verdicts = rare_word_verdicts(batch, /*causal=*/false);
    REQUIRE(verdicts[0].first.contains("rare_word_baseline"));
    CHECK(verdicts[0].first["rare_word_baseline"].get<double>() == Approx((6 * 2.0 / 5 + 5 * 1.0 / 4) / 11));
    CHECK(verdicts[0].first["rare_word"].get<double>() == Approx(1.0));
    CHECK(verdicts[0].second == std::vector<std::string>{"rare-word"});
    CHECK(verdicts[1].first["rare_word"].get<double>() == Approx(3.0 / 11));  // queries 4, 5 and 2
    CHECK(verdicts[2].first["rare_word"].get<double>() == Approx(0.0));
  }
  SECTION("the label needs rare_word ≥ baseline + rare_word_margin") {
    // 1.0 against 0.308 + 0.7.
    const auto verdicts = rare_word_verdicts(batch, /*causal=*/true, {{"rare_word_margin", 0.7}});
    CHECK(verdicts[0].first["rare_word"].get<double>() == Approx(1.0));
    CHECK(verdicts[0].second.empty());
    CHECK(rare_word_verdicts(batch, /*causal=*/true, {{"rare_word_margin", 0.69}})[0].second ==
          std::vector<std::string>{"rare-word"});
  }
  SECTION("no query counts: both scores are null") {
    RareWordBatch all_tied;
    all_tied.idf = torch::tensor({-all_tied.inf, 2.0, 2.0, 2.0, 2.0, 2.0, -all_tied.inf, 1.0, 1.0, 1.0, 1.0,
                                  -all_tied.inf})
                       .view({2, 6});
    const auto verdicts = rare_word_verdicts(all_tied, /*causal=*/true);
    REQUIRE(verdicts[0].first.contains("rare_word_baseline"));
    CHECK(verdicts[0].first["rare_word"].is_null());
    CHECK(verdicts[0].first["rare_word_baseline"].is_null());
    CHECK(verdicts[0].second.empty());
  }
}

TEST_CASE("thresholds and primary labels", "[classifiers]") {
  const Thresholds defaults = resolve_thresholds({});
  CHECK(defaults.at("previous_token") == 0.5);
  CHECK(defaults.at("rare_word") == 0.5);
  CHECK(defaults.at("rare_word_margin") == 0.2);
  CHECK(defaults.at("positional") == 0.8);
  CHECK(defaults.at("first_token") == 0.6);
  CHECK(defaults.at("entropy") == 0.8);
  CHECK(resolve_thresholds({{"positional", 0.9}}).at("positional") == 0.9);
  CHECK_THROWS_WITH(resolve_thresholds({{"positionl", 0.9}}),
                    Catch::Contains("positionl") && Catch::Contains("previous_token"));
  CHECK(primary_label({"broad", "positional", "previous-token"}) == "previous-token");
  CHECK(primary_label({"first-token", "broad"}) == "first-token");
  CHECK(primary_label({}) == "none");
}

namespace {

// Causal attention [2, 3, T, T] with random weights over each query's visible keys, for two
// sequences of T and T − 4 tokens (padded to T; the padded rows attend like any other and must not
// count).
struct CausalBatch {
  std::int64_t length;
  at::Tensor ids, valid, special, idf, attention;

  explicit CausalBatch(std::int64_t tokens) : length(tokens) {
    torch::manual_seed(7);
    ids = torch::zeros({2, length}, torch::kInt64);
    valid = torch::ones({2, length}, torch::kBool);
    valid[1].slice(/*dim=*/0, length - 4).fill_(false);
    special = torch::zeros({2, length}, torch::kBool);
    idf = torch::zeros({2, length});
    const at::Tensor later = torch::ones({length, length}, torch::kBool).triu(/*diagonal=*/1);
    attention = torch::randn({2, 3, length, length}).mul(3).masked_fill(later, -std::numeric_limits<float>::infinity()).softmax(-1);
  }
  BatchContext context(std::int64_t first_row) const {
    BatchContext context{ids, valid, valid, special, idf, true, true, BatchSource::corpus, 0};
    context.first_row = first_row;
    return context;
  }
};

// The classifier's scores of layer 0's heads after it observed `batch` in row blocks of `rows`
// (the last one shorter), as views of the whole or, with `copy`, as blocks of their own.
std::vector<nlohmann::ordered_json> blocked_scores(HeadClassifier& classifier, const CausalBatch& batch,
                                                   std::int64_t rows, bool copy, const Thresholds& thresholds) {
  classifier.configure(thresholds);
  classifier.begin(ModelShape{1, 3});
  for (std::int64_t first = 0; first < batch.length; first += rows) {
    const at::Tensor block = batch.attention.narrow(/*dim=*/2, first, std::min(rows, batch.length - first));
    classifier.observe(0, copy ? block.contiguous() : block, batch.context(first));
  }
  std::vector<nlohmann::ordered_json> scores;
  for (int head = 0; head < 3; ++head) {
    std::vector<std::string> labels;
    scores.push_back(nlohmann::ordered_json::object());
    HeadVerdict verdict{scores.back(), labels};
    classifier.finalize(0, head, thresholds, verdict);
  }
  return scores;
}

}  // namespace

TEST_CASE("streaming counts absolute positions in every row block", "[classifiers][streaming]") {
  const CausalBatch batch(20);
  // S = 2, W = 5: queries i ≥ 7 keep keys 0, 1 and i − 4 .. i.
  const Thresholds thresholds = resolve_thresholds({{"streaming_sink", 2}, {"streaming_window", 5}});
  const at::Tensor a = batch.attention.to(torch::kDouble);
  for (int head = 0; head < 3; ++head) {
    double sum = 0;
    std::int64_t count = 0;
    for (int b = 0; b < 2; ++b) {
      for (std::int64_t i = 7; i < (b == 0 ? 20 : 16); ++i) {
        sum += a[b][head][i].slice(0, 0, 2).sum().item<double>() + a[b][head][i].slice(0, i - 4, i + 1).sum().item<double>();
        ++count;
      }
    }
    CAPTURE(head);
    const auto whole = blocked_scores(*make_streaming_classifier(), batch, 20, false, thresholds);
    CHECK(whole[head]["streaming"].get<double>() == Approx(sum / count).margin(1e-6));
    for (const std::int64_t rows : {1, 7}) {
      for (const bool copy : {false, true}) {
        CAPTURE(rows, copy);
        const auto blocked = blocked_scores(*make_streaming_classifier(), batch, rows, copy, thresholds);
        CHECK(blocked[head]["streaming"].get<double>() == Approx(whole[head]["streaming"].get<double>()).margin(1e-6));
      }
    }
  }
  // Blocks that end before query S + W count nothing.
  const auto early = blocked_scores(*make_streaming_classifier(), CausalBatch(7), 3, false, thresholds);
  CHECK(early[0]["streaming"].is_null());
}

TEST_CASE("streaming_duo scores DuoAttention's cache of 128 sink and 256 recent tokens", "[classifiers][streaming]") {
  CausalBatch batch(400);
  // Head 0 attends uniformly within the cache (keys j < 128 and i − 256 < j ≤ i), head 1 uniformly
  // over every key it sees, head 2 at random.
  const at::Tensor position = torch::arange(400);
  const at::Tensor query = position.view({-1, 1});
  const at::Tensor key = position.view({1, -1});
  const at::Tensor visible = key.le(query).to(torch::kFloat);
  const at::Tensor cached = key.lt(128).logical_or(key.gt(query - 256)).to(torch::kFloat) * visible;
  batch.attention[0][0] = cached / cached.sum(-1, /*keepdim=*/true);
  batch.attention[1][0] = batch.attention[0][0];
  batch.attention[0][1] = visible / visible.sum(-1, /*keepdim=*/true);
  batch.attention[1][1] = batch.attention[0][1];
  // Head 1 keeps 384 of the i + 1 keys of queries i ≥ 384: queries 384 .. 399 of sequence 0 and
  // 384 .. 395 of sequence 1 (its last 4 tokens are padding).
  double kept = 0;
  for (int i = 384; i < 400; ++i) kept += 384.0 / (i + 1) * (i < 396 ? 2 : 1);
  const double uniform = kept / 28;
  // streaming_duo does not depend on --sink and --window.
  const Thresholds thresholds = resolve_thresholds({{"streaming_sink", 2}, {"streaming_window", 5}});
  for (const std::int64_t rows : {400, 7, 1}) {
    CAPTURE(rows);
    const auto scores = blocked_scores(*make_streaming_duo_classifier(), batch, rows, false, thresholds);
    CHECK(scores[0]["streaming_duo"].get<double>() == Approx(1.0).margin(1e-6));
    CHECK(scores[1]["streaming_duo"].get<double>() == Approx(uniform).margin(1e-6));
    CHECK(scores[1]["streaming_duo"].get<double>() < 0.99);
  }
  std::vector<std::string> labels;
  nlohmann::ordered_json scores = nlohmann::ordered_json::object();
  HeadVerdict verdict{scores, labels};
  auto classifier = make_streaming_duo_classifier();
  classifier->begin(ModelShape{1, 3});
  classifier->observe(0, batch.attention, batch.context(0));
  classifier->finalize(0, 0, resolve_thresholds({}), verdict);
  CHECK(labels.empty());  // a score without a label of its own
  // Its statistics of the two sequences apart, merged, are those of the batch (shards).
  auto merged = make_streaming_duo_classifier();
  auto second = make_streaming_duo_classifier();
  merged->begin(ModelShape{1, 3});
  second->begin(ModelShape{1, 3});
  CausalBatch halves[2] = {batch, batch};
  for (int b = 0; b < 2; ++b) {
    CausalBatch& half = halves[b];
    for (at::Tensor* tensor : {&half.ids, &half.valid, &half.special, &half.idf, &half.attention}) {
      *tensor = tensor->slice(/*dim=*/0, b, b + 1);
    }
    (b == 0 ? merged : second)->observe(0, half.attention, half.context(0));
  }
  merged->merge(second->save());
  for (int head = 0; head < 3; ++head) {
    std::vector<std::string> whole_labels, merged_labels;
    nlohmann::ordered_json whole_scores = nlohmann::ordered_json::object();
    nlohmann::ordered_json merged_scores = nlohmann::ordered_json::object();
    HeadVerdict whole_verdict{whole_scores, whole_labels};
    HeadVerdict merged_verdict{merged_scores, merged_labels};
    classifier->finalize(0, head, resolve_thresholds({}), whole_verdict);
    merged->finalize(0, head, resolve_thresholds({}), merged_verdict);
    CHECK(whole_scores == merged_scores);
  }
  // No query at 384 or later: null.
  const CausalBatch short_batch(384);
  CHECK(blocked_scores(*make_streaming_duo_classifier(), short_batch, 384, false, thresholds)[0]["streaming_duo"].is_null());
}
