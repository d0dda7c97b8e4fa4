#pragma once
// A TorchScript model loaded and instrumented for attention capture (see DESIGN.md, "Model
// contract"). The LibTorch module lives behind a pointer so that this header stays light.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "analyzer/model/model_metadata.h"

namespace at {
class Tensor;
}

namespace headscan {

// Receives every attention-probability tensor a forward call produces, in execution order.
// `attention` is [B, H, T, T]; `layer` counts from 0 within one forward call.
using AttentionCallback = std::function<void(int layer, const at::Tensor& attention)>;

// Multipliers of the attention probabilities inside the graph, for the causal passes: entry l is
// layer l's [B, H] float tensor (head h of sequence b scaled by [b, h]; it may require grad), or
// undefined to leave the layer as it is. Layers beyond the vector are left as they are.
using HeadScales = std::vector<at::Tensor>;

// Replaces a layer's attention probabilities inside the graph, for the causal passes: called with
// the layer and its [B, H, T, T] probabilities (after the callback and the head scales), it returns
// the probabilities the model goes on with, of the same shape and type, or an undefined tensor to
// leave them.
using AttentionEdit = std::function<at::Tensor(int layer, const at::Tensor& attention)>;

// What a forward call produced besides attention: the logits, when the model returns a [B, T, V]
// tensor (alone or first in a tuple), for probe losses.
struct ForwardOutput {
  std::shared_ptr<at::Tensor> logits;  // null when the output is not logits
};

// The LibTorch this headscan runs on, for --version: "LibTorch 2.11.0, CUDA 13.0, no GPU visible"
// (a CUDA build of LibTorch runs on machines without a GPU).
std::string libtorch_description();

class InstrumentedModel {
 public:
  // Loads `path`, reads the extra files and instruments the forward graph. Throws InputError when
  // the file is missing, not a TorchScript archive, has no attention softmax (and returns no
  // attention), or has a forward that cannot take int64 [B, T] input ids.
  // `dtype` ("float32", "bfloat16" or "float16"; empty: as the archive holds them) casts the
  // floating-point parameters and buffers after loading (--dtype). The module, and the device and
  // tensor constants of its graph (graph_device.h), move to `device` (--device).
  static std::unique_ptr<InstrumentedModel> load(const std::string& path, const std::string& dtype = "",
                                                 const c10::Device& device = c10::Device(c10::kCPU));
  ~InstrumentedModel();

  const std::string& path() const;
  const ModelMetadata& metadata() const;
  const std::string& embedded_tokenizer() const;  // tokenizer.json text; empty if absent
  bool takes_attention_mask() const;
  std::string forward_schema() const;
  // aten::softmax and aten::scaled_dot_product_attention nodes in the inlined forward graph
  int softmax_count() const;
  std::string capture_method() const; // "graph" or "outputs" (HF-style returned attentions)
  // The dtype the model runs in: that of most of its floating-point parameters ("float32",
  // "bfloat16", "float16", "float64").
  std::string dtype() const;
  // Where it runs; forward() moves its inputs there, and the attention it captures is there.
  const c10::Device& device() const;

  // Runs forward on ids [B, T] int64 (and mask [B, T] int64, 1 = real token, when the model takes
  // one), on any device (they move to the model's), handing each attention tensor to `on_attention`
  // as it is produced. Throws InputError for problems of the model or its input (a fused attention
  // op ran, a token id is beyond the embedding, the forward rejects the input), std::runtime_error
  // when memory runs out (also inside `on_attention`), naming the options that lower it; errors
  // thrown by `on_attention` pass through with their type. An empty `on_attention` is not called.
  // With `scales`, each head's probabilities are multiplied by its scale (HeadScales) after the
  // callback has seen them; a model that returns its attention (capture "outputs") cannot be
  // scaled, and then `scales` must be null. So with `edit` (AttentionEdit).
  ForwardOutput forward(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention,
                        const HeadScales* scales = nullptr, const AttentionEdit* edit = nullptr);

  struct Impl;  // LibTorch state, defined in model.cpp

 private:
  explicit InstrumentedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headscan
