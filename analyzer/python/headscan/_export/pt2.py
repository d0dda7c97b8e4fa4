"""The exported program's checks, on the program itself run in Python (ep.module()), against the
model it was exported from, and the .pt2 archive written.

The checks are scripts/export_hf.py's (checks.py): attention rows sum to at most 1, the program does
not depend on the example's batch size or length, it gives the model's output at lengths across
the model's blocks, and padding does not change what real tokens see. The attention probabilities
checked are the program's own: its observers are run here by Python functions that record them.
"""

import os
import tempfile

import torch

from . import ExportError, ExportInputError, checks, memory
from .attention_program import package_programs
from .model import example_rows
from .ops import attention_math, attentions, define, hidden_keys


class Recorder:
    """The program with its observers recording: calling it returns the output, and `attentions`
    then holds the probabilities of each observer, in graph order ([B, H, T, S] each, float).
    With record=False nothing is kept, and headscan::attention runs as scaled_dot_product_attention
    (the output alone, without the probabilities' [B, H, T, T]; a causal rule with a mask as one
    [B, 1, T, S] mask): the length checks, up to checks.LONGEST_CHECK tokens."""

    def __init__(self, ep, record=True):
        self.record = record
        observe, attention = define()
        windowed = attentions()[1]
        self.module = ep.module()
        self.takes_rows = takes_logits_rows(ep)
        self.attentions = []
        for node in self.module.graph.nodes:
            if node.op == "call_function" and node.target is observe:
                node.target = self._observe
            elif node.op == "call_function" and node.target is attention:
                node.target = self._attention
            elif node.op == "call_function" and node.target is windowed:
                node.target = self._windowed
        self.module.recompile()

    def _observe(self, probs, layer):
        if self.record:
            self.attentions.append(probs.float())
        return probs

    def _attention(self, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
        if not self.record and dropout_p == 0.0:
            if is_causal and attn_mask is not None:  # SDPA takes one or the other: the two as one mask
                attn_mask, is_causal = causal_mask(attn_mask, query.size(-2), key.size(-2)), False
            return torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                enable_gqa=enable_gqa)
        output, probs = attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        self.attentions.append(probs.float())
        return output

    def _windowed(self, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer, window_left,
                  window_right, chunk, softcap, sinks):
        if not self.record and dropout_p == 0.0 and softcap is None and sinks is None:
            # SDPA with the rule's keys and the mask as one [B, 1, T, S] mask.
            hidden = hidden_keys(query.size(-2), key.size(-2), is_causal, window_left, window_right, chunk, attn_mask,
                                 query.device)
            visible = hidden.logical_not() if hidden is not None else None
            if attn_mask is not None and visible is not None:
                visible = (attn_mask & visible) if attn_mask.dtype == torch.bool else \
                    attn_mask.masked_fill(visible.logical_not(), float("-inf"))
            elif attn_mask is not None:
                visible = attn_mask
            return torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=visible, dropout_p=dropout_p, scale=scale, enable_gqa=enable_gqa)
        output, probs = attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                                       window_left, window_right, chunk, softcap, sinks)
        if self.record:
            self.attentions.append(probs.float())
        return output

    def __call__(self, *inputs):
        """The program on `inputs`; a program that takes logits_rows is given every row unless
        `inputs` names them (the ids, [the mask,] the rows)."""
        self.attentions = []
        if self.takes_rows and inputs[-1].dim() != 1:  # the ids and the mask are [B, T]
            inputs = (*inputs, torch.arange(inputs[0].shape[1], device=inputs[0].device))
        return self.module(*inputs)


def causal_mask(attn_mask, queries, keys):
    """headscan::attention's mask with its causal rule applied (key j hidden from query i when
    j > i, as attention_math: the rule's [T, S] lower triangle), for scaled_dot_product_attention
    without is_causal: a boolean mask and-ed with it, an additive one -inf above it."""
    visible = torch.ones(queries, keys, dtype=torch.bool, device=attn_mask.device).tril()
    if attn_mask.dtype == torch.bool:
        return attn_mask & visible
    return attn_mask.masked_fill(visible.logical_not(), float("-inf"))


def takes_logits_rows(ep):
    """Whether the program's last input is logits_rows (exporter.py's RowsWrapper)."""
    return tuple(ep.graph_signature.user_inputs)[-1:] == ("logits_rows",)


def checked_rows(length, device, most=64):
    """The rows whose logits the length checks compare: every row up to `most` tokens, else `most`
    spread over the sequence, the first and the last among them (a long check without [T, V])."""
    if length <= most:
        return torch.arange(length, device=device)
    return torch.linspace(0, length - 1, most, device=device).round().long().unique()


def check_rows(attentions, numbers, dtype):
    for number, attention in zip(numbers, attentions):
        sums = attention.sum(dim=-1)
        if bool((sums > 1 + checks.row_sum_tolerance(dtype)).any()) or bool((sums < 0).any()):
            raise ExportError(f"the attention of layer {number} has rows summing to {sums.min().item():.3f} .. "
                              f"{sums.max().item():.3f}: not probabilities over the keys")


def check_shapes(program, wrapper, example_shape, batches, batch, takes_mask, dtype):
    """The program has not fixed the example's batch size or length."""
    for rows in batches:
        inputs = batch(rows)
        inputs = inputs if takes_mask else inputs[:1]
        found = checks.difference(program, wrapper, inputs, dtype)
        if found:
            raise ExportInputError(f"exported on {list(example_shape)}, the program's output on "
                                   f"{list(inputs[0].shape)} is not the model's ({found}): data-dependent control "
                                   "flow (the model's forward depends in Python on the example's shape or values)")


def check_lengths(program, wrapper, tokenizer, bos_id, vocab_size, batch, dtype, *, blocks, lengths, exact,
                  example_length, references=None):
    """The program gives the model's output at every length of `lengths`; refused (exit 2) at the
    first where it does not, naming the longest length where it is exact. `references`, a dict
    given to two checks of the same lengths (the program before its decomposition, then after),
    holds the model's output at the longest length between them: the first check keeps it there,
    the second takes it out and compares with it instead of running the model again (the same
    inputs give the same output). The longest length's model run costs the most, and its output,
    kept from the end of the first check, adds nothing to the checks' peak (the longest length's
    comparison, which holds it anyway). Memory is given back after each length."""
    exact = sorted(exact)
    longest = max(lengths, default=None)

    def differs(length):
        ids, mask = batch(example_rows(tokenizer, bos_id, [length], vocab_size))
        inputs = (ids, mask) if wrapper.takes_mask else (ids,)
        if getattr(wrapper, "takes_logits_rows", False):
            inputs = (*inputs, checked_rows(length, ids.device))

        def model(*each):
            if references is not None and length in references:
                return references.pop(length)
            output = wrapper(*each)
            if references is not None and length == longest:
                references[length] = output
            return output

        found = checks.difference(program, model, inputs, dtype)
        memory.trim()
        return found

    for length in lengths:
        found = differs(length)
        if found:
            # A branch on the length taken at a block's multiple (its padding left out) fails at the
            # multiple itself: the length before it may still be exact.
            if length - 1 > exact[-1] and length - 1 not in lengths and not differs(length - 1):
                exact.append(length - 1)
            last = exact[-1]
            crossed = [(size, what) for size, what in sorted(blocks.items(), reverse=True)
                       if (last - 1) // size < (length - 1) // size or last // size < length // size]
            block = f" (a block of {crossed[0][0]} tokens: {crossed[0][1]})" if crossed else ""
            guard = "Guard failed" in found
            raise ExportInputError(
                f"data-dependent control flow: the model's forward takes a Python branch on the sequence's length"
                f"{block}, which torch.export fixed at the example's {example_length} tokens: the exported program "
                f"is exact at {', '.join(map(str, exact))} tokens but not at {length} "
                f"({'it refuses that length' if guard else found}); --max-length {last} limits the export to "
                "lengths where it is exact")
        exact.append(length)
    return exact


def check_padding(recorder, numbers, rows, batch, dtype):
    """Real tokens of a padded row see what they see alone: the program's attention and output."""
    ids, mask = batch(rows)
    batch_output = recorder(ids, mask)
    batch_attentions = recorder.attentions
    for b, row in enumerate(rows):
        n = len(row)
        alone_ids, alone_mask = batch([row])
        alone_output = recorder(alone_ids, alone_mask)
        for number, padded, single in zip(numbers, batch_attentions, recorder.attentions):
            if not checks.close(padded[b, :, :n, :n], single[0], dtype):
                raise ExportError(f"with padding, the attention of layer {number} on a row's {n} real tokens "
                                  f"differs from the same row alone by "
                                  f"{(padded[b, :, :n, :n] - single[0]).abs().max().item():.3g}: this model does "
                                  "not treat attention_mask as headscan pads (right padding); export with "
                                  "--no-attention-mask")
        if not checks.close(batch_output[b, :n], alone_output[0], dtype):
            raise ExportError("with padding, the program's output on a row's real tokens differs from the same "
                              "row alone: export with --no-attention-mask")


def package(path, ep, extra_files):
    """Writes the .pt2 archive to `path`: beside it under its own name (the archive's inner folder
    is named after the file), then renamed into place, so an interrupted export leaves no partial
    file."""
    out_dir = os.path.dirname(os.path.abspath(path))
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".headscan-export.", dir=out_dir) as temporary_dir:
        temporary = os.path.join(temporary_dir, os.path.basename(path))
        package_programs(temporary, ep, extra_files)
        os.replace(temporary, path)


def package_to_memory(ep, extra_files, name="model.pt2"):
    """The archive in an anonymous in-memory file: (its descriptor, a path that opens it,
    /proc/self/fd/N). The file lives while the descriptor is open."""
    descriptor = os.memfd_create(name, 0)
    try:
        with os.fdopen(os.dup(descriptor), "w+b") as f:
            package_programs(f, ep, extra_files)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, f"/proc/self/fd/{descriptor}"
