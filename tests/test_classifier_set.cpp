// The classifier set: head types described once, each batch routed to the classifiers of its
// source, row summaries shared, and heads.json's heads (labels in primary order) from finalize.
#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "heads/classifier_set.h"
#include "heads/registry.h"

using namespace headscan;

namespace {

// One causal sequence of 7 tokens, BOS + a b c a b c: head 0 attends the previous token, head 1 the
// token after the earlier occurrence of the query's token (an induction pattern).
struct RepeatBatch {
  at::Tensor ids = torch::tensor({0, 7, 8, 9, 7, 8, 9}, torch::kInt64).view({1, 7});
  at::Tensor valid = torch::ones({1, 7}, torch::kBool);
  at::Tensor special = torch::tensor({1, 0, 0, 0, 0, 0, 0}, torch::kBool).view({1, 7});
  at::Tensor idf = torch::tensor({-1.0 / 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}).view({1, 7});
  at::Tensor attention = torch::zeros({1, 2, 7, 7});

  RepeatBatch() {
    for (int i = 0; i < 7; ++i) attention[0][0][i][std::max(0, i - 1)] = 1;
    // Induction targets: query 4 (a) → 2, query 5 (b) → 3, query 6 (c) → 4.
    for (int i : {0, 1, 2, 3}) attention[0][1][i][0] = 1;
    for (int i : {4, 5, 6}) attention[0][1][i][i - 2] = 1;
  }
  BatchContext context(BatchSource source) const {
    return BatchContext{ids, valid, valid, special, idf, /*causal=*/true, /*has_bos=*/true, source, 0};
  }
};

const nlohmann::ordered_json& scores_of(const nlohmann::ordered_json& heads, int head) { return heads[head]["scores"]; }

}  // namespace

TEST_CASE("every head type is described once, and the labels' order comes from the descriptions", "[heads]") {
  const auto& types = head_types();
  REQUIRE(types.size() == make_classifiers().size());
  std::set<std::string> names;
  for (const HeadType& type : types) {
    INFO(type.name());
    CHECK(names.insert(type.name()).second);
    for (const ScoreDescription& score : type.scores) CHECK_FALSE(score.meaning.empty());
    if (type.label.empty()) continue;
    CHECK(type.colour.size() == 7);
    CHECK(type.colour.front() == '#');
    CHECK_FALSE(type.tag.empty());
    CHECK(type.thresholds.count(type.name()) == 1);
  }
  CHECK((primary_label_order() ==
         std::vector<std::string>{"induction", "retrieval", "duplicate-token", "previous-token", "syntactic", "rare-word",
                                  "separator", "punctuation", "positional", "first-token", "streaming", "broad"}));
  std::vector<std::string> labels = {"broad", "induction", "positional"};
  sort_labels(labels);
  CHECK((labels == std::vector<std::string>{"induction", "positional", "broad"}));
}

TEST_CASE("the classifier set routes each batch to the classifiers of its source", "[heads]") {
  RepeatBatch batch;
  ClassifierSet set;
  set.begin(ModelShape{1, 2, true});
  const Thresholds thresholds = resolve_thresholds({});

  set.begin_batch();
  set.observe(0, batch.attention, batch.context(BatchSource::corpus));
  const nlohmann::ordered_json corpus_only = set.finalize(thresholds, /*kv_heads=*/2);
  REQUIRE(corpus_only.size() == 2);
  CHECK(scores_of(corpus_only, 0)["previous_token"].get<double>() == Approx(1.0));
  // The probe classifiers saw nothing: no query to average.
  CHECK(scores_of(corpus_only, 1)["induction"].is_null());
  CHECK(scores_of(corpus_only, 1)["duplicate_token"].is_null());
  // induction_text reads the corpus: queries 4, 5, 6 have an earlier occurrence at s < i - 1.
  CHECK(scores_of(corpus_only, 1)["induction_text"].get<double>() == Approx(1.0));

  set.begin_batch();
  set.observe(0, batch.attention, batch.context(BatchSource::probe));
  const nlohmann::ordered_json both = set.finalize(thresholds, /*kv_heads=*/1);
  CHECK(scores_of(both, 1)["induction"].get<double>() == Approx(1.0));
  CHECK(scores_of(both, 0)["previous_token"].get<double>() == Approx(1.0));  // unchanged by the probe batch
  CHECK(scores_of(both, 0)["induction"].get<double>() == Approx(0.0));
  CHECK(both[1]["primary"] == "induction");
  CHECK(both[0]["primary"] == "previous-token");
  CHECK(both[1]["kv_group"] == 0);  // one key/value group for both heads
  CHECK(corpus_only[1]["kv_group"] == 1);

  SECTION("statistics saved by one set merge into another") {
    ClassifierSet other;
    other.begin(ModelShape{1, 2, true});
    other.merge(set.save());
    CHECK(other.finalize(thresholds, 2) == set.finalize(thresholds, 2));
  }
}
