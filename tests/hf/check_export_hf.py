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

HEADSCAN_DEVICE (e.g. cuda) runs every headscan analysis with --device HEADSCAN_DEVICE: the same
references on the CPU against headscan on a GPU (ctest's gpu.export_hf).
"""

import concurrent.futures
import contextlib
import importlib.util
import io
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
import zipfile

import torch
from tokenizers import Tokenizer

sys.dont_write_bytecode = True  # export_hf.py is loaded from the source tree: leave no __pycache__ there
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
EXPORT_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "export_hf.py")
TOLERANCE = 1e-5
SCORES = ("previous_token", "first_token", "entropy")
MAX_POSITIONS = 64  # the models' positions: lines longer than this become several windows

CORPUS = [
    "The cat sat on the mat and the dog sat on the rug.",
    "A quick brown fox jumps over the lazy dog while the cat watches from the window.",
    "Tokens repeat: alpha beta gamma delta, alpha beta gamma delta, alpha beta gamma delta.",
    "Short line.",
    "In the beginning the model saw only random weights, and every head attended wherever its "
    "random queries and keys pointed; long lines like this one are cut into windows of at most "
    "sixty-four tokens, each window starting again with the same first token, so that the "
    "analysis sees the beginning of a sequence in every window it runs.",
    "She sells sea shells by the sea shore.",
    "Numbers 1 2 3 4 5 6 7 8 9 10 and symbols !? ; : are tokens too.",
    "Why do heads attend to the first token? Because it is always there.",
    "Another sentence, with commas, and a final period.",
    "x",
    "The end of the corpus is near, said the last line of the corpus.",
]


# ---------------------------------------------------------------------------------------------
# Tokenizers in the styles of the model families, trained on the corpus.


# --device for every headscan analysis (empty: headscan's default).
DEVICE = ["--device", os.environ["HEADSCAN_DEVICE"]] if os.environ.get("HEADSCAN_DEVICE") else []

def train_tokenizer(style):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if style in ("bert", "bert_padded"):
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials)
        tokenizer.train_from_iterator(CORPUS, trainer)
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", tokenizer.token_to_id("[CLS]")), ("[SEP]", tokenizer.token_to_id("[SEP]"))])
        tokenizer.decoder = decoders.WordPiece()
        if style == "bert_padded":  # as sentence-transformers' tokenizer.json: every text padded to 128
            tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]", length=128)
            tokenizer.enable_truncation(max_length=128)
        return tokenizer, {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}

    # Byte-level BPE (GPT-2, Qwen, NeoX, Llama 3 style), with a template per family.
    specials = {"gpt2": ["<|endoftext|>"],
                "llama": ["<unk>", "<s>", "</s>"],
                "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]}[style]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    if style == "gpt2":
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
        return tokenizer, {"bos": "<|endoftext|>", "eos": "<|endoftext|>"}
    if style == "llama":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
        return tokenizer, {"bos": "<s>", "eos": "</s>", "unk": "<unk>"}
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", tokenizer.token_to_id("</s>")),
                                                            ("<s>", tokenizer.token_to_id("<s>")))
    return tokenizer, {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>", "cls": "<s>", "sep": "</s>",
                       "mask": "<mask>"}


# ---------------------------------------------------------------------------------------------
# Architectures: the transformers class, a tiny config, the tokenizer style and what headscan.json
# must say. `required` ones are the list; the others are tried and reported.

SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=MAX_POSITIONS, initializer_range=0.25)


def ids_of(tokenizer, tokens):
    """The config's special token ids (encoders: BOS = [CLS], EOS = [SEP], as ModernBERT's config has)."""
    names = {"bos": tokens.get("bos", tokens.get("cls")), "eos": tokens.get("eos", tokens.get("sep")),
             "pad": tokens.get("pad"), "cls": tokens.get("cls"), "sep": tokens.get("sep")}
    return {f"{name}_token_id": tokenizer.token_to_id(token) for name, token in names.items() if token}


def architecture(name, cls, style, config, *, causal=None, kv_heads=None, required=False, bos=None, refusal=None,
                 refusal_exit=1, new_process=False, positions=MAX_POSITIONS, config_patch=None,
                 expected_name="model", notice=None, options=()):
    """refusal: export_hf.py must stop (exit refusal_exit) with this text in its message. new_process:
    export with `python scripts/export_hf.py` in a new process (see run_export). positions: the
    tokenizer's model_max_length (the config's positions are the config's). config_patch: fields
    written over config.json after the model is saved. notice: texts export_hf.py must print.
    options: export_hf.py's options after MODEL_DIR OUT.pt."""
    return dict(name=name, cls=cls, style=style, config=config, causal=causal, kv_heads=kv_heads,
                required=required, bos=bos, refusal=refusal, refusal_exit=refusal_exit, new_process=new_process,
                positions=positions, config_patch=config_patch, expected_name=expected_name, notice=notice,
                options=list(options))


# Qwen3-Next and Qwen3.5: linear-attention layers (a loop over chunks of 64 tokens, which the trace
# unrolls at its length) beside a full-attention one, with positions beyond one chunk.
LINEAR_ATTENTION = dict(SMALL, max_position_embeddings=256, num_key_value_heads=2, head_dim=16,
                        layer_types=["linear_attention", "full_attention"], linear_key_head_dim=16,
                        linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4)
UNROLLED_AT_TRACE = "tokens but not at 65"

ARCHITECTURES = [
    architecture("gpt2", "GPT2LMHeadModel", "gpt2",
                 lambda: ("GPT2Config", dict(n_layer=2, n_head=4, n_embd=64, n_positions=MAX_POSITIONS,
                                             initializer_range=0.25)),
                 causal=True, required=True, bos="<|endoftext|>", new_process=True),
    architecture("llama", "LlamaForCausalLM", "llama", lambda: ("LlamaConfig", dict(SMALL, num_key_value_heads=4)),
                 causal=True, kv_heads=4, required=True, bos="<s>"),
    architecture("qwen2", "Qwen2ForCausalLM", "gpt2", lambda: ("Qwen2Config", dict(SMALL, num_key_value_heads=2)),
                 causal=True, kv_heads=2, required=True, bos="<|endoftext|>"),
    architecture("gpt_neox", "GPTNeoXForCausalLM", "gpt2",
                 lambda: ("GPTNeoXConfig", dict(SMALL, rotary_pct=0.25)),
                 causal=True, required=True, bos="<|endoftext|>"),
    architecture("mixtral", "MixtralForCausalLM", "llama",
                 lambda: ("MixtralConfig", dict(SMALL, num_key_value_heads=2, num_local_experts=4,
                                                num_experts_per_tok=2, sliding_window=None)),
                 causal=True, kv_heads=2, required=True, bos="<s>"),
    architecture("bert", "BertForMaskedLM", "bert", lambda: ("BertConfig", dict(SMALL)),
                 causal=False, required=True, bos="[CLS]", new_process=True),
    # Tried beyond the list.
    architecture("mistral", "MistralForCausalLM", "llama",
                 lambda: ("MistralConfig", dict(SMALL, num_key_value_heads=2, sliding_window=None)),
                 causal=True, kv_heads=2, bos="<s>"),
    architecture("gemma", "GemmaForCausalLM", "llama",
                 lambda: ("GemmaConfig", dict(SMALL, num_key_value_heads=1, head_dim=16)),
                 causal=True, kv_heads=1, bos="<s>"),
    architecture("gemma2", "Gemma2ForCausalLM", "llama",
                 lambda: ("Gemma2Config", dict(SMALL, num_key_value_heads=2, head_dim=16, sliding_window=4096,
                                               query_pre_attn_scalar=16)),
                 causal=True, kv_heads=2, bos="<s>"),
    architecture("phi3", "Phi3ForCausalLM", "llama",
                 lambda: ("Phi3Config", dict(SMALL, num_key_value_heads=2, pad_token_id=None)),
                 causal=True, kv_heads=2, bos="<s>"),
    architecture("qwen3_moe", "Qwen3MoeForCausalLM", "gpt2",
                 lambda: ("Qwen3MoeConfig", dict(SMALL, num_key_value_heads=2, head_dim=16, num_experts=4,
                                                 num_experts_per_tok=2, moe_intermediate_size=32,
                                                 decoder_sparse_step=1)),
                 causal=True, kv_heads=2, bos="<|endoftext|>"),
    architecture("olmoe", "OlmoeForCausalLM", "gpt2",
                 lambda: ("OlmoeConfig", dict(SMALL, num_key_value_heads=4, num_experts=4, num_experts_per_tok=2)),
                 causal=True, kv_heads=4, bos="<|endoftext|>"),
    architecture("deepseek_v3", "DeepseekV3ForCausalLM", "llama",
                 lambda: ("DeepseekV3Config", dict(SMALL, num_key_value_heads=4, moe_intermediate_size=32,
                                                   n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                                                   n_group=1, topk_group=1, first_k_dense_replace=1,
                                                   kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8,
                                                   qk_nope_head_dim=8, v_head_dim=16,
                                                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
                 causal=True, kv_heads=4, bos="<s>"),
    architecture("gpt_oss", "GptOssForCausalLM", "gpt2",
                 lambda: ("GptOssConfig", dict(SMALL, num_key_value_heads=2, head_dim=16, num_local_experts=4,
                                               num_experts_per_tok=2, sliding_window=128)),
                 causal=True, kv_heads=2, bos="<|endoftext|>"),
    architecture("modernbert", "ModernBertForMaskedLM", "bert",
                 lambda: ("ModernBertConfig", dict(SMALL, local_attention=128, global_attn_every_n_layers=2)),
                 causal=False, bos="[CLS]"),
    architecture("roberta", "RobertaForMaskedLM", "roberta",
                 lambda: ("RobertaConfig", dict(SMALL, max_position_embeddings=MAX_POSITIONS + 2)),
                 causal=False, bos="<s>"),
    # A sentence-transformers encoder: no language-model head, a tokenizer.json that pads and
    # truncates to 128, a folder named `model` and the model's name in _name_or_path.
    architecture("bert_no_head", "BertModel", "bert_padded", lambda: ("BertConfig", dict(SMALL)),
                 causal=False, required=True, bos="[CLS]", config_patch={"_name_or_path": "org/tiny-embedder"},
                 expected_name="org/tiny-embedder",
                 notice=["BertModel has no language-model head", "no repeat_loss", "--ablation is refused"]),
    # Refused: exact only up to one chunk of linear attention; a config.json that says 10 million
    # layers beside a small model's weights (transformers would build the layers, then load).
    architecture("qwen3_next", "Qwen3NextForCausalLM", "gpt2",
                 lambda: ("Qwen3NextConfig", dict(LINEAR_ATTENTION, num_experts=4, num_experts_per_tok=2,
                                                  moe_intermediate_size=32, shared_expert_intermediate_size=32)),
                 required=True, refusal=UNROLLED_AT_TRACE, positions=256),
    architecture("qwen3_5", "Qwen3_5ForCausalLM", "gpt2", lambda: ("Qwen3_5TextConfig", dict(LINEAR_ATTENTION)),
                 required=True, refusal=UNROLLED_AT_TRACE, positions=256),
    # The same model within one chunk, where its trace is exact: exported and analysed right.
    architecture("qwen3_next_64", "Qwen3NextForCausalLM", "gpt2",
                 lambda: ("Qwen3NextConfig", dict(LINEAR_ATTENTION, num_experts=4, num_experts_per_tok=2,
                                                  moe_intermediate_size=32, shared_expert_intermediate_size=32)),
                 causal=True, kv_heads=2, required=True, bos="<|endoftext|>", positions=256,
                 options=["--max-length", str(MAX_POSITIONS)]),
    architecture("huge", "LlamaForCausalLM", "llama", lambda: ("LlamaConfig", dict(SMALL)),
                 config_patch={"num_hidden_layers": 10_000_000}, required=True,
                 refusal="at least 3.28e+11 parameters (10000000 layers", refusal_exit=2),
]
BY_NAME = {a["name"]: a for a in ARCHITECTURES}


def build_model_dir(arch, model_dir):
    """A tokenizer and a randomly initialized model saved as a Hugging Face model directory."""
    import transformers
    from transformers import PreTrainedTokenizerFast

    tokenizer, tokens = train_tokenizer(arch["style"])
    config_name, fields = arch["config"]()
    config_cls = getattr(transformers, config_name)
    vocab = tokenizer.get_vocab_size()
    config = config_cls(vocab_size=vocab, **fields, **ids_of(tokenizer, tokens))
    torch.manual_seed(0)
    model = getattr(transformers, arch["cls"])(config).eval()
    os.makedirs(model_dir, exist_ok=True)
    model.save_pretrained(model_dir)
    if arch["config_patch"]:
        config_path = os.path.join(model_dir, "config.json")
        with open(config_path, encoding="utf-8") as f:
            stored = json.load(f)
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(dict(stored, **arch["config_patch"]), f, indent=2)
    special = {f"{k}_token": v for k, v in tokens.items()}
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=arch["positions"],
                            **special).save_pretrained(model_dir)


# ---------------------------------------------------------------------------------------------
# The reference scores


def special_ids(tokenizer_json):
    return {t["id"] for t in tokenizer_json.get("added_tokens", []) if t.get("special")}


def query_sets(record, specials, causal):
    """Which queries each score averages over, as bool lists over the record's positions.

    DESIGN.md: previous_token and first_token over content queries i >= 1; entropy over the queries
    with n_i >= 2 visible keys (position 0 included). Tokens a template puts after the text (the
    suffix, [SEP] or </s>; issue 22, item 7) are keys like any other but no score's queries: marked
    by the tokenize record's "special" field when it has one, else as the trailing run of the
    tokenizer's special ids after position 0.
    """
    ids = record["ids"]
    length = len(ids)
    if "special" in record:
        special = [bool(s) for s in record["special"]]
    else:
        special = [i in specials for i in ids]
    suffix = [False] * length
    position = length - 1
    while position > 0 and special[position]:
        suffix[position] = True
        position -= 1
    content = [i >= 1 and not suffix[i] for i in range(length)]
    visible = [(i + 1 if causal else length) for i in range(length)]
    entropy = [visible[i] >= 2 and not suffix[i] for i in range(length)]
    return {"previous_token": content, "first_token": content, "entropy": entropy}, visible


class ReferenceScores:
    """Per-head sums and query counts of previous_token, first_token and entropy."""

    def __init__(self):
        self.sums = {}    # (score, layer) -> float64 [H]
        self.counts = {}  # (score, layer) -> int

    def add(self, score, layer, values, selected):
        """values: [H, T] per-query values; selected: T bools."""
        mask = torch.tensor(selected, dtype=torch.bool)
        key = (score, layer)
        self.sums[key] = self.sums.get(key, 0) + values[:, mask].sum(dim=1)
        self.counts[key] = self.counts.get(key, 0) + int(mask.sum())

    def add_sequence(self, attentions, record, specials, causal):
        sets, visible = query_sets(record, specials, causal)
        n = torch.tensor(visible, dtype=torch.float64)
        for layer, attention in enumerate(attentions):
            a = attention[0].double()  # [H, T, T]
            length = a.shape[-1]
            previous = torch.zeros(a.shape[:2], dtype=torch.float64)
            previous[:, 1:] = a.diagonal(offset=-1, dim1=-2, dim2=-1)
            first = a[:, :, 0].clone()
            first[:, 0] = 0
            entropy = -torch.xlogy(a, a).sum(-1) / n.clamp(min=2).log()
            self.add("previous_token", layer, previous, sets["previous_token"])
            self.add("first_token", layer, first, sets["first_token"])
            self.add("entropy", layer, entropy, sets["entropy"][:length])

    def mean(self, score, layer, head):
        count = self.counts.get((score, layer), 0)
        return float(self.sums[(score, layer)][head] / count) if count else None


def reference_scores(model_dir, records, specials, causal):
    import transformers

    config = transformers.AutoConfig.from_pretrained(model_dir)
    cls = getattr(transformers, config.architectures[0])
    model = cls.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).eval()
    reference = ReferenceScores()
    layers = 0
    with torch.no_grad():
        for record in records:
            ids = torch.tensor([record["ids"]], dtype=torch.long)
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
            reference.add_sequence(out.attentions, record, specials, causal)
            layers = len(out.attentions)
    return reference, layers, out.attentions[0].shape[1]


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


def run(command, what, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{what} failed (exit {result.returncode}): {' '.join(command)}\n"
                             f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result.stdout


def archive_file(archive, name):
    with zipfile.ZipFile(archive) as z:
        for entry in z.namelist():
            if entry.endswith("/extra/" + name):
                return z.read(entry).decode("utf-8")
    raise AssertionError(f"{archive} has no extra file {name}")


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

    with TRANSFORMERS_LOCK:
        reference, layers, n_heads = reference_scores(model_dir, records, special_ids(tokenizer_json), arch["causal"])
    model = heads["model"]
    assert (model["layers"], model["heads"]) == (layers, n_heads), \
        f"heads.json has {model['layers']} layers x {model['heads']} heads, transformers {layers} x {n_heads}"
    assert model["causal"] == arch["causal"], f"heads.json causal {model['causal']}"
    if arch["kv_heads"] is not None:
        assert model["kv_heads"] == arch["kv_heads"], f"heads.json kv_heads {model['kv_heads']}"
    assert len(heads["heads"]) == layers * n_heads
    worst = {score: 0.0 for score in SCORES}
    problems = []
    for head in heads["heads"]:
        for score in SCORES:
            want = reference.mean(score, head["layer"], head["head"])
            got = head["scores"][score]
            difference = abs(got - want) if got is not None and want is not None else math.inf
            worst[score] = max(worst[score], difference)
            if difference > TOLERANCE:
                problems.append(f"L{head['layer']}H{head['head']} {score}: headscan {got}, transformers {want}")
    if problems:
        raise AssertionError(f"{len(problems)} scores differ by more than {TOLERANCE}:\n  " + "\n  ".join(problems[:12]))
    spread = [head["scores"]["entropy"] for head in heads["heads"]]
    assert min(spread) < 0.9, f"attention is nearly uniform in every head (entropy {min(spread):.3f}): a weak test"
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
