#!/usr/bin/env python3
"""scripts/export_hf.py and headscan against Hugging Face transformers' own attention.

    check_export_hf.py HEADSCAN WORKDIR [ARCH ...]     (default: every architecture of ARCHITECTURES)

For each architecture, with no network: a small tokenizer of the family's style is trained on the
test corpus with the `tokenizers` library, a randomly initialized model (2 layers, 4 heads, hidden
64) is built from a transformers config, and both are saved with save_pretrained into a model
directory, as a user's download looks. Then, as a user would:

  1. `python scripts/export_hf.py MODEL_DIR MODEL.pt` (a new process for GPT-2 and BERT; for the
     others the script's main() in this process, which saves the import of transformers);
  2. the archive's headscan.json must hold the expected name, bos_token, causal, max_length,
     n_kv_heads, and the script's output the expected notices (a model without a language-model
     head says which of headscan's outputs it lacks);
  3. `headscan tokenize MODEL.pt CORPUS` gives the ids headscan analyses (BOS, windows);
  4. `headscan MODEL.pt CORPUS` writes heads.json;
  5. the reference: transformers' model from MODEL_DIR, eager attention, output_attentions=True, on
     each of those id sequences alone (no padding; headscan pads its batches), and the per-head
     previous_token, first_token and entropy of DESIGN.md computed from it, pooled over all
     queries of all sequences (query_sets() says which queries count);
  6. every head's three scores in heads.json within 1e-5 of the reference, and the same
     number of layers and heads;
  7. for the architectures of SDPA_TWINS, the model traced with transformers' default attention
     (SDPA) gives every score of the eager export within 1e-5, with the same labels.

An architecture with a `refusal` stops at step 1: export_hf.py must exit with its code and
message and write no archive (Qwen3-Next and Qwen3.5, whose trace is exact only up to one chunk of
linear attention, and exported right with --max-length 64; a config.json of 10 million layers,
refused before transformers builds it).

The weights are drawn with a large initializer_range so that attention is far from uniform, which
makes a wrong mask, position or query set visible in the scores. gpt-oss's attention has a sink
(its rows sum to less than 1): headscan captures the columns the model keeps, as output_attentions
returns them. Exit 0 when every architecture passes, 1 otherwise (each failure
printed); about 30 s for all of them on 2 cores.

The corpus, the tokenizers and the architectures are in hf_models.py, the reference scores in
hf_references.py (beside this file).

HEADSCAN_DEVICE (e.g. cuda) runs every headscan analysis with --device HEADSCAN_DEVICE: the same
references on the CPU against headscan on a GPU (ctest's gpu.export_hf).
"""

import concurrent.futures
import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback

import torch
from tokenizers import Tokenizer

sys.dont_write_bytecode = True  # export_hf.py is loaded from the source tree: leave no __pycache__ there

from hf_models import ARCHITECTURES, BY_NAME, CORPUS, MAX_POSITIONS, build_model_dir  # noqa: E402 (tests/hf/, beside this file)
from hf_references import compare_scores, reference_scores, special_ids  # noqa: E402
from hf_tools import archive_file, run  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
EXPORT_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "export_hf.py")
TOLERANCE = 1e-5

# --device for every headscan analysis (empty: headscan's default).
DEVICE = ["--device", os.environ["HEADSCAN_DEVICE"]] if os.environ.get("HEADSCAN_DEVICE") else []


# Architectures also traced with transformers' default attention, SDPA (one
# aten::scaled_dot_product_attention per layer: is_causal or a mask, grouped-query heads), whose
# heads.json must equal the eager export's within 1e-5: headscan rewrites SDPA into its eager form.
SDPA_TWINS = {"llama", "qwen2", "mixtral", "bert", "deepseek_v3"}


def sdpa_archive(model_dir, eager_archive, target):
    """The model traced with attn_implementation="sdpa" (forward(input_ids, attention_mask) -> logits,
    as export_hf.py writes it), saved with the eager archive's extra files."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(model_dir)
    model = getattr(transformers, config.architectures[0]).from_pretrained(
        model_dir, attn_implementation="sdpa", dtype=torch.float32).eval()

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    ids = torch.randint(5, 50, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # padding, so that the mask's path is in the graph
    with torch.no_grad():
        traced = torch.jit.trace(Logits(model), (ids, mask), check_trace=False)
    found = len(traced.inlined_graph.findAllNodes("aten::scaled_dot_product_attention"))
    assert found == config.num_hidden_layers, f"the SDPA trace has {found} scaled_dot_product_attention nodes"
    extra = {name: archive_file(eager_archive, name) for name in ("tokenizer.json", "headscan.json")}
    torch.jit.save(traced, target, _extra_files=extra)


def check_sdpa_twin(arch, headscan, corpus, work, eager_heads):
    model_dir, archive, report = paths(arch, work)
    twin = archive.replace(".pt", "_sdpa.pt")
    with TRANSFORMERS_LOCK:
        sdpa_archive(model_dir, archive, twin)
    shutil.rmtree(report + "_sdpa", ignore_errors=True)
    run([headscan, twin, corpus, "-o", report + "_sdpa", "--parser", "none", "--no-html", "--no-plots", "-q",
         "--threads", "1"] + DEVICE, "headscan on the SDPA export")
    with open(os.path.join(report + "_sdpa", "heads.json"), encoding="utf-8") as f:
        sdpa_heads = json.load(f)
    problems = []
    for eager, sdpa in zip(eager_heads["heads"], sdpa_heads["heads"]):
        for score, value in eager["scores"].items():
            other = sdpa["scores"].get(score)
            if isinstance(value, (int, float)) and (other is None or abs(other - value) > TOLERANCE):
                problems.append(f"L{eager['layer']}H{eager['head']} {score}: eager {value}, SDPA {other}")
        if eager["labels"] != sdpa["labels"]:
            problems.append(f"L{eager['layer']}H{eager['head']} labels: eager {eager['labels']}, SDPA {sdpa['labels']}")
    assert sdpa_heads["model"]["capture"] == "graph", "the SDPA export's attention was not captured from the graph"
    if problems:
        raise AssertionError("the SDPA export differs from the eager one:\n  " + "\n  ".join(problems[:12]))


# ---------------------------------------------------------------------------------------------


# transformers' from_pretrained patches process-wide state while it builds a model (parameters are
# created on the meta device), so in this process one thread at a time uses transformers.
TRANSFORMERS_LOCK = threading.Lock()


def run_export(arch, arguments):
    """(exit status, stdout, stderr) of `export_hf.py ARGUMENTS`. The architectures marked
    `new_process` run the script as a user does; the others call its main() in this process, the
    same code without a new interpreter's five seconds of importing transformers."""
    if arch["new_process"]:
        process = subprocess.run([sys.executable, EXPORT_SCRIPT, *arguments], capture_output=True, text=True,
                                 env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1"))
        return process.returncode, process.stdout, process.stderr
    stdout, stderr = io.StringIO(), io.StringIO()
    with TRANSFORMERS_LOCK, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        if "export_hf" not in sys.modules:
            spec = importlib.util.spec_from_file_location("export_hf", EXPORT_SCRIPT)
            sys.modules["export_hf"] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(sys.modules["export_hf"])
        returncode = sys.modules["export_hf"].main(arguments)
    return returncode, stdout.getvalue(), stderr.getvalue()


def paths(arch, work):
    folder = os.path.join(work, arch["name"])
    return os.path.join(folder, "model"), os.path.join(folder, "model.pt"), os.path.join(folder, "report")


def check(arch, headscan, corpus, work):
    """Steps 1-6 for one architecture whose model directory is built; returns the largest
    difference per score, or raises AssertionError saying what differs."""
    model_dir, archive, report = paths(arch, work)
    returncode, stdout, stderr = run_export(arch, [model_dir, archive, *arch["options"]])
    if arch["refusal"]:
        message = (stderr.strip().splitlines() or [""])[-1]
        assert returncode == arch["refusal_exit"] and arch["refusal"] in message, \
            f"export_hf.py should refuse with {arch['refusal']!r}, got exit {returncode}: {message}"
        assert not os.path.exists(archive), "a refused export left an archive"
        return None
    assert returncode == 0, f"export_hf.py exit {returncode}:\n{stderr[-3000:]}"
    for text in arch["notice"] or []:
        assert text in stdout, f"export_hf.py should say {text!r}:\n{stdout}"

    metadata = json.loads(archive_file(archive, "headscan.json"))
    expected = {"name": arch["expected_name"], "bos_token": arch["bos"], "max_length": MAX_POSITIONS,
                "causal": arch["causal"]}
    if arch["kv_heads"] is not None:
        expected["n_kv_heads"] = arch["kv_heads"]
    for field, value in expected.items():
        assert metadata.get(field) == value, f"headscan.json {field}: expected {value!r}, found {metadata.get(field)!r}"
    tokenizer_json = json.loads(archive_file(archive, "tokenizer.json"))
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        assert tokenizer_json == json.load(f), "the archive's tokenizer.json is not MODEL_DIR's"

    records = [json.loads(line) for line in run([headscan, "tokenize", archive, corpus], "headscan tokenize").splitlines()
               if line.strip()]
    assert len(records) > len(CORPUS), f"expected long lines cut into windows, got {len(records)} sequences"
    bos_id = Tokenizer.from_str(json.dumps(tokenizer_json)).token_to_id(arch["bos"])
    assert all(r["ids"][0] == bos_id for r in records), f"every window must start with {arch['bos']} ({bos_id})"

    shutil.rmtree(report, ignore_errors=True)
    run([headscan, archive, corpus, "-o", report, "--parser", "none", "--no-html", "--no-plots", "-q",
         "--threads", "1"] + DEVICE, "headscan")
    with open(os.path.join(report, "heads.json"), encoding="utf-8") as f:
        heads = json.load(f)

    model = heads["model"]
    # Heads carry the model's layer index; a hybrid's reference is keyed by it too.
    numbered = [layer["index"] for layer in model["layers"] if layer["kind"] == "attention"] \
        if isinstance(model["layers"], list) else None
    hybrid = {"attention_layers": numbered} if numbered and numbered != list(range(len(numbered))) else {}
    with TRANSFORMERS_LOCK:
        reference, layers, n_heads = reference_scores(model_dir, records, special_ids(tokenizer_json), arch["causal"],
                                                      **hybrid)
    # model.layers lists the model's layers when the trace kept the module paths (heads then carry
    # the model's layer index); a number, with model.layers_note saying why, when it did not.
    attention_layers = model["layers"]
    if isinstance(attention_layers, list):
        attention_layers = sum(layer["kind"] == "attention" for layer in attention_layers)
    assert (attention_layers, model["heads"]) == (layers, n_heads), \
        f"heads.json has {attention_layers} layers x {model['heads']} heads, transformers {layers} x {n_heads}"
    assert model["causal"] == arch["causal"], f"heads.json causal {model['causal']}"
    if arch["kv_heads"] is not None:
        assert model["kv_heads"] == arch["kv_heads"], f"heads.json kv_heads {model['kv_heads']}"
    assert len(heads["heads"]) == layers * n_heads
    worst = compare_scores(heads, reference, TOLERANCE)
    if arch["name"] in SDPA_TWINS:
        check_sdpa_twin(arch, headscan, corpus, work, heads)
    return worst


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    headscan, work = argv[1], os.path.abspath(argv[2])
    names = argv[3:] or [a["name"] for a in ARCHITECTURES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"unknown architectures {unknown}; known: {', '.join(BY_NAME)}", file=sys.stderr)
        return 2
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")

    start = time.time()
    torch.set_num_threads(1)
    results = {}
    for name in names:
        arch = BY_NAME[name]
        shutil.rmtree(os.path.join(work, name), ignore_errors=True)
        try:
            build_model_dir(arch, paths(arch, work)[0])
        except Exception:  # noqa: BLE001 - reported per architecture
            results[name] = ("FAIL", "building the model directory:\n" + traceback.format_exc(limit=4))

    def outcome(name):
        arch = BY_NAME[name]
        try:
            worst = check(arch, headscan, corpus, work)
        except Exception as e:  # noqa: BLE001
            return "FAIL", f"{type(e).__name__}: {e}"
        if worst is None:
            return "ok", f"refused by export_hf.py as expected ({arch['refusal']})"
        return "ok", "max |difference| " + ", ".join(f"{s} {w:.1e}" for s, w in worst.items())

    # Two architectures at a time (export_hf.py, headscan and the reference each use one thread).
    pending = [n for n in names if n not in results]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results.update(zip(pending, pool.map(outcome, pending)))

    failed_required = []
    for name in names:
        status, detail = results[name]
        required = BY_NAME[name]["required"]
        print(f"{name:12s} {status:4s} {'' if required else '(tried) '}{detail}")
        if status != "ok":
            failed_required.append(name)
    print(f"{len(names)} architectures in {time.time() - start:.0f} s")
    return 1 if failed_required else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
