// Exported programs (.pt2) run by NativeRT behind InstrumentedModel: the attention they capture is
// the module's, a .pt2 and a TorchScript trace of the same module give the same heads.json, and
// what the loader cannot run is bad input (exit 2). Fixtures: tests/fixtures/make_pt2_fixtures.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/script.h>

#include "analyzer/errors.h"
#include "analyzer/model/model.h"
#include "tests/fixtures.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using headscan::InstrumentedModel;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace {

constexpr int kExitBadInput = 2;

std::string fmt_options(const std::vector<std::string>& options) {
  std::string joined;
  for (const std::string& option : options) joined += option + " ";
  return joined;
}

// The attention maps one forward call hands out, in capture order.
std::vector<at::Tensor> captured(InstrumentedModel& model, const at::Tensor& ids, const at::Tensor& mask,
                                 const headscan::HeadScales* scales = nullptr,
                                 const headscan::AttentionEdit* edit = nullptr, at::Tensor* logits = nullptr) {
  std::vector<at::Tensor> maps;
  const headscan::ForwardOutput output = model.forward(
      ids, &mask,
      [&](int layer, const at::Tensor& attention, std::int64_t first_row) {
        if (first_row == 0) {
          maps.push_back(attention.clone());
        } else {  // the next row block of the same layer
          REQUIRE(static_cast<std::size_t>(layer) + 1 == maps.size());
          maps.back() = at::cat({maps.back(), attention}, /*dim=*/2);
        }
      },
      scales, edit);
  if (logits != nullptr && output.logits) *logits = output.logits->clone();
  return maps;
}

CommandResult analyse(const std::string& model, const std::string& corpus, const fs::path& out,
                      std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {model, corpus, "-o", out.string(), "-q", "--no-html", "--no-plots",
                                   "--parser", "none"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_headscan(args);
}

// Equal JSON, numbers within 1e-6.
void check_same(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number_float() && b.is_number()) {
    CHECK(std::abs(a.get<double>() - b.get<double>()) <= 1e-6);
  } else if (a.is_object() && b.is_object()) {
    CHECK(a.size() == b.size());
    for (auto field = a.begin(); field != a.end(); ++field) {
      REQUIRE(b.contains(field.key()));
      check_same(*field, b[field.key()]);
    }
  } else {
    CHECK(a == b);
  }
}

}  // namespace

TEST_CASE("an exported program captures the module's attention at 9, 40 and 300 tokens", "[exported][e2e]") {
  torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
  for (const std::string name : {"eager", "sdpa"}) {
    INFO(name);
    const auto model = InstrumentedModel::load(fixture("pt2_" + name + ".pt2"));
    CHECK(model->format() == "exported program");
    CHECK(model->softmax_count() == 2);
    CHECK(model->capture_method() == "graph");
    CHECK(model->takes_attention_mask());
    CHECK(model->dtype() == "float32");
    CHECK(model->device().is_cpu());
    CHECK(model->forward_schema() == "forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor");
    CHECK(model->metadata().name == "pt2_" + name);
    CHECK_FALSE(model->embedded_tokenizer().empty());
    CHECK(model->layer_numbering().attention_layers == std::vector<int>{0, 2});
    REQUIRE(model->layer_numbering().layers.size() == 3);
    CHECK(model->layer_numbering().layers[1].kind == "convolution");
    CHECK(model->gradient_limit().empty());  // headscan's interpreter differentiates it
    for (const int length : {9, 40, 300}) {
      INFO(length);
      const at::Tensor ids = reference.attr("ids_" + std::to_string(length)).toTensor();
      const at::Tensor mask = reference.attr("mask_" + std::to_string(length)).toTensor();
      const std::vector<at::Tensor> maps = captured(*model, ids, mask);
      REQUIRE(maps.size() == 2);
      for (const int layer : {0, 2}) {
        const at::Tensor expected =
            reference.attr(name + "_" + std::to_string(length) + "_" + std::to_string(layer)).toTensor();
        const at::Tensor& got = maps[layer == 0 ? 0 : 1];
        REQUIRE(got.sizes() == expected.sizes());
        CHECK((got - expected).abs().max().item<double>() < 1e-6);
      }
    }
  }
}

TEST_CASE("an exported program's head scales and attention edits act inside NativeRT", "[exported][e2e]") {
  const auto model = InstrumentedModel::load(fixture("pt2_eager.pt2"));
  torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
  const at::Tensor ids = reference.attr("ids_40").toTensor();
  const at::Tensor mask = reference.attr("mask_40").toTensor();
  at::Tensor plain;
  const std::vector<at::Tensor> before = captured(*model, ids, mask, nullptr, nullptr, &plain);
  REQUIRE(plain.defined());

  // Head 1 of the first attention layer removed: the second layer sees a changed residual, the
  // first layer's map is handed out unscaled, and the logits move.
  headscan::HeadScales scales{at::ones({2, 4}), at::Tensor()};
  scales[0].index_put_({torch::indexing::Slice(), 1}, 0.0);
  at::Tensor removed;
  const std::vector<at::Tensor> after = captured(*model, ids, mask, &scales, nullptr, &removed);
  REQUIRE(after.size() == 2);
  CHECK((after[0] - before[0]).abs().max().item<double>() == 0.0);
  CHECK((after[1] - before[1]).abs().max().item<double>() > 1e-4);
  CHECK((removed - plain).abs().max().item<double>() > 1e-4);
  // All-ones scales change nothing.
  headscan::HeadScales ones{at::ones({2, 4}), at::ones({2, 4})};
  at::Tensor same;
  captured(*model, ids, mask, &ones, nullptr, &same);
  CHECK((same - plain).abs().max().item<double>() < 1e-6);

  // An edit that makes the last attention layer uniform over the visible keys changes the logits;
  // one that returns the probabilities as they are does not.
  const headscan::AttentionEdit uniform = [](int layer, const at::Tensor& attention, std::int64_t) {
    if (layer != 1) return at::Tensor();
    const at::Tensor visible = (attention > 0).to(attention.scalar_type());
    return visible / visible.sum(-1, true);
  };
  at::Tensor edited;
  captured(*model, ids, mask, nullptr, &uniform, &edited);
  CHECK((edited - plain).abs().max().item<double>() > 1e-4);
  const headscan::AttentionEdit identity = [](int, const at::Tensor& attention, std::int64_t) { return attention; };
  at::Tensor kept;
  captured(*model, ids, mask, nullptr, &identity, &kept);
  CHECK((kept - plain).abs().max().item<double>() < 1e-6);

  // Scales that require grad: NativeRT runs in inference mode, so the call runs in headscan's
  // interpreter, and the gradient of the logits with respect to the scales is the TorchScript
  // trace's.
  const auto gradients = [&](InstrumentedModel& instrumented) {
    const at::AutoGradMode with_gradients(true);
    headscan::HeadScales tracked{at::ones({2, 4}).requires_grad_(true), at::ones({2, 4}).requires_grad_(true)};
    at::Tensor logits;
    captured(instrumented, ids, mask, &tracked, nullptr, &logits);
    REQUIRE(logits.requires_grad());
    return torch::autograd::grad({logits.square().sum()}, {tracked[0], tracked[1]});
  };
  CHECK(model->gradient_limit().empty());
  const auto exported = gradients(*model);
  const auto traced_model = InstrumentedModel::load(fixture("pt2_eager.pt"));
  const auto traced = gradients(*traced_model);
  for (std::size_t layer = 0; layer < 2; ++layer) {
    CHECK(exported[layer].abs().max().item<double>() > 1e-3);
    CHECK((exported[layer] - traced[layer]).abs().max().item<double>() <= 1e-4 * traced[layer].abs().max().item<double>());
  }
  // The calls after it run there too, and give NativeRT's logits.
  at::Tensor again;
  captured(*model, ids, mask, nullptr, nullptr, &again);
  CHECK((again - plain).abs().max().item<double>() < 1e-5);
}

TEST_CASE("an exported program's attention in blocks of 7 rows equals it unblocked", "[exported][e2e]") {
  const auto model = InstrumentedModel::load(fixture("pt2_sdpa.pt2"));
  CHECK(model->blockwise_attention_count() == 2);
  torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
  const at::Tensor ids = reference.attr("ids_40").toTensor();
  const at::Tensor mask = reference.attr("mask_40").toTensor();
  model->set_attention_block(7);
  std::vector<std::int64_t> first_rows;
  model->forward(ids, &mask, [&](int layer, const at::Tensor&, std::int64_t first_row) {
    if (layer == 0) first_rows.push_back(first_row);
  });
  CHECK(first_rows == std::vector<std::int64_t>{0, 7, 14, 21, 28, 35});
  at::Tensor blocked_logits;
  const std::vector<at::Tensor> blocked = captured(*model, ids, mask, nullptr, nullptr, &blocked_logits);
  CHECK(model->attention_block_use().rows == 7);
  model->set_attention_block(0);  // planned: 40 rows fit one block
  at::Tensor whole_logits;
  const std::vector<at::Tensor> whole = captured(*model, ids, mask, nullptr, nullptr, &whole_logits);
  CHECK(model->attention_block_use().rows == 40);
  REQUIRE(blocked.size() == 2);
  for (std::size_t layer = 0; layer < 2; ++layer) {
    REQUIRE(blocked[layer].sizes() == whole[layer].sizes());
    CHECK((blocked[layer] - whole[layer]).abs().max().item<double>() < 1e-6);
  }
  REQUIRE(blocked_logits.defined());
  CHECK((blocked_logits - whole_logits).abs().max().item<double>() < 1e-5);
}

// What the corpus pass does (RunState::observe): its callback throws after the last layer's last
// block, which unwinds the model's forward there. The exception comes back with its type, and the
// model then runs as before: NativeRT's and TorchScript's state survives the unwinding.
TEST_CASE("the gradient through a .pt2's attention op is taken block by block, as unblocked", "[exported][ablation][e2e]") {
  const auto model = InstrumentedModel::load(fixture("pt2_sdpa.pt2"));
  torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
  const at::Tensor ids = reference.attr("ids_300").toTensor();
  const at::Tensor mask = reference.attr("mask_300").toTensor();
  const at::AutoGradMode with_gradients(true);
  // The backward graph of the logits, and the gradient of their squares in the head scales.
  const auto differentiate = [&](std::int64_t rows, int& recomputed) {
    model->set_attention_block(rows);
    headscan::HeadScales tracked{at::ones({2, 4}).requires_grad_(true), at::ones({2, 4}).requires_grad_(true)};
    const headscan::ForwardOutput output = model->forward(ids, &mask, {}, &tracked);
    REQUIRE(output.logits);
    std::set<const torch::autograd::Node*> seen;
    std::vector<const torch::autograd::Node*> pending{output.logits->grad_fn().get()};
    recomputed = 0;
    while (!pending.empty()) {
      const torch::autograd::Node* node = pending.back();
      pending.pop_back();
      if (node == nullptr || !seen.insert(node).second) continue;
      if (node->name().find("RecomputedAttention") != std::string::npos) ++recomputed;
      for (const torch::autograd::Edge& edge : node->next_edges()) pending.push_back(edge.function.get());
    }
    return torch::autograd::grad({output.logits->square().sum()}, {tracked[0], tracked[1]});
  };
  int blocked_nodes = 0;
  int whole_nodes = 0;
  const auto blocked = differentiate(7, blocked_nodes);
  // In blocks of 7 rows, each attention layer's backward recomputes its blocks (eager_attention.h):
  // no layer keeps its [B, H, T, T] probabilities for the backward.
  CHECK(blocked_nodes == 2);
  const auto whole = differentiate(300, whole_nodes);
  CHECK(whole_nodes == 0);
  for (std::size_t layer = 0; layer < 2; ++layer) {
    CHECK(whole[layer].abs().max().item<double>() > 1e-3);
    CHECK((blocked[layer] - whole[layer]).abs().max().item<double>() <= 1e-5 * whole[layer].abs().max().item<double>());
  }
}

TEST_CASE("a forward stopped by its callback after the last attention block runs the same afterwards",
          "[exported][e2e]") {
  struct Stopped : std::exception {};
  for (const char* name : {"pt2_sdpa.pt2", "pt2_sdpa.pt", "pt2_eager.pt2"}) {
    INFO(name);
    const auto model = InstrumentedModel::load(fixture(name));
    torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
    const at::Tensor ids = reference.attr("ids_40").toTensor();
    const at::Tensor mask = reference.attr("mask_40").toTensor();
    at::Tensor logits_before;
    const std::vector<at::Tensor> before = captured(*model, ids, mask, nullptr, nullptr, &logits_before);
    REQUIRE(before.size() == 2);
    for (const std::int64_t rows : {std::int64_t{7}, std::int64_t{0}}) {
      model->set_attention_block(rows);
      for (int call = 0; call < 3; ++call) {
        std::vector<std::int64_t> last_rows;
        CHECK_THROWS_AS(model->forward(ids, &mask,
                                       [&](int layer, const at::Tensor& attention, std::int64_t first_row) {
                                         if (layer != 1) return;
                                         last_rows.push_back(first_row);
                                         if (first_row + attention.size(2) == ids.size(1)) throw Stopped();
                                       }),
                        Stopped);
        CHECK(!last_rows.empty());
      }
    }
    model->set_attention_block(0);
    at::Tensor logits_after;
    const std::vector<at::Tensor> after = captured(*model, ids, mask, nullptr, nullptr, &logits_after);
    REQUIRE(after.size() == 2);
    for (std::size_t layer = 0; layer < 2; ++layer) CHECK((after[layer] - before[layer]).abs().max().item<double>() == 0);
    REQUIRE(logits_after.defined());
    CHECK((logits_after - logits_before).abs().max().item<double>() == 0);
  }
}

// The corpus pass's calls: the attention program where the archive has one, the model's program
// whole where it has none; a TorchScript module leaves the stop to its caller.
TEST_CASE("a forward as far as the last attention map gives the whole forward's attention", "[exported][e2e]") {
  torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
  const at::Tensor ids = reference.attr("ids_40").toTensor();
  const at::Tensor mask = reference.attr("mask_40").toTensor();
  for (const char* name : {"pt2_eager.pt2", "pt2_sdpa.pt2", "pt2_whole.pt2"}) {
    INFO(name);
    const auto model = InstrumentedModel::load(fixture(name));
    at::Tensor logits;
    const std::vector<at::Tensor> whole = captured(*model, ids, mask, nullptr, nullptr, &logits);
    REQUIRE(whole.size() == 2);
    REQUIRE(logits.defined());
    // Twice: the second call runs the program the first loaded.
    for (int call = 0; call < 2; ++call) {
      std::vector<at::Tensor> maps;
      CHECK(model->forward_attention(ids, &mask, [&](int layer, const at::Tensor& attention, std::int64_t first_row) {
        if (first_row == 0) {
          maps.push_back(attention.clone());
        } else {
          maps.back() = at::cat({maps.back(), attention}, /*dim=*/2);
        }
        CHECK(static_cast<std::size_t>(layer) + 1 == maps.size());
      }));
      REQUIRE(maps.size() == 2);
      for (std::size_t layer = 0; layer < 2; ++layer) CHECK((maps[layer] - whole[layer]).abs().max().item<double>() == 0);
    }
    at::Tensor logits_after;
    captured(*model, ids, mask, nullptr, nullptr, &logits_after);
    REQUIRE(logits_after.defined());
    CHECK((logits_after - logits).abs().max().item<double>() == 0);
  }
  const auto traced = InstrumentedModel::load(fixture("pt2_eager.pt"));
  bool called = false;
  CHECK_FALSE(traced->forward_attention(ids, &mask, [&](int, const at::Tensor&, std::int64_t) { called = true; }));
  CHECK_FALSE(called);
}

// The logits of the rows a call asks for: computed alone by a program that takes logits_rows, kept
// from [B, T, V] by one that does not and by TorchScript; a single row goes to the program twice.
TEST_CASE("a forward call gives the logits of the rows it asks for", "[exported][e2e]") {
  torch::jit::Module reference = torch::jit::load(fixture("pt2_reference.pt"));
  const at::Tensor ids = reference.attr("ids_40").toTensor();
  const at::Tensor mask = reference.attr("mask_40").toTensor();
  const auto whole_model = InstrumentedModel::load(fixture("pt2_eager.pt2"));
  CHECK_FALSE(whole_model->selects_logits_rows());
  at::Tensor whole;
  captured(*whole_model, ids, mask, nullptr, nullptr, &whole);
  REQUIRE(whole.sizes() == at::IntArrayRef({2, 40, 64}));
  const auto rows_model = InstrumentedModel::load(fixture("pt2_rows.pt2"));
  CHECK(rows_model->selects_logits_rows());
  CHECK(rows_model->forward_schema() ==
        "forward(input_ids: Tensor, attention_mask: Tensor, logits_rows: Tensor) -> Tensor");
  const auto traced = InstrumentedModel::load(fixture("pt2_eager.pt"));
  CHECK_FALSE(traced->selects_logits_rows());
  const auto traced_rows = InstrumentedModel::load(fixture("pt2_rows.pt"));
  CHECK(traced_rows->selects_logits_rows());
  for (const std::vector<std::int64_t>& wanted :
       {std::vector<std::int64_t>{0, 17, 39}, std::vector<std::int64_t>{23}, std::vector<std::int64_t>{5, 6}}) {
    const at::Tensor rows = at::tensor(wanted, at::kLong);
    INFO(rows);
    for (InstrumentedModel* model : {rows_model.get(), whole_model.get(), traced.get(), traced_rows.get()}) {
      INFO(model->path());
      int maps = 0;
      const headscan::ForwardOutput output =
          model->forward(ids, &mask, [&](int, const at::Tensor&, std::int64_t first_row) { maps += first_row == 0; },
                         nullptr, nullptr, &rows);
      CHECK(maps == 2);
      REQUIRE(output.logits);
      REQUIRE(output.logits->sizes() == at::IntArrayRef({2, rows.size(0), 64}));
      CHECK((*output.logits - whole.index_select(1, rows)).abs().max().item<double>() <= 1e-5);
    }
  }
  // Without rows, every row: the probes' repeat loss.
  for (InstrumentedModel* model : {rows_model.get(), traced_rows.get()}) {
    at::Tensor all;
    captured(*model, ids, mask, nullptr, nullptr, &all);
    REQUIRE(all.sizes() == whole.sizes());
    CHECK((all - whole).abs().max().item<double>() <= 1e-5);
  }
}

TEST_CASE("a .pt2 and a TorchScript trace of the same module give the same heads.json", "[exported][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({30, 12, 50, 7, 41, 25, 33, 60}));
  // pt2_min_length is pt2_eager's program with headscan.json's min_length 40: the corpus's shorter
  // batches are padded to 40 tokens, which must change nothing.
  // pt2_whole is pt2_eager's program without the attention program: its corpus pass runs whole.
  // pt2_rows is pt2_eager's module with logits_rows: its probes ask for all rows, its needles few.
  for (const std::string name : {"pt2_eager", "pt2_sdpa", "pt2_min_length", "pt2_whole", "pt2_rows", "rows"}) {
    INFO(name);
    // "rows": pt2_rows.pt, the TorchScript trace with logits_rows, against pt2_eager.pt's.
    const std::string archive = name == "rows" ? "pt2_rows.pt" : name + ".pt2";
    const CommandResult exported = analyse(fixture(archive), corpus, dir / (name + "-pt2"));
    REQUIRE(exported.exit_code == 0);
    // -q: nothing on stderr (NativeRT logs every exception that passes through it).
    CHECK(exported.err.empty());
    const std::string trace = name == "pt2_sdpa" ? name : "pt2_eager";
    const CommandResult traced = analyse(fixture(trace + ".pt"), corpus, dir / (name + "-pt"));
    REQUIRE(traced.exit_code == 0);
    const nlohmann::json a = read_json(dir / (name + "-pt2") / "heads.json");
    const nlohmann::json b = read_json(dir / (name + "-pt") / "heads.json");
    for (const std::string field : {"layers", "heads", "kv_heads", "causal", "capture", "dtype", "max_length"}) {
      CHECK(a["model"][field] == b["model"][field]);
    }
    CHECK(a["corpus"] == b["corpus"]);
    CHECK(a["model"]["format"] == (name == "rows" ? "torchscript" : "exported program"));
    CHECK(b["model"]["format"] == "torchscript");
    REQUIRE(a["model"]["repeat_loss"].size() == b["model"]["repeat_loss"].size());
    for (std::size_t i = 0; i < a["model"]["repeat_loss"].size(); ++i) {
      CHECK(std::abs(a["model"]["repeat_loss"][i].get<double>() - b["model"]["repeat_loss"][i].get<double>()) <= 1e-6);
    }
    REQUIRE(a["heads"].size() == b["heads"].size());
    REQUIRE(a["heads"].size() == 8);
    for (std::size_t i = 0; i < a["heads"].size(); ++i) {
      INFO(a["heads"][i].dump().substr(0, 400));
      check_same(a["heads"][i], b["heads"][i]);
    }
  }
}

namespace {

// Every number under `a` within `tolerance` of `b`'s, everything else equal; keys in `skip` not
// compared.
void check_close(const nlohmann::json& a, const nlohmann::json& b, double tolerance, const std::string& where,
                 const std::set<std::string>& skip = {}) {
  INFO(where);
  if (a.is_number() && b.is_number()) {
    CHECK(std::abs(a.get<double>() - b.get<double>()) <= tolerance);
  } else if (a.is_object() && b.is_object()) {
    CHECK(a.size() == b.size());
    for (auto field = a.begin(); field != a.end(); ++field) {
      if (skip.count(field.key()) != 0) continue;
      REQUIRE(b.contains(field.key()));
      check_close(*field, b[field.key()], tolerance, where + "." + field.key(), skip);
    }
  } else if (a.is_array() && b.is_array()) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) check_close(a[i], b[i], tolerance, where + "[" + std::to_string(i) + "]", skip);
  } else {
    CHECK(a == b);
  }
}

// The causal evidence of a report: its "ablation" section (losses, the pruning curve, circuits)
// and each head's scores and labels.
void check_same_evidence(const nlohmann::json& a, const nlohmann::json& b, double tolerance) {
  REQUIRE(a.contains("ablation"));
  REQUIRE(b.contains("ablation"));
  check_close(a["ablation"], b["ablation"], tolerance, "ablation");
  REQUIRE(a["heads"].size() == b["heads"].size());
  for (std::size_t i = 0; i < a["heads"].size(); ++i) {
    check_close(a["heads"][i], b["heads"][i], tolerance, "heads[" + std::to_string(i) + "]");
  }
}

}  // namespace

TEST_CASE("ablation on a .pt2 (--ablation) gives its TorchScript trace's importance, ablation, pruning and circuits",
          "[exported][ablation][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({30, 12, 50, 7, 41, 25, 33, 60, 90, 140}));
  // (archive, trace, options): pt2_sdpa in blocks of 5 rows takes the gradient block by block
  // (eager_attention.h, RecomputedAttention) where the trace's graph does too.
  const std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> cases = {
      {"pt2_eager.pt2", "pt2_eager.pt", {}},
      {"pt2_sdpa.pt2", "pt2_sdpa.pt", {}},
      {"pt2_sdpa.pt2", "pt2_sdpa.pt", {"--attention-block", "5"}},
      {"pt2_rows.pt2", "pt2_rows.pt", {}},
      {"pt2_whole.pt2", "pt2_eager.pt", {}}};
  int index = 0;
  for (const auto& [archive, trace, options] : cases) {
    INFO(archive << " " << fmt_options(options));
    std::vector<std::string> extra = {"--ablation"};
    extra.insert(extra.end(), options.begin(), options.end());
    const std::string name = std::to_string(index++);
    const CommandResult exported = analyse(fixture(archive), corpus, dir / (name + "-pt2"), extra);
    INFO(exported.err);
    REQUIRE(exported.exit_code == 0);
    CHECK(exported.err.empty());
    REQUIRE(analyse(fixture(trace), corpus, dir / (name + "-pt"), extra).exit_code == 0);
    const nlohmann::json a = read_json(dir / (name + "-pt2") / "heads.json");
    const nlohmann::json b = read_json(dir / (name + "-pt") / "heads.json");
    check_same_evidence(a, b, 1e-4);
    bool any_importance = false;
    for (const auto& head : a["heads"]) any_importance |= head["scores"]["importance"].get<double>() > 1e-6;
    CHECK(any_importance);
  }
}

TEST_CASE("a float32 .pt2 runs in bfloat16 and float16 (--dtype)", "[exported][dtype][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({30, 12, 50, 7, 41, 25, 33, 60, 90, 140}));
  for (const std::string name : {"pt2_eager", "pt2_sdpa"}) {
    INFO(name);
    REQUIRE(analyse(fixture(name + ".pt2"), corpus, dir / (name + "-float32")).exit_code == 0);
    const nlohmann::json reference = read_json(dir / (name + "-float32") / "heads.json");
    for (const std::string dtype : {"bfloat16", "float16"}) {
      INFO(dtype);
      const CommandResult cast = analyse(fixture(name + ".pt2"), corpus, dir / (name + "-" + dtype), {"--dtype", dtype});
      INFO(cast.err);
      REQUIRE(cast.exit_code == 0);
      CHECK(cast.err.empty());
      const nlohmann::json report = read_json(dir / (name + "-" + dtype) / "heads.json");
      CHECK(report["model"]["dtype"] == dtype);
      CHECK(report["model"]["format"] == "exported program");
      // TorchScript's tolerance for --dtype (test_modern_exports.cpp): 1e-2 of the float32 run.
      for (std::size_t i = 0; i < report["heads"].size(); ++i) {
        check_close(report["heads"][i]["scores"], reference["heads"][i]["scores"], 1e-2, "scores");
      }
      // And the TorchScript trace cast the same way.
      REQUIRE(analyse(fixture(name + ".pt"), corpus, dir / (name + "-pt-" + dtype), {"--dtype", dtype}).exit_code == 0);
      const nlohmann::json traced = read_json(dir / (name + "-pt-" + dtype) / "heads.json");
      for (std::size_t i = 0; i < report["heads"].size(); ++i) {
        check_close(report["heads"][i]["scores"], traced["heads"][i]["scores"], 1e-2, "scores");
      }
    }
  }
  SECTION("--ablation in bfloat16: losses within 2% of float32's, importance finite") {
    REQUIRE(analyse(fixture("pt2_sdpa.pt2"), corpus, dir / "ablation-float32", {"--ablation"}).exit_code == 0);
    REQUIRE(analyse(fixture("pt2_sdpa.pt2"), corpus, dir / "ablation-bf16", {"--ablation", "--dtype", "bfloat16"})
                .exit_code == 0);
    const nlohmann::json float32 = read_json(dir / "ablation-float32" / "heads.json");
    const nlohmann::json bf16 = read_json(dir / "ablation-bf16" / "heads.json");
    const double loss = float32["ablation"]["loss"].get<double>();
    CHECK(std::abs(bf16["ablation"]["loss"].get<double>() - loss) < 0.02 * loss);
    for (const auto& head : bf16["heads"]) CHECK(std::isfinite(head["scores"]["importance"].get<double>()));
  }
}

TEST_CASE("sequences longer than the export checked warn once", "[exported][e2e]") {
  TempDir dir;
  // Lines of 10 and 30 words: the second's window is longer than checked_length 24.
  const std::string corpus = dir.write("corpus.txt", word_corpus({10, 30, 40}));
  const CommandResult run = analyse(fixture("pt2_checked_24.pt2"), corpus, dir / "out");
  REQUIRE(run.exit_code == 0);
  const nlohmann::json report = read_json(dir / "out" / "heads.json");
  int warned = 0;
  for (const auto& warning : report["warnings"]) {
    if (warning.get<std::string>().find("checked_length") != std::string::npos) ++warned;
  }
  CHECK(warned == 1);
  // Nothing longer than 24 tokens runs, the probes included.
  REQUIRE(analyse(fixture("pt2_checked_24.pt2"), corpus, dir / "short", {"--max-length", "24"}).exit_code == 0);
  CHECK_THAT(read_json(dir / "short" / "heads.json")["warnings"].dump(), !Contains("checked_length"));
}

TEST_CASE("what the .pt2 loader cannot run is bad input", "[exported][errors][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({20, 10, 15}));
  auto refused = [&](const std::string& model, std::vector<std::string> extra = {}) {
    const CommandResult result = analyse(model, corpus, dir / "out", std::move(extra));
    CHECK(result.exit_code == kExitBadInput);
    CHECK_FALSE(fs::exists(dir / "out"));
    return result.err;
  };
  SECTION("a missing file") {
    CHECK_THAT(refused((dir / "missing.pt2").string()),
               Contains("missing.pt2: model file not found") && Contains("exported program"));
  }
  SECTION("a directory") {
    fs::create_directory(dir / "folder.pt2");
    CHECK_THAT(refused((dir / "folder.pt2").string()), Contains("found a directory"));
  }
  SECTION("a file that is not a zip") {
    CHECK_THAT(refused(dir.write("text.pt2", "not a zip")),
               Contains("expected an exported program (.pt2)") && Contains("headscan export"));
  }
  SECTION("a weight record shorter than its tensor") {
    CHECK_THAT(refused(fixture("pt2_short_weight.pt2")),
               Contains("pt2_short_weight.pt2: record data/weights/") && Contains("holds") &&
                   Contains("tokens.weight") && Contains("headscan export"));
  }
  SECTION("a weight record that inflates beyond its tensor") {
    CHECK_THAT(refused(fixture("pt2_inflated_weight.pt2")),
               Contains("pt2_inflated_weight.pt2: record data/weights/") && Contains("once inflated") &&
                   Contains("tokens.weight") && Contains("headscan export"));
  }
  SECTION("a record of no tensor beyond its bound") {
    CHECK_THAT(refused(fixture("pt2_large_record.pt2")),
               Contains("record data/sample_inputs/extra.pt") && Contains("67108864 bytes once inflated"));
  }
  SECTION("a device LibTorch cannot parse") {
    CHECK_THAT(refused(fixture("pt2_bogus_device.pt2")),
               Contains("pt2_bogus_device.pt2: record models/model.json") && Contains("bogus") &&
                   Contains("device"));
    CHECK_THAT(refused(fixture("pt2_negative_device.pt2")),
               Contains("pt2_negative_device.pt2: record models/model.json") && Contains("-5"));
  }
  SECTION("an operator LibTorch lacks") {
    CHECK_THAT(refused(fixture("pt2_unknown_op.pt2")),
               Contains("aten::gelu_tanh_fused") && Contains("does not have"));
  }
  SECTION("a program without observers") {
    CHECK_THAT(refused(fixture("pt2_no_observer.pt2")), Contains("no headscan observer"));
  }
  SECTION("a --dtype it does not know") {
    CHECK_THROWS_AS(InstrumentedModel::load(fixture("pt2_eager.pt2"), "int8"), headscan::InputError);
  }
}

TEST_CASE("a .pt2 is read by its content, and without layers its heads keep the map order", "[exported][e2e]") {
  const auto traced = InstrumentedModel::load(fixture("pt2_torchscript.pt2"));
  CHECK(traced->format() == "torchscript");
  const auto plain = InstrumentedModel::load(fixture("pt2_no_layers.pt2"));
  CHECK(plain->format() == "exported program");
  CHECK_FALSE(plain->layer_numbering().known());
  CHECK_THAT(plain->layer_numbering().note, Contains("headscan export"));
}
