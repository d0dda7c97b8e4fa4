"""The parts of scripts/export_hf.py, one job each.

metadata  the tokenizer and what headscan.json says (name, bos_token, max_length);
model     the model: its size from the config, its class, loading it, the traced wrapper, inputs;
checks    what the archive must satisfy before it is saved (graph, attention rows, shapes, lengths,
          padding).
"""


class ExportError(Exception):
    """A reason the model cannot be exported, said to the user (exit 1)."""


class ExportInputError(ExportError):
    """The model directory or an option is wrong before anything runs (exit 2)."""
