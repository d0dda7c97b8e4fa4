"""headscan.json checked as the runner reads it (analyzer/model/model_metadata.cpp,
parse_model_metadata): an export writes only a file every run accepts. The bounds are the C++
constants of analyzer/model/model_metadata.h and analyzer/json_limits.h; tests/python/test_export.py
and tests/test_model_metadata.cpp read the same documents (tests/fixtures/headscan_json_cases.json)
and agree on each."""

import json
import math

MAX_BYTES = 1 << 20  # kMaxMetadataBytes
MAX_LENGTH = 1 << 20  # kMaxMetadataLength: max_length, min_length, checked_length, as --max-length
MAX_KV_HEADS = 4096  # kMaxMetadataKvHeads
MAX_STEP = 1 << 53  # kMaxMetadataStep
MAX_LAYERS = 4096  # kMaxMetadataLayers
MAX_DEPTH = 512  # kMaxJsonDepth
LAYER_KINDS = ("attention", "linear attention", "state space", "convolution", "none")  # model_layers.h
# The fields of type integer with their ranges; every other field the runner reads is a string,
# "causal" or "logits" (true or false), or "layers"; fields it does not read ("attention", "attention_reason") may hold anything.
INTEGER_FIELDS = {"max_length": (2, MAX_LENGTH), "min_length": (2, MAX_LENGTH), "checked_length": (2, MAX_LENGTH),
                  "n_kv_heads": (1, MAX_KV_HEADS), "step": (0, MAX_STEP)}


class MetadataError(ValueError):
    """headscan.json as written would be refused by every run: the reason."""


def text_of(document):
    """headscan.json's text of `document` (a dict), as the exporters write it."""
    try:
        return json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise MetadataError(f"headscan.json cannot hold it: {e}") from None


def check_document(document):
    """Checks the headscan.json an export is about to write; returns its text."""
    text = text_of(document)
    check_text(text)
    return text


def check_text(text):
    """Raises MetadataError where parse_model_metadata would refuse `text`, naming the field."""
    if not text:
        return
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise MetadataError(f"headscan.json would not be UTF-8 ({e.reason} at character {e.start})") from None
    if size > MAX_BYTES:
        raise MetadataError(f"headscan.json would be {size} bytes, more than the {MAX_BYTES} a run reads")
    if depth(text) > MAX_DEPTH:
        raise MetadataError(f"headscan.json would nest deeper than the {MAX_DEPTH} levels a run reads")
    try:
        # nlohmann skips a UTF-8 byte order mark, and refuses NaN, infinities and lone surrogates.
        document = json.loads(text[1:] if text.startswith("\ufeff") else text, parse_constant=refuse_constant,
                              parse_float=finite_float)
        check_strings(document)
    except ValueError as e:
        raise MetadataError(f"headscan.json would not be JSON ({e})") from None
    if not isinstance(document, dict):
        raise MetadataError(f"headscan.json must be a JSON object, not {type(document).__name__}")
    # The fields in parse_model_metadata's order, so that the first fault found is the same.
    string_field(document, "name")
    string_field(document, "bos_token")
    for name in ("max_length", "min_length", "checked_length"):
        integer_field(document, name, *INTEGER_FIELDS[name])
    low, high = present(document, "min_length"), present(document, "max_length")
    if low is not None and high is not None and low > high:
        raise MetadataError(f"min_length {low} is above max_length {high}")
    causal = present(document, "causal")
    if causal is not None and not isinstance(causal, bool):
        raise MetadataError(f"causal must be true or false, not {json.dumps(causal)[:60]}")
    logits = present(document, "logits")
    if logits is not None and not isinstance(logits, bool):
        raise MetadataError(f"logits must be true or false, not {json.dumps(logits)[:60]}")
    for name in ("n_kv_heads", "step"):
        integer_field(document, name, *INTEGER_FIELDS[name])
    layers = present(document, "layers")
    if layers is not None:
        check_layers(layers)


def finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is beyond a double")
    return value


def check_strings(value):
    """Every string and key is Unicode text (no lone surrogate, which a JSON escape can write)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            value.encode("utf-8")  # UnicodeEncodeError is a ValueError
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def depth(text):
    """The deepest nesting of arrays and objects (check_json_depth's scan: brackets inside strings
    do not count)."""
    level = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            level += 1
            deepest = max(deepest, level)
        elif c in "]}":
            level = max(0, level - 1)
    return deepest


def present(document, name):
    """The field's value, None where it is missing or null (the runner reads null as missing)."""
    return document.get(name)


def string_field(document, name):
    value = present(document, name)
    if value is not None and not isinstance(value, str):
        raise MetadataError(f"{name} must be a string, not {json.dumps(value)[:60]}")
    return value


def is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def integer_field(document, name, low, high):
    value = present(document, name)
    if value is not None and not (is_integer(value) and low <= value <= high):
        shown = value if is_integer(value) or not isinstance(value, float) or math.isfinite(value) else str(value)
        raise MetadataError(f"{name} must be an integer from {low} to {high}, not {json.dumps(shown)[:60]}")
    return value


def check_layers(layers):
    """"layers" as layers_field and check_layer_numbering read it."""
    expected = f"a list of at most {MAX_LAYERS} objects {{\"index\": integer, \"path\": string, \"kind\": string}}"
    if not isinstance(layers, list) or len(layers) > MAX_LAYERS:
        raise MetadataError(f"layers must be {expected}")
    for position, entry in enumerate(layers):
        if not isinstance(entry, dict):
            raise MetadataError(f"layers must be {expected}")
        if integer_field(entry, "index", 0, MAX_LAYERS - 1) is None:
            raise MetadataError(f"layers must be {expected}: entry {position} has no index")
        string_field(entry, "path")
        string_field(entry, "kind")
    for position, entry in enumerate(layers):
        if entry["index"] != position:
            raise MetadataError(f"layers must list the layers in index order from 0: position {position} holds "
                                f"index {entry['index']}")
        if (entry.get("kind") or "") not in LAYER_KINDS:
            raise MetadataError(f"layer {position} has kind {entry.get('kind')!r}; expected one of "
                                f"{', '.join(LAYER_KINDS)}")
    if layers and not any(entry.get("kind") == "attention" for entry in layers):
        raise MetadataError("layers lists no layer of kind \"attention\"")
