"""A live model exported for headscan: the program (program.py), checked against the model (pt2.py),
and what its archive holds (headscan.json, tokenizer.json). `headscan export` (command.py) and
headscan.export() both call export_model()."""

import contextlib
import inspect
from dataclasses import dataclass, field

import torch

from . import ExportError, ExportInputError, checks, deepseek, headscan_attention, headscan_json, memory
from .mixer_ops import naming_unreplaced_mixers
from .model import example_rows, lm_head_rows, missing_outputs, padded_batch
from .ops import attentions, define
from .program import exported_program
from .pt2 import Recorder, check_lengths, check_padding, check_rows, check_shapes


def takes_use_cache(model, parameters):
    """Whether the model's forward takes use_cache: among its parameters, or passed on by its
    **kwargs to a base model that takes it (Granite 4 hybrid, whose cache would otherwise make its
    Mamba layers return their final states, which no length-dynamic operator gives)."""
    if "use_cache" in parameters:
        return True
    passes_keywords = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    base = getattr(model, "base_model", None)
    if not passes_keywords or base is None or base is model:
        return False
    return "use_cache" in inspect.signature(base.forward).parameters


class Wrapper(torch.nn.Module):
    """forward(input_ids[, attention_mask]) -> the model's first output (logits, or the hidden
    states of a model without a head), no cache. A transformers model is called with keywords; any
    other module with the ids (and the mask) as positional arguments. `logits_rows` (int64 [K], the
    positions shared by the batch) asks a transformers model for the logits at those rows only
    (its logits_to_keep): [B, K, V] instead of [B, T, V]."""

    def __init__(self, model, takes_mask):
        super().__init__()
        self.model = model  # program.py strips this attribute's name from module paths
        self.takes_mask = takes_mask
        parameters = inspect.signature(model.forward).parameters
        self.keywords = "input_ids" in parameters
        self.extra = {"use_cache": False} if takes_use_cache(model, parameters) else {}
        self.keeps_logits = self.keywords and "logits_to_keep" in parameters

    def run(self, input_ids, attention_mask=None, logits_rows=None):
        if self.keywords:
            masked = {"attention_mask": attention_mask} if self.takes_mask else {}
            if not self.takes_mask and self.compact_mask():
                # Without a 2D mask transformers looks for packed sequences in the positions, which
                # under torch.export makes a [B, 1, T, T] mask; every key is a token here.
                masked = {"attention_mask": torch.ones_like(input_ids)}
            rows = {"logits_to_keep": logits_rows} if logits_rows is not None else {}
            output = self.model(input_ids=input_ids, **masked, **self.extra, **rows)
        else:
            output = self.model(input_ids, attention_mask) if self.takes_mask else self.model(input_ids)
        return output if isinstance(output, torch.Tensor) else output[0]

    def forward(self, input_ids, attention_mask=None):
        return self.run(input_ids, attention_mask)

    def compact_mask(self):
        """Whether the model runs headscan's attention implementation (its keys' padding mask)."""
        config = getattr(self.model, "config", None)
        return getattr(config, "_attn_implementation", None) == headscan_attention.NAME and \
            "attention_mask" in inspect.signature(self.model.forward).parameters


class RowsWrapper(Wrapper):
    """The exported forward of a model that computes its logits at the rows asked for:
    forward(input_ids, attention_mask, logits_rows); the checks call it as Wrapper (all rows)."""

    takes_logits_rows = True

    def forward(self, input_ids, attention_mask=None, logits_rows=None):  # pylint: disable=arguments-differ
        return self.run(input_ids, attention_mask, logits_rows)


class IdsRowsWrapper(RowsWrapper):
    """RowsWrapper of a model exported without the attention mask: forward(input_ids, logits_rows)."""

    def forward(self, input_ids, logits_rows=None):  # pylint: disable=arguments-differ
        return self.run(input_ids, None, logits_rows)


def selects_rows(wrapper, inputs, lm_head, dtype):
    """Whether the model's forward computes its logits at given rows only, checked on the model
    itself before the export (checks.selects_logit_rows)."""
    if not wrapper.keeps_logits or lm_head is None:
        return False
    mask = inputs[1] if wrapper.takes_mask else None
    return checks.selects_logit_rows(lambda: wrapper.run(*inputs), lambda rows: wrapper.run(inputs[0], mask, rows),
                                     inputs[0].shape[1], inputs[0].device, dtype, width=lm_head)


class NoTokenizer:
    """Stands for a tokenizer where none is given: the example rows are then ids 0..49."""

    class Encoding:
        ids = []

    def encode(self, text, add_special_tokens=False):  # noqa: ARG002 - the tokenizers interface
        return self.Encoding()

    def get_vocab_size(self):
        return 0

    def token_to_id(self, token):  # noqa: ARG002 - the tokenizers interface
        return None


@dataclass
class Exported:
    program: object  # the ExportedProgram
    metadata: dict  # headscan.json
    layers: list  # the model's layers (headscan.json "layers"), or None
    numbers: list  # the layer of each observer, in the program's order
    exact: list  # the lengths the program was checked exact at
    blocks: dict  # the model's block sizes {tokens: what}
    dtype: object
    causal_source: str
    attention: str  # headscan.json "attention": "headscan", "sdpa", "eager", or "headscan/sdpa and eager"
    missing: str = None  # what headscan lacks when the output is not logits
    notes: list = field(default_factory=list)


@contextlib.contextmanager
def exportable_experts(model):
    """transformers' mixture-of-experts layers multiply by their experts with a grouped matmul that,
    under torch.export with weights other than bfloat16, is transformers::grouped_mm_fallback, an
    operator of Python that headscan's C++ runtime does not have: meanwhile the experts run as
    batched_mm (ATen's bmm over each token's experts), the same products."""
    try:
        before = model.get_experts_implementation()
        model.set_experts_implementation("batched_mm")
    except Exception:  # noqa: BLE001 - not a transformers model, or one without experts
        yield
        return
    try:
        yield
    finally:
        model.set_experts_implementation(before)


def example_lengths(max_length, takes_mask):
    """(the example's lengths, the lengths of the batches checked): export_hf.py's."""
    example_length = min(10, max_length)
    check_length = min(17, max_length) if max_length > 10 else max(2, max_length - 1)
    shorter = 1 if takes_mask else 0
    example = [example_length, max(2, example_length - 3 * shorter)]
    batches = ([check_length, max(2, check_length - 5 * shorter), check_length], [max(2, check_length - 5)])
    return example, batches, check_length


def export_model(model, tokenizer, *, max_length, bos_token=None, causal=None, causal_source=None,
                 takes_mask=True, config=None, vocab_size=None, metadata=None, attention_reason=None):
    """Exports `model` (eval mode) and checks the program: an Exported, or ExportError /
    ExportInputError with the reason. `metadata`: headscan.json's other fields (name, n_kv_heads).
    `attention_reason`: why the model was not loaded with headscan's attention implementation
    (headscan.json "attention_reason")."""
    if model.training:
        raise ExportError("the model is in training mode (dropout): call model.eval() before exporting it")
    # What headscan.json will say that is given, checked before the export as a run reads it.
    given = {**(metadata or {}), "max_length": max_length}
    given.update({"bos_token": bos_token} if bos_token is not None else {})
    given.update({"causal": causal} if causal is not None else {})
    check_metadata(given)
    tokenizer = tokenizer if tokenizer is not None else NoTokenizer()
    if vocab_size is None:
        embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
        vocab_size = getattr(embeddings, "num_embeddings", None) or 50
    parameter = next(model.parameters(), None)
    dtype = parameter.dtype if parameter is not None else torch.float32
    device = parameter.device if parameter is not None else torch.device("cpu")
    bos_id = tokenizer.token_to_id(bos_token) if bos_token else None
    pad_id = bos_id if bos_id is not None else 0

    def batch(rows):
        return tuple(tensor.to(device) for tensor in padded_batch(rows, pad_id))

    wrapper = Wrapper(model, takes_mask).eval()

    example, check_batches, check_length = example_lengths(max_length, takes_mask)
    example_rows_ = example_rows(tokenizer, bos_id, example, vocab_size)
    batches = [example_rows(tokenizer, bos_id, lengths, vocab_size) for lengths in check_batches]
    blocks = checks.block_sizes(config) if config is not None else {checks.DEFAULT_CHUNK: "a chunk of 64 tokens"}
    lengths = checks.lengths_to_check(blocks, max_length, check_length)

    with torch.no_grad(), exportable_experts(model), deepseek.length_dynamic_indexer(model), memory.frozen(), \
            naming_unreplaced_mixers(model):
        example_inputs = batch(example_rows_)
        if not takes_mask:
            example_inputs = example_inputs[:1]
        # A model that computes its logits at the rows asked for is exported with them as an input
        # (logits_rows): the run's needle probes then ask for a few rows, not [T, V].
        export_inputs = example_inputs
        if selects_rows(wrapper, example_inputs, lm_head_rows(model), dtype):
            wrapper = (RowsWrapper if takes_mask else IdsRowsWrapper)(model, takes_mask).eval()
            export_inputs = (*example_inputs, checks.example_logits_rows(example_inputs[0].shape[1], device))

        # The model's output at the longest length, computed for the first check of the lengths
        # and used by the second (check_lengths).
        references = {}

        def lengths_exact(program):
            return check_lengths(Recorder(program, record=False), wrapper, tokenizer, bos_id, vocab_size, batch, dtype,
                                 blocks=blocks, lengths=lengths,
                                 exact={len(row) for rows in batches for row in rows}, example_length=example[0],
                                 references=references)

        # The lengths are checked before the program is decomposed too: a model whose computation
        # depends on the length (a loop over chunks) is refused without waiting for that step.
        memory.release()
        ep, min_length, layers, numbers = exported_program(wrapper, export_inputs, max_length, config,
                                                           precheck=lengths_exact)
        memory.release()
        recorder = Recorder(ep)
        probe = batch(example_rows_[:1])
        recorder(*(probe if takes_mask else probe[:1]))
        check_rows(recorder.attentions, numbers, dtype)
        if causal is None:
            causal, causal_source = checks.measure_causal(recorder.attentions), "measured on the program's attention"
        check_shapes(recorder, wrapper, example_inputs[0].shape, batches, batch, takes_mask, dtype)
        exact = lengths_exact(ep)
        if takes_mask:
            check_padding(recorder, numbers, batches[0], batch, dtype)
        output = wrapper(*example_inputs)
        missing = missing_outputs(model, output, tokenizer.get_vocab_size() or vocab_size, causal)
        del output, recorder
        references.clear()
        memory.release()

    fields = dict(metadata or {})
    document = {"name": fields.pop("name")} if "name" in fields else {}
    if bos_token is not None:
        document["bos_token"] = bos_token
    document.update({"max_length": max_length, "causal": causal})
    # Whether the output is logits, told from the model's head: the run reads it rather than
    # compare the output's width with the tokenizer's vocabulary.
    document["logits"] = missing is None
    if min_length > 2:
        document["min_length"] = min_length
    attention = attention_kind(ep, model)
    document["attention"] = attention
    if attention_reason and attention != "headscan":
        document["attention_reason"] = attention_reason
    kv_heads = getattr(config, "num_key_value_heads", None) if config is not None else None
    if isinstance(kv_heads, int) and kv_heads >= 1:
        document["n_kv_heads"] = kv_heads
    document.update(fields)
    if layers is not None:
        document["layers"] = layers
    # The longest length the program was compared with the model at: a run may warn beyond it.
    document["checked_length"] = max(exact)
    check_metadata(document)
    return Exported(program=ep, metadata=document, layers=layers, numbers=numbers, exact=exact, blocks=blocks,
                    dtype=dtype, causal_source=causal_source, attention=attention, missing=missing)


def attention_kind(ep, model):
    """"headscan" or "sdpa" when every observer of the program is headscan::attention (called by
    the model under transformers' attention implementation "headscan", or scaled_dot_product_attention
    rewritten), "eager" when every one follows the model's own softmax, else "headscan and eager" or
    "sdpa and eager"."""
    observe, attention = define()
    targets = {attention if node.target in attentions() else node.target for node in ep.graph_module.graph.nodes
               if node.op == "call_function" and (node.target is observe or node.target in attentions())}
    config = getattr(model, "config", None)
    computed = "headscan" if getattr(config, "_attn_implementation", None) == headscan_attention.NAME else "sdpa"
    return {frozenset([attention]): computed, frozenset([observe]): "eager"}.get(frozenset(targets),
                                                                                 f"{computed} and eager")


def check_metadata(document):
    """headscan.json as every run reads it (headscan_json.py), else ExportInputError."""
    try:
        headscan_json.check_document(document)
    except headscan_json.MetadataError as e:
        raise ExportInputError(f"{e}: no run would read the archive") from None


def extra_files(exported, tokenizer_text):
    files = {"headscan.json": headscan_json.text_of(exported.metadata)}
    if tokenizer_text is not None:
        files["tokenizer.json"] = tokenizer_text
    return files
