#pragma once
// A model loaded and instrumented for attention capture (see DESIGN.md, "Model contract"), behind
// one interface whatever its format. LibTorch stays out of this header.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "analyzer/model/model_layers.h"
#include "analyzer/model/model_metadata.h"

namespace at {
class Tensor;
}

namespace headscan {

// Receives every attention-probability tensor a forward call produces, in execution order, as row
// blocks: `attention` is [B, H, Q, T], the probabilities of queries first_row .. first_row + Q − 1
// over all T keys (positions stay absolute). A layer's blocks come one after another, in row order,
// and together cover its T rows; a model that materialises its attention gives one block of all T
// rows (first_row 0). `layer` counts from 0 within one forward call.
using AttentionCallback = std::function<void(int layer, const at::Tensor& attention, std::int64_t first_row)>;

// Multipliers of the attention probabilities inside the graph, for the causal passes: entry l is
// layer l's [B, H] float tensor (head h of sequence b scaled by [b, h]; it may require grad), or
// undefined to leave the layer as it is. Layers beyond the vector are left as they are.
using HeadScales = std::vector<at::Tensor>;

// Replaces a layer's attention probabilities inside the graph, for the causal passes: called with
// the layer and a row block of its probabilities, [B, H, Q, T] from row first_row (after the callback
// and the head scales; AttentionCallback), it returns the probabilities the model goes on with, of
// the same shape and type, or an undefined tensor to leave them.
using AttentionEdit =
    std::function<at::Tensor(int layer, const at::Tensor& attention, std::int64_t first_row)>;

// How headscan's attention op (eager_attention.h) blocked the attention of a model's forward calls:
// that of the call with the longest sequences so far (with the largest block among those).
struct AttentionBlockUse {
  std::int64_t rows = 0;         // Q, the query rows of a block; 0 when no attention went through the op
  std::int64_t length = 0;       // L, the sequence length of that call
  std::int64_t block_bytes = 0;  // one block [B, H, Q, L] in float32, as the statistics read it
};

// What a forward call produced besides attention: the logits, when the model returns a [B, T, V]
// tensor (alone or first in a tuple), for probe losses; [B, K, V] at the rows a call asked for
// (InstrumentedModel::forward's logits_rows).
struct ForwardOutput {
  std::shared_ptr<at::Tensor> logits;  // null when the output is not logits
};

// The LibTorch this headscan runs on, for --version: "LibTorch 2.11.0, CUDA 13.0, no GPU visible"
// (a CUDA build of LibTorch runs on machines without a GPU).
std::string libtorch_description();

// A model loaded and instrumented for attention capture, whichever format holds it: a TorchScript
// archive (analyzer/model/torchscript/) or an exported program run by NativeRT
// (analyzer/model/exported/). Code above analyzer/model/ sees only this interface.
class InstrumentedModel {
 public:
  // Loads `path`, reads the extra files and instruments the forward graph; the format is read off
  // the file (a zip whose archive_format record says "pt2" is an exported program, else a
  // TorchScript archive). Throws InputError when the file is missing, not a model archive, has no
  // attention softmax (and returns no attention), or has a forward that cannot take int64 [B, T]
  // input ids.
  // `dtype` ("float32", "bfloat16" or "float16"; empty: as the archive holds them) casts the
  // floating-point parameters and buffers after loading (--dtype). The module, and the device and
  // tensor constants of its graph (torchscript/graph_device.h), move to `device` (--device). An
  // exported program is cast and moved likewise (exported/program_interpreter.h) where `dtype`
  // differs, and where `device` does when `exact_device`; without it (--device auto chose the
  // device) the program runs where it was exported, and device() says where.
  static std::unique_ptr<InstrumentedModel> load(const std::string& path, const std::string& dtype = "",
                                                 const c10::Device& device = c10::Device(c10::kCPU),
                                                 bool exact_device = true);
  virtual ~InstrumentedModel();

  virtual const std::string& path() const = 0;
  // "torchscript" or "exported program", for heads.json
  virtual std::string format() const = 0;
  virtual const ModelMetadata& metadata() const = 0;
  // The model's layers as it numbers them and the layer of each attention map (model_layers.h);
  // not known (with a note) where the archive does not say.
  virtual const LayerNumbering& layer_numbering() const = 0;
  virtual const std::string& embedded_tokenizer() const = 0;  // tokenizer.json text; empty if absent
  virtual bool takes_attention_mask() const = 0;
  virtual std::string forward_schema() const = 0;
  // Attention softmaxes observed in the forward graph (and attention ops in their eager form)
  virtual int softmax_count() const = 0;
  // How many of those are scaled_dot_product_attention calls that headscan's own op computes in
  // blocks of query rows (eager_attention.h); the others are softmaxes the model materialises
  // whole, [B, H, T, T] per layer, whose memory grows with T².
  virtual int blockwise_attention_count() const = 0;
  // Whether each of the softmax_count() nodes runs exactly once per forward call: none is inside a
  // loop or a branch of the graph. Then, when softmax_count() is the number of attention layers
  // every input shows, the last attention layer's last block ends the attention of the call.
  virtual bool attention_runs_once() const = 0;
  std::string capture_method() const;  // "graph" or "outputs" (HF-style returned attentions)
  // The dtype the model runs in: that of most of its floating-point parameters ("float32",
  // "bfloat16", "float16", "float64").
  virtual std::string dtype() const = 0;
  // Where it runs; forward() moves its inputs there, and the attention it captures is there.
  virtual const c10::Device& device() const = 0;
  // Empty when gradients flow from the forward's output to the head scales (HeadScales that
  // require grad); else why they cannot, for the passes that differentiate.
  virtual std::string gradient_limit() const = 0;

  // The rows Q of each block in which headscan's attention op computes attention (AttentionCallback):
  // 0, the default, plans them from the device's free memory for each call (attention_plan.h);
  // --attention-block sets them. Attention the model materialises itself comes as one block.
  void set_attention_block(std::int64_t rows) { attention_block_ = rows; }
  std::int64_t attention_block() const { return attention_block_; }
  // The blocks the op used (AttentionBlockUse), over the forward calls so far.
  AttentionBlockUse attention_block_use() const { return attention_block_use_; }

  // Runs forward on ids [B, T] int64 (and mask [B, T] int64, 1 = real token, when the model takes
  // one), on any device (they move to the model's), handing each attention tensor to `on_attention`
  // as it is produced. Throws InputError for problems of the model or its input (a fused attention
  // op ran, a token id is beyond the embedding, the forward rejects the input), std::runtime_error
  // when memory runs out (also inside `on_attention`), naming the options that lower it; errors
  // thrown by `on_attention` pass through with their type. An empty `on_attention` is not called.
  // With `scales`, each head's probabilities are multiplied by its scale (HeadScales) after the
  // callback has seen them; a model that returns its attention (capture "outputs") cannot be
  // scaled, and then `scales` must be null. So with `edit` (AttentionEdit).
  // `logits_rows` (int64 [K], positions shared by the batch) asks for the logits at those rows
  // only: [B, K, V]. A model that computes only them (selects_logits_rows()) never holds [B, T, V];
  // another computes [B, T, V] and keeps those rows.
  virtual ForwardOutput forward(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention,
                                const HeadScales* scales = nullptr, const AttentionEdit* edit = nullptr,
                                const at::Tensor* logits_rows = nullptr) = 0;
  // Whether the model computes its logits at the rows a forward call asks for only: an exported
  // program whose forward takes logits_rows (headscan export of a model with transformers'
  // logits_to_keep).
  virtual bool selects_logits_rows() const { return false; }
  // Runs the forward as far as its last attention map, where the model can end there by itself
  // (an exported program that carries its attention program, or one that runs whole without
  // stopping through NativeRT), handing the attention to `on_attention` as forward() does; returns
  // false, having run nothing, where the caller must stop the forward itself (a TorchScript module:
  // an exception out of the callback unwinds the interpreter, which logs nothing).
  virtual bool forward_attention(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention);

 protected:
  InstrumentedModel() = default;
  // Keeps `use` when its length (then its block) is the largest so far.
  void note_attention_block_use(const AttentionBlockUse& use);
  InstrumentedModel(const InstrumentedModel&) = delete;
  InstrumentedModel& operator=(const InstrumentedModel&) = delete;

 private:
  std::int64_t attention_block_ = 0;
  AttentionBlockUse attention_block_use_;
};

}  // namespace headscan
