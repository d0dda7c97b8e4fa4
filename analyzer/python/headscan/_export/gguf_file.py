"""A GGUF file (llama.cpp's format, the one local-LLM tools hold their models in) as `headscan
export` reads it: through transformers' GGUF loader, `from_pretrained(folder, gguf_file=name)`,
which needs the gguf and accelerate packages. Its config; its tokenizer, which transformers
converts from the file's vocabulary and merges to a tokenizer.json (checked by
tokenizer_checks.py before anything is exported); its BOS; and the model, every weight dequantized
into an ordinary dense model of the dtype asked for (float32 by default). The program is exported
and checked against that model as against one of a model directory."""

import contextlib
import importlib
import importlib.util
import os
import sys

from . import ExportError, ExportInputError

MAGIC = b"GGUF"
PACKAGES = ("gguf", "accelerate")


def is_gguf(path):
    """Whether `path` is a GGUF file (its first bytes GGUF's magic). A file named .gguf that is not
    one is refused, naming what it lacks."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            start = f.read(len(MAGIC))
    except OSError as e:
        raise ExportInputError(f"cannot read {path} ({e.strerror})") from None
    if start == MAGIC:
        return True
    if path.lower().endswith(".gguf"):
        raise ExportInputError(f"{path} does not begin with GGUF's magic bytes {MAGIC.decode()!r} "
                               f"(found {start!r}): not a GGUF file, or one cut short")
    return False


def require_packages():
    """ExportInputError naming the packages transformers' GGUF loader needs and this Python lacks."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ExportInputError(f"transformers reads a GGUF file with the packages {' and '.join(PACKAGES)}, and this "
                               f"Python ({sys.executable}) lacks {' and '.join(missing)}; install them: "
                               f"pip install 'headscan[export]' (or pip install {' '.join(missing)})")


def located(path):
    """(folder, file name): how transformers' from_pretrained names a GGUF file."""
    folder, name = os.path.split(os.path.abspath(path))
    return folder, name


@contextlib.contextmanager
def quiet_progress():
    """transformers' GGUF loader draws tqdm bars of its own (dequantizing the tensors, building
    merges), which transformers' disable_progress_bar() does not reach: silenced while it loads, as
    `headscan export` silences transformers' other bars."""
    from functools import partial

    modules = [importlib.import_module(name) for name in ("transformers.modeling_gguf_pytorch_utils",
                                                          "transformers.integrations.ggml")]
    saved = [(module, module.tqdm) for module in modules if hasattr(module, "tqdm")]
    for module, bar in saved:
        module.tqdm = partial(bar, disable=True)
    try:
        yield
    finally:
        for module, bar in saved:
            module.tqdm = bar


def read_config(path):
    """The model's config as transformers reads it from the GGUF file's metadata."""
    from transformers import AutoConfig

    from .model import one_line

    require_packages()
    folder, name = located(path)
    try:
        with quiet_progress():
            return AutoConfig.from_pretrained(folder, gguf_file=name)
    except Exception as e:  # noqa: BLE001 - an architecture transformers cannot read from GGUF, a damaged file
        raise ExportInputError(f"transformers could not read the GGUF file's config: {one_line(e)}") from None


def tokenizer_json(path):
    """(tokenizer.json's text, where it comes from): the GGUF file's tokenizer as transformers
    converts it."""
    from transformers import AutoTokenizer

    from .model import one_line

    folder, name = located(path)
    try:
        with quiet_progress():
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    except Exception as e:  # noqa: BLE001
        raise ExportInputError(f"transformers could not convert the GGUF file's tokenizer: {one_line(e)}; give the "
                               "model's tokenizer.json with --tokenizer FILE") from None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ExportInputError(f"transformers converted the GGUF file's tokenizer to a {type(tokenizer).__name__}, "
                               "which has no tokenizer.json; give the model's tokenizer.json with --tokenizer FILE")
    return backend.to_str(), f"converted by transformers from {path}"


def stored_bos(path):
    """(the GGUF file's BOS token, where it comes from), or None where it names none: its
    tokenizer.ggml.bos_token_id, as a model directory's tokenizer_config.json names its bos_token."""
    from gguf import GGUFReader

    try:
        fields = GGUFReader(path).fields
    except Exception as e:  # noqa: BLE001 - transformers read the file; the gguf package may still refuse it
        raise ExportInputError(f"the gguf package could not read the file: {e}") from None
    field, tokens = fields.get("tokenizer.ggml.bos_token_id"), fields.get("tokenizer.ggml.tokens")
    if field is None or tokens is None or not field.data:
        return None
    bos_id = int(field.parts[field.data[0]][0])
    if not 0 <= bos_id < len(tokens.data):
        return None
    token = bytes(tokens.parts[tokens.data[bos_id]]).decode("utf-8", errors="replace")
    return token, "the GGUF file's tokenizer.ggml.bos_token_id"


def load_model(cls, path, attention, dtype):
    """The model of class `cls` with `attention`, every weight dequantized to `dtype` (transformers'
    GgufConfig(dequantize=True): never kept in GGUF blocks, whatever kernels are installed), then no
    longer marked quantized: it is an ordinary dense model, which the exporter may move and cast."""
    import torch
    from transformers import GgufConfig

    from .model import one_line

    folder, name = located(path)
    try:
        with quiet_progress():
            model = cls.from_pretrained(folder, gguf_file=name, quantization_config=GgufConfig(dequantize=True),
                                        attn_implementation=attention, dtype=dtype)
    except (MemoryError, torch.OutOfMemoryError) as e:  # a failure while running (exit 1), not bad input
        raise ExportError(f"transformers ran out of memory dequantizing the GGUF file as {cls.__name__}: "
                          f"{one_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - tensors that disagree with the metadata, a quantization gguf lacks
        raise ExportInputError(f"transformers could not load the GGUF file as {cls.__name__} with {attention} "
                               f"attention: {type(e).__name__}: {one_line(e)}") from None
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    model.eval()
    return model


def default_name(path):
    """(headscan.json's name, where it comes from): the file's name without .gguf, which names the
    model and its quantization (SmolLM2-135M-Instruct.Q4_1)."""
    name = os.path.basename(path)
    return (name[:-len(".gguf")] if name.lower().endswith(".gguf") else name), "the GGUF file's name"
