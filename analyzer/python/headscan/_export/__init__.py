"""Exporting a model for headscan: `headscan export` (an exported program, .pt2) and
scripts/export_hf.py (TorchScript, .pt) share these parts, one job each.

metadata  the tokenizer and what headscan.json says (name, bos_token, max_length);
gguf_file a GGUF file read through transformers' GGUF loader: config, tokenizer, BOS, the model
          dequantized;
tokenizer_checks  a GGUF file's tokenizer checked against its model (round trip, loss);
model     the model: its size from the config, its class, loading it, the wrapper that is exported,
          inputs;
checks    what an archive must satisfy before it is saved (graph, attention rows, shapes, lengths,
          padding), the archive compared with the eager model;
ops       headscan's operators (headscan::observe, headscan::attention and its windowed overload) as
          torch.export sees them;
mixer_ops a hybrid's sequence mixers (gated delta rule, Mamba-2's and Mamba's scans) as headscan's
          operators, put in place of transformers' torch references while torch.export traces;
attention which attention the model is loaded with: headscan's, SDPA or eager, where each is exact;
headscan_attention  transformers' attention implementation "headscan": headscan::attention called by
          the model, with the keys' padding as its mask instead of a [B, 1, T, T] one (and the
          layer's window or chunks, soft-capping and sinks as the windowed overload's arguments);
program   torch.export, the observers placed on the attention probabilities;
deepseek  DeepSeek-V3.2's indexer exported length-dynamic (headscan::index_topk), DeepSeek-V4's
          compressed attention refused;
layers    the model's layers as it numbers them, with their kinds;
pt2       the checks on the exported program and the .pt2 archive written (to a file or to memory);
exporter  a live model exported and checked: the program and its headscan.json;
headscan_json  headscan.json checked as the runner reads it (analyzer/model/model_metadata.cpp);
memory    what an export no longer needs given back between its phases (garbage, glibc's heap), and
          garbage collections kept off the objects that outlive them;
output    OUT.pt2 checked before the export, staged beside it, renamed into place; SIGTERM, a full
          disk, staging folders of killed exports;
command   `headscan export`'s command line (python -m headscan export, or python -m _export).

This package imports nothing of headscan's (scripts/export_hf.py loads it as a top-level package,
without headscan's C++ core).
"""


class ExportError(Exception):
    """A reason the model cannot be exported, said to the user (exit 1)."""


class ExportInputError(ExportError):
    """The model directory or an option is wrong before anything runs, or the model is one that
    cannot be exported (exit 2)."""
