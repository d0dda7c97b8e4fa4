// mean_distance: mean over queries of sum_j A[i, j] * |i - j|, in tokens.
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"

namespace headscan {
namespace {

class MeanDistanceClassifier : public MeanScoreClassifier {
 public:
  MeanDistanceClassifier() : MeanScoreClassifier("mean_distance", std::nullopt) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    const std::int64_t length = attention.size(-1);
    if (distances_.dim() != 2 || distances_.size(0) != length) {
      const at::Tensor position = torch::arange(length, attention.options());
      distances_ = (position.unsqueeze(1) - position.unsqueeze(0)).abs();  // [T, T]
    }
    means_.add(layer, (attention * distances_).sum(/*dim=*/-1), context.valid);
  }

 private:
  at::Tensor distances_;  // |i - j| for the last sequence length seen
};

}  // namespace

std::unique_ptr<HeadClassifier> make_mean_distance_classifier() {
  return std::make_unique<MeanDistanceClassifier>();
}

}  // namespace headscan
