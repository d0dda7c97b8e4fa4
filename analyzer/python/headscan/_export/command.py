"""`headscan export MODEL_DIR OUT.pt2`: a Hugging Face model directory, or a GGUF file, exported
with torch.export to an archive headscan runs (PyTorch's exported-program format, run by its C++
runtime NativeRT).

    headscan export MODEL_DIR OUT.pt2 [--name NAME] [--bos TOKEN|none] [--max-length N] ...
    headscan export MODEL.gguf OUT.pt2 [--tokenizer tokenizer.json] ...

MODEL_DIR is what `save_pretrained` writes (config.json, weights, tokenizer files). Needs torch and
transformers; nothing is downloaded.

GGUF files (llama.cpp's format)
  MODEL.gguf is read by transformers' GGUF loader (the gguf and accelerate packages: pip install
  'headscan[export]'), every weight dequantized to --dtype (float32 by default): the program is
  what transformers' dequantized model computes, checked as below. The tokenizer is the file's, as
  transformers converts it, unless --tokenizer FILE gives the model's tokenizer.json; either is
  checked before the export, and a tokenizer that fails is refused (exit 2, naming the check): an
  English sentence must come back from encoding and decoding it (round trip), and the model's mean
  next-token loss on an English paragraph must be below 0.8 x ln(vocabulary), a uniform guess
  being ln(vocabulary) (loss). bos_token's default falls back on the file's
  tokenizer.ggml.bos_token_id; name's is the file's name without .gguf.

Attention (--attention auto, the default)
  The model is loaded with transformers' SDPA attention where transformers has it for the class and
  it computes what eager attention computes: compared on a padded batch of 65 tokens, the same
  weights under eager attention must give the same output (within the checks' tolerance), and no
  attention may pass SDPA what it ignores (soft-capping, sinks) or call it twice per map
  (differential attention). It is then switched to headscan's own implementation of SDPA attention
  where the model's output under it is eager attention's too: each attention calls
  headscan::attention, which headscan computes in row blocks, with the keys' padding as its mask
  ([B, 1, 1, T]), the causal rule, and grouped key/value heads unrepeated; a layer's sliding window
  or chunks, soft-capping of its scores and attention sinks are arguments of its windowed form
  (headscan::attention.windowed), so a model with soft-capping or sinks, or one transformers has no
  SDPA attention for (gpt-oss), is switched to it too where it is exact; masks of other kinds
  (packed sequences, a model's own overlays) keep transformers' [B, 1, T, T] mask. Where it is not
  exact, SDPA attention is kept (each attention one scaled_dot_product_attention, computed by
  headscan::attention with that [B, 1, T, T] mask), with the reason in headscan.json
  ("attention_reason"). max_length then defaults to the model's positions. Otherwise the model is
  loaded with eager attention, said on stderr and in headscan.json ("attention": "eager",
  "attention_reason"), and max_length's default is at most 1024: the model materialises its
  [B, H, T, T] probabilities. --attention sdpa|eager forces one.

What it writes
  OUT.pt2, the model's forward(input_ids, attention_mask) (int64 [B, T], mask 1 = real token, B and
  T dynamic, T from 2 to max_length) returning the logits, exported by torch.export (a model with
  transformers' logits_to_keep takes logits_rows too, int64 [K], and returns those rows' logits
  only: headscan's needle probes ask for a few rows, not [T, V]); headscan's
  observer (headscan::observe) follows every attention softmax, and every
  scaled_dot_product_attention is headscan::attention (its math form, probabilities observed).
  Inside: tokenizer.json and headscan.json as scripts/export_hf.py writes them ({"name",
  "bos_token", "max_length", "causal", "n_kv_heads"}), and "layers": every layer of the model's
  stack with its index, module path and kind (attention, linear attention, state space,
  convolution, none), and "min_length", the shortest length the program takes, where it is more
  than 2 (a branch on short lengths in the model's Python: shorter sequences must be padded to it).
  "attention": "headscan", "sdpa" or "eager" (above); "checked_length", the longest length the checks
  below compared the program with the model at. The fields are chosen as scripts/export_hf.py
  chooses them, max_length's default as said above, at most 1,048,576 (the longest sequence headscan
  runs); headscan.json is checked as a run reads it before anything is written.
  OUT.pt2 is checked before the model is loaded: a new path, or with --force an earlier archive of
  headscan export (any other file, a directory or a folder that cannot be written is exit 2). It is
  written in .headscan-export.XXXXXXXX/ beside it and renamed into place: a full disk is exit 1 with
  OUT as it was; Ctrl-C (exit 130) and SIGTERM (exit 143) remove the folder.

Checks before saving, on the exported program against the model: attention rows sum to at most 1;
the output equals the model's on other batch sizes and lengths, at each of the model's block sizes
and one token more (sliding windows, chunks) up to 4,096 tokens, and with padding. A model that cannot be exported,
or whose program is exact at some lengths only, is refused with the reason (exit 2).
"""

import argparse
import os
import sys
import warnings

from . import ExportError, ExportInputError, gguf_file, memory
from .attention import MODES, exact_attention, headscan_or_eager, refuse_sdpa, sdpa_unavailable
from .exporter import Wrapper, export_model, extra_files
from .headscan_json import MAX_LENGTH
from .layers import describe_layers
from .metadata import (DEFAULT_MAX_LENGTH_CAP, choose_bos, choose_max_length, default_name, load_tokenizer_json,
                       model_positions, unpadded_tokenizer)
from .mixer_ops import quiet_reference_fallbacks
from .model import check_size, example_rows, load_model, model_class, padded_batch, read_config, refuse_family
from .output import Output, Terminated, sigterm_unwinds
from .program import NoAttention
from .pt2 import takes_logits_rows
from .attention_program import package_programs
from .tokenizer_checks import check_loss, check_round_trip

PROG = "headscan export"
# SDPA attention is compared with eager attention on rows of this length and 5 tokens fewer,
# right-padded (across the 64-token chunk of transformers' chunked kernels), or of the model's
# positions or --max-length where shorter.
SDPA_CHECK_LENGTH = 65


def add_model_options(parser):
    """The options scripts/export_hf.py and `headscan export` share."""
    parser.add_argument("--name", help="headscan.json name (default: MODEL_DIR's folder name, org/name for a "
                                       "Hugging Face cache snapshot, config.json's _name_or_path for a folder "
                                       "named model or the like)")
    parser.add_argument("--bos", metavar="TOKEN",
                        help="headscan.json bos_token: a token of the tokenizer, or 'none' for no BOS "
                             "(default: the template's first token, else the model's BOS)")
    parser.add_argument("--max-length", type=length_option, metavar="N",
                        help=f"headscan.json max_length, 2 to {MAX_LENGTH} (default: see below)")
    parser.add_argument("--max-length-cap", type=int, metavar="N",
                        help=f"upper bound of the default max_length (default: {DEFAULT_MAX_LENGTH_CAP} for eager "
                             "attention, none for SDPA attention)")
    causal = parser.add_mutually_exclusive_group()
    causal.add_argument("--causal", dest="causal", action="store_true", default=None,
                        help="write causal: true instead of measuring it")
    causal.add_argument("--bidirectional", dest="causal", action="store_false",
                        help="write causal: false instead of measuring it")
    parser.add_argument("--tokenizer", metavar="FILE", help="a tokenizer.json to embed instead of MODEL_DIR's (or the "
                                                             "GGUF file's)")
    parser.add_argument("--model-class", metavar="CLASS",
                        help="transformers class to load (default: config.json's architectures, else "
                             "AutoModelForMaskedLM for encoders and AutoModelForCausalLM for decoders)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16", "auto"], default="float32",
                        help="weights of the archive (default float32; auto: as stored)")
    parser.add_argument("--no-attention-mask", action="store_true",
                        help="export forward(input_ids) only: headscan then batches equal lengths, unpadded")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="allow the model's own Python code (config.json auto_map), as transformers does")


def length_option(text):
    """--max-length: a whole number of tokens within what a run reads (headscan_json.MAX_LENGTH)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, found {text!r}") from None
    if not 2 <= value <= MAX_LENGTH:
        raise argparse.ArgumentTypeError(f"expected 2 to {MAX_LENGTH} tokens (the longest sequence headscan runs), "
                                         f"found {value}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n", 1)[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", metavar="MODEL_DIR", help="a Hugging Face model directory (save_pretrained), or "
                                                             "a GGUF file (llama.cpp's format)")
    parser.add_argument("output", metavar="OUT.pt2", help="the exported program's archive to write")
    add_model_options(parser)
    parser.add_argument("--attention", choices=MODES, default="auto",
                        help="the attention the model is loaded with: sdpa (each attention one "
                             "scaled_dot_product_attention call, which headscan computes in row blocks), eager (the "
                             "model's own softmax, its [B, H, T, T] probabilities materialised), or auto (default): "
                             "SDPA where transformers has it for the model and its output equals eager attention's, "
                             "in headscan's implementation (no [B, 1, T, T] mask, no repeated key/value heads) where "
                             "that equals it too, else eager")
    parser.add_argument("--force", action="store_true",
                        help="replace OUT.pt2 when it is an earlier archive of headscan export (any other file "
                             "there is refused, never replaced)")
    parser.add_argument("--device", default="cpu", metavar="DEVICE",
                        help="where the program runs: cpu (default) or cuda[:N]; an exported program holds its "
                             "device, and headscan runs it there")
    args = parser.parse_args(argv)
    if args.max_length_cap is not None and args.max_length_cap < 2:
        parser.error("--max-length-cap must be at least 2")
    args.prog = PROG  # the name of warnings
    return args


def parse_device(text):
    import torch

    try:
        device = torch.device(text)
    except RuntimeError:
        raise ExportInputError(f"--device {text}: expected cpu or cuda[:N]") from None
    if device.type not in ("cpu", "cuda"):
        raise ExportInputError(f"--device {text}: expected cpu or cuda[:N]")
    if device.type == "cuda" and (not torch.cuda.is_available() or (device.index or 0) >= torch.cuda.device_count()):
        raise ExportInputError(f"--device {text}: this machine's torch sees {torch.cuda.device_count()} CUDA devices")
    return device


def export(args):
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError as e:
        raise ExportInputError(f"headscan export reads the model directory with transformers, which this Python "
                               f"({sys.executable}) cannot import ({e}); install it: pip install 'headscan[export]' "
                               "(or pip install transformers)") from None

    transformers_logging.disable_progress_bar()
    quiet_reference_fallbacks()
    if not args.output.endswith(".pt2"):
        raise ExportInputError(f"{args.output}: the archive's name must end in .pt2 (an exported program); "
                               "scripts/export_hf.py writes TorchScript archives (.pt)")
    # OUT is checked and its staging folder made before anything is loaded.
    with Output(args.output, args.force) as output:
        export_to(args, output)


def read_source(args):
    """(config, tokenizer.json's text, where it comes from) of MODEL_DIR, or of a GGUF file
    (args.gguf, set here), with --tokenizer's in place of its own."""
    args.gguf = gguf_file.is_gguf(args.model_dir)
    if args.gguf:
        config = gguf_file.read_config(args.model_dir)
    elif os.path.isfile(args.model_dir):
        raise ExportInputError(f"{args.model_dir} is a file, and not a GGUF file (expected a Hugging Face model "
                               "directory or a GGUF file)")
    else:
        config = read_config(args.model_dir, args.trust_remote_code)
    refuse_family(config, ExportInputError)
    check_size(config, args.dtype)
    if args.gguf and not args.tokenizer:
        return (config, *gguf_file.tokenizer_json(args.model_dir))
    return (config, *load_tokenizer_json(args.model_dir, args.tokenizer, args.trust_remote_code))


def export_to(args, output):
    device = parse_device(args.device)
    config, tokenizer_text, tokenizer_source = read_source(args)
    tokenizer = unpadded_tokenizer(tokenizer_text)
    # A GGUF file holds no tokenizer_config.json (the folder it is in is not read).
    settings_dir = os.devnull if args.gguf else args.model_dir
    remedy = (f"check that {args.tokenizer} is this model's own tokenizer.json" if args.tokenizer else
              "give the model's own tokenizer.json (from its original repository) with --tokenizer FILE")
    if args.gguf:
        check_round_trip(tokenizer, f"the tokenizer {tokenizer_source}", remedy)
    stored_bos = gguf_file.stored_bos(args.model_dir) if args.gguf and args.bos is None else None
    bos_token, bos_source = choose_bos(args.bos, tokenizer, settings_dir, config, stored=stored_bos)
    name, name_source = ((args.name, "--name") if args.name else
                         (gguf_file.default_name if args.gguf else default_name)(args.model_dir))

    model, attention, attention_reason = load_with_attention(args, config, tokenizer, bos_token, device)
    memory.release()  # the attention comparison's outputs (and an eager copy of the model) are gone
    tokenizer_loss = None
    if args.gguf:
        tokenizer_loss = check_loss(model, tokenizer, tokenizer.token_to_id(bos_token) if bos_token else None, device,
                                    f"the tokenizer {tokenizer_source}", remedy)
    if attention_reason and args.attention == "auto":
        said = (f"eager attention, whose [B, H, T, T] probabilities the model materialises per layer"
                if attention == "eager" else "SDPA attention, whose mask is [B, 1, T, T] per batch")
        print(f"{PROG}: {type(model).__name__} is exported with {said}: {attention_reason}", file=sys.stderr)
    max_length, max_length_source = choose_max_length(args, config, settings_dir, attention)
    if args.gguf:  # the config transformers built from the file's metadata (llama.context_length, ...)
        max_length_source = max_length_source.replace("config.json", "the GGUF file's config")
    vocab_size = model.get_input_embeddings().num_embeddings
    if tokenizer.get_vocab_size() > vocab_size:
        print(f"{PROG}: warning: the tokenizer has {tokenizer.get_vocab_size()} tokens, the model's "
              f"embedding {vocab_size}: ids beyond it fail in headscan", file=sys.stderr)
    causal_source = None if args.causal is None else ("--causal" if args.causal else "--bidirectional")

    def exported_with(reason):
        return export_model(model, tokenizer, max_length=max_length, bos_token=bos_token, causal=args.causal,
                            causal_source=causal_source, takes_mask=not args.no_attention_mask, config=config,
                            vocab_size=vocab_size, metadata={"name": name}, attention_reason=reason)

    try:
        exported = exported_with(attention_reason)
    except ExportError as e:
        if attention != "headscan" or isinstance(e, NoAttention):
            raise
        # headscan's implementation held on the check batch but not in the program: SDPA's, as before it.
        attention_reason = f"the program with headscan's attention failed: {e}"
        print(f"{PROG}: {type(model).__name__} is exported with SDPA attention, whose mask is [B, 1, T, T] per "
              f"batch: {attention_reason}", file=sys.stderr)
        model.set_attn_implementation("sdpa")
        exported = exported_with(attention_reason)
    files = extra_files(exported, tokenizer_text)
    output.write(lambda temporary: package_programs(temporary, exported.program, files))

    metadata = exported.metadata
    print(f"{args.output}: {type(model).__name__}, {len(exported.numbers)} attention layer{'' if len(exported.numbers) == 1 else 's'}, {exported.dtype}, "
          f"forward(input_ids{'' if args.no_attention_mask else ', attention_mask'}"
          f"{', logits_rows' if takes_logits_rows(exported.program) else ''}) -> "
          f"{'hidden states' if exported.missing else 'logits'}, exported program")
    print(f"  name: {name} ({name_source})")
    print(f"  tokenizer: {tokenizer_source} ({tokenizer.get_vocab_size()} tokens)")
    if args.gguf:
        checked = "round trip exact"
        if tokenizer_loss is not None:
            loss, bound, vocabulary = tokenizer_loss
            checked += (f", the model's mean loss on an English paragraph {loss:.2f} nats (below {bound:.2f}, "
                        f"0.8 x ln {vocabulary})")
        print(f"  GGUF: dequantized by transformers to {str(exported.dtype).replace('torch.', '')}; tokenizer "
              f"checked: {checked}")
    print(f"  bos_token: {bos_token or 'none'} ({bos_source})")
    print(f"  attention: {metadata['attention']} ({attention_source(metadata['attention'], attention_reason)})")
    print(f"  max_length: {max_length} ({max_length_source})")
    if "min_length" in metadata:
        print(f"  min_length: {metadata['min_length']} (the program takes no shorter sequence: shorter ones "
              "must be padded to it)")
    print(f"  causal: {str(metadata['causal']).lower()} ({exported.causal_source})")
    if "n_kv_heads" in metadata:
        print(f"  n_kv_heads: {metadata['n_kv_heads']}")
    print(f"  layers: {describe_layers(exported.layers, exported.numbers)}")
    print(f"  checked: the model's output at {', '.join(map(str, sorted(exported.exact)))} tokens "
          f"(blocks of {', '.join(map(str, sorted(exported.blocks)))} tokens; checked_length "
          f"{metadata['checked_length']})")
    if exported.missing:
        print(f"  no logits: {exported.missing}")


def attention_source(kind, reason):
    """What the program's attention is, for the export's summary."""
    if kind == "headscan":
        return ("headscan's attention implementation: headscan::attention with the keys' padding as its mask, the "
                "causal rule and the layers' windows or chunks, or the model's own mask where it has more")
    if kind == "sdpa":
        return "scaled_dot_product_attention, computed by headscan::attention" + (f"; {reason}" if reason else "")
    if kind == "eager":
        return reason or "loaded with SDPA attention, the model computes its own softmax, observed"
    return (f"some layers' attention computed by headscan::attention ({kind.split()[0]}), the others' own softmax "
            "observed")


def load_with_attention(args, config, tokenizer, bos_token, device):
    """(the model on `device`, "headscan", "sdpa" or "eager", why not "headscan" or None) as
    --attention asks: auto loads SDPA attention and keeps it where it computes what eager attention
    does, switched to headscan's implementation where that does too (attention.py), on a padded
    batch of SDPA_CHECK_LENGTH tokens, else eager."""
    cls = model_class(config, args.model_class, args.trust_remote_code)
    if args.attention == "eager":
        return load_model(args, config, "eager", cls).to(device), "eager", "--attention eager"
    unavailable = sdpa_unavailable(cls, config)
    if unavailable and args.attention == "sdpa":
        refuse_sdpa(unavailable)
    if unavailable:
        model = load_model(args, config, "eager", cls).to(device)
    else:
        try:
            model = load_model(args, config, "sdpa", cls).to(device)
        except ExportError as e:
            if args.attention == "sdpa":
                refuse_sdpa(str(e))
            return load_model(args, config, "eager", cls).to(device), "eager", str(e)
    vocab_size = model.get_input_embeddings().num_embeddings
    bos_id = tokenizer.token_to_id(bos_token) if bos_token else None
    positions = model_positions(config)
    length = min([SDPA_CHECK_LENGTH] + ([positions[0]] if positions else []) +
                 ([args.max_length] if args.max_length is not None else []))
    rows = example_rows(tokenizer, bos_id, [length, max(2, length - 5)] if not args.no_attention_mask else [length],
                        vocab_size)
    inputs = [tensor.to(device) for tensor in padded_batch(rows, bos_id if bos_id is not None else 0)]
    inputs = inputs[:1] if args.no_attention_mask else inputs

    def run(each):  # the real tokens' outputs: what padding queries see differs between the two, unused
        output = Wrapper(each, not args.no_attention_mask).eval()(*inputs)
        return output if args.no_attention_mask else output[inputs[1].bool()]

    dtype = next(model.parameters()).dtype
    if unavailable:  # headscan's attention computes what SDPA's lacks (gpt-oss's sinks), where it is exact
        return headscan_or_eager(model, run, dtype, unavailable)
    return exact_attention(model, args.attention, run, lambda: load_model(args, config, "eager", cls).to(device),
                           dtype)


def exit_code(prog, export_function, args):
    """Runs export_function(args): 0, or the reason on stderr and 2 for what cannot be exported (an
    ExportInputError), 1 for a check that failed (an ExportError), 130 for Ctrl-C and 143 for
    SIGTERM (sigterm_unwinds), each one line. The exit codes of both exporters. The line names the
    error's path (OUT, output.py) or else MODEL_DIR."""
    try:
        export_function(args)
    except ExportInputError as e:
        print(f"{prog}: error: {getattr(e, 'path', None) or args.model_dir}: {e}", file=sys.stderr)
        return 2
    except ExportError as e:
        print(f"{prog}: error: {getattr(e, 'path', None) or args.model_dir}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted (Ctrl-C); nothing was written", file=sys.stderr)
        return 130
    except Terminated:
        print(f"{prog}: terminated (SIGTERM); nothing was written", file=sys.stderr)
        return 143
    return 0


def main(argv=None):
    args = parse_args(argv)
    # torch.export's and transformers' warnings about what they trace are not the user's concern:
    # whether the program is right is checked.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\..*")
    with sigterm_unwinds():
        return exit_code(PROG, export, args)


if __name__ == "__main__":
    sys.exit(main())
