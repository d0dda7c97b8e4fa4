// headscan merge checks each shard's state as a whole before it adds anything (issue 23): a count
// that is not a whole number, a mean outside its range, a name it does not know, another version,
// a time that is not one, an examples.bin that holds no attention: exit 2, a message naming the
// shard's file, the field and the rule, and nothing written. Untouched shards still merge.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "analyzer/errors.h"
#include "analyzer/run/shards/shard_state.h"
#include "heads/classifier_set.h"
#include "heads/statistic_limits.h"
#include "tests/fixtures.h"

using Catch::Matchers::Contains;
using headscan::testing::fixture;
using headscan::testing::read_file;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;
using Json = nlohmann::ordered_json;

namespace fs = std::filesystem;

namespace {

// A run's shards and the damaged copies made of them; merges into `out`, which must never appear.
class DamagedShards {
 public:
  DamagedShards(const TempDir& dir, std::vector<std::string> shards) : dir_(dir), shards_(std::move(shards)) {}

  // Merges the shards with shard `index` replaced by a copy that `damage` changed; returns the
  // message after checking the refusal (exit 2, nothing written) and that it names the copy's file.
  std::string refused(std::size_t index, const std::function<void(Json&)>& damage) {
    const fs::path copy = copy_of(index);
    Json state = Json::parse(read_file(copy / "state.json"));
    damage(state);
    std::ofstream(copy / "state.json") << state.dump();
    std::vector<std::string> directories = shards_;
    directories[index] = copy.string();
    const std::string err = refused(directories);
    CHECK_THAT(err, Contains((copy / "state.json").string()));
    return err;
  }

  // The same with float `position` of the copy's examples.bin set to `value`.
  std::string refused_examples(std::size_t index, std::uint64_t position, float value) {
    const fs::path copy = copy_of(index);
    std::fstream file(copy / "examples.bin", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(position * sizeof(float)));
    file.write(reinterpret_cast<const char*>(&value), sizeof value);
    file.close();
    std::vector<std::string> directories = shards_;
    directories[index] = copy.string();
    const std::string err = refused(directories);
    CHECK_THAT(err, Contains((copy / "examples.bin").string()));
    return err;
  }

  // Every shard edited the same way (what all shards must agree on).
  std::string refused_all(const std::function<void(Json&)>& damage) {
    std::vector<std::string> directories;
    for (std::size_t index = 0; index < shards_.size(); ++index) {
      const fs::path copy = copy_of(index);
      Json state = Json::parse(read_file(copy / "state.json"));
      damage(state);
      std::ofstream(copy / "state.json") << state.dump();
      directories.push_back(copy.string());
    }
    return refused(directories);
  }

  const fs::path& out() const { return out_; }

 private:
  fs::path copy_of(std::size_t index) {
    const fs::path copy = dir_ / ("damaged" + std::to_string(++copies_));
    fs::copy(shards_.at(index), copy);
    return copy;
  }
  std::string refused(const std::vector<std::string>& directories) {
    std::vector<std::string> args = {"merge"};
    args.insert(args.end(), directories.begin(), directories.end());
    args.insert(args.end(), {"-o", out_.string(), "-q"});
    const auto result = run_headscan(args);
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK_FALSE(fs::exists(out_));
    return result.err;
  }

  const TempDir& dir_;
  std::vector<std::string> shards_;
  fs::path out_ = dir_ / "out";
  int copies_ = 0;
};

std::vector<std::string> shard_runs(const TempDir& dir, const std::string& model, const std::string& corpus,
                                    const std::vector<std::string>& options) {
  std::vector<std::string> directories;
  for (int index = 0; index < 2; ++index) {
    const fs::path out = dir / ("shard" + std::to_string(index));
    std::vector<std::string> args = {model, corpus, "--shard", std::to_string(index) + "/2", "-o", out.string(), "-q"};
    args.insert(args.end(), options.begin(), options.end());
    const auto result = run_headscan(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    directories.push_back(out.string());
  }
  return directories;
}

// Sets every layer's count of a HeadMeans to `count`.
void set_counts(Json& means, const Json& count) {
  for (auto& layer_count : means["counts"]) layer_count = count;
}

}  // namespace

TEST_CASE("merge refuses counts, means, names, versions and times a shard cannot have", "[shards][e2e]") {
  TempDir dir;
  // One chunk of corpus: shard 1 reads all of it, shard 0 runs the probes.
  const std::string corpus = dir.write("corpus.txt", word_corpus(std::vector<int>(300, 12), 21));
  const std::string model = fixture("random_gpt2.pt");
  const std::vector<std::string> options = {"--parser", "none"};
  const auto shards = shard_runs(dir, model, corpus, options);
  const Json corpus_state = Json::parse(read_file(fs::path(shards[1]) / "state.json"));
  const std::int64_t tokens = corpus_state["counts"]["tokens"].get<std::int64_t>();
  const std::int64_t sequences = corpus_state["counts"]["sequences"].get<std::int64_t>();
  REQUIRE(tokens > 1000);
  REQUIRE(corpus_state["statistics"]["confidence"]["counts"][0] == tokens);
  REQUIRE(Json::parse(read_file(fs::path(shards[0]) / "state.json"))["document"]["probes"]["count"] == 10);

  // Untouched, they merge to the single run.
  const fs::path single = dir / "single";
  REQUIRE(run_headscan({model, corpus, "-o", single.string(), "-q", "--no-html", "--no-plots", "--parser", "none"})
              .exit_code == 0);
  const fs::path merged = dir / "merged";
  REQUIRE(run_headscan({"merge", shards[0], shards[1], "-o", merged.string(), "-q", "--no-html", "--no-plots"})
              .exit_code == 0);
  nlohmann::json expected = read_json(single / "heads.json");
  nlohmann::json found = read_json(merged / "heads.json");
  expected.erase("run");
  found.erase("run");
  CHECK(found == expected);

  // Blocks rather than SECTIONs, which would run the shards again for each.
  DamagedShards damaged(dir, shards);
  auto statistic = [](const char* name) { return [name](Json& state) -> Json& { return state["statistics"][name]; }; };
  const auto confidence = statistic("confidence");

  {
    INFO("counts are whole numbers from 0 to 2^42");
    for (const Json& count : {Json(1.5), Json(0.5), Json(2.0), Json(-3), Json("7"), Json(std::uint64_t{1} << 43)}) {
      INFO(count.dump());
      const std::string err = damaged.refused(1, [&](Json& state) { confidence(state)["counts"][0] = count; });
      CHECK_THAT(err, Contains("statistics.confidence.counts[0] is " + count.dump()) && Contains("whole number"));
    }
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["rare_word"]["baseline"]["count"] = 2.5; }),
               Contains("statistics.rare_word.baseline.count is 2.5") && Contains("whole number"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["counts"]["tokens"] = 17356.0; }),
               Contains("counts.tokens is 17356.0") && Contains("whole number"));
  }

  {
    INFO("a count is within what the shard's tokens, sequences and probes allow");
    CHECK_THAT(damaged.refused(1, [&](Json& state) { set_counts(confidence(state), std::int64_t{1} << 42); }),
               Contains("statistics.confidence.counts[0] is 4398046511104") && Contains("counts.tokens") &&
                   Contains(std::to_string(tokens)));
    // previous_token's queries are i >= 1: not the first token of a sequence.
    CHECK_THAT(damaged.refused(1, [&](Json& state) { set_counts(state["statistics"]["previous_token"], tokens); }),
               Contains("statistics.previous_token.counts[0]") && Contains("counts.tokens - counts.sequences") &&
                   Contains(std::to_string(tokens - sequences)));
    // Shard 1 ran no probe.
    CHECK_THAT(damaged.refused(1, [&](Json& state) { set_counts(state["statistics"]["induction"], 5); }),
               Contains("statistics.induction.counts[0] is 5") && Contains("document.probes.count"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["document"]["probes"]["count"] = 10; }),
               Contains("document.probes.count is 10") && Contains("shard 0 only"));
    CHECK_THAT(damaged.refused(1, [&](Json& state) { state["counts"]["sequences"] = tokens + 1; }),
               Contains("counts.tokens") && Contains("a sequence has 1 to"));
    CHECK_THAT(damaged.refused(1, [&](Json& state) { confidence(state)["counts"][2] = tokens - 1; }),
               Contains("statistics.confidence.counts[2]") && Contains("every layer sees the same queries"));
    CHECK_THAT(damaged.refused(1,
                               [&](Json& state) {
                                 auto& rare_word = state["statistics"]["rare_word"];
                                 rare_word["baseline"]["count"] = rare_word["means"]["counts"][0].get<std::int64_t>() - 1;
                               }),
               Contains("statistics.rare_word.baseline.count") && Contains("same queries"));
  }

  {
    INFO("a mean lies in its range, and no query means no sum");
    // confidence: a mean of probabilities from 0 to 1; a count of 1 makes it hundreds.
    CHECK_THAT(damaged.refused(1, [&](Json& state) { set_counts(confidence(state), 1); }),
               Contains("statistics.confidence.sums[0][0]") && Contains("above 1"));
    CHECK_THAT(damaged.refused(1, [&](Json& state) { set_counts(confidence(state), 0); }),
               Contains("statistics.confidence.sums[0][0]") && Contains("a mean of no queries has a sum of 0"));
    CHECK_THAT(damaged.refused(1,
                               [&](Json& state) {
                                 auto& baseline = state["statistics"]["rare_word"]["baseline"];
                                 baseline["sum"] = Json::array({0, (baseline["count"].get<std::uint64_t>() * 3) << 40});
                               }),
               Contains("statistics.rare_word.baseline.sum") && Contains("a mean of 3"));
    // mean_distance: at most max_length - 1 = 127 tokens.
    CHECK_THAT(damaged.refused(1,
                               [&](Json& state) {
                                 state["statistics"]["mean_distance"]["sums"][1][3] =
                                     Json::array({0, static_cast<std::uint64_t>(tokens * 200) << 40});
                               }),
               Contains("statistics.mean_distance.sums[1][3]") && Contains("a mean of 200") &&
                   Contains("agree.max_length - 1"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["self"]["sums"][0][0] = Json::array({-1, 0}); }),
               Contains("statistics.self.sums[0][0]") && Contains("below 0"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["self"]["sums"][0][0] = Json::array({0, 1.5}); }),
               Contains("statistics.self.sums[0][0] is [0,1.5]") && Contains("saved sum"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["entropy"]["sums"][0] = Json::array({1, 2}); }),
               Contains("statistics.entropy.sums[0] holds 2 heads"));
  }

  {
    INFO("every name is one headscan knows");
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["attention_sink"] = Json::object(); }),
               Contains("statistics holds \"attention_sink\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"].erase("self"); }),
               Contains("statistics has no \"self\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["self"]["note"] = 1; }),
               Contains("statistics.self holds \"note\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["statistics"]["positional"]["3"] = Json::object(); }),
               Contains("statistics.positional holds \"3\""));
    CHECK_THAT(damaged.refused(1,
                               [](Json& state) {
                                 state["statistics"]["syntactic"]["relations"]["nsubj"] = {
                                     {"d2h", {{"support", 1}, {"offsets", {{-1, 1}}}, {"correct", Json::array()}}}};
                               }),
               Contains("statistics.syntactic.relations.nsubj.d2h.correct holds 0 heads"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["extra"] = 1; }), Contains("state holds \"extra\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["counts"]["words"] = 1; }), Contains("counts holds \"words\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["shard"]["slice"] = "sideways"; }),
               Contains("shard.slice is \"sideways\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["agree"]["colour"] = "red"; }),
               Contains("agree holds \"colour\""));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["phases"]["bogus"] = 1; }),
               Contains("phases holds \"bogus\""));
    CHECK_THAT(damaged.refused_all([](Json& state) { state["agree"]["thresholds"]["loudness"] = 0.5; }),
               Contains("agree.thresholds") && Contains("loudness"));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["agree"]["shape"]["layers"] = 7; }),
               Contains("agree.shape is"));
    // The document's model.layers: a number of attention layers, or the model's list of them.
    CHECK_THAT(damaged.refused(1,
                               [](Json& state) {
                                 state["document"]["model"]["layers"] = Json::array(
                                     {{{"index", 0}, {"path", "blocks.0"}, {"kind", "attention"}},
                                      {{"index", 1}, {"path", "blocks.1"}, {"kind", "none"}}});
                               }),
               Contains("document.model's layers and heads are not those of shape"));
    CHECK_THAT(damaged.refused(1,
                               [](Json& state) {
                                 state["document"]["model"]["layers"] = Json::array(
                                     {{{"index", 0}, {"path", "blocks.0"}, {"kind", "recurrent"}}});
                               }),
               Contains("model.layers must list") && Contains("known kind"));
  }

  {
    INFO("the headscan version is checked wherever a state writes it");
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["headscan_version"] = "9.9.9"; }),
               Contains("headscan_version is \"9.9.9\"") && Contains("this is headscan " HEADSCAN_VERSION));
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["document"]["headscan_version"] = "9.9.9"; }),
               Contains("document.headscan_version is \"9.9.9\""));
    CHECK_THAT(damaged.refused_all([](Json& state) { state["agree"]["headscan_version"] = "9.9.9"; }),
               Contains("agree.headscan_version is \"9.9.9\""));
  }

  {
    INFO("times are finite and not negative");
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["seconds"] = -1e308; }),
               Contains("seconds is -1e+308") && Contains("seconds from 0"));
    CHECK_THAT(damaged.refused(0, [](Json& state) { state["phases"]["probes"] = -1; }), Contains("phases.probes is -1"));
    CHECK_THAT(damaged.refused(0, [](Json& state) { state["phases"]["load"] = 1e300; }), Contains("phases.load is"));
  }

  {
    INFO("examples lie end to end in examples.bin, and their weights are probabilities");
    REQUIRE(corpus_state["examples"].size() >= 2);
    CHECK_THAT(damaged.refused(1, [](Json& state) { state["examples"][1]["offset"] = state["examples"][0]["offset"]; }),
               Contains("examples[1].offset is 0") && Contains("no two overlap"));
    CHECK_THAT(damaged.refused(0, [](Json& state) { state["probe_examples"][0]["offset"] = 16; }),
               Contains("probe_examples[0].offset is 16"));
    for (const float value : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1.5f,
                              -0.25f}) {
      INFO(value);
      CHECK_THAT(damaged.refused_examples(1, 100, value), Contains("float 100 (examples[0], layer 0") &&
                                                              Contains("probability from 0 to 1"));
    }
    CHECK_THAT(damaged.refused_examples(0, 5, 2.0f), Contains("float 5 (probe_examples[0], layer 0, head 0, query 0, key 5)"));
  }
}

TEST_CASE("merge refuses relation statistics that parsed sentences cannot give", "[shards][e2e]") {
  TempDir dir;
  const auto shards = shard_runs(dir, fixture("syntax.pt"), fixture("syntax_gold.conllu"), {});
  const Json saved = Json::parse(read_file(fs::path(shards[1]) / "state.json"));
  const Json& relations = saved["statistics"]["syntactic"]["relations"];
  REQUIRE_FALSE(relations.empty());
  const std::string relation = relations.begin().key();
  const std::string direction = relations.begin().value().begin().key();
  const std::string path = "statistics.syntactic.relations." + relation + "." + direction;
  const fs::path merged = dir / "merged";
  REQUIRE(run_headscan({"merge", shards[0], shards[1], "-o", merged.string(), "-q", "--no-html", "--no-plots"})
              .exit_code == 0);

  DamagedShards damaged(dir, shards);
  auto entry = [&](Json& state) -> Json& { return state["statistics"]["syntactic"]["relations"][relation][direction]; };
  CHECK_THAT(damaged.refused(1, [&](Json& state) { state["statistics"]["syntactic"]["relations"][relation]["x2y"] = 1; }),
             Contains("statistics.syntactic.relations." + relation + " holds \"x2y\""));
  CHECK_THAT(damaged.refused(1, [&](Json& state) { state["statistics"]["syntactic"]["relations"][""] = Json::object(); }),
             Contains("statistics.syntactic.relations holds \"\": not a relation's name"));
  CHECK_THAT(damaged.refused(1, [&](Json& state) { state["statistics"]["syntactic"]["relations"]["obj"] = 3; }),
             Contains("statistics.syntactic.relations.obj is 3"));
  CHECK_THAT(damaged.refused(1, [&](Json& state) { entry(state)["support"] = 2.5; }),
             Contains(path + ".support is 2.5") && Contains("whole number"));
  CHECK_THAT(damaged.refused(1,
                             [&](Json& state) {
                               auto& offsets = entry(state)["offsets"];
                               offsets[0][1] = offsets[0][1].get<std::int64_t>() + 1;
                             }),
             Contains(path + ".offsets") && Contains("every arc has one offset"));
  CHECK_THAT(damaged.refused(1,
                             [&](Json& state) {
                               entry(state)["correct"][3] = entry(state)["support"].get<std::int64_t>() + 1;
                             }),
             Contains(path + ".correct[3]") && Contains("at most every arc"));
  CHECK_THAT(damaged.refused(1,
                             [&](Json& state) {
                               auto& offsets = entry(state)["offsets"];
                               offsets[0][0] = -100000;
                             }),
             Contains(path + ".offsets holds offset -100000") && Contains("agree.max_length"));
  CHECK_THAT(damaged.refused(1,
                             [&](Json& state) {
                               auto& offsets = entry(state)["offsets"];
                               offsets.push_back(offsets.back());
                               entry(state)["support"] =
                                   entry(state)["support"].get<std::int64_t>() + offsets.back()[1].get<std::int64_t>();
                             }),
             Contains(path + ".offsets[") && Contains("in increasing order"));
  CHECK_THAT(damaged.refused(1, [&](Json& state) { entry(state)["support"] = std::int64_t{1} << 40; }),
             Contains(path + ".offsets hold"));
  CHECK_THAT(damaged.refused(1, [&](Json& state) { state["counts"]["parsed_sentences"] = 0; }),
             Contains("statistics.syntactic.relations holds") && Contains("counts.parsed_sentences is 0"));
}

namespace {

// One causal sequence, BOS + a b a b c, with uniform attention over the visible keys.
struct UniformBatch {
  at::Tensor ids = torch::tensor({0, 7, 8, 7, 8, 9}, torch::kInt64).view({1, 6});
  at::Tensor valid = torch::ones({1, 6}, torch::kBool);
  at::Tensor special = torch::tensor({1, 0, 0, 0, 0, 0}, torch::kBool).view({1, 6});
  at::Tensor idf = torch::tensor({-1.0 / 0.0, 1.0, 2.0, 1.0, 2.0, 3.0}).view({1, 6});
  at::Tensor attention = torch::ones({6, 6}).tril().div(torch::arange(1, 7).unsqueeze(1)).expand({1, 3, 6, 6}).contiguous();

  headscan::BatchContext context(headscan::BatchSource source) const {
    return headscan::BatchContext{ids, valid, valid, special, idf, /*causal=*/true, /*has_bos=*/true, source, 0};
  }
};

headscan::StatisticLimits limits_of(std::int64_t tokens, std::int64_t sequences, std::int64_t probe_tokens) {
  headscan::StatisticLimits limits;
  limits.layers = 2;
  limits.heads = 3;
  limits.corpus_queries = {tokens, "tokens"};
  limits.later_corpus_queries = {tokens - sequences, "tokens - sequences"};
  limits.probe_queries = {probe_tokens, "probe tokens"};
  limits.max_length = {6, "max_length"};
  limits.parsed_sentences = {0, "parsed sentences"};
  return limits;
}

}  // namespace

TEST_CASE("the checks of saved statistics know what every classifier saves", "[shards]") {
  headscan::ClassifierSet set;
  set.begin(headscan::ModelShape{2, 3, true});
  std::vector<std::string> names;
  for (const auto& classifier : set.classifiers()) names.push_back(classifier->name());
  CHECK(headscan::saved_statistic_names() == names);
  // Nothing observed: every count 0.
  CHECK_NOTHROW(headscan::check_saved_statistics(set.save(), limits_of(0, 0, 0)));

  UniformBatch batch;
  for (const auto source : {headscan::BatchSource::corpus, headscan::BatchSource::probe}) {
    set.begin_batch();
    for (int layer = 0; layer < 2; ++layer) set.observe(layer, batch.attention, batch.context(source));
  }
  const nlohmann::json saved = set.save();
  const auto limits = limits_of(6, 1, 6);
  CHECK_NOTHROW(headscan::check_saved_statistics(saved, limits));
  // 12 head means, 8 positional ones, rare_word's, separator's and punctuation's: 23 per head; and
  // the chance levels of rare_word, separator and punctuation.
  const auto means = headscan::implied_means(saved, limits);
  CHECK(means.size() == 23 * 2 * 3 + 3);
  for (const auto& mean : means) {
    if (mean.count == 0) continue;
    INFO(mean.path);
    CHECK(mean.sum.value() >= 0);
    // Float rounding takes no mean past its bound (uniform rows: a normalized entropy of 1 + 2e-8
    // per query is taken as 1).
    CHECK(mean.sum.value() / static_cast<double>(mean.count) <= mean.high);
  }
  // The same statistics are impossible for a run of 5 tokens, or without probes.
  CHECK_THROWS_WITH(headscan::check_saved_statistics(saved, limits_of(5, 1, 6)),
                    Contains("statistics.previous_token.counts[0] is 5, more queries"));
  CHECK_THROWS_WITH(headscan::check_saved_statistics(saved, limits_of(6, 1, 0)),
                    Contains("statistics.induction.counts[0]"));
  // A share's mean of exactly 1 is accepted; 1 + 2^-8, which float rounding was once allowed to
  // reach, is refused: no allowance lets a merged mean pass 1.
  const auto count = saved["self"]["counts"][0].get<std::uint64_t>();
  REQUIRE(count == 6);
  nlohmann::json at_bound = saved;
  at_bound["self"]["sums"][0][0] = nlohmann::json::array({0, count << 40});
  CHECK_NOTHROW(headscan::check_saved_statistics(at_bound, limits));
  nlohmann::json above = saved;
  above["self"]["sums"][0][0] = nlohmann::json::array({0, (count << 40) + (count << 32)});
  CHECK_THROWS_WITH(headscan::check_saved_statistics(above, limits),
                    Contains("statistics.self.sums[0][0] is 6.0234375 over 6 queries") && Contains("above 1"));
  // A classifier set merges what the checks accept, and refuses what they refuse, naming the field.
  headscan::ClassifierSet other;
  other.begin(headscan::ModelShape{2, 3, true});
  nlohmann::json damaged = saved;
  damaged["self"]["counts"][1] = 1.5;
  CHECK_THROWS_WITH(other.merge(damaged), Contains("statistics.self.counts[1] is 1.5"));
  damaged = saved;
  damaged["attention_sink"] = nlohmann::json::object();
  CHECK_THROWS_AS(other.merge(damaged), headscan::InputError);
}

TEST_CASE("the shard-state fuzz seeds are whole states or damaged ones that are refused", "[shards]") {
  const fs::path seeds = fs::path(HEADSCAN_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "shard_state";
  const std::vector<std::string> whole = {"state.json", "empty.json", "relations.json"};
  // Each damaged seed breaks one rule (tests/fuzz/make_seeds.py).
  const std::map<std::string, std::string> broken = {
      {"fractional_count.json", "statistics.confidence.counts[0] is 1.5"},
      {"float_count.json", "statistics.rare_word.baseline.count is 4.0"},
      {"too_many_queries.json", "statistics.confidence.counts[0] is 4398046511104"},
      {"mean_above_one.json", "statistics.self.sums[0][0] is 1.5 over 1 queries"},
      {"sum_without_queries.json", "statistics.entropy.sums[0][0] is 3 but"},
      {"unknown_statistic.json", "statistics holds \"attention_sink\""},
      {"garbage_relation.json", "statistics.syntactic.relations holds \"\""},
      {"version.json", "headscan_version is \"9.9.9\""},
      {"seconds.json", "seconds is -1e+308"},
      {"same_offset.json", "examples[1].offset is 0"}};
  std::size_t read = 0;
  for (const auto& entry : fs::directory_iterator(seeds)) {
    const std::string name = entry.path().filename().string();
    INFO(name);
    const std::string text = read_file(entry.path());
    if (std::find(whole.begin(), whole.end(), name) != whole.end()) {
      const headscan::ShardState state = headscan::parse_shard_state(text, name);
      CHECK_FALSE(headscan::implied_means(state.statistics, headscan::statistic_limits(state)).empty());
      ++read;
    } else {
      REQUIRE(broken.count(name) == 1);
      CHECK_THROWS_WITH(headscan::parse_shard_state(text, name), Contains(broken.at(name)));
    }
  }
  CHECK(read == whole.size());
}
