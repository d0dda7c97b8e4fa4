"""The exporter to .pt2 (headscan export, headscan.export()): tiny models built here, no network.

A tiny random LlamaForCausalLM, eager and SDPA attention, exported: one observer per layer, the
layers in headscan.json, the program equal to the model at 9, 40 and 300 tokens; a hybrid's
layers without attention named by kind; what cannot be exported refused with the reason.

Run by pytest with the wheel installed (tests/python/run.sh), or without it, on the source tree's
exporter, as `.venv/bin/python tests/python/test_export.py` (the tests of headscan.export() and
scan() are then skipped).
"""

import json
import sys
import tempfile
import zipfile
from pathlib import Path

import torch

try:
    import headscan
    from headscan._export import ExportInputError, command, exporter, pt2
except ImportError:  # no wheel: the exporter of the source tree, without headscan's C++ core
    headscan = None
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analyzer" / "python" / "headscan"))
    from _export import ExportInputError, command, exporter, pt2

_PROGRAMS = {}


def tiny_llama(attention):
    import transformers

    config = transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attention).eval()


def exported_llama(attention):
    """(model, Exported) once per attention implementation."""
    if attention not in _PROGRAMS:
        model = tiny_llama(attention)
        _PROGRAMS[attention] = model, exporter.export_model(model, None, max_length=320, config=model.config,
                                                             metadata={"name": f"tiny-llama-{attention}"})
    return _PROGRAMS[attention]


def raises(error, text, function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except error as e:
        assert text in str(e), f"expected {text!r} in: {e}"
        return e
    raise AssertionError(f"{function.__name__} did not raise {error.__name__}")


def check_llama(attention):
    model, exported = exported_llama(attention)
    observed = [node for node in exported.program.graph_module.graph.nodes
                if node.op == "call_function" and str(node.target).startswith("headscan.")]
    op = "headscan.observe.default" if attention == "eager" else "headscan.attention.default"
    assert [str(node.target) for node in observed] == [op, op]
    assert [node.args[-1] for node in observed] == [0, 1]
    assert exported.layers == [{"index": 0, "path": "model.layers.0", "kind": "attention"},
                               {"index": 1, "path": "model.layers.1", "kind": "attention"}]
    assert exported.metadata["causal"] is True and exported.metadata["max_length"] == 320
    program = exported.program.module()
    with torch.no_grad():
        for length in (9, 40, 300):
            ids = (torch.arange(length) * 7 % 100).view(1, length)
            mask = torch.ones_like(ids)
            want = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            assert (program(ids, mask) - want).abs().max().item() < 1e-4, length
        # Another batch size, right-padded: the real tokens' logits as alone.
        ids = torch.stack([torch.arange(40) % 100, torch.arange(40) * 3 % 100])
        mask = torch.ones_like(ids)
        mask[1, 30:] = 0
        alone = model(input_ids=ids[1:, :30], attention_mask=mask[1:, :30], use_cache=False).logits
        assert (program(ids, mask)[1, :30] - alone[0]).abs().max().item() < 1e-4


def test_eager_llama_exports_with_an_observer_per_layer():
    check_llama("eager")


def test_sdpa_llama_exports_with_headscans_attention():
    check_llama("sdpa")


def test_the_archive_holds_headscan_json_with_the_layers(tmp_path):
    model, exported = exported_llama("eager")
    path = tmp_path / "tiny.pt2"
    pt2.package(str(path), exported.program, exporter.extra_files(exported, '{"model": {}}'))
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert "tiny/extra/tokenizer.json" in names and "tiny/models/model.json" in names
        metadata = json.loads(archive.read("tiny/extra/headscan.json"))
    assert metadata["name"] == "tiny-llama-eager" and metadata["n_kv_heads"] == 2
    assert [layer["kind"] for layer in metadata["layers"]] == ["attention", "attention"]
    assert not list(tmp_path.glob(".headscan-export.*"))  # the temporary folder is gone


class Feedforward(torch.nn.Module):
    """Stands for a layer without attention; its class name gives its kind."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return x + self.linear(x).tanh()


class GatedDeltaNet(Feedforward):
    pass


class MambaMixer(Feedforward):
    pass


class SelfAttention(torch.nn.Module):
    def __init__(self, softmaxes=1):
        super().__init__()
        self.query = torch.nn.Linear(8, 8)
        self.softmaxes = softmaxes

    def forward(self, x):
        q = self.query(x).view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2)
        scores = q @ q.transpose(-1, -2)
        length = x.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        for _ in range(self.softmaxes):
            probs = scores.softmax(-1)
            scores = probs.log().clamp(min=-1e4).masked_fill(~causal, float("-inf"))
        return x + (probs @ q).transpose(1, 2).reshape(x.shape)


class Layer(torch.nn.Module):
    def __init__(self, mixer):
        super().__init__()
        self.mixer = mixer

    def forward(self, x):
        return self.mixer(x)


class Hybrid(torch.nn.Module):
    """ids -> logits through layers of kinds: linear attention, attention, state space, MLP only."""

    def __init__(self, mixers):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = torch.nn.Embedding(50, 8)
        self.layers = torch.nn.ModuleList(Layer(m) for m in mixers)
        self.head = torch.nn.Linear(8, 50)

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def export_toy(model, **options):
    return exporter.export_model(model.eval(), None, max_length=options.pop("max_length", 80), takes_mask=False,
                                 **options)


def test_a_hybrids_layers_without_attention_are_named_by_kind():
    exported = export_toy(Hybrid([GatedDeltaNet(), SelfAttention(), MambaMixer(), Feedforward(), SelfAttention()]))
    kinds = [(layer["index"], layer["path"], layer["kind"]) for layer in exported.layers]
    assert kinds == [(0, "layers.0", "linear attention"), (1, "layers.1", "attention"),
                     (2, "layers.2", "state space"), (3, "layers.3", "none"), (4, "layers.4", "attention")]
    assert exported.numbers == [1, 4]
    assert exported.metadata["layers"] == exported.layers
    from_program = [node.args[-1] for node in exported.program.graph_module.graph.nodes
                    if str(node.target) == "headscan.observe.default"]
    assert from_program == [1, 4]


def test_lfm2s_convolution_layers_are_listed():
    import transformers

    config = transformers.Lfm2Config(vocab_size=100, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                     num_key_value_heads=2, max_position_embeddings=512, conv_L_cache=3,
                                     num_hidden_layers=4, layer_types=["conv", "full_attention", "conv",
                                                                       "full_attention"])
    torch.manual_seed(0)
    model = transformers.Lfm2ForCausalLM(config).eval()
    exported = exporter.export_model(model, None, max_length=80, config=config)
    assert [layer["kind"] for layer in exported.layers] == ["convolution", "attention", "convolution", "attention"]
    assert exported.numbers == [1, 3] and exported.exact[-1] == 80


class RotatingAttention(SelfAttention):
    """Attention whose keys turn by a complex rotation (Llama 4's rotary embedding) and whose mask
    comes from tensor // block (Llama 4's chunked attention)."""

    def forward(self, x):
        length = x.shape[1]
        positions = torch.arange(length, device=x.device)
        angles = torch.polar(torch.ones(length, 2), positions[:, None].float() * torch.tensor([0.1, 0.01]))
        turned = torch.view_as_real(torch.view_as_complex(self.query(x).view(x.shape[0], length, 4, 2)) *
                                    angles.repeat(1, 2) * 1.0).flatten(2)
        q = turned.view(x.shape[0], length, 2, 4).transpose(1, 2)
        same_block = (positions[:, None] // 4) == (positions[None, :] // 4)
        visible = same_block & (positions[:, None] >= positions[None, :])
        probs = (q @ q.transpose(-1, -2)).masked_fill(~visible, float("-inf")).softmax(-1)
        return x + (probs @ q).transpose(1, 2).reshape(x.shape)


def test_numbers_and_complex_products_are_written_for_nativert():
    model = Hybrid([RotatingAttention()]).eval()
    exported = export_toy(model)
    for node in exported.program.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        tensors = [a.name for a in node.target._schema.arguments if isinstance(a.type, torch.TensorType)]
        given = dict(zip([a.name for a in node.target._schema.arguments], node.args), **node.kwargs)
        assert not any(isinstance(given.get(name), (int, float)) for name in tensors), node.format_node()
        if node.target in (torch.ops.aten.mul.Tensor, torch.ops.aten.mul.Scalar):
            assert not node.args[0].meta["val"].is_complex(), node.format_node()
    ids = torch.arange(30).view(1, 30) % 50
    with torch.no_grad():
        assert (exported.program.module()(ids) - model(ids)).abs().max().item() < 1e-5


def test_a_layer_with_two_softmaxes_is_refused():
    raises(ExportInputError, "layer 1 (layers.1) has 2 attention softmaxes", export_toy,
           Hybrid([Feedforward(), SelfAttention(softmaxes=2)]))


class BranchOnValues(Hybrid):
    def forward(self, input_ids):
        if input_ids.sum() > 100:  # Python control flow on the ids' values
            return super().forward(input_ids)
        return super().forward(input_ids) * 2


class BranchOnLength(Hybrid):
    def forward(self, input_ids):
        output = super().forward(input_ids)
        if input_ids.shape[1] > 40:  # a different computation above 40 tokens
            return output * 2
        return output


def test_data_dependent_control_flow_is_refused():
    raises(ExportInputError, "data-dependent control flow", export_toy, BranchOnValues([SelfAttention()]))
    error = raises(ExportInputError, "data-dependent control flow", export_toy, BranchOnLength([SelfAttention()]))
    assert "holds lengths of 2 to 40 tokens only" in str(error) and "--max-length 40" in str(error)


def test_a_model_without_attention_is_refused():
    raises(ExportInputError, "no attention softmax", export_toy, Hybrid([Feedforward()]))


def test_the_command_refuses_what_it_cannot_write(tmp_path):
    code = command.main([str(tmp_path / "missing"), str(tmp_path / "out.pt2")])
    assert code == 2 and not (tmp_path / "out.pt2").exists()
    (tmp_path / "model").mkdir()
    assert command.main([str(tmp_path / "model"), str(tmp_path / "out.pt")]) == 2


def wheel_only(test):
    """A test of headscan.export() or scan(): skipped by main() without the wheel."""
    test.wheel_only = True
    return test


@wheel_only
def test_headscan_export_writes_a_file_and_an_archive_in_memory(tmp_path):
    model = tiny_llama("sdpa")
    path = headscan.export(model, tmp_path / "tiny.pt2", metadata={"name": "tiny"}, max_length=80)
    with zipfile.ZipFile(path) as archive:
        metadata = json.loads(archive.read("tiny/extra/headscan.json"))
    assert metadata["name"] == "tiny" and len(metadata["layers"]) == 2
    with headscan.export(model, max_length=80) as archive:
        assert archive.path.startswith("/proc/self/fd/") and zipfile.is_zipfile(archive.path)
        assert [layer["kind"] for layer in archive.layers] == ["attention", "attention"]
    raises(headscan.InputError, "no attention softmax", headscan.export, Hybrid([Feedforward()]))


@wheel_only
def test_scan_of_a_module_equals_the_command_line_on_its_export(tmp_path, corpus_file, demo_tokenizer):
    from conftest import load_json, run_cli, without_run

    model = tiny_llama("sdpa")
    metadata = {"name": "tiny"}
    path = headscan.export(model, tmp_path / "tiny.pt2", tokenizer=demo_tokenizer, metadata=metadata, max_length=64)
    flags = ["--parser", "none", "--max-sequences", "12", "--seed", "3"]
    run_cli(path, corpus_file, "-o", tmp_path / "cli", "-q", *flags)
    report = headscan.scan(model, corpus_file, tokenizer=demo_tokenizer, metadata=metadata, max_length=64,
                           parser="none", max_sequences=12, seed=3, progress=False)
    cli = without_run(load_json(tmp_path / "cli" / "heads.json"))
    live = without_run(report.json)
    # Only where the model and its tokenizer were read from differs: the module (named by its class,
    # as a ScriptModule is), a file.
    assert live["model"].pop("path") == "<LlamaForCausalLM>" and cli["model"].pop("path") == str(path)
    assert live["model"].pop("tokenizer").startswith("WordLevel, 62 tokens")
    assert cli["model"].pop("tokenizer").startswith("WordLevel, 62 tokens")
    assert live == cli
    assert [layer["index"] for layer in live["model"]["layers"]] == [0, 1]


def main():
    """The tests above without pytest (tmp_path a temporary folder each)."""
    tests = [(name, test) for name, test in globals().items() if name.startswith("test_") and callable(test)]
    for name, test in tests:
        parameters = test.__code__.co_varnames[:test.__code__.co_argcount]
        if headscan is None and getattr(test, "wheel_only", False) or set(parameters) - {"tmp_path"}:
            print(f"skipped {name} (pytest with the wheel)")
            continue
        with tempfile.TemporaryDirectory() as folder:
            test(*([Path(folder)] if parameters else []))
        print(f"ok {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
