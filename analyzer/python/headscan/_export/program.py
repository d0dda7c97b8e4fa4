"""The exported program: torch.export of the wrapper (batch and length dynamic), headscan's
observers placed on every attention's probabilities, and the model's layers.

Observers (headscan::observe and headscan::attention, ops.py):
  - after each attention softmax: a softmax over the last dimension of a [B, H, T, T] tensor, T the
    input's length; or, with an attention sink (gpt-oss), a softmax over T + 1 keys whose only use
    drops the sink's column ([..., :-1]): observed after that slice;
  - every scaled_dot_product_attention becomes headscan::attention (the same arguments, its math
    form), whose probabilities are observed.
Each carries the model's own index of its layer: the layer stack is the ModuleList that holds the
attention modules (model.layers), found from the observers' module paths (nn_module_stack).
"""

import re

import torch
from torch.export import Dim

from . import ExportError, ExportInputError
from .ops import define

SOFTMAX = {torch.ops.aten.softmax.int, torch.ops.aten._softmax.default}
SDPA = torch.ops.aten.scaled_dot_product_attention.default
SDPA_ARGUMENTS = (("query", None), ("key", None), ("value", None), ("attn_mask", None), ("dropout_p", 0.0),
                  ("is_causal", False), ("scale", None), ("enable_gqa", False))
# Attention computed by one kernel that gives no probabilities (and no math form to rewrite it to).
FUSED = re.compile(r"flash|efficient_attention|cudnn_attention|_native_multi_head_attention|flex_attention|"
                   r"_scaled_dot_product_(?!attention_math)")
# The kinds of layers without a softmax attention map, from their modules' class names (the first
# that matches), else from config.layer_types.
KINDS = (("linear attention", re.compile(r"GatedDeltaNet|DeltaNet|LinearAttention|LinearAttn|Lightning|Retention|"
                                         r"RWKV|GatedLinear", re.I)),
         ("state space", re.compile(r"Mamba|SSM|S4|Mixer", re.I)),
         ("convolution", re.compile(r"ShortConv|Conv|Hyena", re.I)))
LAYER_TYPES = (("linear attention", re.compile(r"linear")), ("state space", re.compile(r"mamba|ssm|state")),
               ("convolution", re.compile(r"conv")), ("attention", re.compile(r"attention")))


def export_wrapper(wrapper, example_inputs, max_length):
    """torch.export of `wrapper` (forward(input_ids[, attention_mask])), batch and length dynamic up
    to max_length; a failure is ExportInputError with the reason in the user's terms."""
    length = Dim.DYNAMIC(min=2, max=max_length) if max_length > 2 else None
    shape = {0: Dim.DYNAMIC, 1: length} if length is not None else {0: Dim.DYNAMIC}
    try:
        return torch.export.export(wrapper, tuple(example_inputs), dynamic_shapes=(shape,) * len(example_inputs))
    except Exception as e:  # noqa: BLE001 - torch.export's many failures, said in the user's terms
        raise ExportInputError(export_failure(e)) from e


def first_lines(text, count=3):
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return " / ".join(lines[:count])


def export_failure(error):
    """Why torch.export failed, in the user's terms."""
    from torch._dynamo import exc
    from torch.fx.experimental import symbolic_shapes

    name = type(error).__name__
    message = first_lines(error)
    data_dependent = (symbolic_shapes.GuardOnDataDependentSymNode,)
    if isinstance(error, data_dependent) or "data-dependent" in message or "data dependent" in message:
        return ("data-dependent control flow: the model's forward branches in Python on the values of a tensor, "
                f"which an exported program cannot hold (torch.export: {name}: {message})")
    if isinstance(error, symbolic_shapes.ConstraintViolationError) or "Constraints violated" in message:
        return ("data-dependent control flow: the model's forward depends in Python on the batch size or the "
                f"length, so no program serves every length (torch.export: {name}: {message}); export with "
                "--max-length N to fix the longest length")
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
    the softmax), ("sdpa", node)."""
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
    return found


def fused_attention(graph):
    return sorted({str(node.target) for node in graph.nodes
                   if node.op == "call_function" and FUSED.search(str(node.target))})


def layer_stack(model, paths):
    """(the ModuleList path, {observer path: index}) of the layer stack holding the observers'
    modules (the first ModuleList on each path), or (None, {}) when no ModuleList holds them."""
    stacks, indexes = set(), {}
    for path in paths:
        parts = path.split(".") if path else []
        module = model
        for depth, part in enumerate(parts):
            child = getattr(module, part, None) if not part.isdigit() else None
            if part.isdigit() and isinstance(module, torch.nn.ModuleList):
                stacks.add(".".join(parts[:depth]))
                indexes[path] = int(part)
                break
            if child is None:
                break
            module = child
    outside = [p for p in paths if p not in indexes]
    if not stacks:
        return None, {}
    if len(stacks) > 1 or outside:
        where = sorted(stacks) + [f"{p or 'the model itself'} (in no layer list)" for p in sorted(set(outside))]
        raise ExportInputError(f"the model's attentions are in more than one stack of layers ({', '.join(where)}); "
                               "headscan analyses one stack")
    return stacks.pop(), indexes


def layer_kind(layer, layer_type):
    for kind, pattern in KINDS:
        if any(pattern.search(type(module).__name__) for module in layer.modules()):
            return kind
    if isinstance(layer_type, str):
        for kind, pattern in LAYER_TYPES:
            if pattern.search(layer_type) and kind != "attention":
                return kind
    return "none"


def model_layers(model, stack, observed, config=None):
    """[{"index", "path", "kind"}] of every layer of the stack; `observed` the indexes with an
    observer."""
    layers = model.get_submodule(stack)
    types = getattr(config, "layer_types", None) if config is not None else None
    if config is not None and hasattr(config, "get_text_config") and types is None:
        types = getattr(config.get_text_config(), "layer_types", None)
    result = []
    for index, layer in enumerate(layers):
        if index in observed:
            kind = "attention"
        else:
            layer_type = types[index] if isinstance(types, (list, tuple)) and index < len(types) else None
            kind = layer_kind(layer, layer_type)
        result.append({"index": index, "path": f"{stack}.{index}", "kind": kind})
    return result


def place_observers(ep, model, prefix, config=None):
    """Places the observers in `ep`'s graph (in place) and returns the model's layers (None when no
    layer stack holds the attentions: the observers are then numbered in graph order)."""
    observe, attention = define()
    graph = ep.graph_module.graph
    inputs = [node for node in graph.nodes if node.op == "placeholder"
              and node.name in ep.graph_signature.user_inputs]
    length = inputs[0].meta["val"].shape[1]
    fused = fused_attention(graph)
    if fused:
        raise ExportInputError(f"fused attention with no math form: the program calls {', '.join(fused)}, which "
                               "gives no attention probabilities; load the model with attn_implementation=\"eager\"")
    found = attention_nodes(graph, length)
    if not found:
        raise ExportInputError("the exported program has no attention softmax and no scaled_dot_product_attention: "
                               "headscan would find no attention")
    paths = [module_path(node, prefix) for node, _ in found]
    stack, indexes = layer_stack(model, paths)
    numbers = [indexes[p] for p in paths] if stack is not None else list(range(len(found)))
    counts = {}
    for path, number in zip(paths, numbers):
        counts.setdefault(number, []).append(path)
    twice = {n: p for n, p in counts.items() if len(p) > 1}
    if twice:
        number, where = min(twice.items())
        raise ExportInputError(f"layer {number} ({stack}.{number}) has {len(where)} attention softmaxes "
                               f"({', '.join(sorted(set(where)))}): headscan analyses one attention map per layer")
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
        else:
            with graph.inserting_after(node):
                observer = graph.call_function(observe, (node, number))
            observer.meta = dict(node.meta)
            node.replace_all_uses_with(observer, delete_user_cb=lambda user, observer=observer: user is not observer)
    ep.graph_module.recompile()
    if stack is None:
        return None, numbers
    return model_layers(model, stack, set(numbers), config), numbers


def observer_layers(ep):
    """The layer of each observer of the program, in graph order."""
    observe, attention = define()
    return [node.args[-1] for node in ep.graph_module.graph.nodes
            if node.op == "call_function" and node.target in (observe, attention)]


def exported_program(wrapper, example_inputs, max_length, config=None):
    """(the program to package, the model's layers or None, the observers' layers): exported,
    observed, decomposed to the core operators NativeRT runs."""
    ep = export_wrapper(wrapper, example_inputs, max_length)
    prefix = "model."  # the wrapper's attribute holding the model (model.py's LogitsOnly)
    layers, numbers = place_observers(ep, wrapper.model, prefix, config)
    # Export's training IR holds higher-order operators (the rotary embedding's
    # wrap_with_set_grad_enabled) that NativeRT does not run; decomposed, the graph is ATen and
    # headscan's operators.
    try:
        ep = ep.run_decompositions({})
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"decomposing the exported program failed: {type(e).__name__}: {first_lines(e)}") from e
    if observer_layers(ep) != numbers:
        raise ExportError(f"the decomposed program's observers are of layers {observer_layers(ep)}, not {numbers}: "
                          "headscan's operators were decomposed (their C++ kernels must be registered for "
                          "CompositeExplicitAutograd)")
    return ep, layers, numbers


def describe_layers(layers, numbers):
    """"8 (attention: 3, 7; linear attention: 0-2, 4-6)" for the export's summary."""
    if layers is None:
        return f"{len(numbers)} attention maps, numbered in the program's order (no layer list found)"
    by_kind = {}
    for layer in layers:
        by_kind.setdefault(layer["kind"], []).append(layer["index"])
    order = ["attention", "linear attention", "state space", "convolution", "none"]
    parts = [f"{kind}: {ranges(by_kind[kind])}" for kind in order if kind in by_kind]
    return f"{len(layers)} ({'; '.join(parts)})"


def ranges(indexes):
    spans, start = [], None
    for i, index in enumerate(indexes):
        if start is None:
            start = index
        if i + 1 == len(indexes) or indexes[i + 1] != index + 1:
            spans.append(str(start) if start == index else f"{start}-{index}")
            start = None
    return ", ".join(spans)
