"""headscan.kvpress reads a report's plan checked: every field it reads that is malformed (a NaN or
out-of-range streaming score, a truncated heads list, full_attention_heads of the wrong shape, in
heads.json or in kv_plan/'s DuoAttention files) is a ValueError naming the field and the file, never
a silent result, an IndexError or a TypeError. Needs neither kvpress nor a model: it runs in the
kvpress venv (tests/kvpress/run.sh) and, where headscan's C++ core is not built, with torch and
pytest alone (the package's Python files read from the source tree).
"""

import copy
import json
import math
import re
import sys
import types
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
try:
    import headscan.kvpress as headscan_kvpress
except ImportError as missing:  # no wheel or no headscan._core: the package without its __init__, which loads it
    if missing.name not in ("headscan", "headscan._core"):
        raise
    package = types.ModuleType("headscan")
    package.__path__ = [str(ROOT / "analyzer" / "python" / "headscan")]
    sys.modules["headscan"] = package
    import headscan.kvpress as headscan_kvpress

# 2 attention layers (of 3: layer 1 is linear attention) × 4 query heads, 2 key/value heads.
LAYERS = [{"index": 0, "path": "model.layers.0", "kind": "attention"},
          {"index": 1, "path": "model.layers.1", "kind": "linear attention"},
          {"index": 2, "path": "model.layers.2", "kind": "attention"}]
STREAMING = {(0, 0): 0.97, (0, 1): 0.99, (0, 2): 0.2, (0, 3): 0.96,
             (2, 0): 0.5, (2, 1): 0.3, (2, 2): 0.98, (2, 3): 0.99}


def heads_json() -> dict:
    """heads.json as headscan writes it, the fields the plan reads: key/value heads (layer 0, 0)
    and (2, 1) stream; by score (the least of each one's two query heads) (2, 1) 0.98, (0, 0)
    0.97, (2, 0) 0.3, (0, 1) 0.2."""
    heads = [{"layer": layer, "head": head, "kv_group": head // 2, "primary": "none", "labels": [],
              "scores": {"streaming": score, "first_token": 0.1}} for (layer, head), score in STREAMING.items()]
    return {"model": {"path": "model.pt2", "layers": copy.deepcopy(LAYERS), "heads": 4, "kv_heads": 2, "causal": True},
            "heads": heads,
            "kv_plan": {"sink_size": 4, "recent_size": 64, "full_attention_heads": [[0, 1], [1, 0]],
                        "full_kv_heads": 2, "kv_heads": 4}}


def test_a_well_formed_report_reads():
    plan = headscan_kvpress.plan(heads_json())
    assert plan.streaming_mask.tolist() == [[True, False], [False, True]]
    assert (plan.sink_size, plan.recent_size, plan.layers, plan.model_layers) == (4, 64, (0, 2), 3)
    assert headscan_kvpress.streaming_mask(heads_json(), 0.5).tolist() == [[True, False], [False, True]]
    assert headscan_kvpress.streaming_mask(heads_json(), 0.75).tolist() == [[True, False], [True, True]]
    unmeasured = heads_json()
    for head in unmeasured["heads"]:
        head["scores"]["streaming"] = None
    with pytest.raises(ValueError, match="has none"):
        headscan_kvpress.streaming_mask(unmeasured, 0.5)


class Delete:
    def __repr__(self):
        return "DELETE"


DELETE = Delete()


def set_path(document: dict, path: tuple, value) -> None:
    holder = document
    for key in path[:-1]:
        holder = holder[key]
    if value is DELETE:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value


# (what is changed, its new value, what the message names), for streaming_mask(document, ratio).
MALFORMED = [
    # Streaming scores: shares of attention, in [0, 1] (README, Head types), or null.
    (("heads", 3, "scores", "streaming"), math.nan, r"heads\[3\]\.scores\.streaming .* found nan"),
    (("heads", 3, "scores", "streaming"), 1.5, r"heads\[3\]\.scores\.streaming .* from 0 to 1, found 1\.5"),
    (("heads", 0, "scores", "streaming"), -0.25, r"heads\[0\]\.scores\.streaming .* found -0\.25"),
    (("heads", 0, "scores", "streaming"), math.inf, r"heads\[0\]\.scores\.streaming .* found inf"),
    (("heads", 0, "scores", "streaming"), "0.9", r"heads\[0\]\.scores\.streaming .* found '0\.9'"),
    (("heads", 0, "scores", "streaming"), True, r"heads\[0\]\.scores\.streaming .* found True"),
    (("heads", 0, "scores"), None, r"heads\[0\]\.scores must be an object"),
    # The heads list: attention layers × model.heads entries, each (layer, head) once.
    (("heads", 7), DELETE, r"heads must list 2 attention layers × 4 heads = 8 heads .* found 7 entries"),
    (("heads",), [], r"heads must list .* found 0 entries"),
    (("heads",), None, r"heads must list .* found None"),
    (("heads",), {"0": {}}, r"heads must list .* found \{"),
    (("heads", 2), "L0H2", r"heads\[2\] must be an object, found 'L0H2'"),
    (("heads", 2, "layer"), 1, r"heads\[2\]: layer must be an attention layer .* found layer 1 and head 2"),
    (("heads", 2, "layer"), [0], r"heads\[2\]: layer must be .* found layer \[0\]"),
    (("heads", 2, "head"), 4, r"heads\[2\]: .* head one from 0 to 3, found layer 0 and head 4"),
    (("heads", 2, "head"), 1, r"heads\[2\]: layer 0 head 1 is listed twice"),
    (("heads", 2, "kv_group"), 2, r"heads\[2\]\.kv_group must be a key/value head from 0 to 1 .* found 2"),
    (("heads", 2, "kv_group"), 0.5, r"heads\[2\]\.kv_group .* found 0\.5"),
    # The model's shape.
    (("model",), [], r"model must be an object"),
    (("model", "heads"), "4", r"model\.heads must be .* found '4'"),
    (("model", "heads"), 0, r"model\.heads must be .* found 0"),
    (("model", "kv_heads"), 3,
     r"model\.kv_heads must be a whole number ≥ 1 that divides model\.heads \(4\), found 3"),
    (("model", "layers"), 0, r"model\.layers must be the number of attention layers \(at least 1\)"),
    (("model", "layers", 2, "index"), None, r"model\.layers' entries of kind \"attention\" .* found \[0, None\]"),
    (("model", "layers", 2, "index"), 0, r"model\.layers' entries .* distinct .* found \[0, 0\]"),
    (("model", "layers", 2, "index"), 7, r"model\.layers' entries .* from 0 to 2 .* found \[0, 7\]"),
    # full_attention_heads: a row per attention layer, a 0 or 1 per key/value head (model.kv_heads).
    (("kv_plan", "full_attention_heads"), [[0, 1, 1], [1, 0, 1]],
     r"kv_plan\.full_attention_heads has rows of 3 key/value heads but model\.kv_heads is 2"),
    (("kv_plan", "full_attention_heads"), [[0], [1]], r"kv_plan\.full_attention_heads has rows of 1 key/value heads"),
    (("kv_plan", "full_attention_heads"), [[], []],
     r"kv_plan\.full_attention_heads: must be rows .* found \[\[\], \[\]\]"),
    (("kv_plan", "full_attention_heads"), [], r"kv_plan\.full_attention_heads: must be rows .* found \[\]"),
    (("kv_plan", "full_attention_heads"), [[0, 1]], r"kv_plan\.full_attention_heads has 1 rows but model\.layers"),
    (("kv_plan", "full_attention_heads"), [[0, 1], [1]],
     r"kv_plan\.full_attention_heads: must be rows .* of equal length"),
    (("kv_plan", "full_attention_heads"), [[0, 1.0], [1, 0]], r"kv_plan\.full_attention_heads: must be rows"),
    (("kv_plan", "full_attention_heads"), [[False, True], [True, False]],
     r"kv_plan\.full_attention_heads: must be rows"),
    (("kv_plan", "full_attention_heads"), [[0, [1]], [1, 0]], r"kv_plan\.full_attention_heads: must be rows"),
    (("kv_plan", "recent_size"), 0, r"kv_plan: sink_size must be a whole number ≥ 0 and recent_size one ≥ 1"),
]


@pytest.mark.parametrize("path, value, message", MALFORMED,
                         ids=[f"{'.'.join(map(str, path))}={value!r:.20}" for path, value, _ in MALFORMED])
def test_a_malformed_field_is_a_value_error_naming_it(path, value, message, tmp_path):
    document = heads_json()
    set_path(document, path, value)
    with pytest.raises(ValueError, match=f"^heads\\.json: {message}"):
        headscan_kvpress.streaming_mask(document, 0.5)
    # Read from a file, the message names it (json.dumps writes NaN and Infinity, which json.loads reads back).
    (tmp_path / "heads.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{re.escape(str(tmp_path / 'heads.json'))}: {message}"):
        headscan_kvpress.plan(tmp_path, head_compression_ratio=0.5)


def test_the_plan_alone_reads_no_scores():
    """Without head_compression_ratio the plan reads full_attention_heads, not the heads list."""
    document = heads_json()
    del document["heads"][5:]
    assert headscan_kvpress.streaming_mask(document).tolist() == [[True, False], [False, True]]
    set_path(document, ("kv_plan", "full_attention_heads"), [[0, 1, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="has rows of 3 key/value heads but model.kv_heads is 2"):
        headscan_kvpress.streaming_mask(document)


def kv_plan_dir(tmp_path: Path, tsv, config: dict) -> Path:
    (tmp_path / "kv_plan").mkdir()
    (tmp_path / "kv_plan" / "full_attention_heads.tsv").write_bytes(tsv if isinstance(tsv, bytes) else tsv.encode())
    (tmp_path / "kv_plan" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


WINDOW = {"sink_size": 4, "recent_size": 64}
MALFORMED_FILES = [
    ("", WINDOW, r"full_attention_heads\.tsv: must be rows .* found \[\]"),
    ("\n\n", WINDOW, r"full_attention_heads\.tsv: must be rows .* found \[\]"),
    ("0\t1\n1\n", WINDOW, r"full_attention_heads\.tsv: must be rows .* of equal length"),
    ("0\t2\n", WINDOW, r"full_attention_heads\.tsv: must be rows"),
    ("0\t1\t\n", WINDOW, r"full_attention_heads\.tsv: not rows of tab-separated 0 and 1"),
    ("0\t0.5\n", WINDOW, r"full_attention_heads\.tsv: not rows of tab-separated 0 and 1"),
    (b"0\t\xff\n", WINDOW, r"full_attention_heads\.tsv: not rows of tab-separated 0 and 1"),
    ("0\t1\n", {**WINDOW, "layers": [1, 1]}, r"config\.json: layers must list .* 1 rows"),
    ("0\t1\n1\t0\n", {**WINDOW, "layers": [1, 1]},
     r"config\.json: layers must list .* 2 rows \(distinct .* found \[1, 1\]"),
    ("0\t1\n1\t0\n", {**WINDOW, "layers": [0, -2]}, r"config\.json: layers must list .* found \[0, -2\]"),
    ("0\t1\n", {**WINDOW, "layers": [0.0]}, r"config\.json: layers must list .* found \[0\.0\]"),
    ("0\t1\n", {"sink_size": 4, "recent_size": None}, r"config\.json: sink_size must be .* found 4 and None"),
]


@pytest.mark.parametrize("tsv, config, message", MALFORMED_FILES,
                         ids=[f"{tsv!r:.20}-{config!r:.60}" for tsv, config, _ in MALFORMED_FILES])
def test_malformed_kv_plan_files_are_value_errors_naming_them(tsv, config, message, tmp_path):
    directory = kv_plan_dir(tmp_path, tsv, config)
    with pytest.raises(ValueError, match=f"^{re.escape(str(directory / 'kv_plan'))}/{message}"):
        headscan_kvpress.plan(directory)


def test_well_formed_kv_plan_files_read(tmp_path):
    plan = headscan_kvpress.plan(kv_plan_dir(tmp_path, "0\t1\n\n1\t0\n", {**WINDOW, "layers": [0, 2]}))
    assert plan.streaming_mask.tolist() == [[True, False], [False, True]]
    assert (plan.sink_size, plan.recent_size, plan.layers, plan.model_layers) == (4, 64, (0, 2), None)


@pytest.mark.parametrize("mask, options, message", [
    ([[True, False], [True]], {}, r"the streaming mask must be bool \[layers, key/value heads\], found"),
    ("TF", {}, r"the streaming mask must be bool"),
    (torch.zeros(2, 0, dtype=torch.bool), {}, r"at least one of each, got torch\.bool \[2, 0\]"),
    (torch.zeros(2, 2), {}, r"the streaming mask must be bool .* got torch\.float32 \[2, 2\]"),
    (torch.zeros(2, 2, dtype=torch.bool), {"layers": [0, 1.5]}, r"layers must be .* found \[0, 1\.5\]"),
    (torch.zeros(2, 2, dtype=torch.bool), {"layers": [3, 3]}, r"layers must be .* distinct .* found \[3, 3\]"),
    (torch.zeros(2, 2, dtype=torch.bool), {"layers": [-1, 0]}, r"layers must be .* found \[-1, 0\]"),
    (torch.zeros(2, 2, dtype=torch.bool), {"layers": [0, 1], "model_layers": 1}, r"model_layers must be .* found 1"),
    (torch.zeros(2, 2, dtype=torch.bool), {"model_layers": "2"}, r"model_layers must be .* found '2'"),
])
def test_press_from_mask_checks_its_arguments_before_needing_kvpress(mask, options, message):
    with pytest.raises(ValueError, match=message):
        headscan_kvpress.press_from_mask(mask, 4, 64, **options)
