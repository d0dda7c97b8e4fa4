#!/usr/bin/env python3
"""Export a Hugging Face model directory to a TorchScript archive that headscan analyses.

    python scripts/export_hf.py MODEL_DIR OUT.pt [--bos TOKEN|none] [--max-length N] [--name NAME] ...

MODEL_DIR is what `save_pretrained` writes (config.json, weights, tokenizer files), e.g. a
snapshot from `hf download`. Needs torch and transformers (scripts/requirements-test.txt
pins the versions the tests use); nothing is downloaded.

What it writes
  OUT.pt, a `torch.jit.trace` of the model with eager attention (every attention softmax in the
  graph, where headscan captures it) whose forward(input_ids, attention_mask) takes int64 [B,T]
  (mask 1 = real token) and returns the logits only, with two files inside:
  - tokenizer.json: MODEL_DIR/tokenizer.json, or the slow tokenizer converted by transformers;
  - headscan.json: {"name", "bos_token", "max_length", "causal", "n_kv_heads"}.

How the fields are chosen (each can be overridden)
  bos_token   the token the tokenizer's template puts before the text ([CLS] for BERT, <s> for
              Llama); if the template puts none, the model's own BOS (tokenizer_config.json's
              bos_token, else config.bos_token_id): GPT-2's <|endoftext|>, as TransformerLens
              prepends it. headscan prepends bos_token to every sequence and window, so position 0
              is a fixed token (the attention sink) rather than the first word. --bos none: nothing.
  max_length  the model's positions (max_position_embeddings, n_positions, ...), at most the
              tokenizer's model_max_length, capped at --max-length-cap (default 1024) to bound the
              T x T attention; --max-length N sets it.
  causal      measured: the eager model's attention on a probe sequence has no weight above the
              diagonal. --causal / --bidirectional set it.
  n_kv_heads  num_key_value_heads (grouped-query attention), when the config has it.

Checks before saving (exit 1 with the reason when one fails)
  - the graph has an attention softmax and no fused attention (scaled_dot_product_attention);
  - every attention row sums to at most 1 over the sequence's keys (less with an attention sink, as
    gpt-oss's softmax over the keys and a sink logit);
  - the trace does not depend on the example's shape: it is traced on one batch size and length
    (with padding, so the attention mask's path is in the graph) and must give the eager model's
    logits on another batch size and length;
  - padding does not change the attention of real tokens: a padded row's attention (eager,
    output_attentions) and its traced logits equal those of the same row alone.
"""

import argparse
import inspect
import json
import os
import sys
import tempfile
import warnings

import torch

DEFAULT_MAX_LENGTH_CAP = 1024
SAMPLE_TEXT = ("The quick brown fox jumps over the lazy dog. A second sentence follows the first one, "
               "and then the story goes on with many more words than the model needs. ")


class ExportError(Exception):
    """A reason the model cannot be exported, said to the user."""


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="export_hf.py",
        description=__doc__.split("\n\n", 1)[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", metavar="MODEL_DIR", help="a Hugging Face model directory (save_pretrained)")
    parser.add_argument("output", metavar="OUT.pt", help="the TorchScript archive to write")
    parser.add_argument("--name", help="headscan.json name (default: MODEL_DIR's folder name, or org/name "
                                       "for a Hugging Face cache snapshot)")
    parser.add_argument("--bos", metavar="TOKEN",
                        help="headscan.json bos_token: a token of the tokenizer, or 'none' for no BOS "
                             "(default: the template's first token, else the model's BOS)")
    parser.add_argument("--max-length", type=int, metavar="N", help="headscan.json max_length (default: see below)")
    parser.add_argument("--max-length-cap", type=int, default=DEFAULT_MAX_LENGTH_CAP, metavar="N",
                        help=f"upper bound of the default max_length (default {DEFAULT_MAX_LENGTH_CAP})")
    causal = parser.add_mutually_exclusive_group()
    causal.add_argument("--causal", dest="causal", action="store_true", default=None,
                        help="write causal: true instead of measuring it")
    causal.add_argument("--bidirectional", dest="causal", action="store_false",
                        help="write causal: false instead of measuring it")
    parser.add_argument("--tokenizer", metavar="FILE", help="a tokenizer.json to embed instead of MODEL_DIR's")
    parser.add_argument("--model-class", metavar="CLASS",
                        help="transformers class to load (default: config.json's architectures, else "
                             "AutoModelForMaskedLM for encoders and AutoModelForCausalLM for decoders)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16", "auto"], default="float32",
                        help="weights of the archive (default float32; auto: as stored)")
    parser.add_argument("--no-attention-mask", action="store_true",
                        help="export forward(input_ids) only: headscan then batches equal lengths, unpadded")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="allow the model's own Python code (config.json auto_map), as transformers does")
    args = parser.parse_args(argv)
    if args.max_length is not None and args.max_length < 2:
        parser.error("--max-length must be at least 2")
    if args.max_length_cap < 2:
        parser.error("--max-length-cap must be at least 2")
    return args


# ---------------------------------------------------------------------------------------------
# Tokenizer


def load_tokenizer_json(model_dir, tokenizer_path, trust_remote_code):
    """The tokenizer.json text: the given file, MODEL_DIR's, or the slow tokenizer converted."""
    from tokenizers import Tokenizer

    path = tokenizer_path or os.path.join(model_dir, "tokenizer.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            Tokenizer.from_str(text)
        except Exception as e:  # noqa: BLE001 - the library's message is the useful part
            raise ExportError(f"{path} is not a tokenizer.json the tokenizers library reads: {e}") from e
        return text, path
    if tokenizer_path:
        raise ExportError(f"--tokenizer {tokenizer_path}: no such file")

    from transformers import AutoTokenizer
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"{model_dir} has no tokenizer.json and transformers could not load its tokenizer: {e}; "
                          "give one with --tokenizer FILE") from e
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        try:
            from transformers.convert_slow_tokenizer import convert_slow_tokenizer
            backend = convert_slow_tokenizer(tokenizer)
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"{model_dir} has no tokenizer.json and its {type(tokenizer).__name__} cannot be "
                              f"converted to one ({e}); give one with --tokenizer FILE, or run headscan with "
                              "--tokenizer on the model's SentencePiece .model") from e
    return backend.to_str(), f"built by transformers' {type(tokenizer).__name__} from {model_dir}"


def template_prefix(tokenizer):
    """The ids the tokenizer's post-processor puts before the text of a single sequence."""
    for text in ("a", "hello world", "x"):
        plain = tokenizer.encode(text, add_special_tokens=False).ids
        full = tokenizer.encode(text, add_special_tokens=True).ids
        if not plain:
            continue
        for start in range(len(full) - len(plain) + 1):
            if full[start:start + len(plain)] == plain:
                return full[:start]
    return []


def read_json(path):
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def token_text(value):
    """tokenizer_config.json holds a special token as a string or as {"content": ...}."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def choose_bos(requested, tokenizer, model_dir, config):
    """(bos_token or None, where it comes from): see the module docstring."""
    if requested is not None:
        if requested.lower() == "none":
            return None, "--bos none"
        if tokenizer.token_to_id(requested) is None:
            raise ExportError(f"--bos {requested!r} is not a token of the tokenizer")
        return requested, "--bos"
    prefix = template_prefix(tokenizer)
    if len(prefix) == 1:
        return tokenizer.id_to_token(prefix[0]), "the tokenizer's template"
    if len(prefix) > 1:
        pieces = " ".join(tokenizer.id_to_token(i) for i in prefix)
        raise ExportError(f"the tokenizer's template puts {len(prefix)} tokens ({pieces}) before the text, but "
                          "headscan prepends one BOS; choose it with --bos TOKEN (or --bos none)")
    candidates = [(token_text(read_json(os.path.join(model_dir, "tokenizer_config.json")).get("bos_token")),
                   "tokenizer_config.json bos_token")]
    bos_id = getattr(config, "bos_token_id", None)
    if isinstance(bos_id, list):
        bos_id = bos_id[0] if bos_id else None
    if isinstance(bos_id, int):
        candidates.append((tokenizer.id_to_token(bos_id), "config.json bos_token_id"))
    for token, source in candidates:
        if token and tokenizer.token_to_id(token) is not None:
            return token, source + " (the template adds no BOS)"
    return None, "neither the template nor the model names a BOS"


def model_positions(config):
    """(positions the model can embed, the config field) or None when the config names none."""
    for field in ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length"):
        value = getattr(config, field, None)
        if isinstance(value, int) and value >= 2:
            # RoBERTa-style learned positions start after padding_idx: 514 positions hold 512 tokens.
            if field == "max_position_embeddings" and config.model_type in ROBERTA_POSITION_MODELS:
                pad = getattr(config, "pad_token_id", None)
                value -= (1 if pad is None else pad) + 1
            return value, f"config.json {field}"
    return None


def choose_max_length(args, config, model_dir):
    positions = model_positions(config)
    if args.max_length is not None:
        if positions and args.max_length > positions[0]:
            print(f"export_hf.py: warning: --max-length {args.max_length} is more than the model's "
                  f"{positions[0]} positions ({positions[1]})", file=sys.stderr)
        return args.max_length, "--max-length"
    limits = [positions] if positions else []
    model_max = read_json(os.path.join(model_dir, "tokenizer_config.json")).get("model_max_length")
    if isinstance(model_max, int) and 2 <= model_max < 10**7:
        limits.append((model_max, "tokenizer_config.json model_max_length"))
    limits.append((args.max_length_cap, "--max-length-cap"))
    return min(limits)


ROBERTA_POSITION_MODELS = {"roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "xlm-roberta-xl",
                           "data2vec-text", "longformer", "ibert", "luke", "mpnet"}


# ---------------------------------------------------------------------------------------------
# Model


def default_name(model_dir):
    """MODEL_DIR's folder name; for a hub cache snapshot (models--org--name/snapshots/HASH), org/name."""
    path = os.path.abspath(model_dir)
    parent = os.path.dirname(path)
    repository = os.path.basename(os.path.dirname(parent))
    if os.path.basename(parent) == "snapshots" and repository.startswith("models--"):
        return repository[len("models--"):].replace("--", "/")
    return os.path.basename(path)


def model_class(config, requested, trust_remote_code):
    import transformers
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)
    if requested:
        cls = getattr(transformers, requested, None)
        if cls is None:
            raise ExportError(f"--model-class {requested}: transformers {transformers.__version__} has no such class")
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


def load_model(args, config):
    cls = model_class(config, args.model_class, args.trust_remote_code)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}[args.dtype]
    try:
        model = cls.from_pretrained(args.model_dir, attn_implementation="eager", dtype=dtype,
                                    trust_remote_code=args.trust_remote_code)
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"transformers could not load {args.model_dir} as {cls.__name__} with eager attention: "
                          f"{type(e).__name__}: {e}") from e
    model.eval()
    return model


class LogitsOnly(torch.nn.Module):
    """forward(input_ids[, attention_mask]) -> the model's first output (logits), no cache."""

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


def eager_attentions(wrapper, ids, mask):
    """The eager model's attention per layer, [B,H,T,T] each, or None if it returns none."""
    out = wrapper.run(ids, mask if wrapper.takes_mask else None, output_attentions=True)
    attentions = getattr(out, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        return None
    return [a.float() for a in attentions]


def check_rows_sum_to_one(attentions, dtype):
    """Attention rows are probabilities over the keys: they sum to 1, or to less with an attention
    sink (gpt-oss: a softmax over the keys and a sink logit, whose column the model drops; headscan
    captures the kept columns)."""
    for layer, attention in enumerate(attentions):
        sums = attention.sum(dim=-1)
        if bool((sums > 1 + row_sum_tolerance(dtype)).any()) or bool((sums < 0).any()):
            raise ExportError(f"the attention of layer {layer} has rows summing to {sums.min().item():.3f} .. "
                              f"{sums.max().item():.3f}: not probabilities over the keys")


def measure_causal(attentions):
    return all(bool((torch.triu(a[0], diagonal=1) == 0).all()) for a in attentions)


def row_sum_tolerance(dtype):
    return 1e-3 if dtype == torch.float32 else 2e-2


def tolerance(dtype):
    return 1e-4 if dtype == torch.float32 else 3e-2


def close(a, b, dtype):
    a, b = a.float(), b.float()
    return (a - b).abs().max().item() <= tolerance(dtype) * (1 + b.abs().max().item())


def check_padding(wrapper, traced, rows, pad_id, dtype):
    """Real tokens of a padded row see what they see alone (eager attention and traced logits)."""
    ids, mask = padded_batch(rows, pad_id)
    batch_attentions = eager_attentions(wrapper, ids, mask)
    batch_logits = traced(ids, mask)
    for b, row in enumerate(rows):
        n = len(row)
        alone_ids, alone_mask = padded_batch([row], pad_id)
        if batch_attentions is not None:
            alone = eager_attentions(wrapper, alone_ids, alone_mask)
            for layer, (padded, single) in enumerate(zip(batch_attentions, alone)):
                if not close(padded[b, :, :n, :n], single[0], dtype):
                    raise ExportError(f"with padding, the attention of layer {layer} on a row's {n} real tokens "
                                      f"differs from the same row alone by "
                                      f"{(padded[b, :, :n, :n] - single[0]).abs().max().item():.3g}: this model "
                                      "does not treat attention_mask as headscan pads (right padding); export "
                                      "with --no-attention-mask")
        if not close(batch_logits[b, :n], traced(alone_ids, alone_mask)[0], dtype):
            raise ExportError("with padding, the traced model's logits on a row's real tokens differ from the "
                              "same row alone: export with --no-attention-mask")


def all_kinds(graph_or_block):
    for node in graph_or_block.nodes():
        yield node.kind()
        for block in node.blocks():
            yield from all_kinds(block)


def export(args):
    from tokenizers import Tokenizer
    from transformers import AutoConfig
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    # The tracer warns about every Python value it records as a constant; whether any of them
    # matters is checked below by running the trace on other shapes.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)

    if not os.path.isdir(args.model_dir):
        raise ExportError(f"{args.model_dir} is not a directory (expected a Hugging Face model directory)")
    try:
        config = AutoConfig.from_pretrained(args.model_dir, trust_remote_code=args.trust_remote_code)
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"transformers could not read {args.model_dir}/config.json: {e}") from e
    if getattr(config, "is_encoder_decoder", False):
        raise ExportError(f"{config.model_type} is an encoder-decoder model; headscan analyses one stack "
                          "taking input_ids (a decoder-only or encoder-only model)")

    tokenizer_text, tokenizer_source = load_tokenizer_json(args.model_dir, args.tokenizer, args.trust_remote_code)
    tokenizer = Tokenizer.from_str(tokenizer_text)
    bos_token, bos_source = choose_bos(args.bos, tokenizer, args.model_dir, config)
    max_length, max_length_source = choose_max_length(args, config, args.model_dir)

    model = load_model(args, config)
    dtype = next(model.parameters()).dtype
    vocab_size = model.get_input_embeddings().num_embeddings
    if tokenizer.get_vocab_size() > vocab_size:
        print(f"export_hf.py: warning: the tokenizer has {tokenizer.get_vocab_size()} tokens, the model's "
              f"embedding {vocab_size}: ids beyond it fail in headscan", file=sys.stderr)
    bos_id = tokenizer.token_to_id(bos_token) if bos_token else None
    pad_id = bos_id if bos_id is not None else 0
    wrapper = IdsOnly(model, takes_mask=False) if args.no_attention_mask else LogitsOnly(model, takes_mask=True)

    # Shapes: traced at one batch size and length, checked at others. Short, within max_length.
    trace_length = min(10, max_length)
    check_length = min(17, max_length) if max_length > 10 else max(2, max_length - 1)
    # Without a mask headscan batches sequences of one length only, so the rows of a batch are equal.
    shorter = 0 if args.no_attention_mask else 1
    trace_rows = example_rows(tokenizer, bos_id, [trace_length, max(2, trace_length - 3 * shorter)], vocab_size)
    check_batches = [example_rows(tokenizer, bos_id, lengths, vocab_size)
                     for lengths in ([check_length, max(2, check_length - 5 * shorter), check_length],
                                     [max(2, check_length - 5)])]

    with torch.no_grad():
        probe_ids, probe_mask = padded_batch(trace_rows[:1], pad_id)
        attentions = eager_attentions(wrapper, probe_ids, probe_mask)
        if args.causal is not None:
            causal, causal_source = args.causal, "--causal" if args.causal else "--bidirectional"
        elif attentions is not None:
            causal, causal_source = measure_causal(attentions), "measured on the eager model's attention"
        else:
            raise ExportError(f"{type(model).__name__} returns no attentions (output_attentions), so causality "
                              "cannot be measured: give --causal or --bidirectional")

        if attentions is not None:
            check_rows_sum_to_one(attentions, dtype)

        trace_inputs = padded_batch(trace_rows, pad_id)
        if args.no_attention_mask:
            trace_inputs = trace_inputs[:1]
        try:
            traced = torch.jit.trace(wrapper, trace_inputs, check_trace=False, strict=False)
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"torch.jit.trace failed on {type(model).__name__}: {type(e).__name__}: {e}") from e

        kinds = set(all_kinds(traced.inlined_graph))
        fused = sorted(k for k in kinds if "scaled_dot_product" in k or "flash" in k or "_native_multi_head" in k)
        if fused:
            raise ExportError(f"the traced graph calls {', '.join(fused)} (fused attention, no probabilities to "
                              "capture) although eager attention was asked for; this model ignores "
                              "attn_implementation=\"eager\"")
        if "aten::softmax" not in kinds and "aten::_softmax" not in kinds:
            raise ExportError("the traced graph has no softmax: headscan would find no attention")

        # The trace must not have baked in the example's batch size or length.
        for rows in check_batches:
            inputs = padded_batch(rows, pad_id)
            if args.no_attention_mask:
                inputs = inputs[:1]
            ids = inputs[0]
            got, want = traced(*inputs), wrapper(*inputs)
            if got.shape != want.shape or not close(got, want, dtype):
                difference = (got.float() - want.float()).abs().max().item() if got.shape == want.shape else "shape"
                raise ExportError(f"traced on [{len(trace_rows)}, {trace_length}], the archive's output on "
                                  f"{list(ids.shape)} differs from the eager model's ({difference}): the trace "
                                  "depends on the example's shape or data (Python control flow in the model's "
                                  "forward); this model cannot be exported by tracing")
        if not args.no_attention_mask:
            check_padding(wrapper, traced, check_batches[0], pad_id, dtype)

    metadata = {"name": args.name or default_name(args.model_dir)}
    if bos_token is not None:
        metadata["bos_token"] = bos_token
    metadata.update({"max_length": max_length, "causal": causal})
    kv_heads = getattr(config, "num_key_value_heads", None)
    if isinstance(kv_heads, int) and kv_heads >= 1:
        metadata["n_kv_heads"] = kv_heads

    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    # Written beside OUT.pt under its own name (the archive's inner folder is named after the file),
    # then renamed into place, so that an interrupted export leaves no partial OUT.pt.
    with tempfile.TemporaryDirectory(prefix=".export_hf.", dir=out_dir) as temporary_dir:
        temporary = os.path.join(temporary_dir, os.path.basename(args.output))
        torch.jit.save(traced, temporary, _extra_files={
            "tokenizer.json": tokenizer_text,
            "headscan.json": json.dumps(metadata, ensure_ascii=False, indent=1) + "\n",
        })
        os.replace(temporary, args.output)

    layers = len(attentions) if attentions is not None else "?"
    print(f"{args.output}: {type(model).__name__}, {layers} layers, {dtype}, "
          f"forward(input_ids{'' if args.no_attention_mask else ', attention_mask'}) -> logits")
    print(f"  tokenizer: {tokenizer_source} ({tokenizer.get_vocab_size()} tokens)")
    print(f"  bos_token: {bos_token or 'none'} ({bos_source})")
    print(f"  max_length: {max_length} ({max_length_source})")
    print(f"  causal: {str(causal).lower()} ({causal_source})")
    if "n_kv_heads" in metadata:
        print(f"  n_kv_heads: {metadata['n_kv_heads']}")


def main(argv=None):
    args = parse_args(argv)
    try:
        export(args)
    except ExportError as e:
        print(f"export_hf.py: error: {args.model_dir}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
