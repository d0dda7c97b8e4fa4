"""Which attention `headscan export` loads a model with: headscan's own implementation of SDPA
attention where it is exact, else transformers' SDPA attention where that is, else eager attention.

With SDPA, each attention is one scaled_dot_product_attention call, which the exported program
runs as headscan::attention (program.py): headscan computes it, block by block, without the model
materialising its [B, H, T, T] probabilities. With eager attention the model's own softmax is
observed: the whole matrix per layer. SDPA is exact where transformers' sdpa_attention_forward
computes what the model's eager attention computes; it is not where the model's attention passes it
something it ignores (Gemma 2's soft-capping of the scores, gpt-oss's sinks), calls it more than
once per map (differential attention), or where its output differs from the same weights under
eager attention for any other reason, which is measured. headscan's implementation
(headscan_attention.py) computes SDPA's attention without its [B, 1, T, T] mask and without
repeating grouped key/value heads, and computes soft-capping and sinks too
(headscan::attention.windowed): it is kept where the model's output under it is eager attention's,
which is measured as well, also for a model whose attention SDPA ignores part of or that has no
SDPA attention in transformers (gpt-oss).
"""

import contextlib

import torch

from . import ExportInputError, headscan_attention
from .checks import close

MODES = ("auto", "sdpa", "eager")
# Arguments transformers passes to its attention functions that sdpa_attention_forward leaves out:
# what the model's attention computes beyond scaled_dot_product_attention.
IGNORED_BY_SDPA = {"softcap": "soft-capping of the attention scores", "s_aux": "attention sinks",
                   "sinks": "attention sinks"}


def sdpa_unavailable(cls, config):
    """Why the class cannot be loaded with SDPA attention, or None (for an Auto class of a model with
    its own code, transformers says when it loads it)."""
    if hasattr(cls, "_model_mapping"):  # AutoModelForCausalLM and the like: the config's class
        try:
            cls = cls._model_mapping[type(config)]
        except (KeyError, ValueError):
            return None
    if not getattr(cls, "_supports_sdpa", False):
        return f"transformers' {cls.__name__} has no SDPA attention"
    return None


@contextlib.contextmanager
def counted_sdpa_calls():
    """{id(attention module): [its class name, calls, {what SDPA ignores}]} of transformers' SDPA
    attention function called within the block (the models that dispatch through
    ALL_ATTENTION_FUNCTIONS)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    calls = {}
    sdpa = ALL_ATTENTION_FUNCTIONS["sdpa"]

    def counted(module, *args, **kwargs):
        entry = calls.setdefault(id(module), [type(module).__name__, 0, set()])
        entry[1] += 1
        entry[2].update(what for name, what in IGNORED_BY_SDPA.items() if kwargs.get(name) is not None)
        return sdpa(module, *args, **kwargs)

    ALL_ATTENTION_FUNCTIONS["sdpa"] = counted
    try:
        yield calls
    finally:
        del ALL_ATTENTION_FUNCTIONS["sdpa"]
        if ALL_ATTENTION_FUNCTIONS["sdpa"] is not sdpa:  # a local override was there before
            ALL_ATTENTION_FUNCTIONS["sdpa"] = sdpa


def sdpa_difference(run_sdpa, run_eager, dtype, ignored_out=None):
    """None when a model loaded with SDPA attention computes what it computes with eager attention
    on the check batch, else why not. run_sdpa() and run_eager() give the output of the batch with
    the model as loaded (SDPA) and with eager attention. `ignored_out`, a set when given, receives
    what the model's attention computes that SDPA ignores (IGNORED_BY_SDPA's values)."""
    with torch.no_grad(), counted_sdpa_calls() as calls:
        got = run_sdpa()
    ignored = sorted({what for _, _, whats in calls.values() for what in whats})
    if ignored_out is not None:
        ignored_out.update(ignored)
    if ignored:
        return f"its attention computes {' and '.join(ignored)}, which scaled_dot_product_attention has no form of"
    repeated = sorted({name for name, count, _ in calls.values() if count > 1})
    if repeated:
        return (f"{', '.join(repeated)} calls scaled_dot_product_attention more than once per map (differential "
                "attention), and headscan analyses one attention map per layer")
    with torch.no_grad():
        want = run_eager()
    return difference(got, want, dtype, "SDPA attention")


def difference(got, want, dtype, attention):
    """Why the output `got` with `attention` is not eager attention's `want`, or None when it is."""
    if got.shape != want.shape:
        return f"its output with {attention} is {list(got.shape)}, with eager attention {list(want.shape)}"
    if not close(got, want, dtype):
        return (f"its output with {attention} differs from eager attention's by "
                f"{(got.float() - want.float()).abs().max().item():.3g}")
    return None


def exact_attention(model, requested, run, load_eager, dtype):
    """(the model to export, "headscan", "sdpa" or "eager", why not "headscan" or None) for a model
    loaded with SDPA attention (`requested` "auto" or "sdpa"). Kept with SDPA where it computes what
    eager attention does (see sdpa_difference), else switched to eager attention (or, for a model
    transformers cannot switch after loading, load_eager() loaded again); with SDPA kept, switched
    to headscan's own implementation (headscan_attention.py: no [B, 1, T, T] mask) where its output
    is eager attention's too. run(model) gives its output on the check batch's real tokens (padding
    queries, which headscan leaves out, see what each attention makes of a row of masked keys:
    Llama 4's differ). --attention sdpa keeps SDPA without comparing."""
    if requested == "sdpa":
        return model, "sdpa", None
    can_switch = hasattr(model, "set_attn_implementation") and type(model)._can_set_attn_implementation()
    if can_switch and dtype in (torch.bfloat16, torch.float16) and widening_fits(model, dtype):
        # Compared in float32 (every bfloat16 and float16 number is one, so the weights come back
        # exactly): in 16 bits two orders of the same sums differ by their rounding (0.36 in a tiny
        # Llama's logits), which says nothing of what the two attentions compute.
        with widened(model, dtype):
            chosen, kind, why = exact_attention(model, requested, run, load_eager, torch.float32)
        return chosen, kind, why
    eager_copy, eager_output = [], []

    def run_eager():
        if not eager_output:
            if can_switch:
                model.set_attn_implementation("eager")
                try:
                    eager_output.append(run(model))
                finally:
                    model.set_attn_implementation("sdpa")
            else:
                eager_copy.append(load_eager())
                eager_output.append(run(eager_copy[0]))
        return eager_output[0]

    ignored = set()
    why = sdpa_difference(lambda: run(model), run_eager, dtype, ignored)
    if why is not None:
        if can_switch and ignored:
            # Soft-capping and sinks are headscan::attention.windowed's too: measured.
            why_not = headscan_difference(model, run, run_eager, dtype)
            if why_not is None:
                return model, "headscan", None
            why = f"{why}; {why_not}"
        if can_switch:
            model.set_attn_implementation("eager")
            return model, "eager", why
        return (eager_copy[0] if eager_copy else load_eager()), "eager", why
    if not can_switch:
        return model, "sdpa", (f"transformers cannot switch {type(model).__name__}'s attention after loading it, "
                               "so headscan's own attention (without the [B, 1, T, T] mask) was not tried")
    why = headscan_difference(model, run, run_eager, dtype)
    if why is not None:
        model.set_attn_implementation("sdpa")
        return model, "sdpa", why
    return model, "headscan", None


def headscan_or_eager(model, run, dtype, why):
    """(the model, "headscan" or "eager", why not "headscan" or None) for a model loaded with eager
    attention because transformers has no SDPA attention for it (`why`; gpt-oss, whose sinks
    scaled_dot_product_attention has no form of): switched to headscan's implementation where its
    output is eager attention's on the check batch, else kept eager."""
    can_switch = hasattr(model, "set_attn_implementation") and type(model)._can_set_attn_implementation()
    if not can_switch:
        return model, "eager", why
    if dtype in (torch.bfloat16, torch.float16) and widening_fits(model, dtype):
        with widened(model, dtype):  # compared in float32, as exact_attention does
            return headscan_or_eager(model, run, torch.float32, why)
    eager_output = []

    def run_eager():
        if not eager_output:
            with torch.no_grad():
                eager_output.append(run(model))
        return eager_output[0]

    run_eager()
    why_not = headscan_difference(model, run, run_eager, dtype)
    if why_not is None:
        return model, "headscan", None
    model.set_attn_implementation("eager")
    return model, "eager", f"{why}; {why_not}"


def headscan_difference(model, run, run_eager, dtype):
    """None when `model` switched to headscan's attention implementation computes what it computes
    with eager attention on the check batch, else why not (the model is left switched)."""
    headscan_attention.register()
    with torch.no_grad():
        want = run_eager()
        try:
            model.set_attn_implementation(headscan_attention.NAME)
            got = run(model)
        except Exception as e:  # noqa: BLE001 - a model's code that cannot take the compact mask
            return f"its forward fails with headscan's attention ({type(e).__name__}: {first_line(e)})"
    return difference(got, want, dtype, "headscan's attention")


def first_line(error):
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def widening_fits(model, dtype):
    """Whether the model's `dtype` tensors fit in memory as float32 beside the rest: the device's
    free memory (the machine's available memory for the CPU) holds twice the float32 size."""
    tensors = [t for t in (*model.parameters(), *model.buffers()) if t.dtype == dtype]
    if not tensors:
        return False
    needed = 2 * 4 * sum(t.numel() for t in tensors)
    device = tensors[0].device
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0] >= needed
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return False
    return available >= needed


@contextlib.contextmanager
def widened(model, dtype):
    """The model's `dtype` parameters and buffers as float32 within the block, then `dtype` again
    (exactly: float32 holds every bfloat16 and float16 number); its float32 ones are left alone."""
    tensors = [t for t in (*model.parameters(), *model.buffers()) if t.dtype == dtype]
    for tensor in tensors:
        tensor.data = tensor.data.float()
    try:
        yield
    finally:
        for tensor in tensors:
            tensor.data = tensor.data.to(dtype)


def refuse_sdpa(why):
    raise ExportInputError(f"--attention sdpa: {why}; export with --attention eager (or auto)")
