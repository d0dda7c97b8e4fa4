#!/usr/bin/env python3
"""Export a Hugging Face model directory to a TorchScript archive that headscan analyses.

    python scripts/export_hf.py MODEL_DIR OUT.pt [--bos TOKEN|none] [--max-length N] [--name NAME] ...

MODEL_DIR is what `save_pretrained` writes (config.json, weights, tokenizer files), e.g. a
snapshot from `hf download`. Needs torch and transformers (scripts/requirements-test.txt
pins the versions the tests use); nothing is downloaded.

What it writes
  OUT.pt, a `torch.jit.trace` of the model with eager attention (every attention softmax in the
  graph, where headscan captures it; always eager, unlike `headscan export`'s SDPA: TorchScript
  tracing is deprecated, and a trace is silently wrong past its traced length for some models, so
  long contexts are for exported programs) whose forward(input_ids, attention_mask) takes int64 [B,T]
  (mask 1 = real token) and returns the logits only; a model with transformers' logits_to_keep takes
  a third input, logits_rows (int64 [K]), and returns the logits of those rows only. Two files inside:
  - tokenizer.json: MODEL_DIR/tokenizer.json, or the slow tokenizer converted by transformers;
  - headscan.json: {"name", "bos_token", "max_length", "causal", "n_kv_heads"}.
  A model without a language-model head (a sentence-transformers BertModel) returns its hidden
  states instead: said at export, as headscan then has no repeat_loss, no retrieval and no
  --ablation (each needs the model's predictions of tokens).

How the fields are chosen (each can be overridden)
  name        MODEL_DIR's folder name; org/name for a hub cache snapshot; config.json's
              _name_or_path for a folder of a generic name (model, checkpoint, ...) when it holds
              a hub name.
  bos_token   the token the tokenizer's template puts before the text ([CLS] for BERT, <s> for
              Llama); if the template puts none, the model's own BOS (tokenizer_config.json's
              bos_token, else config.bos_token_id): GPT-2's <|endoftext|>, as TransformerLens
              prepends it. Padding or truncation configured in tokenizer.json is left out of this.
              headscan prepends bos_token to every sequence and window, so position 0 is a fixed
              token (the attention sink) rather than the first word. --bos none: nothing.
  max_length  the model's positions (max_position_embeddings, n_positions, ...), at most the
              tokenizer's model_max_length, capped at --max-length-cap (default 1024) to bound the
              T x T attention; --max-length N sets it.
  causal      measured: the eager model's attention on a probe sequence has no weight above the
              diagonal. --causal / --bidirectional set it.
  n_kv_heads  num_key_value_heads (grouped-query attention), when the config has it.

Before building the model (exit 2 when it fails)
  - its weights, estimated from config.json's sizes, fit in this machine's memory.

Checks before saving (exit 1 with the reason when one fails)
  - the graph has an attention softmax and no fused attention (scaled_dot_product_attention);
  - every attention row sums to at most 1 over the sequence's keys (less with an attention sink, as
    gpt-oss's softmax over the keys and a sink logit);
  - the trace does not depend on the example's shape: it is traced on one batch size and length
    (with padding, so the attention mask's path is in the graph) and must give the eager model's
    logits on another batch size and length;
  - nor on the length across the model's blocks: the config's sliding windows, chunked attention,
    chunks of linear attention and sequence convolutions, and 64 (the chunk of transformers'
    chunked linear-attention kernels): the logits must equal the eager model's at each block size
    up to 4,096 tokens and one token more, and at max_length, 4 x the largest block or 4,096
    tokens, whichever is shortest (the checks run the eager model on the CPU); a trace
    exact at one length and not another (a loop over chunks unrolled at the traced length) is
    refused;
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

# The parts of this script are the wheel's exporter (analyzer/python/headscan/_export), imported as
# a package of their own: `import headscan` would load headscan's C++ core, which this script needs not.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "analyzer", "python", "headscan"))
from _export import ExportError  # noqa: E402
from _export import checks  # noqa: E402
from _export.command import add_model_options, exit_code  # noqa: E402
from _export.metadata import (choose_bos, choose_max_length, default_name, load_tokenizer_json,  # noqa: E402
                              unpadded_tokenizer)
from _export.model import (AllRows, IdsOnly, LogitsOnly, RowsIdsOnly, RowsLogitsOnly, check_size, example_rows, load_model,  # noqa: E402
                           missing_outputs, padded_batch, read_config, refuse_family)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="export_hf.py",
        description=__doc__.split("\n\n", 1)[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", metavar="MODEL_DIR", help="a Hugging Face model directory (save_pretrained)")
    parser.add_argument("output", metavar="OUT.pt", help="the TorchScript archive to write")
    add_model_options(parser)
    args = parser.parse_args(argv)
    if args.max_length is not None and args.max_length < 2:
        parser.error("--max-length must be at least 2")
    if args.max_length_cap is not None and args.max_length_cap < 2:
        parser.error("--max-length-cap must be at least 2")
    return args


def keeps_logit_rows(wrapper, inputs, dtype):
    """Whether the model computes its logits at given rows, checked on the model
    (checks.selects_logit_rows)."""
    if "logits_to_keep" not in inspect.signature(wrapper.model.forward).parameters:
        return False
    mask = inputs[1] if wrapper.takes_mask else None
    return checks.selects_logit_rows(lambda: wrapper(*inputs),
                                     lambda rows: wrapper.run(inputs[0], mask, logits_to_keep=rows)[0],
                                     inputs[0].shape[1], inputs[0].device, dtype)


def export(args):
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    # The tracer warns about every Python value it records as a constant; whether any of them
    # matters is checked below by running the trace on other shapes and lengths.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)

    config = read_config(args.model_dir, args.trust_remote_code)
    refuse_family(config, ExportError)
    check_size(config, args.dtype)
    tokenizer_text, tokenizer_source = load_tokenizer_json(args.model_dir, args.tokenizer, args.trust_remote_code)
    tokenizer = unpadded_tokenizer(tokenizer_text)
    bos_token, bos_source = choose_bos(args.bos, tokenizer, args.model_dir, config)
    max_length, max_length_source = choose_max_length(args, config, args.model_dir)
    name, name_source = (args.name, "--name") if args.name else default_name(args.model_dir)

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
    blocks = checks.block_sizes(config)
    lengths = checks.lengths_to_check(blocks, max_length, check_length)

    with torch.no_grad():
        probe_ids, probe_mask = padded_batch(trace_rows[:1], pad_id)
        attentions = checks.eager_attentions(wrapper, probe_ids, probe_mask)
        if args.causal is not None:
            causal, causal_source = args.causal, "--causal" if args.causal else "--bidirectional"
        elif attentions is not None:
            causal, causal_source = checks.measure_causal(attentions), "measured on the eager model's attention"
        else:
            raise ExportError(f"{type(model).__name__} returns no attentions (output_attentions), so causality "
                              "cannot be measured: give --causal or --bidirectional")
        if attentions is not None:
            checks.check_rows_sum_to_one(attentions, dtype)

        trace_inputs = padded_batch(trace_rows, pad_id)
        if args.no_attention_mask:
            trace_inputs = trace_inputs[:1]
        # A model with transformers' logits_to_keep is traced with the rows whose logits headscan
        # needs as a third input (logits_rows): its needle probes then ask for a few rows, not [T, V].
        # The checks call it with every row (AllRows).
        rows = keeps_logit_rows(wrapper, trace_inputs, dtype)
        traced_wrapper = wrapper
        if rows:
            traced_wrapper = RowsIdsOnly(model, takes_mask=False) if args.no_attention_mask else \
                RowsLogitsOnly(model, takes_mask=True)
        trace_rows_input = (checks.example_logits_rows(trace_length, trace_inputs[0].device),) if rows else ()
        try:
            saved = torch.jit.trace(traced_wrapper, (*trace_inputs, *trace_rows_input), check_trace=False, strict=False)
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"torch.jit.trace failed on {type(model).__name__}: {type(e).__name__}: {e}") from e
        checks.check_graph(saved)
        traced = AllRows(saved) if rows else saved
        if rows:  # the rows asked for, at another length than the trace's
            ids, mask = padded_batch(check_batches[0], pad_id)
            inputs = (ids,) if args.no_attention_mask else (ids, mask)
            some = torch.tensor([0, 3, ids.shape[1] - 1])
            if not checks.close(saved(*inputs, some), wrapper(*inputs)[:, some], dtype):
                raise ExportError("the trace's logits at the rows it is given differ from those rows of the eager "
                                  "model's: the model's logits_to_keep does not select positions")
        checks.check_shapes(traced, wrapper, trace_inputs[0].shape, check_batches, pad_id,
                            not args.no_attention_mask, dtype)
        exact = checks.check_lengths(traced, wrapper, tokenizer, bos_id, vocab_size, pad_id, dtype, blocks=blocks,
                                     lengths=lengths, exact={len(row) for rows in check_batches for row in rows},
                                     trace_length=trace_length)
        if not args.no_attention_mask:
            checks.check_padding(wrapper, traced, check_batches[0], pad_id, dtype)
        missing = missing_outputs(model, wrapper(*trace_inputs), tokenizer.get_vocab_size(), causal)

    metadata = {"name": name}
    if bos_token is not None:
        metadata["bos_token"] = bos_token
    metadata.update({"max_length": max_length, "causal": causal, "logits": missing is None})
    kv_heads = getattr(config, "num_key_value_heads", None)
    if isinstance(kv_heads, int) and kv_heads >= 1:
        metadata["n_kv_heads"] = kv_heads

    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    # Written beside OUT.pt under its own name (the archive's inner folder is named after the file),
    # then renamed into place, so that an interrupted export leaves no partial OUT.pt.
    with tempfile.TemporaryDirectory(prefix=".export_hf.", dir=out_dir) as temporary_dir:
        temporary = os.path.join(temporary_dir, os.path.basename(args.output))
        torch.jit.save(saved, temporary, _extra_files={
            "tokenizer.json": tokenizer_text,
            "headscan.json": json.dumps(metadata, ensure_ascii=False, indent=1) + "\n",
        })
        os.replace(temporary, args.output)

    layers = len(attentions) if attentions is not None else "?"
    print(f"{args.output}: {type(model).__name__}, {layers} layers, {dtype}, "
          f"forward(input_ids{'' if args.no_attention_mask else ', attention_mask'}{', logits_rows' if rows else ''}) -> "
          f"{'hidden states' if missing else 'logits'}")
    print(f"  name: {name} ({name_source})")
    print(f"  tokenizer: {tokenizer_source} ({tokenizer.get_vocab_size()} tokens)")
    print(f"  bos_token: {bos_token or 'none'} ({bos_source})")
    print(f"  max_length: {max_length} ({max_length_source})")
    print(f"  causal: {str(causal).lower()} ({causal_source})")
    if "n_kv_heads" in metadata:
        print(f"  n_kv_heads: {metadata['n_kv_heads']}")
    print(f"  checked: the eager model's output at {', '.join(map(str, sorted(exact)))} tokens "
          f"(blocks of {', '.join(map(str, sorted(blocks)))} tokens)")
    if missing:
        print(f"  no logits: {missing}")


def main(argv=None):
    return exit_code("export_hf.py", export, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
