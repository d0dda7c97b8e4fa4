"""The archive's tokenizer.json and the fields of its headscan.json: name, bos_token, max_length."""

import json
import os
import re
import sys

from . import ExportInputError
from .headscan_json import MAX_LENGTH

ROBERTA_POSITION_MODELS = {"roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "xlm-roberta-xl",
                           "data2vec-text", "longformer", "ibert", "luke", "mpnet"}

# Folder names that say nothing about the model (a download script's `model/`, a training run's
# `checkpoint/`): the name then comes from config.json's _name_or_path when it holds a hub name.
GENERIC_FOLDER_NAMES = {"model", "models", "checkpoint", "checkpoints", "weights", "snapshot", "export",
                        "exported", "output", "outputs", "hf", "huggingface", "transformers", "pretrained",
                        "final", "latest", "best", "main", "base", "local", "files", "download", "downloads"}
# The default max_length's cap for a model with eager attention (--max-length-cap), whose
# [B, H, T, T] probabilities the model itself materialises per layer.
DEFAULT_MAX_LENGTH_CAP = 1024
HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def read_json(path):
    """A JSON object of the model directory ({} where the file is missing); anything else in it is
    bad input (ExportInputError naming the file)."""
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except OSError as e:
        raise ExportInputError(f"cannot read {path} ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ExportInputError(f"{path} is not UTF-8 text (byte {e.start}): not a JSON file; fix or remove it") from None
    except ValueError as e:
        raise ExportInputError(f"{path} is not JSON ({e}); fix or remove it") from None
    if not isinstance(document, dict):
        raise ExportInputError(f"{path} holds a JSON {type(document).__name__}, where a JSON object is expected; "
                               "fix or remove it")
    return document


def load_tokenizer_json(model_dir, tokenizer_path, trust_remote_code):
    """The tokenizer.json text: the given file, MODEL_DIR's, or the slow tokenizer converted."""
    from tokenizers import Tokenizer

    path = tokenizer_path or os.path.join(model_dir, "tokenizer.json")
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ExportInputError(f"cannot read {path} ({e.strerror})") from None
        except UnicodeDecodeError as e:
            raise ExportInputError(f"{path} is not UTF-8 text (byte {e.start}): not a tokenizer.json; give the "
                                   "model's tokenizer.json (or one with --tokenizer FILE)") from None
        try:
            Tokenizer.from_str(text)
        except Exception as e:  # noqa: BLE001 - the library's message is the useful part
            raise ExportInputError(f"{path} is not a tokenizer.json the tokenizers library reads: "
                                   f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}") from None
        return text, path
    if tokenizer_path:
        raise ExportInputError(f"--tokenizer {tokenizer_path}: no such file")

    from transformers import AutoTokenizer
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    except Exception as e:  # noqa: BLE001
        raise ExportInputError(f"{model_dir} has no tokenizer.json and transformers could not load its tokenizer: "
                               f"{e}; give one with --tokenizer FILE") from e
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        try:
            from transformers.convert_slow_tokenizer import convert_slow_tokenizer
            backend = convert_slow_tokenizer(tokenizer)
        except Exception as e:  # noqa: BLE001
            raise ExportInputError(f"{model_dir} has no tokenizer.json and its {type(tokenizer).__name__} cannot be "
                              f"converted to one ({e}); give one with --tokenizer FILE, or run headscan with "
                              "--tokenizer on the model's SentencePiece .model") from e
    return backend.to_str(), f"built by transformers' {type(tokenizer).__name__} from {model_dir}"


def unpadded_tokenizer(tokenizer_text):
    """The tokenizer without the padding and truncation a tokenizer.json may configure (a
    sentence-transformers model's pads every text to 128): headscan pads and windows by itself, and
    a padded encoding hides where the template's tokens are."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_text)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def template_prefix(tokenizer):
    """The ids the tokenizer's post-processor puts before the text of a single sequence."""
    for text in ("a", "hello world", "x"):
        plain = tokenizer.encode(text, add_special_tokens=False).ids
        full = tokenizer.encode(text, add_special_tokens=True).ids
        if not plain:
            continue
        for start in range(len(full) - len(plain) + 1):
            if full[start:start + len(plain)] == plain:
                return full[:start]
    return []


def token_text(value):
    """tokenizer_config.json holds a special token as a string or as {"content": ...}."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def choose_bos(requested, tokenizer, model_dir, config, stored=None):
    """(bos_token or None, where it comes from): see export_hf.py's docstring. `stored`: (token,
    where it comes from) in place of MODEL_DIR's tokenizer_config.json bos_token (a GGUF file's)."""
    if requested is not None:
        if requested.lower() == "none":
            return None, "--bos none"
        if tokenizer.token_to_id(requested) is None:
            raise ExportInputError(f"--bos {requested!r} is not a token of the tokenizer")
        return requested, "--bos"
    prefix = template_prefix(tokenizer)
    if len(prefix) == 1:
        return tokenizer.id_to_token(prefix[0]), "the tokenizer's template"
    if len(prefix) > 1:
        pieces = " ".join(tokenizer.id_to_token(i) for i in prefix)
        raise ExportInputError(f"the tokenizer's template puts {len(prefix)} tokens ({pieces}) before the text, but "
                          "headscan prepends one BOS; choose it with --bos TOKEN (or --bos none)")
    candidates = [stored or (token_text(read_json(os.path.join(model_dir, "tokenizer_config.json")).get("bos_token")),
                             "tokenizer_config.json bos_token")]
    bos_id = getattr(config, "bos_token_id", None)
    if isinstance(bos_id, list):
        bos_id = bos_id[0] if bos_id else None
    if isinstance(bos_id, int):
        candidates.append((tokenizer.id_to_token(bos_id), "config.json bos_token_id"))
    for token, source in candidates:
        if token and tokenizer.token_to_id(token) is not None:
            return token, source + " (the template adds no BOS)"
    return None, "neither the template nor the model names a BOS"


def model_positions(config):
    """(positions the model can embed, the config field) or None when the config names none."""
    for field in ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length"):
        value = getattr(config, field, None)
        if isinstance(value, int) and value >= 2:
            # RoBERTa-style learned positions start after padding_idx: 514 positions hold 512 tokens.
            if field == "max_position_embeddings" and config.model_type in ROBERTA_POSITION_MODELS:
                pad = getattr(config, "pad_token_id", None)
                value -= (1 if pad is None else pad) + 1
            return value, f"config.json {field}"
    return None


def choose_max_length(args, config, model_dir, attention="eager"):
    """(max_length, where it comes from): the model's positions, at most the tokenizer's
    model_max_length and --max-length-cap; --max-length N sets it. The cap's default bounds the
    T x T maps a model with eager attention materialises (DEFAULT_MAX_LENGTH_CAP); with SDPA
    attention (headscan computes it in row blocks) there is none, except for a model whose config
    names no positions."""
    positions = model_positions(config)
    if args.max_length is not None:  # within 2 .. MAX_LENGTH (command.length_option)
        if positions and args.max_length > positions[0]:
            print(f"{getattr(args, 'prog', 'export_hf.py')}: warning: --max-length {args.max_length} is more than the model's "
                  f"{positions[0]} positions ({positions[1]})", file=sys.stderr)
        return args.max_length, "--max-length"
    # headscan runs sequences of at most MAX_LENGTH tokens (headscan.json's max_length): a model of
    # more positions (Llama 4 Scout: 10,485,760) is exported for that many.
    limits = [positions] if positions else []
    if positions and positions[0] > MAX_LENGTH:
        limits.append((MAX_LENGTH, f"headscan's longest sequence, {MAX_LENGTH:,} tokens, below the model's "
                                   f"{positions[0]:,} positions"))
    model_max = read_json(os.path.join(model_dir, "tokenizer_config.json")).get("model_max_length")
    if isinstance(model_max, int) and 2 <= model_max < 10**7:
        limits.append((model_max, "tokenizer_config.json model_max_length"))
    if getattr(args, "max_length_cap", None) is not None:
        limits.append((args.max_length_cap, "--max-length-cap"))
    elif attention == "eager":
        limits.append((DEFAULT_MAX_LENGTH_CAP, f"--max-length-cap's default for eager attention, "
                                               f"{DEFAULT_MAX_LENGTH_CAP}"))
    elif not positions:
        limits.append((DEFAULT_MAX_LENGTH_CAP, f"--max-length-cap's default, {DEFAULT_MAX_LENGTH_CAP}: config.json "
                                               "names no positions"))
    return min(limits)


def default_name(model_dir):
    """(name, where it comes from): MODEL_DIR's folder name; for a hub cache snapshot
    (models--org--name/snapshots/HASH), org/name; for a folder of a generic name (`model`),
    config.json's _name_or_path when it is a hub name rather than a local path."""
    path = os.path.abspath(model_dir)
    parent = os.path.dirname(path)
    repository = os.path.basename(os.path.dirname(parent))
    if os.path.basename(parent) == "snapshots" and repository.startswith("models--"):
        return repository[len("models--"):].replace("--", "/"), "the hub cache's folder"
    folder = os.path.basename(path)
    if folder.lower() in GENERIC_FOLDER_NAMES:
        # AutoConfig replaces _name_or_path by the directory it loaded from: read the file itself.
        try:
            stored = read_json(os.path.join(path, "config.json")).get("_name_or_path")
        except ExportInputError:
            stored = None
        if (isinstance(stored, str) and HUB_NAME.match(stored)
                and os.path.basename(stored).lower() not in GENERIC_FOLDER_NAMES):
            return stored, f"config.json _name_or_path, the folder being named {folder!r}"
    return folder, "the folder's name"
