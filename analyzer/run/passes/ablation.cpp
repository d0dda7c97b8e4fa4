#include "analyzer/run/passes/ablation.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "analyzer/model/attention_plan.h"
#include "analyzer/run/model_output.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/sequences/batch_tensors.h"

namespace headscan {
namespace {

// Mask tokens as tokenizers name them (BERT, RoBERTa and their descendants); the token must also
// be one of the tokenizer's special tokens.
constexpr const char* kMaskTokenNames[] = {"[MASK]", "<mask>", "<MASK>", "[mask]"};

std::optional<std::pair<std::string, std::int64_t>> find_mask_token(const Tokenizer& tokenizer) {
  for (const char* name : kMaskTokenNames) {
    const std::optional<std::int64_t> id = tokenizer.token_to_id(name);
    if (id && tokenizer.is_special(*id)) return std::make_pair(std::string(name), *id);
  }
  return std::nullopt;
}

// A seed for one sequence of the set: SplitMix64 of the run's seed and the sequence's index, so
// that masks do not depend on how sequences are batched.
std::uint64_t item_seed(std::uint64_t seed, std::size_t index) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(index) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Per row of logits [R, T, V], the mean cross-entropy (natural log) over the positions whose
// target [R, T] is not -1: [R] double. With gradients, only the predicting positions are selected
// first, so that padding's logits enter neither the loss nor its gradient; without, the logits are
// read in place (no copy of a [R, T, V] tensor) and the other positions are masked out.
at::Tensor row_losses(const at::Tensor& logits, const at::Tensor& targets) {
  const std::int64_t rows = logits.size(0);
  const std::int64_t length = logits.size(1);
  const at::Tensor predicting = targets.ge(0);
  const at::Tensor counts = predicting.sum(1).to(torch::kDouble);
  if (!logits.requires_grad()) {
    // Half-precision logits (a bfloat16 or float16 model) are summed in float32, a copy; float32
    // ones are read in place.
    const bool half = logits.scalar_type() == torch::kBFloat16 || logits.scalar_type() == torch::kHalf;
    const at::Tensor wide = half ? logits.to(torch::kFloat) : logits;
    const at::Tensor wanted = targets.clamp_min(0).unsqueeze(2);
    const at::Tensor cross_entropy = wide.logsumexp(2).to(torch::kDouble) -
                                     wide.gather(2, wanted).squeeze(2).to(torch::kDouble);
    return torch::where(predicting, cross_entropy, torch::zeros_like(cross_entropy)).sum(1) / counts;
  }
  const at::Tensor flat_targets = targets.reshape({rows * length});
  const at::Tensor positions = flat_targets.ge(0).nonzero().squeeze(1);
  const at::Tensor chosen = logits.reshape({rows * length, logits.size(2)}).index_select(0, positions).to(torch::kFloat);
  const at::Tensor wanted = flat_targets.index_select(0, positions);
  const at::Tensor cross_entropy = chosen.logsumexp(1) - chosen.gather(1, wanted.unsqueeze(1)).squeeze(1);
  const at::Tensor row_of = positions.div(length, "floor");
  const at::Tensor sums =
      torch::zeros({rows}, logits.options().dtype(torch::kDouble)).index_add(0, row_of, cross_entropy.to(torch::kDouble));
  return sums / counts;
}

// The items of one batch as model input, each repeated `copies` times (rows c * items + i).
struct ItemBatch {
  BatchTensors tensors;
  at::Tensor targets;  // [R, T] int64, -1: no prediction
};

ItemBatch item_batch(const RunState& state, const std::vector<std::size_t>& indices, std::int64_t copies) {
  std::vector<Sequence> sequences;
  std::size_t length = 0;
  for (std::size_t index : indices) {
    sequences.push_back(state.ablation_items[index].input);
    length = std::max(length, sequences.back().ids.size());
  }
  const c10::Device device = state.model->device();
  ItemBatch batch{to_tensors(sequences, state.pad_id, at::Tensor(), device, state.min_columns()), {}};
  at::Tensor targets = torch::full({static_cast<std::int64_t>(indices.size()), static_cast<std::int64_t>(length)}, -1,
                                   torch::kInt64);
  for (std::size_t row = 0; row < indices.size(); ++row) {
    const std::vector<std::int64_t>& item_targets = state.ablation_items[indices[row]].targets;
    targets[static_cast<std::int64_t>(row)]
        .slice(0, 0, static_cast<std::int64_t>(item_targets.size()))
        .copy_(torch::tensor(item_targets, torch::kInt64));
  }
  batch.targets = targets.to(device);
  if (copies > 1) {
    batch.tensors.ids = batch.tensors.ids.repeat({copies, 1});
    batch.tensors.mask = batch.tensors.mask.repeat({copies, 1});
    batch.targets = batch.targets.repeat({copies, 1});
  }
  return batch;
}

// The logits of one forward call over `batch` (the items `indices`) with heads scaled by `scales`;
// errors name the batch's first corpus line.
at::Tensor logits_of(const RunState& state, const std::vector<std::size_t>& indices, const ItemBatch& batch,
                     const HeadScales& scales, const AttentionEdit* edit = nullptr) {
  const AttentionCallback ignore;
  if (state.options.check_interrupt) state.options.check_interrupt();
  ForwardOutput output;
  try {
    output = state.model->forward(batch.tensors.ids, &batch.tensors.mask, ignore, &scales, edit);
  } catch (...) {
    rethrow_with_context(fmt::format("{} (ablation set, corpus line {}): ", state.model->path(),
                                     state.ablation_items[indices.front()].input.line_number));
  }
  if (!output.logits) throw InputError(fmt::format("{}: the model stopped returning logits", state.model->path()));
  return *output.logits;
}

}  // namespace

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

AblationObjective choose_ablation_objective(const RunState& state) {
  const std::string& path = state.model->path();
  if (state.model->capture_method() != "graph") {
    throw InputError(fmt::format(
        "{}: --ablation scales each head's attention probabilities inside the model, but this model computes "
        "them without aten::softmax and returns them (capture \"outputs\"), so they cannot be scaled; export the "
        "model with torch.softmax over the attention scores, or run without --ablation",
        path));
  }
  if (const std::string limit = state.model->gradient_limit(); !limit.empty()) {
    throw InputError(fmt::format("{}: --ablation ranks heads by the gradient of the loss with respect to each "
                                 "head's scale, but {}; or run without --ablation",
                                 path, limit));
  }
  const Tokenizer& tokenizer = *state.text.tokenizer;
  const bool logits = returns_logits(state.shape, tokenizer.vocab_size());
  const std::string output = output_description(state.shape, tokenizer.vocab_size());
  AblationObjective objective;
  if (state.shape.causal) {
    if (!logits) {
      throw InputError(fmt::format(
          "{}: --ablation measures how removing a head changes the model's next-token loss, which needs logits "
          "[batch, tokens, vocabulary] (vocabulary ≥ the tokenizer's {} tokens) as the output or its first "
          "tensor; the model returns {}; export the model with its language-model head, or run without "
          "--ablation",
          path, tokenizer.vocab_size(), output));
    }
    return objective;
  }
  const auto mask = find_mask_token(tokenizer);
  if (!logits || !mask) {
    throw InputError(fmt::format(
        "{}: --ablation on a bidirectional model measures its masked-LM loss, which needs logits [batch, tokens, "
        "vocabulary] (vocabulary ≥ the tokenizer's {} tokens) as the output or its first tensor and a special mask "
        "token ([MASK] or <mask>) in the tokenizer; {}; export the model with its masked-LM head and a tokenizer "
        "that has its mask token, or run without --ablation",
        path, tokenizer.vocab_size(),
        !logits ? fmt::format("the model returns {}", output) : std::string("the tokenizer has no mask token")));
  }
  objective.kind = AblationObjective::Kind::masked_lm;
  objective.mask_token = mask->first;
  objective.mask_id = mask->second;
  return objective;
}

std::optional<AblationItem> make_ablation_item(const Sequence& sequence, const AblationObjective& objective,
                                               std::size_t index, std::uint64_t seed) {
  AblationItem item;
  item.input = sequence;
  item.input.example = -1;
  item.input.words = nullptr;
  item.input.deferred_words = nullptr;
  const std::size_t length = sequence.ids.size();
  item.targets.assign(length, -1);
  if (objective.kind == AblationObjective::Kind::next_token) {
    for (std::size_t t = 0; t + 1 < length; ++t) item.targets[t] = sequence.ids[t + 1];
  } else {
    std::vector<std::size_t> candidates;
    for (std::size_t t = 0; t < length; ++t) {
      if (sequence.special[t] == 0) candidates.push_back(t);
    }
    if (candidates.empty()) return std::nullopt;
    const auto wanted = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(kMaskRate * static_cast<double>(candidates.size()))));
    // The first `wanted` of a Fisher–Yates shuffle, drawn with this item's own generator.
    std::mt19937_64 generator(item_seed(seed, index));
    for (std::size_t k = 0; k < wanted; ++k) {
      std::uniform_int_distribution<std::size_t> pick(k, candidates.size() - 1);
      std::swap(candidates[k], candidates[pick(generator)]);
      const std::size_t t = candidates[k];
      item.targets[t] = sequence.ids[t];
      item.input.ids[t] = objective.mask_id;
      item.input.special[t] = 1;
    }
  }
  item.predictions = std::count_if(item.targets.begin(), item.targets.end(), [](std::int64_t id) { return id >= 0; });
  if (item.predictions == 0) return std::nullopt;
  return item;
}

AblationRunner::AblationRunner(RunState& state, bool memory_rows) : state_(state) {
  // Items of equal length together (or neighbours in length, padded, when the model allows it),
  // at most --batch-size per forward call; the split never changes an item's loss.
  const std::vector<AblationItem>& items = state.ablation_items;
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return items[a].input.ids.size() < items[b].input.ids.size();
  });
  auto batch_size = static_cast<std::size_t>(state.options.batch_size);
  if (memory_rows && !order.empty()) {
    const auto longest = static_cast<double>(items[order.back()].input.ids.size());
    // The backward keeps every materialised layer's maps. A layer of headscan's op keeps them too
    // where one sequence's map fits one block (the plain autograd graph); where it takes several
    // blocks, it keeps q, k and v and recomputes one layer's blocks at a time (eager_attention.h),
    // counted as one layer.
    const int blockwise = std::clamp(state.model->blockwise_attention_count(), 0, state.shape.layers);
    const auto length = static_cast<std::int64_t>(longest);
    const std::int64_t requested = state.model->attention_block();
    const bool blocked = (requested > 0 && requested < length) ||
                         attention_block_rows(requested, state.shape.heads, length, length, 4,
                                              attention_block_budget(state.model->device())) < length;
    const int kept = blocked ? state.shape.layers - blockwise + (blockwise > 0 ? 1 : 0) : state.shape.layers;
    const double per_row = 12.0 * kept * state.shape.heads * longest * longest;
    batch_size = std::clamp<std::size_t>(static_cast<std::size_t>(kGradientBytes / per_row), 1, batch_size);
  }
  for (std::size_t index : order) {
    const bool room = !batches_.empty() && batches_.back().size() < batch_size &&
                      (state.pads() || items[batches_.back().front()].input.ids.size() == items[index].input.ids.size());
    if (!room) batches_.emplace_back();
    batches_.back().push_back(index);
  }
}

std::vector<std::vector<double>> AblationRunner::losses(const std::vector<HeadFactors>& settings) {
  const ModelShape& shape = state_.shape;
  const auto heads = static_cast<std::size_t>(shape.heads);
  std::vector<std::vector<double>> result(settings.size(), std::vector<double>(state_.ablation_items.size(), 0.0));
  for (const std::vector<std::size_t>& indices : batches_) {
    const std::size_t per_call = std::max<std::size_t>(1, static_cast<std::size_t>(state_.options.batch_size) / indices.size());
    for (std::size_t first = 0; first < settings.size(); first += per_call) {
      const std::size_t count = std::min(per_call, settings.size() - first);
      const ItemBatch batch = item_batch(state_, indices, static_cast<std::int64_t>(count));
      const auto rows = static_cast<std::int64_t>(count * indices.size());
      // A layer whose heads all keep factor 1 in these settings is left unscaled.
      HeadScales scales(static_cast<std::size_t>(shape.layers));
      for (std::size_t s = 0; s < count; ++s) {
        const HeadFactors& factors = settings[first + s];
        for (std::size_t head = 0; head < factors.size(); ++head) {
          if (factors[head] == 1.0F) continue;
          at::Tensor& layer = scales[head / heads];
          if (!layer.defined()) layer = torch::ones({rows, shape.heads}, torch::kFloat);
          layer.slice(0, static_cast<std::int64_t>(s * indices.size()), static_cast<std::int64_t>((s + 1) * indices.size()))
              .select(1, static_cast<std::int64_t>(head % heads))
              .fill_(factors[head]);
        }
      }
      for (at::Tensor& layer : scales) {
        if (layer.defined()) layer = layer.to(state_.model->device());
      }
      const at::Tensor losses =
          row_losses(logits_of(state_, indices, batch, scales), batch.targets).to(torch::kCPU).contiguous();
      const double* loss = losses.data_ptr<double>();
      for (std::size_t s = 0; s < count; ++s) {
        for (std::size_t i = 0; i < indices.size(); ++i) result[first + s][indices[i]] = loss[s * indices.size() + i];
      }
    }
  }
  return result;
}

std::vector<double> AblationRunner::edited_losses(const AttentionEdit& edit) {
  std::vector<double> result(state_.ablation_items.size(), 0.0);
  for (const std::vector<std::size_t>& indices : batches_) {
    const ItemBatch batch = item_batch(state_, indices, 1);
    const at::Tensor losses =
        row_losses(logits_of(state_, indices, batch, HeadScales(), &edit), batch.targets).to(torch::kCPU).contiguous();
    for (std::size_t i = 0; i < indices.size(); ++i) result[indices[i]] = losses.data_ptr<double>()[i];
  }
  return result;
}

void AblationRunner::gradients(std::vector<double>& importance_sums, std::vector<double>& losses) {
  const ModelShape& shape = state_.shape;
  importance_sums.assign(static_cast<std::size_t>(shape.layers * shape.heads), 0.0);
  losses.assign(state_.ablation_items.size(), 0.0);
  torch::AutoGradMode with_gradients(true);
  for (const std::vector<std::size_t>& indices : batches_) {
    const ItemBatch batch = item_batch(state_, indices, 1);
    const auto rows = static_cast<std::int64_t>(indices.size());
    HeadScales scales;
    for (int layer = 0; layer < shape.layers; ++layer) {
      scales.push_back(torch::ones(
          {rows, shape.heads},
          torch::TensorOptions(torch::kFloat).device(state_.model->device()).requires_grad(true)));
    }
    // Σ_x L_x: sequence x's scales reach only its own loss, so one backward gives every ∂L_x/∂ξ_x.
    const at::Tensor item_losses = row_losses(logits_of(state_, indices, batch, scales), batch.targets);
    const at::Tensor total = item_losses.sum();
    std::vector<at::Tensor> gradients;
    if (total.requires_grad()) {
      gradients = torch::autograd::grad({total}, scales, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                        /*create_graph=*/false, /*allow_unused=*/true);
    }
    const at::Tensor detached = item_losses.detach().to(torch::kCPU).contiguous();
    for (std::size_t i = 0; i < indices.size(); ++i) losses[indices[i]] = detached.data_ptr<double>()[i];
    for (std::size_t layer = 0; layer < gradients.size(); ++layer) {
      if (!gradients[layer].defined()) continue;  // nothing downstream reads this layer
      const at::Tensor sums = gradients[layer].abs().to(torch::kDouble).sum(0).to(torch::kCPU).contiguous();
      for (int head = 0; head < shape.heads; ++head) {
        importance_sums[layer * static_cast<std::size_t>(shape.heads) + static_cast<std::size_t>(head)] +=
            sums.data_ptr<double>()[head];
      }
    }
  }
}

}  // namespace headscan
