#!/usr/bin/env python3
"""`headscan export` (exported programs, .pt2) and headscan on them against transformers' own attention.

    check_export_pt2.py HEADSCAN WORKDIR [--observers] [ARCH ...]   (default: every one of PT2_ARCHITECTURES)

For each architecture of hf_models.PT2_ARCHITECTURES, with no network: a tokenizer of the family's
style and a randomly initialized model (2 layers, 4 for Llama 4 and SmolLM3; positions
for 512 tokens; sliding windows of 16 tokens, attention chunks of 32, linear attention's chunks of
64, Mamba-2 chunks of 32) saved with save_pretrained. Then, as a user would:

  1. `headscan export MODEL_DIR MODEL.pt2` (a new process for GPT-2 and BERT; for the others the
     command's main() in one of two processes that import torch and transformers once, with this
     build's Python package and C++ core); an architecture with a `refusal` must exit 2 naming the reason and write no archive
     (DeepSeek-V3.2's indexer taking min(index_topk, length)); the hybrids, whose layers compute by
     chunks or token by token in transformers' Python loops, are exported at their default length
     with headscan's sequence-mixer operators in place of those loops;
  2. headscan.json's "layers": every layer of the model with its index, module path
     (...layers.N) and kind: `attention`, or for a hybrid's other layers `linear attention` or
     `state space`, as the architecture's `kinds` say; its "attention": "headscan" (headscan's
     attention implementation: the program calls headscan::attention, or its windowed form, once
     per attention layer and observes no softmax; the architectures of COMPACT_MASK hold no
     [..., T, T] tensor, their calls take the keys' padding [B, 1, 1, T], the causal rule, the
     windows and chunks, soft-capping and sinks their configs say, and the key/value heads
     unrepeated), or "eager" for DiffLlama's differential attention, with the reason in
     "attention_reason" and on stderr (the program observes a softmax per attention layer);
  3. `headscan tokenize MODEL.pt2 CORPUS --max-length 300`: sequences of about 40 and 300 tokens
     and the rest of the long line, below and above every block size;
  4. `headscan MODEL.pt2 CORPUS --max-length 300` writes heads.json (the sequences batched
     together, padded);
  5. the reference: transformers' model from MODEL_DIR, eager attention, output_attentions=True, on
     each sequence alone, the scores of hf_references.py keyed by the model's own layer index;
  6. heads.json's model.layers equals the archive's; every head's "layer" is an attention layer
     of the model, and previous_token, first_token and entropy are within 1e-5 of the reference.

--observers checks the exported program without headscan's runner: steps 4 and 6 use the
probabilities the program's observers (headscan::observe, headscan::attention) receive when
torch runs the archive in Python, keyed by the layer each observer carries.

Exit 0 when every architecture passes, 1 otherwise (each failure printed).
"""

import collections
import concurrent.futures
import contextlib
import io
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
import zipfile

import torch

sys.dont_write_bytecode = True

from hf_models import ATTENTION_CHUNK, CORPUS, PT2_ARCHITECTURES, PT2_BY_NAME, WINDOW, build_model_dir  # noqa: E402
from hf_references import compare_scores, reference_scores, special_ids  # noqa: E402
from hf_tools import archive_file, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-5
MAX_LENGTH = 300  # --max-length: the long line's first window has 300 tokens (an architecture's max_length, if any)
# A line of about 40 tokens, the whole corpus twice as one line (a window of 300 tokens and the
# rest) and a short one.
PT2_CORPUS = [CORPUS[1] + " " + CORPUS[5], " ".join(CORPUS * 2), CORPUS[3]]
# Architectures whose program's attention takes no [T, T] mask: {name: the rules of its calls,
# {(is_causal, window_left, window_right, chunk, softcap, sinks)}}. Llama's with as many key/value
# heads as query heads and Qwen2's with half; sliding windows of WINDOW tokens (transformers:
# key j seen by query i when i - WINDOW < j <= i) in every layer (Mistral) or beside full layers;
# ModernBERT's local layers, |i - j| <= local_attention / 2; Llama 4's chunks; Gemma 2's
# soft-capping (50, its config's default); gpt-oss's sinks.
CAUSAL = (True, -1, -1, 0, None, False)
SLIDING = (True, WINDOW - 1, -1, 0, None, False)
COMPACT_MASK = {
    "llama": {CAUSAL}, "qwen2": {CAUSAL}, "mistral": {SLIDING},
    "gemma2": {(True, WINDOW - 1, -1, 0, 50.0, False), (True, -1, -1, 0, 50.0, False)},
    "gemma3": {SLIDING, CAUSAL}, "gemma4": {SLIDING, CAUSAL}, "cohere2": {SLIDING, CAUSAL},
    "olmo3": {SLIDING, CAUSAL},
    "gpt_oss": {(True, WINDOW - 1, -1, 0, None, True), (True, -1, -1, 0, None, True)},
    "llama4": {(True, -1, -1, ATTENTION_CHUNK, None, False), CAUSAL},
    "modernbert": {(False, WINDOW // 2, WINDOW // 2, 0, None, False), (False, -1, -1, 0, None, False)},
}
ATTENTION_OPS = ("torch.ops.headscan.attention.default", "torch.ops.headscan.attention.windowed")
# Step 7: one window this long, beyond every length the export compared (its checks stop at 256 tokens
# for these block sizes), within the models' positions (hf_models.PT2_POSITIONS).
LONG_LENGTH = 1024
LONG_LINE = " ".join(CORPUS * 8)
TRANSFORMERS_LOCK = threading.Lock()  # one transformers model built at a time in this process


def paths(arch, work):
    folder = os.path.join(work, arch["name"])
    return os.path.join(folder, "model"), os.path.join(folder, "model.pt2"), os.path.join(folder, "report")


def run_export(headscan, arguments, exporters):
    """(exit status, stdout, stderr) of `headscan export ARGUMENTS`: a new process as a user runs it
    for GPT-2 and BERT (arch new_process), else the command's main() in one of the exporters'
    processes, which import torch and transformers once."""
    if exporters is None:
        process = subprocess.run([headscan, "export", *arguments], capture_output=True, text=True,
                                 env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1"))
        return process.returncode, process.stdout, process.stderr
    return exporters.submit(export_here, headscan, arguments).result()


def export_here(headscan, arguments):
    """`headscan export ARGUMENTS` in this process, with the build's Python package beside HEADSCAN."""
    package_parent = os.path.join(os.path.dirname(headscan), "python")
    if package_parent not in sys.path:
        sys.path.insert(0, package_parent)
    torch.set_num_threads(1)
    from headscan._export.command import main as export_main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            returncode = export_main(arguments)
        except SystemExit as e:  # argparse
            returncode = e.code
    return returncode, stdout.getvalue(), stderr.getvalue()


def check_layers(arch, layers, n_layers):
    """headscan.json's layers against the architecture's kinds; the attention layers' indices."""
    kinds = arch["kinds"] or ["attention"] * n_layers
    assert [layer.get("index") for layer in layers] == list(range(len(kinds))), \
        f"layers' indices {[layer.get('index') for layer in layers]}, expected 0..{len(kinds) - 1}"
    found = [layer.get("kind") for layer in layers]
    assert found == kinds, f"layers' kinds {found}, expected {kinds}"
    for layer in layers:
        assert isinstance(layer.get("path"), str) and layer["path"].endswith(f".{layer['index']}"), \
            f"layer {layer['index']}'s path {layer.get('path')!r} does not end in its index"
    return [layer["index"] for layer in layers if layer["kind"] == "attention"]


def program_targets(graph):
    """{operator: count} of the exported program's nodes."""
    return collections.Counter(node["target"] for node in graph["nodes"])


def program_graph(archive):
    """The exported program's graph (models/model.json in the archive)."""
    with zipfile.ZipFile(archive) as z:
        name = next(entry for entry in z.namelist() if entry.endswith("/models/model.json"))
        return json.loads(z.read(name))["graph_module"]["graph"]


def check_attention(arch, metadata, stderr, targets, attention_layers):
    """headscan.json's "attention" and the program's observers: headscan's attention implementation
    calling headscan::attention, or eager attention's observed softmaxes with the reason."""
    attentions = sum(targets.get(op, 0) for op in ATTENTION_OPS)
    observers = targets.get("torch.ops.headscan.observe.default", 0)
    if arch.get("sdpa"):
        assert metadata.get("attention") == "sdpa" and arch["sdpa"] in metadata.get("attention_reason", ""), \
            f"headscan.json attention {metadata.get('attention')!r} ({metadata.get('attention_reason')}), expected " \
            f"sdpa because of {arch['sdpa']!r}"
        assert attentions == len(attention_layers) and observers == 0, \
            f"the program calls headscan::attention {attentions} times and observes {observers} softmaxes, " \
            f"expected headscan::attention once per attention layer ({len(attention_layers)})"
        return
    if arch["eager"] is None:
        assert metadata.get("attention") == "headscan" and "attention_reason" not in metadata, \
            f"headscan.json attention {metadata.get('attention')!r} ({metadata.get('attention_reason')}), " \
            "expected headscan"
        assert attentions == len(attention_layers) and observers == 0, \
            f"the program calls headscan::attention {attentions} times and observes {observers} softmaxes, " \
            f"expected headscan::attention once per attention layer ({len(attention_layers)})"
        return
    assert metadata.get("attention") == "eager" and arch["eager"] in metadata.get("attention_reason", ""), \
        f"headscan.json attention {metadata.get('attention')!r} ({metadata.get('attention_reason')}), expected " \
        f"eager because of {arch['eager']!r}"
    assert arch["eager"] in stderr, f"headscan export did not say why it keeps eager attention: {stderr[-1000:]}"
    assert observers == len(attention_layers) and attentions == 0, \
        f"the program observes {observers} softmaxes and calls headscan::attention {attentions} times, expected " \
        f"one observed softmax per attention layer ({len(attention_layers)})"


def tensor_sizes(graph, name):
    """A tensor's sizes as the program states them (a symbol's text for a dynamic size)."""
    return [size.get("as_int", size.get("as_expr", {}).get("expr_str")) for size in graph["tensor_values"][name]["sizes"]]


def attention_calls(graph):
    """[(query sizes, key sizes, mask sizes or None, enable_gqa, (is_causal, window_left, window_right,
    chunk, softcap, whether it takes sinks))] of the program's headscan::attention calls (the plain
    form's rule: no window, chunk, soft-capping or sinks)."""
    def sizes(argument):
        tensor = argument["arg"].get("as_tensor")
        return None if tensor is None else tensor_sizes(graph, tensor["name"])

    calls = []
    for node in graph["nodes"]:
        if node["target"] not in ATTENTION_OPS:
            continue
        arguments = {argument["name"]: argument["arg"] for argument in node["inputs"]}
        rule = (arguments["is_causal"].get("as_bool"), arguments.get("window_left", {}).get("as_int", -1),
                arguments.get("window_right", {}).get("as_int", -1), arguments.get("chunk", {}).get("as_int", 0),
                arguments.get("softcap", {}).get("as_float"), "as_tensor" in arguments.get("sinks", {}))
        calls.append((sizes({"arg": arguments["query"]}), sizes({"arg": arguments["key"]}),
                      sizes({"arg": arguments["attn_mask"]}), arguments["enable_gqa"].get("as_bool"), rule))
    return calls


def check_compact_mask(graph, kv_heads, rules):
    """Every headscan::attention takes the keys' padding [B, 1, 1, T] (no [T, T] mask), the rules
    `rules` (the causal rule, windows, chunks, soft-capping, sinks: each one some layer's, every
    layer's one of them), and the key/value heads as the model computes them (enable_gqa where they
    are fewer than the query heads, no copies); no tensor of the program is [..., T, T]."""
    calls = attention_calls(graph)
    lengths = {query[2] for query, *_ in calls}
    squares = [name for name in graph["tensor_values"]
               if any(tensor_sizes(graph, name).count(length) > 1 for length in lengths)]
    assert not squares, f"the program holds [..., T, T] tensors: {squares[:5]}"
    found = set()
    for query, key, mask, enable_gqa, rule in calls:
        length = query[2]
        assert mask is not None and mask[-2] == 1 and mask[-1] == length, \
            f"headscan::attention takes a mask {mask} (queries {query}): expected the keys' padding [B, 1, 1, {length}]"
        assert key[1] == kv_heads and enable_gqa == (key[1] != query[1]), \
            f"headscan::attention takes {key[1]} key heads for {query[1]} query heads (enable_gqa {enable_gqa}), " \
            f"expected the model's {kv_heads} key/value heads, unrepeated"
        found.add(rule)
    assert found == rules, f"headscan::attention's rules (is_causal, window_left, window_right, chunk, softcap, " \
                           f"sinks) {sorted(found, key=str)}, expected {sorted(rules, key=str)}"


def observed_heads(archive, records, specials, causal):
    """heads.json's heads as the program's observers see them (--observers): a new Python that
    defines headscan's operators to record their probabilities, runs the archive on each record,
    and computes the scores of hf_references.py keyed by the layer each observer carries."""
    with_records = archive + ".records.json"
    with open(with_records, "w", encoding="utf-8") as f:
        json.dump({"records": records, "specials": sorted(specials), "causal": causal}, f)
    output = run([sys.executable, os.path.join(HERE, "observe_pt2.py"), archive, with_records], "observe_pt2.py",
                 env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1"))
    return json.loads(output)


def check(arch, headscan, corpus, work, observers, exporters):
    """Steps 1-6; the largest difference per score, or None for a refusal."""
    model_dir, archive, report = paths(arch, work)
    returncode, stdout, stderr = run_export(headscan, [model_dir, archive, *arch["options"]],
                                            None if arch["new_process"] else exporters)
    if arch["refusal"]:
        message = (stderr.strip().splitlines() or [""])[-1]
        assert returncode == 2 and arch["refusal"] in message, \
            f"headscan export should refuse with {arch['refusal']!r} (exit 2), got exit {returncode}: {stderr[-2000:]}"
        assert not os.path.exists(archive), "a refused export left an archive"
        return None
    assert returncode == 0, f"headscan export exit {returncode}:\n{stdout[-1500:]}{stderr[-3000:]}"

    metadata = json.loads(archive_file(archive, "headscan.json"))
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    n_layers = config.get("num_hidden_layers", config.get("n_layer", config.get("n_layers")))
    attention_layers = check_layers(arch, metadata.get("layers") or [], n_layers)
    graph = program_graph(archive)
    check_attention(arch, metadata, stderr, program_targets(graph), attention_layers)
    if arch["name"] in COMPACT_MASK:
        check_compact_mask(graph, config.get("num_key_value_heads", config["num_attention_heads"]),
                           COMPACT_MASK[arch["name"]])
    assert metadata.get("causal") == arch["causal"], f"headscan.json causal {metadata.get('causal')}"

    max_length = str(arch["max_length"] or MAX_LENGTH)
    records = [json.loads(line) for line in
               run([headscan, "tokenize", archive, corpus, "--max-length", max_length],
                   "headscan tokenize").splitlines() if line.strip()]
    lengths = sorted(len(r["ids"]) for r in records)
    assert lengths[-1] == int(max_length) and any(30 <= n <= 64 for n in lengths), f"sequence lengths {lengths}"

    tokenizer_json = json.loads(archive_file(archive, "tokenizer.json"))
    if observers:
        heads = observed_heads(archive, records, special_ids(tokenizer_json), arch["causal"])
    else:
        shutil.rmtree(report, ignore_errors=True)
        run([headscan, archive, corpus, "-o", report, "--max-length", max_length, "--parser", "none",
             "--no-html", "--no-plots", "-q", "--threads", "1", *arch.get("run_options", ())], "headscan")
        with open(os.path.join(report, "heads.json"), encoding="utf-8") as f:
            heads = json.load(f)
        model = heads["model"]
        assert model.get("layers") == metadata["layers"], \
            f"heads.json model.layers {model.get('layers')}, the archive's {metadata['layers']}"
        assert model["causal"] == arch["causal"], f"heads.json causal {model['causal']}"

    with TRANSFORMERS_LOCK:
        reference, maps, n_heads = reference_scores(model_dir, records, special_ids(tokenizer_json), arch["causal"],
                                                    attention_layers)
    assert maps == len(attention_layers), f"transformers gives {maps} attention maps, the archive lists " \
                                          f"{len(attention_layers)} attention layers"
    found = sorted({(h["layer"], h["head"]) for h in heads["heads"]})
    expected = [(layer, head) for layer in attention_layers for head in range(n_heads)]
    assert found == expected and len(heads["heads"]) == len(expected), \
        f"heads (layer, head) {found[:8]}..., expected {expected[:8]}... ({len(expected)})"
    worst = compare_scores(heads, reference, TOLERANCE)
    if not observers and not arch["max_length"]:
        long_worst = check_long(arch, headscan, archive, work, attention_layers, special_ids(tokenizer_json))
        worst = {score: max(value, long_worst[score]) for score, value in worst.items()}
    return worst


def check_long(arch, headscan, archive, work, attention_layers, specials):
    """Step 7: the same on a window of LONG_LENGTH tokens (and the rest of its line), beyond the
    lengths the export compared: every head's scores within TOLERANCE of transformers' on it."""
    model_dir, _, report = paths(arch, work)
    folder = os.path.dirname(archive)
    corpus = os.path.join(folder, "long.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(LONG_LINE + "\n")
    length = str(LONG_LENGTH)
    records = [json.loads(line) for line in run([headscan, "tokenize", archive, corpus, "--max-length", length],
                                                "headscan tokenize").splitlines() if line.strip()]
    assert len(records[0]["ids"]) == LONG_LENGTH, f"the long line's first window has {len(records[0]['ids'])} tokens"
    long_report = report + "-long"
    shutil.rmtree(long_report, ignore_errors=True)
    run([headscan, archive, corpus, "-o", long_report, "--max-length", length, "--parser", "none", "--no-html",
         "--no-plots", "-q", "--threads", "1", "--probes", "none", *arch.get("run_options", ())], "headscan (long)")
    with open(os.path.join(long_report, "heads.json"), encoding="utf-8") as f:
        heads = json.load(f)
    with TRANSFORMERS_LOCK:
        reference, _, _ = reference_scores(model_dir, records, specials, arch["causal"], attention_layers)
    try:
        return compare_scores(heads, reference, TOLERANCE)
    except AssertionError as e:
        raise AssertionError(f"at {LONG_LENGTH} tokens: {e}") from None


def main(argv):
    arguments = [a for a in argv[1:] if a != "--observers"]
    observers = len(arguments) < len(argv) - 1
    if len(arguments) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    headscan, work = os.path.abspath(arguments[0]), os.path.abspath(arguments[1])
    names = arguments[2:] or [a["name"] for a in PT2_ARCHITECTURES]
    unknown = [n for n in names if n not in PT2_BY_NAME]
    if unknown:
        print(f"unknown architectures {unknown}; known: {', '.join(PT2_BY_NAME)}", file=sys.stderr)
        return 2
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(PT2_CORPUS) + "\n")

    start = time.time()
    torch.set_num_threads(1)
    results = {}
    for name in names:
        shutil.rmtree(os.path.join(work, name), ignore_errors=True)
        try:
            build_model_dir(PT2_BY_NAME[name], paths(PT2_BY_NAME[name], work)[0])
        except Exception:  # noqa: BLE001 - reported per architecture
            results[name] = ("FAIL", "building the model directory:\n" + traceback.format_exc(limit=4))

    def outcome(name, exporters):
        began = time.time()
        try:
            worst = check(PT2_BY_NAME[name], headscan, corpus, work, observers, exporters)
        except Exception as e:  # noqa: BLE001
            return "FAIL", f"{type(e).__name__}: {e}"
        seconds = f" ({time.time() - began:.0f} s)"
        if worst is None:
            return "ok", f"refused as expected ({PT2_BY_NAME[name]['refusal']}){seconds}"
        return "ok", "max |difference| " + ", ".join(f"{s} {w:.1e}" for s, w in worst.items()) + seconds

    # Two at a time (the exports, headscan and observe_pt2.py are processes of one thread each).
    pending = [n for n in names if n not in results]
    pending.sort(key=lambda n: PT2_BY_NAME[n]["kinds"] is None)  # the hybrids, slowest to export, first
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=spawn) as exporters, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results.update(zip(pending, pool.map(lambda name: outcome(name, exporters), pending)))

    failed = []
    for name in names:
        status, detail = results[name]
        print(f"{name:17s} {status:4s} {detail}")
        if status != "ok":
            failed.append(name)
    print(f"{len(names)} architectures in {time.time() - start:.0f} s" + (" (observers)" if observers else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
