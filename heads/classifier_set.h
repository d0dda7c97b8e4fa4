#pragma once
// Every classifier of a run, fed together: routes each layer's attention to the classifiers that
// read the batch's source, shares the per-row summaries among them (heads/row_summary.h), brings
// their per-head sums off the attention's device once per batch (heads/device_sums.h), and turns
// their statistics into the heads of heads.json (scores, labels, primary label).

#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/classifier.h"
#include "heads/device_sums.h"
#include "heads/row_summary.h"

namespace headscan {

class ClassifierSet {
 public:
  // Every registered classifier (heads/registry.h).
  ClassifierSet();
  explicit ClassifierSet(std::vector<std::unique_ptr<HeadClassifier>> classifiers);
  ~ClassifierSet();
  ClassifierSet(ClassifierSet&&) noexcept;
  ClassifierSet& operator=(ClassifierSet&&) noexcept;

  // Called once, before the first batch; `thresholds` carries the statistics' parameters
  // (HeadClassifier::configure), the defaults when empty.
  void begin(const ModelShape& shape, const Thresholds& thresholds = {});
  // Called before each forward call whose attention observe() receives: the row summaries of the
  // previous batch are dropped.
  void begin_batch();
  // Called after the forward call: the batch's sums reach the classifiers' totals (so do the
  // sums still waiting when the next batch begins, or save() or finalize() is called).
  void end_batch();
  // Where the current batch's sums wait; a run adds its own checks of the batch here too.
  DeviceSums& pending_sums() { return *sums_; }
  // One row block of a layer's attention of the current batch, [B, H, Q, T] from row
  // context.first_row (heads/row_block.h): each classifier that reads context.source sees it, with
  // the block's row summary computed at most once.
  void observe(int layer, const at::Tensor& attention, const BatchContext& context);

  // Whether any classifier needs dependency arcs.
  bool wants_parses() const;

  // Statistics of every classifier by name, and their merge (shards of one model and corpus).
  nlohmann::json save() const;
  void merge(const nlohmann::json& saved);

  // The "heads" array of heads.json: per head its layer, head, key/value group, primary label,
  // labels (in primary order) and scores. `kv_heads` divides the number of heads.
  nlohmann::ordered_json finalize(const Thresholds& thresholds, int kv_heads) const;

  const std::vector<std::unique_ptr<HeadClassifier>>& classifiers() const { return classifiers_; }

 private:
  std::vector<std::unique_ptr<HeadClassifier>> classifiers_;
  std::unique_ptr<RowSummaryCache> rows_;
  std::unique_ptr<DeviceSums> sums_;  // flushed by const members too: they add to totals they then read
  ModelShape shape_;
};

}  // namespace headscan
