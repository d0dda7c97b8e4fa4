#include "analyzer/model/exported/selection_ops.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "analyzer/model/capture.h"

namespace headscan {
namespace {

at::Tensor index_topk(const at::Tensor& scores, std::int64_t topk) {
  TORCH_CHECK(scores.dim() >= 1 && topk >= 1, "headscan::index_topk: scores [..., keys] and topk >= 1, got ",
              scores.sizes(), " and ", topk);
  const std::int64_t keys = scores.size(-1);
  const at::Tensor indices = std::get<1>(scores.topk(std::min(topk, keys), /*dim=*/-1));
  if (keys >= topk) return indices;
  return at::constant_pad_nd(indices, {0, topk - keys}, 0);
}

}  // namespace

void link_selection_ops() {}

TORCH_LIBRARY_FRAGMENT(headscan, m) { m.def("headscan::index_topk(Tensor scores, int topk) -> Tensor"); }

// Explicit kernels for every backend, so that Python can give the fake one (ops.py's note).
TORCH_LIBRARY_IMPL(headscan, CompositeExplicitAutograd, m) { m.impl("index_topk", index_topk); }

// Its indices take no gradient; under --ablation's importance pass its scores may (capture.h).
TORCH_LIBRARY_IMPL(headscan, Autograd, m) {
  m.impl("index_topk", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
}

}  // namespace headscan
