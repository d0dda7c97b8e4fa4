"""The model's layers as it numbers them: the stack of layers (the ModuleList) that holds the
attention modules, and each layer's kind: "attention" (it has an observer), else from its modules'
class names, else from config.layer_types: "linear attention", "state space", "convolution" or
"none"."""

import re

import torch

from . import ExportInputError

# The kinds of layers without a softmax attention map, from their modules' class names (the first
# that matches), else from config.layer_types.
KINDS = (("linear attention", re.compile(r"GatedDeltaNet|DeltaNet|LinearAttention|LinearAttn|Lightning|Retention|"
                                         r"RWKV|GatedLinear", re.I)),
         ("state space", re.compile(r"Mamba|SSM|StateSpace", re.I)),
         ("convolution", re.compile(r"ShortConv|Conv|Hyena", re.I)))
LAYER_TYPES = (("linear attention", re.compile(r"linear")), ("state space", re.compile(r"mamba|ssm|state")),
               ("convolution", re.compile(r"conv")), ("attention", re.compile(r"attention")))


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
