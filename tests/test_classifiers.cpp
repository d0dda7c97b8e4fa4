// Classifiers on hand-made attention tensors: masks for padding and BOS, merging of statistics,
// labels and their order.
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
  BatchContext context() const { return BatchContext{ids, valid, special, idf, true, true, BatchSource::corpus, 0}; }
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

TEST_CASE("statistics of two halves merge into those of the whole", "[classifiers]") {
  Batch batch;
  const at::Tensor first_half = batch.attention.slice(0, 0, 1);
  const at::Tensor second_half = batch.attention.slice(0, 1, 2);
  for (auto& factory : {make_previous_token_classifier, make_positional_classifier, make_entropy_classifier}) {
    auto whole = factory();
    auto part_a = factory();
    auto part_b = factory();
    for (auto* classifier : {whole.get(), part_a.get(), part_b.get()}) classifier->begin(ModelShape{1, 2});
    whole->observe(0, batch.attention, batch.context());
    const BatchContext context_a{batch.ids.slice(0, 0, 1), batch.valid.slice(0, 0, 1), batch.special.slice(0, 0, 1),
                                 batch.idf.slice(0, 0, 1), true, true, BatchSource::corpus, 0};
    const BatchContext context_b{batch.ids.slice(0, 1, 2), batch.valid.slice(0, 1, 2), batch.special.slice(0, 1, 2),
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

TEST_CASE("thresholds and primary labels", "[classifiers]") {
  const Thresholds defaults = resolve_thresholds({});
  CHECK(defaults.at("previous_token") == 0.5);
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
