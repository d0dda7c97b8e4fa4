// Example sequences for the reports: in a causal model the attention recorded from a batch (the
// top-left corner of a longer, padded sequence's attention) equals the prefix run alone.
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "analyzer/run/examples.h"
#include "analyzer/model/model.h"
#include "analyzer/tokenizers/tokenizer.h"
#include "tests/fixtures.h"

using namespace headscan;

TEST_CASE("examples recorded in a causal batch equal the prefix run alone", "[examples][e2e]") {
  torch::NoGradGuard no_grad;
  auto model = InstrumentedModel::load(testing::fixture("gpt2.pt"));
  const auto tokenizer = tokenizer_from_hf_json(model->embedded_tokenizer(), "gpt2.pt:tokenizer.json");
  const ModelShape shape{2, 4, true};

  // Two sequences of 20 and 12 tokens, the second right-padded; the examples are their first 9.
  std::vector<Sequence> sequences(2);
  for (int t = 0; t < 20; ++t) sequences[0].ids.push_back(3 + (t * 7) % 50);
  for (int t = 0; t < 12; ++t) sequences[1].ids.push_back(5 + (t * 11) % 40);
  ExampleChooser chooser;
  for (auto& sequence : sequences) {
    sequence.special.assign(sequence.ids.size(), 0);
    chooser.offer(sequence);
  }
  std::vector<Sequence> prefixes = chooser.chosen();
  for (auto& prefix : prefixes) {
    prefix.ids.resize(9);
    prefix.special.resize(9);
  }
  CHECK(sequences[0].example == 0);
  CHECK(sequences[1].example == 1);

  std::vector<ExampleSequence> recorded;
  for (const auto& prefix : prefixes) recorded.push_back(make_example(prefix, *tokenizer, shape, "corpus line"));
  at::Tensor ids = torch::zeros({2, 20}, torch::kInt64);
  at::Tensor mask = torch::zeros({2, 20}, torch::kInt64);
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t t = 0; t < sequences[b].ids.size(); ++t) {
      ids[static_cast<std::int64_t>(b)][static_cast<std::int64_t>(t)] = sequences[b].ids[t];
      mask[static_cast<std::int64_t>(b)][static_cast<std::int64_t>(t)] = 1;
    }
  }
  model->forward(ids, &mask, [&](int layer, const at::Tensor& attention, std::int64_t first_row) {
    for (std::int64_t b = 0; b < 2; ++b) {
      record_example_attention(recorded[static_cast<std::size_t>(b)], layer, attention[b], first_row);
    }
  });

  const auto alone = capture_examples(*model, prefixes, *tokenizer, shape, "corpus line");
  REQUIRE(alone.size() == 2);
  for (std::size_t e = 0; e < 2; ++e) {
    REQUIRE(recorded[e].attention.size() == 2 * 4 * 9 * 9);
    CHECK(recorded[e].tokens == alone[e].tokens);
    float largest_difference = 0;
    for (std::size_t i = 0; i < recorded[e].attention.size(); ++i) {
      largest_difference = std::max(largest_difference, std::abs(recorded[e].attention[i] - alone[e].attention[i]));
    }
    CHECK(largest_difference < 1e-5f);
    CHECK(recorded[e].weight(1, 0, 8, 0) + recorded[e].weight(1, 0, 8, 8) > 0.0f);  // not left at zero
  }
}

namespace {

nlohmann::json without_run(nlohmann::json document) {
  document.erase("run");
  return document;
}

}  // namespace

TEST_CASE("the prompts of --examples are the report's examples and change no score", "[examples][e2e]") {
  testing::TempDir dir;
  const std::string prompts = dir.write("prompts.txt", "w3 w4 w5 w3 w4 w5\n\nw10 w11 w12\n");
  const std::string corpus = testing::fixture("random_corpus.txt");
  for (const std::string model : {"gpt2.pt", "bert.pt"}) {
    INFO(model);
    const auto with = dir / (model + "-with");
    const auto without = dir / (model + "-without");
    const auto run = testing::run_headscan(
        {testing::fixture(model), corpus, "-o", with.string(), "--examples", prompts, "--parser", "none", "-q"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    REQUIRE(testing::run_headscan({testing::fixture(model), corpus, "-o", without.string(), "--parser", "none", "-q"})
                .exit_code == 0);
    CHECK(without_run(testing::read_json(with / "heads.json")) == without_run(testing::read_json(without / "heads.json")));
    const std::string examples = testing::read_file(with / "data" / "examples.js");
    CHECK_THAT(examples, Catch::Contains("\"source\":\"example 1\"") && Catch::Contains("\"source\":\"example 3\""));
    CHECK_THAT(examples, Catch::Contains("[\"\\u003cs\\u003e\",\"w3\",\"w4\",\"w5\",\"w3\",\"w4\",\"w5\"]"));
    CHECK_THAT(examples, Catch::Contains("[\"\\u003cs\\u003e\",\"w10\",\"w11\",\"w12\"]"));
    CHECK(examples.find("corpus line") == std::string::npos);
    CHECK(examples.find("example 2") == std::string::npos);  // the empty line gives no example
  }
  SECTION("shards show the same prompts") {
    std::vector<std::string> shards;
    for (int index = 0; index < 2; ++index) {
      const auto shard = dir / ("shard" + std::to_string(index));
      REQUIRE(testing::run_headscan({testing::fixture("gpt2.pt"), corpus, "--shard", std::to_string(index) + "/2", "-o",
                                     shard.string(), "--examples", prompts, "--parser", "none", "-q"})
                  .exit_code == 0);
      shards.push_back(shard.string());
    }
    const auto merged = dir / "merged";
    REQUIRE(testing::run_headscan({"merge", shards[0], shards[1], "-o", merged.string(), "-q"}).exit_code == 0);
    CHECK(testing::read_file(merged / "data" / "examples.js") ==
          testing::read_file(dir / "gpt2.pt-with" / "data" / "examples.js"));
  }
  SECTION("a file without prompts is refused, extra prompts are left out with a warning") {
    const std::string empty = dir.write("empty.txt", "\n\n");
    const auto refused = testing::run_headscan({testing::fixture("gpt2.pt"), corpus, "-o", (dir / "x").string(),
                                                "--examples", empty, "--parser", "none", "-q"});
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Catch::Contains("--examples") && Catch::Contains("no line gives any token"));
    CHECK_FALSE(std::filesystem::exists(dir / "x"));
    std::string many;
    for (int line = 0; line < 10; ++line) many += "w" + std::to_string(3 + line) + " w9\n";
    const auto warned = testing::run_headscan({testing::fixture("gpt2.pt"), corpus, "-o", (dir / "y").string(),
                                               "--examples", dir.write("many.txt", many), "--parser", "none"});
    CHECK(warned.exit_code == 0);
    CHECK_THAT(warned.err, Catch::Contains("the report shows the first 8 of its 10 prompts"));
  }
}
