"""What the archive must satisfy before it is saved; each failed check is an ExportError with the
reason. The trace is compared with the eager model it was made from."""

import re

import torch

from . import ExportError
from .model import example_rows, padded_batch

# transformers' chunked linear-attention kernels (torch_chunk_gated_delta_rule of Qwen3-Next and
# Qwen3.5, and their kin) loop over chunks of 64 tokens by default, a size no config names.
DEFAULT_CHUNK = 64
# The longest length the exports check the archive against the model at: the checks run the model
# and the archive on the CPU as they are (an eager model materialises its [B, H, T, T] attention),
# so a model of 128k positions is checked up to 4,096 tokens (and a block of 4,096 one token more).
LONGEST_CHECK = 4096
# Config fields that give a length in tokens where a model's computation changes: sliding windows,
# chunked attention, chunks and blocks of linear attention and state-space layers, convolution
# kernels along the sequence.
BLOCK_FIELD = re.compile(r"(window|window_size|chunk_size|block_size|local_attention|conv_kernel|conv_kernel_dim|"
                         r"conv_kernel_size|d_conv|L_cache)$")


def all_kinds(graph_or_block):
    for node in graph_or_block.nodes():
        yield node.kind()
        for block in node.blocks():
            yield from all_kinds(block)


def check_graph(traced):
    """One attention softmax at least, and no fused attention (nothing for headscan to capture)."""
    kinds = set(all_kinds(traced.inlined_graph))
    fused = sorted(k for k in kinds if "scaled_dot_product" in k or "flash" in k or "_native_multi_head" in k)
    if fused:
        raise ExportError(f"the traced graph calls {', '.join(fused)} (fused attention, no probabilities to "
                          "capture) although eager attention was asked for; this model ignores "
                          "attn_implementation=\"eager\"")
    if "aten::softmax" not in kinds and "aten::_softmax" not in kinds:
        raise ExportError("the traced graph has no softmax: headscan would find no attention")


def eager_attentions(wrapper, ids, mask):
    """The eager model's attention per layer, [B,H,T,T] each, or None if it returns none."""
    out = wrapper.run(ids, mask if wrapper.takes_mask else None, output_attentions=True)
    attentions = getattr(out, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        return None
    return [a.float() for a in attentions]


def row_sum_tolerance(dtype):
    return 1e-3 if dtype == torch.float32 else 2e-2


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


def tolerance(dtype):
    return 1e-4 if dtype == torch.float32 else 3e-2


def close(a, b, dtype):
    """max |a - b| <= tolerance * (1 + max |b|), with one temporary of a's size: the difference,
    made absolute in place (max |b| is max(max b, -min b)); NaN anywhere is not close."""
    a, b = a.float(), b.float()
    difference = torch.sub(a, b)
    difference.abs_()
    largest = torch.maximum(b.max(), b.min().neg())
    return difference.max().item() <= tolerance(dtype) * (1 + largest.item())


def example_logits_rows(length, device):
    """Three rows of a sequence of `length` tokens (first, middle, last): the rows of the exports'
    example and of their check that a model selects its logits' rows, a count that is neither the
    example's batch (2) nor its lengths, so that an export gives the rows a size of their own."""
    return torch.tensor([0, length // 2, length - 1], dtype=torch.int64, device=device)


def selects_logit_rows(whole, at_rows, length, device, dtype, width=None):
    """Whether a model computes its logits at given rows (transformers' logits_to_keep as a tensor
    of positions) exactly as those rows of its whole output: `whole()` gives [B, T, V] (V `width`
    when given), `at_rows(rows)` the rows asked for. A model whose logits_to_keep takes a count only
    fails or differs, and is exported without the rows' input."""
    rows = example_logits_rows(length, device)
    try:
        every, some = whole(), at_rows(rows)
    except Exception:  # noqa: BLE001 - a model whose logits_to_keep takes a count only
        return False
    return (every.dim() == 3 and (width is None or every.shape[-1] == width)
            and some.shape == (every.shape[0], rows.numel(), every.shape[2]) and close(some, every[:, rows], dtype))


def difference(traced, wrapper, inputs, dtype):
    """None when the archive's output on `inputs` is the eager model's, else how it differs."""
    want = wrapper(*inputs)
    try:
        got = traced(*inputs)
    except Exception as e:  # noqa: BLE001 - the trace failing on another shape is the finding
        return f"it fails: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    if got.shape != want.shape:
        return f"its output is {list(got.shape)} instead of {list(want.shape)}"
    if not close(got, want, dtype):
        return f"off by {(got.float() - want.float()).abs().max().item():.3g}"
    return None


def check_shapes(traced, wrapper, trace_shape, batches, pad_id, takes_mask, dtype):
    """The trace has not baked in the example's batch size or length."""
    for rows in batches:
        inputs = padded_batch(rows, pad_id)
        inputs = inputs if takes_mask else inputs[:1]
        found = difference(traced, wrapper, inputs, dtype)
        if found:
            raise ExportError(f"traced on {list(trace_shape)}, the archive's output on {list(inputs[0].shape)} "
                              f"is not the eager model's ({found}): the trace depends on the example's shape or "
                              "data (Python control flow in the model's forward); this model cannot be exported "
                              "by tracing")


def block_sizes(config):
    """{tokens: what the size is} for the lengths where the model's computation changes: the config's
    windows, chunks, blocks and sequence kernels (its text config's too), and DEFAULT_CHUNK."""
    sizes = {DEFAULT_CHUNK: "the chunk of transformers' chunked linear-attention kernels, in no config"}
    configs = [config]
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if text is not config:
        configs.append(text)
    for each in configs:
        for field, value in sorted(each.to_dict().items()):
            if not BLOCK_FIELD.search(field) or field.startswith(("num_", "max_", "n_")):
                continue
            for size in value if isinstance(value, list) else [value]:
                if isinstance(size, int) and not isinstance(size, bool) and size >= 2:
                    sizes.setdefault(size, f"config.json {field}")
    return sizes


def lengths_to_check(blocks, max_length, shortest):
    """Each block size up to LONGEST_CHECK and one more token, and the longest length checked:
    max_length, 4 times the largest block or LONGEST_CHECK, whichever is shortest; only those above
    `shortest` (already checked)."""
    longest = min(max_length, 4 * max(blocks), LONGEST_CHECK)
    lengths = {longest}
    for size in blocks:
        if size <= LONGEST_CHECK:
            lengths.update((size, size + 1))
    return sorted(n for n in lengths if shortest < n <= min(max_length, LONGEST_CHECK + 1))


def check_lengths(traced, wrapper, tokenizer, bos_id, vocab_size, pad_id, dtype, *, blocks, lengths, exact,
                  trace_length):
    """The archive gives the eager model's output at every length of `lengths` (one row each), as it
    did at the lengths of `exact`; a trace exact at one length and not at another is refused."""
    exact = sorted(exact)
    for length in lengths:
        ids, mask = padded_batch(example_rows(tokenizer, bos_id, [length], vocab_size), pad_id)
        found = difference(traced, wrapper, (ids, mask) if wrapper.takes_mask else (ids,), dtype)
        if found:
            last = exact[-1]
            crossed = [(size, what) for size, what in sorted(blocks.items(), reverse=True)
                       if (last - 1) // size < (length - 1) // size]
            across = (f"; between {last} and {length} tokens the sequence crosses a block of {crossed[0][0]} "
                      f"tokens ({crossed[0][1]})") if crossed else ""
            raise ExportError(f"the archive gives the eager model's output at {', '.join(map(str, exact))} tokens "
                              f"but not at {length} ({found}){across}: the model's forward depends on the length "
                              f"in Python (a loop over blocks, unrolled by torch.jit.trace at the {trace_length} "
                              "tokens it traced), so the archive would be wrong on longer sequences; this model "
                              f"cannot be exported by tracing (--max-length {last} limits the export to lengths "
                              "where it was exact)")
        exact.append(length)
    return exact


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
