"""The exported program: torch.export of the wrapper (batch and length dynamic), headscan's
observers placed on every attention's probabilities, and the model's layers.

Observers (headscan::observe and headscan::attention, ops.py):
  - after each attention softmax: a softmax over the last dimension of a [B, H, T, T] tensor, T the
    input's length; or, with an attention sink (gpt-oss), a softmax over T + 1 keys whose only use
    drops the sink's column ([..., :-1]): observed after that slice;
  - every scaled_dot_product_attention becomes headscan::attention (the same arguments, its math
    form), whose probabilities are observed;
  - a headscan::attention the model calls itself (transformers' attention implementation "headscan",
    headscan_attention.py) is kept, its layer set.
Each carries the model's own index of its layer: the layer stack is the ModuleList that holds the
attention modules (model.layers), found from the observers' module paths (nn_module_stack).
"""

import contextlib
import io
import logging
import re
import sys

import torch
from torch.export import Dim

from . import ExportError, ExportInputError
from .layers import layer_stack, model_layers
from .mixer_ops import length_dynamic_mixers
from .ops import attentions, define
from .nativert_rewrites import explicit_scalars, real_complex_products


class NoAttention(ExportInputError):
    """The model computes no attention: no other attention implementation gives it any."""


# The operators' namespaces the C++ runtime has: ATen's and headscan's.
RUNTIME_NAMESPACES = {"aten", "prims", "headscan"}
SOFTMAX = {torch.ops.aten.softmax.int, torch.ops.aten._softmax.default}
SDPA = torch.ops.aten.scaled_dot_product_attention.default
SDPA_ARGUMENTS = (("query", None), ("key", None), ("value", None), ("attn_mask", None), ("dropout_p", 0.0),
                  ("is_causal", False), ("scale", None), ("enable_gqa", False))
# Attention computed by one kernel that gives no probabilities (and no math form to rewrite it to).
FUSED = re.compile(r"flash|efficient_attention|cudnn_attention|_native_multi_head_attention|flex_attention|"
                   r"_scaled_dot_product_(?!attention_math)")


def export_wrapper(wrapper, example_inputs, max_length):
    """torch.export of `wrapper` (forward(input_ids[, attention_mask][, logits_rows])), batch and
    length dynamic up to max_length, the rows' count dynamic; a failure is ExportInputError with
    the reason in the user's terms."""
    length = Dim.DYNAMIC(min=2, max=max_length) if max_length > 2 else None
    shape = {0: Dim.DYNAMIC, 1: length} if length is not None else {0: Dim.DYNAMIC}
    # The ids and the mask are [B, T]; a wrapper's logits_rows (exporter.py's RowsWrapper) is [K].
    rows = getattr(wrapper, "takes_logits_rows", False)
    shapes = (shape,) * (len(example_inputs) - rows) + (({0: Dim.DYNAMIC},) if rows else ())
    # torch.export logs what it could not trace (graphs, guards) before raising; the reason is
    # said once, below.
    loggers = [logging.getLogger(name) for name in ("torch.fx.experimental.symbolic_shapes", "torch._dynamo",
                                                    "torch.export", "torch._export")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    printed = io.StringIO()  # torch.export prints the partial graph of a failure
    try:
        # A hybrid's linear-attention and state-space layers call headscan's operators meanwhile.
        with contextlib.redirect_stderr(printed), length_dynamic_mixers(getattr(wrapper, "model", wrapper)):
            ep = torch.export.export(wrapper, tuple(example_inputs), dynamic_shapes=shapes)
    except Exception as e:  # noqa: BLE001 - torch.export's many failures, said in the user's terms
        raise ExportInputError(export_failure(e)) from e
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
    sys.stderr.write(printed.getvalue())
    return ep


def input_length(ep):
    """The symbolic length of the program's input_ids (its second dimension)."""
    inputs = [node for node in ep.graph.nodes if node.op == "placeholder" and node.name in ep.graph_signature.user_inputs]
    return inputs[0].meta["val"].shape[1]


def shortest_length(ep, max_length, takes_mask):
    """The shortest length the program takes (2, or more where a Python branch on the length
    narrowed it: a model that computes otherwise below N tokens); a program that stops short of
    max_length is refused, naming the lengths it holds."""
    length = input_length(ep)
    ranges = ep.range_constraints.get(length.node.expr) if isinstance(length, torch.SymInt) else None
    if ranges is None:
        return 2
    lower, upper = ranges.lower, ranges.upper
    lower = int(lower) if lower.is_finite else 2
    held = f"{lower} to {int(upper) if upper.is_finite else 'any number of'}"
    if upper.is_finite and int(upper) < max_length:
        raise ExportInputError(f"data-dependent control flow: the model's forward takes a Python branch on the "
                               f"sequence's length, so the exported program holds lengths of {held} tokens only, "
                               f"not up to max_length {max_length}; --max-length {int(upper)} exports it for those")
    if lower > 2 and not takes_mask:
        raise ExportInputError(f"data-dependent control flow: the model's forward takes a Python branch on the "
                               f"sequence's length, so the exported program holds lengths of {held} tokens only; "
                               "shorter sequences can be padded to that length only where the model takes an "
                               "attention mask (export without --no-attention-mask)")
    return lower


def first_lines(text, count=3):
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return " / ".join(lines[:count])


def export_failure(error):
    """Why torch.export failed, in the user's terms."""
    from torch._dynamo import exc
    from torch.fx.experimental import symbolic_shapes

    name = type(error).__name__
    message = first_lines(error, 1)
    data_dependent = (symbolic_shapes.GuardOnDataDependentSymNode,)
    if isinstance(error, data_dependent) or "data-dependent" in message or "data dependent" in message:
        return ("data-dependent control flow: the model's forward branches in Python on the values of a tensor, "
                f"which an exported program cannot hold (torch.export: {name}: {message})")
    if isinstance(error, symbolic_shapes.ConstraintViolationError) or "Constraints violated" in message:
        which = "the batch size" if "size()[0]" in message else "the sequence's length"
        if "specialized it to be a constant" in str(error):
            return (f"data-dependent control flow: the model's forward fixes {which} in Python (a loop over the "
                    "tokens, as a state-space layer's sequential scan, or a branch on each length), so torch.export "
                    f"made a program of the example's shape only (torch.export: {name}: {message})")
        return (f"data-dependent control flow: the model's forward depends in Python on {which}, so no program "
                f"serves every length (torch.export: {name}: {message})")
    if isinstance(error, (exc.UserError, exc.Unsupported)):
        return f"the model's forward uses Python that torch.export cannot capture ({name}: {message})"
    return f"torch.export could not capture the model's forward ({name}: {message})"


def _expression(size):
    import sympy

    return size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(int(size))


def _offset(size, length):
    """size - length when it is a constant (the softmax is over the length, or one more), else None."""
    difference = _expression(size) - _expression(length)
    return int(difference) if difference.is_Integer else None


def _is_last_dim(node, rank):
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    return dim in (-1, rank - 1)


def _drops_sink(node):
    """The slice [..., :-1] (the only use of a softmax over the keys and a sink), or None."""
    users = list(node.users)
    if len(users) != 1 or users[0].target is not torch.ops.aten.slice.Tensor:
        return None
    args = users[0].args
    dim = args[1] if len(args) > 1 else 0
    start = args[2] if len(args) > 2 else None
    end = args[3] if len(args) > 3 else None
    rank = len(node.meta["val"].shape)
    if dim in (-1, rank - 1) and start in (None, 0) and end == -1:
        return users[0]
    return None


def module_path(node, prefix):
    """The module path of the innermost module `node` ran in, without the wrapper's `prefix`."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return path[len(prefix):] if path.startswith(prefix) else path


def attention_nodes(graph, length):
    """[(node, kind)] of the graph's attentions in order: ("softmax", node), ("sink", the slice after
    the softmax), ("sdpa", node), ("headscan", a headscan::attention the model calls)."""
    models_attention = attentions()
    found = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in SOFTMAX:
            shape = node.meta["val"].shape
            if len(shape) != 4 or not _is_last_dim(node, 4) or _offset(shape[-2], length) != 0:
                continue
            offset = _offset(shape[-1], length)
            if offset == 0:
                found.append((node, "softmax"))
            elif offset == 1 and _drops_sink(node) is not None:
                found.append((_drops_sink(node), "sink"))
        elif node.target is SDPA:
            found.append((node, "sdpa"))
        elif node.target in models_attention:
            found.append((node, "headscan"))
    return found


def fused_attention(graph):
    return sorted({str(node.target) for node in graph.nodes
                   if node.op == "call_function" and FUSED.search(str(node.target))})


def same_computation(a, b, seen=None):
    """Whether two values of the graph are computed by the same operators from the same inputs."""
    if a is b:
        return True
    if isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node):
        seen = {} if seen is None else seen
        if (a, b) not in seen:
            seen[(a, b)] = (a.op == b.op == "call_function" and a.target is b.target
                            and same_computation(a.args, b.args, seen) and same_computation(a.kwargs, b.kwargs, seen))
        return seen[(a, b)]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_computation(x, y, seen) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_computation(a[k], b[k], seen) for k in a)
    return type(a) is type(b) and a == b


def without_repeats(found, numbers, paths, stack):
    """(found, numbers) with one attention per layer, and {kept softmax: [its repeats]}: a layer
    whose softmaxes all compute the same probabilities (DiffLlama's two attention calls share Q and
    K) keeps the first, whose observed output its repeats' users then take; a layer with different
    attentions is refused."""
    by_layer = {}
    for item, number, path in zip(found, numbers, paths):
        by_layer.setdefault(number, []).append((item, path))
    kept, kept_numbers, repeats = [], [], {}
    for item, number in zip(found, numbers):
        group = by_layer[number]
        if group[0][0] is not item:
            continue
        first, kind = item
        others = [node for (node, other_kind), _ in group[1:]]
        same = kind not in ("sdpa", "headscan") and all(other_kind == kind for (_, other_kind), _ in group[1:]) and \
            all(same_computation(first, other) for other in others)
        if others and not same:
            where = sorted({path for _, path in group})
            layer = f"{stack}.{number}" if stack is not None else "the model"
            raise ExportInputError(f"layer {number} ({layer}) has {len(group)} attention softmaxes ({', '.join(where)}): "
                                   "headscan analyses one attention map per layer")
        kept.append(item)
        kept_numbers.append(number)
        if others:
            repeats[first] = others
    return kept, kept_numbers, repeats


def place_observers(ep, model, prefix, config=None):
    """Places the observers in `ep`'s graph (in place) and returns the model's layers (None when no
    layer stack holds the attentions: the observers are then numbered in graph order)."""
    observe, attention = define()
    graph = ep.graph_module.graph
    length = input_length(ep)
    fused = fused_attention(graph)
    if fused:
        raise ExportInputError(f"fused attention with no math form: the program calls {', '.join(fused)}, which "
                               "gives no attention probabilities; load the model with attn_implementation=\"eager\"")
    found = attention_nodes(graph, length)
    if not found:
        raise NoAttention("the exported program has no attention softmax, no scaled_dot_product_attention and "
                          "no headscan::attention: headscan would find no attention (a model without attention "
                          "layers, such as a pure state-space model, has no heads to analyse)")
    paths = [module_path(node, prefix) for node, _ in found]
    stack, indexes = layer_stack(model, paths)
    numbers = [indexes[p] for p in paths] if stack is not None else list(range(len(found)))
    found, numbers, repeats = without_repeats(found, numbers, paths, stack)
    if numbers != sorted(numbers):
        raise ExportError(f"the program computes the layers' attentions in the order {numbers}, not the layers' "
                          "order; headscan numbers maps in the order they are computed")
    for (node, kind), number in zip(found, numbers):
        if kind == "sdpa":
            values = [node.args[i] if i < len(node.args) else node.kwargs.get(name, default)
                      for i, (name, default) in enumerate(SDPA_ARGUMENTS)]
            with graph.inserting_before(node):
                replacement = graph.call_function(attention, (*values, number))
            replacement.meta = dict(node.meta)
            node.replace_all_uses_with(replacement)
            graph.erase_node(node)
        elif kind == "headscan":
            node.update_arg(8 if node.target is attentions()[1] else len(node.args) - 1, number)
        else:
            with graph.inserting_after(node):
                observer = graph.call_function(observe, (node, number))
            observer.meta = dict(node.meta)
            node.replace_all_uses_with(observer, delete_user_cb=lambda user, observer=observer: user is not observer)
            for repeat in repeats.get(node, []):  # the same probabilities computed again: the observed ones
                repeat.replace_all_uses_with(observer)
    graph.eliminate_dead_code()
    ep.graph_module.recompile()
    if stack is None:
        return None, numbers
    return model_layers(model, stack, set(numbers), config), numbers


def observer_layers(ep):
    """The layer of each observer of the program, in graph order."""
    observe = define()[0]
    return [layer_of(node) for node in ep.graph_module.graph.nodes
            if node.op == "call_function" and (node.target is observe or node.target in attentions())]


def layer_of(node):
    """The layer an observer carries: headscan::observe's and headscan::attention's last argument,
    headscan::attention.windowed's ninth."""
    return node.args[8] if node.target is attentions()[1] else node.args[-1]


def exported_program(wrapper, example_inputs, max_length, config=None, precheck=None):
    """(the program to package, the shortest length it takes, the model's layers or None, the
    observers' layers): exported, observed, decomposed to the core operators NativeRT runs.
    `precheck(ep)`, when given, sees the observed program before its decomposition (the slowest
    step for a long model) and raises to refuse it early: a program exact at some lengths only is
    refused as well there as after."""
    ep = export_wrapper(wrapper, example_inputs, max_length)
    min_length = shortest_length(ep, max_length, wrapper.takes_mask)
    prefix = "model."  # the wrapper's attribute holding the model (exporter.py's Wrapper)
    layers, numbers = place_observers(ep, wrapper.model, prefix, config)
    # Export's training IR holds higher-order operators (the rotary embedding's
    # wrap_with_set_grad_enabled) that NativeRT does not run; decomposed, the graph is ATen and
    # headscan's operators.
    real_complex_products(ep.graph_module)
    if precheck is not None:
        precheck(ep)
    try:
        ep = ep.run_decompositions({})
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"decomposing the exported program failed: {type(e).__name__}: {first_lines(e)}") from e
    explicit_scalars(ep.graph_module)
    foreign = sorted({str(node.target) for node in ep.graph.nodes if node.op == "call_function"
                      and isinstance(node.target, torch._ops.OpOverload) and node.target.namespace not in RUNTIME_NAMESPACES})
    if foreign:
        raise ExportInputError(f"the exported program calls {', '.join(foreign)}, an operator registered in Python by "
                               "another library, which headscan's C++ runtime does not have")
    if observer_layers(ep) != numbers:
        raise ExportError(f"the decomposed program's observers are of layers {observer_layers(ep)}, not {numbers}: "
                          "headscan's operators were decomposed")
    return ep, min_length, layers, numbers
