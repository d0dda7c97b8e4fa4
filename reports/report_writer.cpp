#include "reports/report_writer.h"

#include <functional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/attention_data.h"
#include "reports/html.h"
#include "reports/parallel_tasks.h"
#include "reports/text.h"
#include "reports/plots.h"

namespace headscan {

namespace {

// Every plot as a task of its own.
void add_plot_tasks(std::vector<std::function<void()>>& tasks, const std::filesystem::path& directory,
                    const ReportData& data, const std::vector<ExampleSequence>& examples,
                    const std::vector<ExampleSequence>& probes, const ReportContents& contents) {
  const auto plots = directory / "plots";
  std::filesystem::create_directories(plots);
  tasks.emplace_back([&data, plots] { plot_label_map(data, plots / "heads.png"); });
  for (const auto& score : data.scores) {
    tasks.emplace_back([&data, &score, plots] { plot_score_heatmap(data, score, plots / score_plot_name(score.name)); });
  }
  tasks.emplace_back([&data, plots] { plot_layer_summary(data, plots / "layers.png"); });
  if (contents.attention_plots > 0) {
    std::filesystem::create_directories(plots / "attention");
    for (const auto& info : data.head_list) {
      const std::string labels = info.labels.empty() ? std::string("no label") : fmt::format("{}", fmt::join(info.labels, ", "));
      for (std::size_t k = 0; k < contents.attention_plots; ++k) {
        tasks.emplace_back([&examples, &info, k, plots, title = fmt::format("{} ({}) · {}", info.id(), labels, examples[k].source)] {
          plot_attention(examples[k], info.layer, info.head, title,
                         plots / "attention" / fmt::format("{}_{}.png", info.id(), k));
        });
      }
    }
  }
  if (contents.induction_plot) {
    tasks.emplace_back([&data, &probes, plots] { plot_induction(data, probes, plots / "induction.png"); });
  }
  if (contents.pruning_plot) tasks.emplace_back([&data, plots] { plot_pruning(data, plots / "pruning.png"); });
}

void check_examples(const std::vector<ExampleSequence>& examples, const ReportData& data, const char* kind) {
  for (const auto& example : examples) {
    const std::size_t length = example.tokens.size();
    const std::size_t expected = static_cast<std::size_t>(data.layers) * data.heads * length * length;
    if (example.layers != data.layers || example.heads != data.heads || example.attention.size() != expected ||
        length == 0) {
      throw std::runtime_error(fmt::format(
          "{} example \"{}\": attention must be [layers={}][heads={}][T][T] with T = {} tokens ({} weights), got "
          "[{}][{}] and {} weights",
          kind, example.source, data.layers, data.heads, length, expected, example.layers, example.heads,
          example.attention.size()));
    }
  }
}

}  // namespace

void write_reports(const std::filesystem::path& directory, const nlohmann::ordered_json& heads,
                   const std::vector<ExampleSequence>& examples, const std::vector<ExampleSequence>& probes,
                   const ReportOptions& options) {
  if (!options.html && !options.plots) return;
  try {
    const ReportData data = read_report_data(heads);
    check_examples(examples, data, "corpus");
    check_examples(probes, data, "probe");
    ReportContents contents;
    contents.plots = options.plots;
    contents.induction_plot = options.plots && !probes.empty() && data.score("induction") != nullptr;
    contents.attention_plots = options.plots ? attention_plots_per_head(data, examples.size()) : 0;
    contents.pruning_plot = options.plots && data.ablation && data.ablation->loss_range();
    contents.viewer = select_viewer_examples(examples, probes, data.layers, data.heads);
    std::vector<std::function<void()>> tasks;
    if (options.plots) add_plot_tasks(tasks, directory, data, examples, probes, contents);
    if (options.html) {
      tasks.emplace_back([&] { write_attention_data(directory, examples, probes, contents.viewer, data.map_layers, data.heads); });
      tasks.emplace_back([&] { write_index_page(directory, heads, data, contents); });
      const auto pages = directory / "heads";
      std::filesystem::create_directories(pages);
      for (const auto& info : data.head_list) {
        tasks.emplace_back([&, pages] {
          write_text_file(pages / (info.id() + ".html"), head_page(heads, data, info, examples, probes, contents));
        });
      }
    }
    run_tasks_in_parallel(tasks);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("writing the report into {}: {}", directory.string(), error.what()));
  }
}

}  // namespace headscan
