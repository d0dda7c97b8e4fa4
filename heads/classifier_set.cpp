#include "heads/classifier_set.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "heads/registry.h"
#include "heads/row_block.h"

namespace headscan {

ClassifierSet::ClassifierSet() : ClassifierSet(make_classifiers()) {}

ClassifierSet::ClassifierSet(std::vector<std::unique_ptr<HeadClassifier>> classifiers)
    : classifiers_(std::move(classifiers)),
      rows_(std::make_unique<RowSummaryCache>()),
      sums_(std::make_unique<DeviceSums>()) {}

ClassifierSet::~ClassifierSet() = default;
ClassifierSet::ClassifierSet(ClassifierSet&&) noexcept = default;
ClassifierSet& ClassifierSet::operator=(ClassifierSet&&) noexcept = default;

void ClassifierSet::begin(const ModelShape& shape, const Thresholds& thresholds) {
  shape_ = shape;
  for (auto& classifier : classifiers_) {
    classifier->configure(thresholds);
    classifier->begin(shape);
  }
}

void ClassifierSet::begin_batch() {
  *rows_ = RowSummaryCache();
  sums_->flush();
}

void ClassifierSet::end_batch() {
  *rows_ = RowSummaryCache();  // the layer's summary is not needed again: its memory goes now
  sums_->flush();
}

void ClassifierSet::observe(int layer, const at::Tensor& attention, const BatchContext& context) {
  row_block(attention, context);  // a row block [B, H, Q, T] within its T rows, or an error naming its sizes
  BatchContext shared = context;
  shared.rows = rows_.get();
  shared.sums = sums_.get();
  for (auto& classifier : classifiers_) {
    if (classifier->source() == context.source) classifier->observe(layer, attention, shared);
  }
}

bool ClassifierSet::wants_parses() const {
  return std::any_of(classifiers_.begin(), classifiers_.end(), [](const auto& c) { return c->wants_parses(); });
}

nlohmann::json ClassifierSet::save() const {
  sums_->flush();
  nlohmann::json saved = nlohmann::json::object();
  for (const auto& classifier : classifiers_) saved[classifier->name()] = classifier->save();
  return saved;
}

void ClassifierSet::merge(const nlohmann::json& saved) {
  sums_->flush();
  if (!saved.is_object()) {
    throw InputError(fmt::format("saved statistics are {}, not an object of statistics by classifier", quote_json(saved)));
  }
  for (const auto& item : saved.items()) {
    const bool known = std::any_of(classifiers_.begin(), classifiers_.end(),
                                   [&](const auto& classifier) { return classifier->name() == item.key(); });
    if (!known) {
      throw InputError(fmt::format("saved statistics hold {}, which no classifier of headscan {} saves: they come from "
                                   "another headscan version",
                                   quote_json(item.key()), HEADSCAN_VERSION));
    }
  }
  for (auto& classifier : classifiers_) {
    const auto found = saved.find(classifier->name());
    if (found == saved.end()) {
      throw InputError(fmt::format("saved statistics have no \"{}\": they come from another headscan version",
                                   classifier->name()));
    }
    classifier->merge(*found);
  }
}

nlohmann::ordered_json ClassifierSet::finalize(const Thresholds& thresholds, int kv_heads) const {
  sums_->flush();
  const int group_size = kv_heads > 0 ? std::max(1, shape_.heads / kv_heads) : 1;
  nlohmann::ordered_json heads = nlohmann::ordered_json::array();
  for (int layer = 0; layer < shape_.layers; ++layer) {
    for (int head = 0; head < shape_.heads; ++head) {
      nlohmann::ordered_json scores = nlohmann::ordered_json::object();
      std::vector<std::string> labels;
      HeadVerdict verdict{scores, labels};
      for (const auto& classifier : classifiers_) classifier->finalize(layer, head, thresholds, verdict);
      sort_labels(labels);
      heads.push_back({{"layer", layer},
                       {"head", head},
                       {"kv_group", head / group_size},
                       {"primary", primary_label(labels)},
                       {"labels", labels},
                       {"scores", std::move(scores)}});
    }
  }
  return heads;
}

}  // namespace headscan
