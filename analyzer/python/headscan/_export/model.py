"""The model: its size read from the config before it is built, its transformers class, loading it
with the attention asked for (eager or SDPA), the module that is traced, and the token rows it is
traced and checked on."""

import inspect
import os

import torch

from . import ExportError, ExportInputError, deepseek

BYTES_PER_PARAMETER = {"float32": 4, "bfloat16": 2, "float16": 2}


def config_int(config, names):
    """(value, field) of the first of `names` the config holds as a non-negative int, else (None, None)."""
    for name in names:
        try:
            value = getattr(config, name, None)
        except Exception:  # noqa: BLE001 - a config refusing a field that varies by layer (Gemma 4's head_dim)
            value = None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value, name
    return None, None


def readable(count):
    """A count from a config, which may be any integer: digits up to a quadrillion."""
    return str(count) if count < 10**15 else "more than 10^15"


def estimate_size(config):
    """(parameters, what they are made of) from the config's sizes alone, or None when the config
    does not name a hidden size and a layer count. A lower bound: the embedding, and per layer the
    attention's projections and a two-matrix MLP (every expert's, for a mixture of experts); norms,
    biases and a separate output head are left out."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, hidden_field = config_int(text, ("hidden_size", "n_embd", "d_model", "dim"))
    layers, layers_field = config_int(text, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    if not hidden or not layers:
        return None
    vocab = config_int(text, ("vocab_size",))[0] or 0
    heads = config_int(text, ("num_attention_heads", "n_head", "num_heads"))[0] or 1
    head_dim = config_int(text, ("head_dim",))[0] or max(1, hidden // heads)
    kv_heads = config_int(text, ("num_key_value_heads",))[0] or heads
    intermediate = config_int(text, ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"))[0] or 4 * hidden
    experts = config_int(text, ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"))[0] or 1
    expert_intermediate = config_int(text, ("moe_intermediate_size",))[0] or intermediate
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    mlp = 2 * hidden * expert_intermediate * experts if experts > 1 else 2 * hidden * intermediate
    parameters = vocab * hidden + layers * (attention + mlp)
    parts = (f"{readable(layers)} layers ({layers_field}) of hidden size {readable(hidden)} ({hidden_field}), "
             f"a vocabulary of {readable(vocab)}")
    if experts > 1:
        parts += f", {readable(experts)} experts"
    return parameters, parts


def machine_memory():
    """Bytes of memory this process may use: the machine's, or its container's limit when lower;
    None where the system does not say."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        if limit.isdigit():
            memory = min(memory, int(limit))
    except OSError:
        pass
    return memory


def human_bytes(count):
    """3 significant digits in the largest unit of 1000 that keeps the number at least 1."""
    unit = "bytes"
    for larger in ("KB", "MB", "GB", "TB", "PB"):
        if count < 1000:
            break
        count, unit = count / 1000, larger
    return f"{count:.3g} {unit}"


def check_size(config, requested_dtype):
    """Refuse, before transformers builds it, a model whose weights alone exceed this machine's
    memory (a config.json with 10 million layers would otherwise be built until memory runs out)."""
    estimate = estimate_size(config)
    if estimate is None:
        return
    parameters, parts = estimate
    dtype = requested_dtype
    if dtype == "auto":
        stored = str(getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "float32")
        dtype = stored.replace("torch.", "") if stored.replace("torch.", "") in BYTES_PER_PARAMETER else "float32"
    weights = parameters * BYTES_PER_PARAMETER[dtype]
    memory = machine_memory()
    if memory is not None and weights > memory:
        parameters, weights = min(parameters, 10**300), min(weights, 10**300)  # printable as floats
        smaller = " (or --dtype bfloat16, half of it, if that fits)" if dtype == "float32" else ""
        raise ExportInputError(
            f"config.json describes a model of at least {float(parameters):.3g} parameters ({parts}): "
            f"{human_bytes(weights)} of {dtype} weights, more than this machine's {human_bytes(memory)} of memory, "
            f"so transformers would run out of memory building it; check config.json's sizes, or export on a "
            f"machine with more memory{smaller}")


def read_config(model_dir, trust_remote_code):
    from transformers import AutoConfig

    if not os.path.isdir(model_dir):
        raise ExportInputError(f"{model_dir} is not a directory (expected a Hugging Face model directory)")
    try:
        return AutoConfig.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    except Exception as e:  # noqa: BLE001
        raise ExportInputError(f"transformers could not read {model_dir}/config.json: {one_line(e)}") from None


def refuse_family(config, error):
    """`error` (an ExportError class) when the config is of a kind headscan does not analyse: an
    encoder-decoder, or attention that is not over tokens (deepseek.refusal)."""
    if getattr(config, "is_encoder_decoder", False):
        raise error(f"{config.model_type} is an encoder-decoder model; headscan analyses one stack "
                    "taking input_ids (a decoder-only or encoder-only model)")
    why = deepseek.refusal(config)
    if why is not None:
        raise error(why)


def output_embeddings(model):
    """The model's language-model head (transformers' get_output_embeddings()), or None."""
    try:
        return model.get_output_embeddings()
    except (AttributeError, NotImplementedError):  # a model's own code may leave it out
        return None


def lm_head_rows(model):
    """The tokens the model's language-model head scores (its weight's rows), or None."""
    weight = getattr(output_embeddings(model), "weight", None)
    return int(weight.shape[0]) if isinstance(weight, torch.Tensor) and weight.dim() == 2 else None


def missing_outputs(model, output, vocab_size, causal):
    """None when the archive's output is logits [B, T, vocabulary]: a width of at least the
    tokenizer's vocabulary, or that of the model's own language-model head (a tokenizer may hold
    added tokens beyond the embedding, as Gemma 3's does); else what headscan will lack and why."""
    if output.dim() == 3 and (output.shape[-1] >= vocab_size or output.shape[-1] == lm_head_rows(model)):
        return None
    head = output_embeddings(model)
    why = (f"{type(model).__name__} has no language-model head" if head is None
           else f"{type(model).__name__}'s first output is not logits")
    shape = (f"{output.shape[-1]} numbers per token (hidden states)" if output.dim() == 3
             else f"of shape {list(output.shape)}")
    lacking = "no repeat_loss (the loss on the induction probes' repeats)"
    if causal:  # retrieval is measured on causal models only
        lacking += ", no retrieval (copy events are the model's predictions of the needle)"
    objective = "next-token" if causal else "masked-LM"
    return (f"{why}: its output is {shape}, not logits over the vocabulary's {vocab_size} tokens, so headscan's "
            f"report will have {lacking}, and --ablation is refused (it measures the {objective} loss); every "
            "attention score is there. If the weights include a head, export its class with --model-class")


def model_class(config, requested, trust_remote_code):
    import transformers
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)
    if requested:
        cls = getattr(transformers, requested, None)
        if cls is None:
            raise ExportInputError(f"--model-class {requested}: transformers {transformers.__version__} has no such class")
        return cls
    if trust_remote_code and getattr(config, "auto_map", None):
        for auto in (AutoModelForCausalLM, AutoModelForMaskedLM):
            if auto.__name__ in config.auto_map:
                return auto
        return AutoModel
    for name in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return AutoModelForMaskedLM
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return AutoModelForCausalLM
    return AutoModel


def one_line(error):
    """An exception's message on one line (transformers' and torch's span several)."""
    return " ".join(str(error).split()) or type(error).__name__


def load_model(args, config, attention="eager", cls=None):
    """The model in eval mode, its attention `attention` ("eager" or "sdpa"), of class `cls`
    (default: model_class); of a GGUF file where args.gguf says MODEL_DIR is one (gguf_file.py)."""
    cls = cls or model_class(config, args.model_class, args.trust_remote_code)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}[args.dtype]
    if getattr(args, "gguf", False):
        from .gguf_file import load_model as load_gguf_model

        return load_gguf_model(cls, args.model_dir, attention, dtype)
    try:
        model = cls.from_pretrained(args.model_dir, attn_implementation=attention, dtype=dtype,
                                    trust_remote_code=args.trust_remote_code)
    except (MemoryError, torch.OutOfMemoryError) as e:  # a failure while running (exit 1), not bad input
        raise ExportError(f"transformers ran out of memory loading {args.model_dir} as {cls.__name__}: "
                          f"{one_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - missing or damaged weights, shapes that disagree with config.json
        raise ExportInputError(f"transformers could not load {args.model_dir} as {cls.__name__} with {attention} "
                               f"attention: {type(e).__name__}: {one_line(e)}") from None
    model.eval()
    return model


class LogitsOnly(torch.nn.Module):
    """forward(input_ids, attention_mask) -> the model's first output (logits, or the hidden states
    of a model without a head), no cache."""

    def __init__(self, model, takes_mask):
        super().__init__()
        self.model = model
        self.takes_mask = takes_mask
        parameters = inspect.signature(model.forward).parameters
        self.extra = {"use_cache": False} if "use_cache" in parameters else {}

    def run(self, input_ids, attention_mask=None, **kwargs):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **self.extra, **kwargs)

    def forward(self, input_ids, attention_mask):
        return self.run(input_ids, attention_mask)[0]


class IdsOnly(LogitsOnly):
    """forward(input_ids) -> logits, for --no-attention-mask (headscan then never pads)."""

    def forward(self, input_ids):  # pylint: disable=arguments-differ
        return self.run(input_ids)[0]


class RowsLogitsOnly(LogitsOnly):
    """forward(input_ids, attention_mask, logits_rows) -> the logits of the rows logits_rows
    (int64 [K], shared by the batch) only, [B, K, V]: transformers' logits_to_keep."""

    def forward(self, input_ids, attention_mask, logits_rows):  # pylint: disable=arguments-differ
        return self.run(input_ids, attention_mask, logits_to_keep=logits_rows)[0]


class RowsIdsOnly(LogitsOnly):
    """RowsLogitsOnly without the mask: forward(input_ids, logits_rows)."""

    def forward(self, input_ids, logits_rows):  # pylint: disable=arguments-differ
        return self.run(input_ids, logits_to_keep=logits_rows)[0]


class AllRows:
    """A trace of RowsLogitsOnly or RowsIdsOnly called as LogitsOnly or IdsOnly: every row's
    logits, for the checks."""

    def __init__(self, traced):
        self.traced = traced

    def __call__(self, *inputs):
        return self.traced(*inputs, torch.arange(inputs[0].shape[1], device=inputs[0].device))


SAMPLE_TEXT = ("The quick brown fox jumps over the lazy dog. A second sentence follows the first one, "
               "and then the story goes on with many more words than the model needs. ")


def example_rows(tokenizer, bos_id, lengths, vocab_size):
    """Token rows of the given lengths from SAMPLE_TEXT (BOS first when there is one)."""
    ids = [i for i in tokenizer.encode(SAMPLE_TEXT, add_special_tokens=False).ids if i < vocab_size]
    if not ids:
        ids = list(range(min(vocab_size, 50)))
    rows = []
    for n, length in enumerate(lengths):
        body = [ids[(n * 7 + k) % len(ids)] for k in range(length)]
        rows.append(([bos_id] + body[:length - 1]) if bos_id is not None else body)
    return rows


def padded_batch(rows, pad_id):
    """int64 ids and mask [B, T], rows right-padded with pad_id (as headscan pads: with BOS, else 0)."""
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, :len(row)] = torch.tensor(row)
        mask[b, :len(row)] = 1
    return ids, mask
