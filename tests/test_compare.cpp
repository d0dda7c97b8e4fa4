// headscan compare: compare.json and compare.csv of a series with known values, the order of the
// runs (model.step, --steps, as given), the refusals, and the report's files; then checkpoints of
// planted models analysed by headscan, where heads form by construction.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "reports/compare_data.h"
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

// A head of a synthetic heads.json.
Json head(int layer, int head_index, const std::string& primary, const std::vector<std::string>& labels, Json scores) {
  return {{"layer", layer}, {"head", head_index}, {"kv_group", head_index}, {"primary", primary}, {"labels", labels},
          {"scores", std::move(scores)}};
}

// A report directory holding `document` as its heads.json.
std::string write_run(const TempDir& dir, const std::string& name, const Json& document) {
  fs::create_directories(dir / name);
  std::ofstream(dir / name / "heads.json") << document.dump(2);
  return (dir / name).string();
}

// Run k of a series of 2 layers × 2 heads: L1H0's induction score rises 0.05 → 0.45 → 0.92 and
// its label follows; L0H0 is a previous-token head throughout; L0H1 loses its first-token label
// at the last run; L1H1 has no induction score in the first run. The in-context-learning gap
// (repeat 1 minus the mean of repeats 2–4) is 0.1, 0.8 and 3.0 nats.
Json series_run(int k, std::optional<std::int64_t> step) {
  const double induction[] = {0.05, 0.45, 0.92};
  const double previous[] = {0.7, 0.8, 0.9};
  const std::vector<std::vector<double>> repeat_loss = {{4.0, 3.9, 3.9, 3.9}, {4.0, 3.3, 3.2, 3.1}, {4.0, 1.0, 1.0, 1.0}};
  Json model = {{"name", "series"}, {"layers", 2}, {"heads", 2}, {"kv_heads", 2}, {"causal", true},
                {"repeat_loss", repeat_loss[k]}};
  if (step) model["step"] = *step;
  Json heads = Json::array();
  heads.push_back(head(0, 0, "previous-token", {"previous-token"},
                       {{"previous_token", previous[k]}, {"induction", 0.01}, {"first_token", 0.1}, {"entropy", 0.5},
                        {"positional", {{"offset", -1}, {"weight", previous[k]}}}}));
  heads.push_back(head(0, 1, k == 2 ? "none" : "first-token", k == 2 ? std::vector<std::string>{} : std::vector<std::string>{"first-token"},
                       {{"previous_token", 0.02}, {"induction", 0.02}, {"first_token", k == 2 ? 0.3 : 0.9}, {"entropy", 1.0}}));
  const bool induction_head = induction[k] >= 0.4;
  heads.push_back(head(1, 0, induction_head ? "induction" : "none",
                       induction_head ? std::vector<std::string>{"induction"} : std::vector<std::string>{},
                       {{"previous_token", 0.0}, {"induction", induction[k]}, {"first_token", 0.05}, {"entropy", 2.0 - k}}));
  heads.push_back(head(1, 1, "broad", {"broad"},
                       {{"previous_token", 0.1}, {"induction", k == 0 ? Json(nullptr) : Json(0.2)}, {"first_token", 0.2},
                        {"entropy", 3.0}}));
  return {{"headscan_version", "0.1.0"}, {"model", std::move(model)}, {"thresholds", {{"induction", 0.4}}},
          {"heads", std::move(heads)}};
}

std::vector<std::string> titles(const Json& compare) {
  std::vector<std::string> names;
  for (const auto& run : compare["runs"]) names.push_back(run["name"].get<std::string>());
  return names;
}

const Json& compare_head(const Json& compare, int layer, int head_index) {
  for (const auto& entry : compare["heads"]) {
    if (entry["layer"] == layer && entry["head"] == head_index) return entry;
  }
  FAIL("no head L" << layer << "H" << head_index);
  throw;
}

}  // namespace

TEST_CASE("compare.json holds every run's scores and labels in step order", "[compare]") {
  TempDir dir;
  // Given out of order: the steps put them right.
  const std::string late = write_run(dir, "late", series_run(2, 2000));
  const std::string early = write_run(dir, "early", series_run(0, 0));
  const std::string middle = write_run(dir, "middle", series_run(1, 1000));
  const auto result = run_headscan({"compare", late, early, middle, "-o", (dir / "out").string(), "--no-plots"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  const Json compare = Json::parse(read_file(dir / "out" / "compare.json"));
  CHECK(compare["format"] == "headscan-compare");
  CHECK(compare["order"] == "step");
  CHECK((titles(compare) == std::vector<std::string>{"early", "middle", "late"}));
  CHECK(compare["runs"][0]["step"] == 0);
  CHECK(compare["runs"][2]["step"] == 2000);
  CHECK(compare["runs"][2]["path"] == late);
  CHECK(compare["runs"][1]["repeat_loss"] == Json({4.0, 3.3, 3.2, 3.1}));
  CHECK(compare["runs"][0]["in_context_gap"].get<double>() == Approx(0.1));
  CHECK(compare["runs"][1]["in_context_gap"].get<double>() == Approx(0.8));
  CHECK(compare["runs"][2]["in_context_gap"].get<double>() == Approx(3.0));
  CHECK(compare["runs"][2]["best_induction"] == Json({{"layer", 1}, {"head", 0}, {"score", 0.92}}));
  CHECK(compare["runs"][0]["loss"].is_null());
  CHECK(compare["runs"][2]["primary_counts"] == Json({{"broad", 1}, {"induction", 1}, {"none", 1}, {"previous-token", 1}}));
  // The phase change: induction above 0.5 and the gap at 1 nat both first at the last run.
  CHECK(compare["phase_change"]["induction_run"] == Json({{"run", 2}, {"step", 2000}}));
  CHECK(compare["phase_change"]["in_context_gap_run"] == Json({{"run", 2}, {"step", 2000}}));

  const Json& inductive = compare_head(compare, 1, 0);
  CHECK(inductive["scores"]["induction"] == Json({0.05, 0.45, 0.92}));
  CHECK(inductive["primary"] == Json({"none", "induction", "induction"}));
  CHECK(inductive["labels"] == Json({Json::array(), {"induction"}, {"induction"}}));
  CHECK(inductive["primary_changed"] == true);
  CHECK(compare_head(compare, 1, 1)["scores"]["induction"] == Json({nullptr, 0.2, 0.2}));
  CHECK(compare_head(compare, 0, 0)["primary_changed"] == false);
  // Objects are kept as heads.json has them; a score a run lacks is null there.
  CHECK(compare_head(compare, 0, 0)["scores"]["positional"][1] == Json({{"offset", -1}, {"weight", 0.8}}));
  CHECK(compare_head(compare, 0, 1)["scores"]["positional"] == Json({nullptr, nullptr, nullptr}));
  CHECK(compare["score_names"] == Json({"previous_token", "induction", "first_token", "entropy", "positional"}));

  const Json& consecutive = compare["label_changes"]["consecutive"];
  REQUIRE(consecutive.size() == 2);
  CHECK(consecutive[0] == Json({{"layer", 1}, {"head", 0}, {"from", 0}, {"to", 1}, {"primary", {"none", "induction"}},
                                {"added", {"induction"}}, {"removed", Json::array()}}));
  CHECK(consecutive[1] == Json({{"layer", 0}, {"head", 1}, {"from", 1}, {"to", 2}, {"primary", {"first-token", "none"}},
                                {"added", Json::array()}, {"removed", {"first-token"}}}));
  CHECK(compare["label_changes"]["first_to_last"].size() == 2);

  // compare.csv: one row per (run, head), the runs in order, every score column.
  const std::string csv = read_file(dir / "out" / "compare.csv");
  const std::string header =
      "run,run_name,step,layer,head,kv_group,primary,labels,previous_token,induction,first_token,entropy,"
      "positional_offset,positional_weight\r\n";
  REQUIRE(csv.rfind(header, 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 3 * 4);
  CHECK_THAT(csv, Contains("\r\n0,early,0,1,1,1,broad,broad,0.1,,0.2,3.0,,\r\n"));
  CHECK_THAT(csv, Contains("\r\n2,late,2000,1,0,0,induction,induction,0.0,0.92,0.05,0.0,,\r\n"));
  // The page is written, the plots are not.
  CHECK(fs::exists(dir / "out" / "index.html"));
  CHECK_FALSE(fs::exists(dir / "out" / "plots"));
}

TEST_CASE("runs without a step keep the order given, and --steps orders them", "[compare]") {
  TempDir dir;
  const std::string a = write_run(dir, "a", series_run(2, std::nullopt));
  const std::string b = write_run(dir, "b", series_run(0, 5));
  const std::string c = write_run(dir, "c", series_run(1, std::nullopt));
  const auto given = run_headscan({"compare", a, b, c, "-o", (dir / "given").string(), "--no-html", "--no-plots", "-q"});
  REQUIRE(given.exit_code == 0);
  // b has a step, a and c have none: the order given, with a warning that names them.
  CHECK_THAT(given.err, Contains("a, c have no step"));
  const Json in_order = Json::parse(read_file(dir / "given" / "compare.json"));
  CHECK(in_order["order"] == "given");
  CHECK((titles(in_order) == std::vector<std::string>{"a", "b", "c"}));
  CHECK(in_order["runs"][1]["step"] == 5);  // kept, though not used for the order
  CHECK(in_order["phase_change"]["induction_run"] == Json({{"run", 0}, {"step", nullptr}}));

  const auto stepped = run_headscan({"compare", a, b, c, "--steps", "30,10,20", "-o", (dir / "steps").string(),
                                     "--no-html", "--no-plots", "-q"});
  REQUIRE(stepped.exit_code == 0);
  CHECK(stepped.err.empty());
  const Json by_steps = Json::parse(read_file(dir / "steps" / "compare.json"));
  CHECK(by_steps["order"] == "--steps");
  CHECK((titles(by_steps) == std::vector<std::string>{"b", "c", "a"}));
  CHECK(by_steps["runs"][0]["step"] == 10);
  CHECK(compare_head(by_steps, 1, 0)["scores"]["induction"] == Json({0.05, 0.45, 0.92}));
}

TEST_CASE("compare refuses runs it cannot put side by side, and writes nothing", "[compare]") {
  TempDir dir;
  const std::string first = write_run(dir, "first", series_run(0, 0));
  const std::string second = write_run(dir, "second", series_run(1, 100));
  Json bigger = series_run(2, 200);
  bigger["model"]["layers"] = 3;
  for (int head_index = 0; head_index < 2; ++head_index) {
    bigger["heads"].push_back(head(2, head_index, "none", {}, {{"entropy", 1.0}}));
  }
  const std::string deeper = write_run(dir, "deeper", bigger);
  const std::string out = (dir / "out").string();
  auto refused = [&](const std::vector<std::string>& args, const std::string& message) {
    std::vector<std::string> command = {"compare"};
    command.insert(command.end(), args.begin(), args.end());
    command.insert(command.end(), {"-o", out, "-q"});
    const auto result = run_headscan(command);
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains(message));
    CHECK_FALSE(fs::exists(out));
  };
  refused({first, deeper}, "3 layers × 2 heads, but " + first + " has 2 layers × 2 heads");
  refused({first, first}, "given twice");
  refused({first, (dir / "first" / "heads.json").string()}, "given twice");
  refused({first, (dir / "missing").string()}, "no such report");
  refused({first, second, "--steps", "1,2,3"}, "--steps gives 3 steps for 2 runs");
  refused({first, second, "--steps", "1,x"}, "--steps 1,x: expected");
  refused({first, second, "--scores", "induction,nonsense"}, "no run has a number for \"nonsense\"");
  refused({first, second, "--scores", "induction,induction"}, "given twice");
  refused({first, second, "--steps", ""}, "--steps is empty");
  refused({first, second, "--scores", ""}, "--scores is empty");
  std::ofstream(dir / "damaged.json") << "{\"model\": {\"layers\": 2, \"heads\": 2}, \"heads\": [1, 2, 3, 4]}";
  refused({first, (dir / "damaged.json").string()}, "heads[0]: expected an object");
  std::ofstream(dir / "short.json") << "{\"model\": {\"layers\": 2, \"heads\": 2}, \"heads\": []}";
  refused({first, (dir / "short.json").string()}, "lists 0 heads, but the model has 2 layers × 2 heads");
  std::ofstream(dir / "text.json") << "not json";
  refused({first, (dir / "text.json").string()}, "not JSON");
  fs::create_directories(dir / "shard");
  std::ofstream(dir / "shard" / "state.json") << "{}";
  refused({first, (dir / "shard").string()}, "one shard of a run");

  // An earlier comparison is replaced only with --force; a report or a directory of other files
  // never (nor does an analysis with --force replace a comparison).
  REQUIRE(run_headscan({"compare", first, second, "-o", out, "-q", "--no-plots"}).exit_code == 0);
  CHECK(run_headscan({"compare", first, second, "-o", out, "-q"}).exit_code == 2);
  CHECK(run_headscan({"compare", first, second, "-o", out, "-q", "--force"}).exit_code == 0);
  CHECK(fs::exists(dir / "out" / "plots" / "phase_change.png"));
  CHECK(run_headscan({"compare", first, second, "-o", first, "-q", "--force"}).exit_code == 2);
  CHECK(fs::exists(dir / "first" / "heads.json"));
  const std::string other = write_run(dir, "other", series_run(2, 300));
  const auto over_report = run_headscan({"compare", first, second, "-o", other, "-q", "--force"});
  CHECK(over_report.exit_code == 2);
  CHECK_THAT(over_report.err, Contains("not an earlier comparison"));
  CHECK(fs::exists(dir / "other" / "heads.json"));
  CHECK_FALSE(fs::exists(dir / "other" / "compare.json"));
}

TEST_CASE("runs that share a directory name are told apart by their paths", "[compare]") {
  TempDir dir;
  const std::string x = write_run(dir, "x/run", series_run(0, 0));
  const std::string y = write_run(dir, "y/run", series_run(1, 100));
  // Not UTF-8: shown with U+FFFD in compare.json, which stays valid JSON.
  const std::string odd = write_run(dir, "odd\xff", series_run(2, 200));
  const auto result = run_headscan({"compare", x + "/", (dir / "y" / "run" / "heads.json").string(), odd, "-o",
                                    (dir / "out").string(), "-q", "--no-plots"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const Json compare = Json::parse(read_file(dir / "out" / "compare.json"));
  CHECK(compare["runs"][0]["name"] == (dir / "x" / "run").string());
  CHECK(compare["runs"][1]["name"] == (dir / "y" / "run").string());
  CHECK(compare["runs"][2]["name"] == "odd\uFFFD");
}

TEST_CASE("the reader refuses damaged heads.json without crashing", "[compare]") {
  const std::vector<std::string> damaged = {
      "[]",
      R"({"format": "headscan-compare", "runs": []})",
      R"({"model": {"layers": 1, "heads": 1}, "heads": [{"layer": 0, "head": 0, "primary": 3, "labels": []}]})",
      R"({"model": {"layers": 1, "heads": 1}, "heads": [{"layer": 0, "head": 0, "primary": "none", "labels": [1]}]})",
      R"({"model": {"layers": 1, "heads": 1}, "heads": [{"layer": 0, "head": 5, "primary": "none", "labels": []}]})",
      R"({"model": {"layers": 1, "heads": 1, "step": -1}, "heads": [{"layer": 0, "head": 0, "primary": "none", "labels": []}]})",
      R"({"model": {"layers": 1, "heads": 1, "repeat_loss": "x"}, "heads": [{"layer": 0, "head": 0, "primary": "none", "labels": []}]})",
      R"({"model": {"layers": 1048576, "heads": 1048576}, "heads": []})",
      R"({"model": {"layers": 0, "heads": 3}, "heads": []})",
      R"({"model": {"layers": 1, "heads": 1, "repeat_loss": [1e308, 0]}, "heads": [{"layer": 0, "head": 0, "primary": "none", "labels": []}]})",
      R"({"model": {"layers": 1, "heads": 1}, "heads": [{"layer": 0, "head": 0, "primary": "none", "labels": []}], "x": 1e400})",
      std::string(100000, '[') + std::string(100000, ']'),
  };
  for (const std::string& text : damaged) {
    INFO(text.substr(0, 120));
    CHECK_THROWS_AS(headscan::parse_compare_run(text, "run/heads.json"), headscan::InputError);
  }
  const auto run = headscan::parse_compare_run(
      R"({"model": {"layers": 1, "heads": 2, "step": 7}, "heads": [
          {"layer": 0, "head": 1, "primary": "none", "labels": []},
          {"layer": 0, "head": 0, "primary": "broad", "labels": ["broad"], "scores": {"entropy": 2.5}}]})",
      "run/heads.json");
  CHECK(run.step == 7);
  // Heads in layer-major order, each with a kv_group and scores.
  CHECK(run.head(0, 0)["primary"] == "broad");
  CHECK(run.head(0, 1)["kv_group"] == 1);
  CHECK(run.head(0, 1)["scores"] == Json::object());
}

TEST_CASE("checkpoints of planted models: heads form as built, the report draws them", "[compare][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus(std::vector<int>(40, 20)));
  std::vector<std::string> runs;
  // Analysed in the reverse order of training: compare orders them by headscan.json's step.
  for (const std::string step : {"200", "0", "100"}) {
    const std::string out = (dir / ("checkpoint-" + step)).string();
    const auto result = run_headscan({fixture("checkpoint_" + step + ".pt"), corpus, "-o", out, "--parser", "none", "-q"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.err.empty());  // --parser none, asked for, is no warning
    runs.push_back(out);
  }
  const std::string out = (dir / "compare").string();
  std::vector<std::string> command = {"compare"};
  command.insert(command.end(), runs.begin(), runs.end());
  command.insert(command.end(), {"-o", out});
  const auto result = run_headscan(command);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("6 heads changed their primary label"));
  const Json compare = Json::parse(read_file(dir / "compare" / "compare.json"));
  CHECK((titles(compare) == std::vector<std::string>{"checkpoint-0", "checkpoint-100", "checkpoint-200"}));

  // Every score and label equals the run's own heads.json.
  for (std::size_t run = 0; run < 3; ++run) {
    const Json report = Json::parse(read_file(fs::path(compare["runs"][run]["path"].get<std::string>()) / "heads.json"));
    CHECK(compare["runs"][run]["step"] == report["model"]["step"]);
    CHECK(compare["runs"][run]["repeat_loss"] == report["model"]["repeat_loss"]);
    for (const auto& entry : report["heads"]) {
      const Json& compared = compare_head(compare, entry["layer"], entry["head"]);
      CHECK(compared["labels"][run] == entry["labels"]);
      CHECK(compared["primary"][run] == entry["primary"]);
      for (const auto& [name, value] : entry["scores"].items()) CHECK(compared["scores"][name][run] == value);
    }
  }
  // Planted: step 0 all uniform (broad); step 100 adds a previous-token head (L0H0) and a
  // first-token head (L1H2); step 200 is gpt2.pt's layers.
  CHECK(compare_head(compare, 0, 0)["primary"] == Json({"broad", "previous-token", "previous-token"}));
  CHECK(compare_head(compare, 1, 2)["primary"] == Json({"broad", "first-token", "first-token"}));
  CHECK(compare_head(compare, 0, 1)["primary"] == Json({"broad", "broad", "first-token"}));
  CHECK(compare_head(compare, 0, 3)["primary"] == Json({"broad", "broad", "none"}));
  CHECK(compare_head(compare, 0, 2)["primary_changed"] == false);
  CHECK(compare_head(compare, 0, 0)["scores"]["previous_token"][2].get<double>() > 0.999);
  CHECK(compare["label_changes"]["consecutive"].size() == 6);
  CHECK(compare["label_changes"]["first_to_last"].size() == 6);

  // The report: the page, the phase-change figure, small multiples and diff maps of the default
  // scores, a head map per run; nothing that reaches the network.
  for (const std::string file : {"index.html", "compare.csv", "plots/phase_change.png", "plots/heads_0.png",
                                 "plots/heads_2.png", "plots/trajectories_induction.png",
                                 "plots/trajectories_previous_token.png", "plots/trajectories_first_token.png",
                                 "plots/trajectories_entropy.png", "plots/diff_first_token.png"}) {
    INFO(file);
    CHECK(fs::file_size(dir / "compare" / file) > 0);
  }
  const std::string page = read_file(dir / "compare" / "index.html");
  for (const std::string remote : {"src=\"http", "href=\"http", "src=\"//", "href=\"//", "url(http"}) {
    CHECK(page.find(remote) == std::string::npos);
  }
  // Links to the runs' own reports, relative.
  CHECK_THAT(page, Contains("href=\"../checkpoint-100/heads/L0H0.html\""));
}

TEST_CASE("the demo checkpoints straddle the phase change of the induction head", "[compare][demo][e2e]") {
  TempDir dir;
  const fs::path data = fs::path(HEADSCAN_SOURCE_DIR) / "data";
  std::vector<std::string> runs;
  for (const auto& entry : fs::directory_iterator(data / "demo_checkpoints")) {
    const std::string out = (dir / entry.path().stem().string()).string();
    REQUIRE(run_headscan({entry.path().string(), (data / "demo_corpus.txt").string(), "-o", out, "--parser", "none",
                          "--no-html", "--no-plots", "-q"})
                .exit_code == 0);
    runs.push_back(out);
  }
  REQUIRE(runs.size() >= 6);
  std::vector<std::string> command = {"compare"};
  command.insert(command.end(), runs.begin(), runs.end());  // in directory order: compare orders by step
  command.insert(command.end(), {"-o", (dir / "compare").string(), "--no-html", "--no-plots", "-q"});
  REQUIRE(run_headscan(command).exit_code == 0);
  const Json compare = Json::parse(read_file(dir / "compare" / "compare.json"));
  CHECK(compare["order"] == "step");
  const Json& series = compare["runs"];
  for (std::size_t run = 1; run < series.size(); ++run) CHECK(series[run]["step"] > series[run - 1]["step"]);
  CHECK(series.front()["best_induction"]["score"].get<double>() < 0.2);
  CHECK(series.back()["best_induction"]["score"].get<double>() > 0.8);
  // Olsson et al.: the induction head forms when in-context learning appears.
  REQUIRE(compare["phase_change"]["induction_run"].is_object());
  REQUIRE(compare["phase_change"]["in_context_gap_run"].is_object());
  const int induction = compare["phase_change"]["induction_run"]["run"];
  const int gap = compare["phase_change"]["in_context_gap_run"]["run"];
  CHECK(std::abs(induction - gap) <= 1);
  CHECK(induction > 0);
}
