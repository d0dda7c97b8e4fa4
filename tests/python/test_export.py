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
    from headscan._export import (ExportInputError, attention, checks, command, exporter, headscan_attention, metadata,
                                  ops, pt2)
    from headscan._export import model as model_module
except ImportError:  # no wheel: the exporter of the source tree, without headscan's C++ core
    headscan = None
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analyzer" / "python" / "headscan"))
    from _export import ExportInputError, attention, checks, command, exporter, headscan_attention, metadata, ops, pt2
    from _export import model as model_module

_PROGRAMS = {}


def tiny_llama(implementation, config_class="LlamaConfig", **fields):
    """A tiny random model of Llama's shape (4 query heads, 2 key/value heads); "headscan" is loaded
    with SDPA attention and switched, as headscan export does."""
    import transformers

    config = getattr(transformers, config_class)(vocab_size=100, hidden_size=32, intermediate_size=64,
                                                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                 max_position_embeddings=512, **fields)
    torch.manual_seed(0)
    loaded = "sdpa" if implementation == "headscan" else implementation
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=loaded).eval()
    if implementation == "headscan":
        headscan_attention.register()
        model.set_attn_implementation("headscan")
    return model


def exported_llama(implementation):
    """(model, Exported) once per attention implementation."""
    if implementation not in _PROGRAMS:
        model = tiny_llama(implementation)
        _PROGRAMS[implementation] = model, exporter.export_model(model, None, max_length=320, config=model.config,
                                                                  metadata={"name": f"tiny-llama-{implementation}"})
    return _PROGRAMS[implementation]


def raises(error, text, function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except error as e:
        assert text in str(e), f"expected {text!r} in: {e}"
        return e
    raise AssertionError(f"{function.__name__} did not raise {error.__name__}")


def check_llama(implementation):
    model, exported = exported_llama(implementation)
    observed = observed_nodes(exported)
    op = "headscan.observe.default" if implementation == "eager" else "headscan.attention.default"
    assert [str(node.target) for node in observed] == [op, op]
    assert [node.args[-1] for node in observed] == [0, 1]
    assert exported.layers == [{"index": 0, "path": "model.layers.0", "kind": "attention"},
                               {"index": 1, "path": "model.layers.1", "kind": "attention"}]
    assert exported.metadata["causal"] is True and exported.metadata["max_length"] == 320
    assert exported.metadata["attention"] == implementation and "attention_reason" not in exported.metadata
    program = pt2.Recorder(exported.program, record=False)
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
        # transformers' logits_to_keep: the program computes the logits of the rows it is given only.
        assert pt2.takes_logits_rows(exported.program)
        rows = torch.tensor([0, 17, 29, 39])
        whole = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        at_rows = program(ids, mask, rows)
        assert at_rows.shape == (2, 4, whole.shape[-1])
        assert (at_rows - whole[:, rows]).abs().max().item() < 1e-4


def test_eager_llama_exports_with_an_observer_per_layer():
    check_llama("eager")


def test_sdpa_llama_exports_with_headscans_attention():
    check_llama("sdpa")


def observed_nodes(exported):
    return [node for node in exported.program.graph_module.graph.nodes
            if node.op == "call_function" and str(node.target).startswith("headscan.")]


def attention_arguments(node):
    """headscan::attention's arguments by name: tensors as their (symbolic) sizes."""
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa", "layer")
    return {name: list(value.meta["val"].shape) if isinstance(value, torch.fx.Node) else value
            for name, value in zip(names, node.args)}


def test_llama_with_headscans_attention_takes_no_t_by_t_mask_and_no_repeated_heads():
    check_llama("headscan")
    model, exported = exported_llama("headscan")
    for node in observed_nodes(exported):
        arguments = attention_arguments(node)
        batch, heads, length, _ = arguments["query"]
        # The keys' padding broadcast over the queries, the causal rule, 2 key/value heads for 4.
        assert arguments["attn_mask"][1:] == [1, 1, length] and arguments["is_causal"] is True
        assert arguments["key"][:2] == [batch, 2] and arguments["value"][:2] == [batch, 2] and heads == 4
        assert arguments["enable_gqa"] is True
    # With SDPA attention: transformers' [B, 1, T, T] mask and the key/value heads repeated.
    for node in observed_nodes(exported_llama("sdpa")[1]):
        arguments = attention_arguments(node)
        assert arguments["attn_mask"][-2:] == arguments["query"][2:3] * 2 and arguments["key"][1] == 4


def test_without_an_attention_mask_headscans_attention_takes_no_t_by_t_mask():
    # transformers would look for packed sequences in the positions and make a [B, 1, T, T] mask.
    model = tiny_llama("headscan")
    exported = exporter.export_model(model, None, max_length=64, takes_mask=False, config=model.config,
                                     metadata={"name": "no-mask"})
    assert exported.metadata["attention"] == "headscan"
    for node in observed_nodes(exported):
        arguments = attention_arguments(node)
        assert arguments["attn_mask"][1:] == [1, 1, arguments["query"][2]] and arguments["is_causal"] is True
        assert arguments["enable_gqa"] is True
    ids = (torch.arange(40) * 7 % 100).view(1, 40)
    with torch.no_grad():
        model.set_attn_implementation("eager")
        want = model(input_ids=ids, use_cache=False).logits
    assert (pt2.Recorder(exported.program, record=False)(ids) - want).abs().max().item() < 1e-4


WINDOWED = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa", "layer",
            "window_left", "window_right", "chunk", "softcap", "sinks")


def windowed_arguments(node):
    """headscan::attention.windowed's arguments by name: tensors as their (symbolic) sizes."""
    return {name: list(value.meta["val"].shape) if isinstance(value, torch.fx.Node) else value
            for name, value in zip(WINDOWED, node.args)}


def test_a_sliding_window_is_the_ops_window_over_the_keys_padding():
    # transformers' sliding_window_causal_mask_function(8): key j seen by query i when i - 8 < j <= i.
    model = tiny_llama("headscan", config_class="MistralConfig", sliding_window=8)
    exported = exporter.export_model(model, None, max_length=64, config=model.config, metadata={"name": "mistral"})
    assert exported.metadata["attention"] == "headscan" and len(observed_nodes(exported)) == 2
    # The export compared the program with the model at lengths beyond the window (12, 17 and 64).
    assert sum(length > 8 for length in exported.exact) >= 2
    for node in observed_nodes(exported):
        assert str(node.target) == "headscan.attention.windowed"
        arguments = windowed_arguments(node)
        assert arguments["attn_mask"][1:] == [1, 1, arguments["query"][2]] and arguments["is_causal"] is True
        assert (arguments["window_left"], arguments["window_right"], arguments["chunk"]) == (7, -1, 0)
        assert arguments["softcap"] is None and arguments["sinks"] is None
        assert arguments["key"][1] == 2 and arguments["enable_gqa"] is True
    program = pt2.Recorder(exported.program, record=False)
    with torch.no_grad():
        for length in (5, 8, 9, 40):  # shorter than, equal to and beyond the window
            ids = (torch.arange(length) * 7 % 100).view(1, length)
            mask = torch.ones_like(ids)
            model.set_attn_implementation("eager")
            want = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            model.set_attn_implementation("headscan")
            assert (program(ids, mask) - want).abs().max().item() < 1e-4, length


def test_mask_rules_of_transformers_mask_functions():
    from transformers import masking_utils as mu

    rule = headscan_attention.mask_rule
    assert rule(mu.causal_mask_function) == (True, -1, -1, 0)
    assert rule(mu.bidirectional_mask_function) == (False, -1, -1, 0)
    assert rule(mu.sliding_window_causal_mask_function(16)) == (True, 15, -1, 0)
    assert rule(mu.sliding_window_bidirectional_mask_function(8)) == (False, 8, 8, 0)
    assert rule(mu.chunked_causal_mask_function(32, torch.zeros(1, dtype=torch.long))) == (True, -1, -1, 32)
    # A mask function of something else (packed sequences, padding given as a function) is not the op's.
    assert rule(mu.and_masks(mu.causal_mask_function, mu.padding_mask_function(torch.ones(1, 4)))) is None
    assert rule(mu.or_masks(mu.causal_mask_function, mu.bidirectional_mask_function)) is None
    # Each rule as sdpa_mask makes it, key by key, is the op's hidden_keys, at lengths across it.
    padding = torch.ones(2, 23, dtype=torch.long)
    padding[1, :3] = 0  # left padding: Llama 4's chunks count from the first real key
    for function in (mu.sliding_window_causal_mask_function(5), mu.sliding_window_bidirectional_mask_function(3),
                     mu.chunked_causal_mask_function(6, (padding.cumsum(-1) == 0).sum(-1))):
        for length in (3, 5, 6, 23):
            keys = padding[:, :length]
            want = mu.sdpa_mask(batch_size=2, q_length=length, kv_length=length, mask_function=function,
                                attention_mask=keys.bool(), allow_is_causal_skip=False)
            causal, left, right, chunk = rule(function)
            padded = keys.bool()[:, None, None, :]
            hidden = ops.hidden_keys(length, length, causal, left, right, chunk, padded)
            assert torch.equal(hidden.logical_not() & padded, want), (function, length)


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


def test_the_archive_holds_the_attention_program_on_the_models_weights(tmp_path):
    """models/attention.json: the program up to its last observer, on the model's own weight records
    (each stored once), without the weights only later layers read (the final norm, lm_head)."""
    from torch.export.pt2_archive._package import load_pt2

    for implementation in ("eager", "headscan"):
        model, exported = exported_llama(implementation)
        path = tmp_path / f"tiny-{implementation}.pt2"
        pt2.package(str(path), exported.program, exporter.extra_files(exported, '{"model": {}}'))
        top = f"tiny-{implementation}"
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            weights = json.loads(archive.read(f"{top}/data/weights/model_weights_config.json"))["config"]
            cut = json.loads(archive.read(f"{top}/data/weights/attention_weights_config.json"))["config"]
        assert f"{top}/models/attention.json" in names
        assert set(cut) < set(weights) and "lm_head.weight" not in cut and "model.norm.weight" not in cut
        assert all(cut[name]["path_name"] == weights[name]["path_name"] for name in cut)
        records = [name for name in names if name.startswith(f"{top}/data/weights/weight_")]
        assert len(records) == len({entry["path_name"] for entry in weights.values()})  # no copy
        programs = load_pt2(str(path)).exported_programs
        ids = (torch.arange(80) * 7 % 100).view(2, 40)
        mask = torch.ones_like(ids)
        mask[1, 30:] = 0
        recorder = pt2.Recorder(exported.program)
        recorder(ids, mask)
        last = recorder.attentions[-1]
        ends = pt2.Recorder(programs["attention"], record=False)(ids, mask)
        if implementation == "eager":  # headscan::observe returns the probabilities
            assert (ends.float() - last).abs().max().item() == 0
        else:  # headscan::attention returns its output, [B, H, T, D]
            assert ends.shape[:3] == last.shape[:3]
        assert "headscan.observe" in str(programs["attention"].graph) or "headscan.attention" in str(
            programs["attention"].graph)
        last_node = [node for node in programs["attention"].graph.nodes if node.op == "call_function"][-1]
        assert str(last_node.target).startswith("headscan.")


def test_weight_records_hold_exactly_what_their_tensors_read(tmp_path):
    """torch.export writes a tensor's whole storage as its record; a weight that views part of a
    larger storage is copied to its own first (attention_program.compact_weights), so that every
    record holds exactly the bytes its tensors read, as headscan requires of an archive."""
    model = tiny_llama("eager")
    with torch.no_grad():  # q_proj.weight: rows 2 .. 33 of a larger tensor, an offset into its storage
        attention = model.model.layers[0].self_attn
        larger = torch.cat([torch.zeros(2, 32), attention.q_proj.weight, torch.zeros(5, 32)])
        attention.q_proj.weight = torch.nn.Parameter(larger[2:34])
    exported = exporter.export_model(model, None, max_length=80, config=model.config, metadata={"name": "views"})
    path = tmp_path / "views.pt2"
    pt2.package(str(path), exported.program, exporter.extra_files(exported, '{"model": {}}'))
    with zipfile.ZipFile(path) as archive:
        for program in ("model", "attention"):
            config = json.loads(archive.read(f"views/data/weights/{program}_weights_config.json"))["config"]
            needed = {}
            for entry in config.values():
                meta = entry["tensor_meta"]
                sizes = [size["as_int"] for size in meta["sizes"]]
                strides = [stride["as_int"] for stride in meta["strides"]]
                last = meta["storage_offset"]["as_int"] + sum((n - 1) * s for n, s in zip(sizes, strides))
                item = {6: 2, 7: 4, 8: 8, 13: 2}[meta["dtype"]]
                needed[entry["path_name"]] = max(needed.get(entry["path_name"], 0), (last + 1) * item)
            for record, size in needed.items():
                assert archive.getinfo(f"views/data/weights/{record}").file_size == size, (program, record)


def test_the_archive_holds_the_programs_weights_as_they_are_in_memory(tmp_path):
    """The weight records are written from the tensors' storages (no bytes copy, no pickled state
    dict): the archive loads back to the program's weights, byte for byte, and torch's packaging
    functions are left as they were."""
    from torch._export.serde import serialize as serde
    from torch.export.pt2_archive import _package

    before = _package._get_raw_tensor_bytes, serde.serialize_torch_artifact
    model, exported = exported_llama("headscan")
    path = tmp_path / "weights.pt2"
    pt2.package(str(path), exported.program, exporter.extra_files(exported, '{"model": {}}'))
    assert (_package._get_raw_tensor_bytes, serde.serialize_torch_artifact) == before
    loaded = _package.load_pt2(str(path)).exported_programs["model"]
    for name, tensor in exported.program.state_dict.items():
        assert torch.equal(loaded.state_dict[name], tensor), name
    outputs = [pt2.Recorder(program, record=False)(torch.tensor([[1, 5, 9, 2]]), torch.ones(1, 4, dtype=torch.long))
               for program in (exported.program, loaded)]
    assert torch.equal(outputs[0], outputs[1])


def test_the_length_checks_keep_no_attention_probabilities():
    """At the checks' lengths (record=False) headscan::attention runs as scaled_dot_product_attention,
    its causal rule and the keys' padding as one mask, and keeps no probabilities: the output is
    the math form's, with padding and without."""
    model, exported = exported_llama("headscan")
    ids = (torch.arange(80) * 7 % 100).view(2, 40)
    mask = torch.ones_like(ids)
    mask[1, 25:] = 0
    for inputs in ((ids, mask), (ids[:1], mask[:1])):
        lean = pt2.Recorder(exported.program, record=False)
        output = lean(*inputs)
        assert lean.attentions == []
        recorder = pt2.Recorder(exported.program)
        assert checks.close(output, recorder(*inputs), torch.float32)
        assert len(recorder.attentions) == 2
    query, key, value = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)
    padding = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], dtype=torch.bool)[:, None, None, :]
    additive = torch.zeros(padding.shape).masked_fill(~padding, float("-inf"))
    for attn_mask in (padding, additive):
        want = pt2.attention_math(query, key, value, attn_mask, 0.0, True, None, True)[0]
        got = torch.nn.functional.scaled_dot_product_attention(query, key, value,
                                                               attn_mask=pt2.causal_mask(attn_mask, 6, 6),
                                                               enable_gqa=True)
        assert (got - want).abs().max().item() < 1e-6


def test_the_longest_lengths_model_output_is_computed_once():
    """The two checks of the lengths (before the decomposition and after) share the model's output
    at the longest length: the model runs there once."""
    model, exported = exported_llama("headscan")
    calls = []

    class Counted(exporter.RowsWrapper):
        def forward(self, input_ids, attention_mask=None, logits_rows=None):
            calls.append(input_ids.shape[1])
            return super().forward(input_ids, attention_mask, logits_rows)

    wrapper = Counted(model, True).eval()
    references = {}
    for _ in range(2):
        with torch.no_grad():
            exact = pt2.check_lengths(pt2.Recorder(exported.program, record=False), wrapper, exporter.NoTokenizer(),
                                      None, 100, lambda rows: model_module.padded_batch(rows, 0), torch.float32,
                                      blocks={64: "a chunk"}, lengths=[64, 65, 256], exact={12, 17},
                                      example_length=10, references=references)
        assert exact == [12, 17, 64, 65, 256]
    assert calls == [64, 65, 256, 64, 65] and references == {}


def test_logits_are_told_from_the_models_head_not_the_tokenizers_count():
    """A tokenizer with added tokens beyond the embedding (Gemma 3's has one more than its 262,144
    rows) keeps the model's logits: their width is its head's rows; headscan.json says so."""
    from_model = model_module.missing_outputs
    model, exported = exported_llama("eager")  # vocabulary 100
    assert exported.metadata["logits"] is True
    assert from_model(model, torch.zeros(1, 3, 100), 101, True) is None
    assert from_model(model, torch.zeros(1, 3, 100), 100, True) is None
    assert "hidden states" in from_model(model, torch.zeros(1, 3, 32), 101, True)


def tiny_gemma2(softcapping):
    import transformers

    config = transformers.Gemma2Config(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                       max_position_embeddings=512, query_pre_attn_scalar=8,
                                       attn_logit_softcapping=softcapping, final_logit_softcapping=None)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()


def chosen_attention(model, requested="auto", dtype=torch.float32):
    """attention.exact_attention on a padded batch of 65 and 60 tokens: (model, attention, why)."""
    ids = torch.arange(65).view(1, 65).repeat(2, 1) * 7 % 100
    mask = torch.ones_like(ids)
    mask[1, 60:] = 0

    def run(each):
        return exporter.Wrapper(each, takes_mask=True).eval()(ids, mask)[mask.bool()]

    def load_eager():
        raise AssertionError("a model transformers can switch is not loaded again")

    return attention.exact_attention(model, requested, run, load_eager, dtype)


def test_headscans_attention_is_chosen_where_it_computes_what_eager_attention_does():
    model = tiny_llama("sdpa")
    chosen, kind, why = chosen_attention(model)
    assert chosen is model and kind == "headscan" and why is None
    assert model.config._attn_implementation == "headscan"
    # Gemma 2 without soft-capping is SDPA's too, so headscan's.
    assert chosen_attention(tiny_gemma2(None))[1:] == ("headscan", None)


def test_headscans_attention_that_differs_from_eager_attention_keeps_sdpa():
    original = headscan_attention.attention_forward

    def shifted(*args, **kwargs):
        output, _ = original(*args, **kwargs)
        return output + 0.01, None

    headscan_attention.attention_forward = shifted  # what register() registers
    try:
        model = tiny_llama("sdpa")
        chosen, kind, why = chosen_attention(model)
    finally:
        headscan_attention.attention_forward = original
        headscan_attention.register()
    assert chosen is model and kind == "sdpa" and model.config._attn_implementation == "sdpa"
    assert why.startswith("its output with headscan's attention differs from eager attention's by ")


def test_bfloat16_is_compared_in_float32_and_restored_exactly():
    model = tiny_llama("sdpa", initializer_range=0.5).to(torch.bfloat16)
    before = {name: tensor.clone() for name, tensor in (*model.named_parameters(), *model.named_buffers())}
    # In bfloat16 the two attentions' logits differ by their rounding, beyond the bfloat16 tolerance.
    chosen, kind, why = chosen_attention(model, dtype=torch.bfloat16)
    assert chosen is model and kind == "headscan" and why is None
    after = dict((*model.named_parameters(), *model.named_buffers()))
    assert before.keys() == after.keys()
    for name, tensor in before.items():
        assert after[name].dtype == tensor.dtype and torch.equal(after[name], tensor), name


def test_soft_capping_is_headscans_attention():
    # SDPA ignores Gemma 2's soft-capping; headscan::attention.windowed computes it.
    model = tiny_gemma2(50.0)
    chosen, kind, why = chosen_attention(model)
    assert chosen is model and kind == "headscan" and why is None
    assert model.config._attn_implementation == "headscan"
    # --attention sdpa keeps it, unchecked.
    assert chosen_attention(tiny_gemma2(50.0), "sdpa")[1:] == ("sdpa", None)


def test_soft_capping_headscan_cannot_compute_keeps_eager_attention():
    original = headscan_attention.attention_forward

    def uncapped(*args, softcap=None, **kwargs):  # a headscan attention that drops the soft-capping
        return original(*args, **kwargs)

    headscan_attention.attention_forward = uncapped
    try:
        model = tiny_gemma2(1e-4)  # scores of a random model are small: a cap below them
        chosen, kind, why = chosen_attention(model)
    finally:
        headscan_attention.attention_forward = original
        headscan_attention.register()
    assert chosen is model and kind == "eager" and model.config._attn_implementation == "eager"
    assert "soft-capping" in why and "headscan's attention differs from eager attention's" in why


def test_an_output_that_differs_from_eager_attention_keeps_eager():
    output = torch.ones(1, 4, 10)
    assert attention.sdpa_difference(lambda: output, lambda: output + 1e-6, torch.float32) is None
    why = attention.sdpa_difference(lambda: output, lambda: output + 1e-2, torch.float32)
    assert why == "its output with SDPA attention differs from eager attention's by 0.01"
    why = attention.sdpa_difference(lambda: output, lambda: output[:, :3], torch.float32)
    assert why == "its output with SDPA attention is [1, 4, 10], with eager attention [1, 3, 10]"


def test_max_lengths_default_is_the_models_positions_with_sdpa_attention(tmp_path):
    import argparse
    import transformers

    config = transformers.LlamaConfig(max_position_embeddings=131072)
    args = argparse.Namespace(max_length=None, max_length_cap=None)
    assert metadata.choose_max_length(args, config, str(tmp_path), "sdpa") == \
        (131072, "config.json max_position_embeddings")
    assert metadata.choose_max_length(args, config, str(tmp_path), "eager") == \
        (1024, "--max-length-cap's default for eager attention, 1024")
    (tmp_path / "tokenizer_config.json").write_text('{"model_max_length": 32768}')
    assert metadata.choose_max_length(args, config, str(tmp_path), "sdpa") == \
        (32768, "tokenizer_config.json model_max_length")
    args.max_length_cap = 4096
    assert metadata.choose_max_length(args, config, str(tmp_path), "sdpa") == (4096, "--max-length-cap")
    no_positions = transformers.PretrainedConfig()
    assert metadata.choose_max_length(argparse.Namespace(max_length=None, max_length_cap=None), no_positions,
                                      str(tmp_path / "none"), "sdpa")[0] == 1024


def test_the_length_checks_stop_at_4096_tokens():
    chunk = {64: "a chunk"}
    assert checks.lengths_to_check(chunk, 131072, 17) == [64, 65, 256]
    assert checks.lengths_to_check({**chunk, 4096: "a window"}, 131072, 17) == [64, 65, 4096, 4097]
    assert checks.lengths_to_check({**chunk, 8192: "a window"}, 131072, 17) == [64, 65, 4096]
    assert checks.lengths_to_check({**chunk, 4096: "a window"}, 300, 17) == [64, 65, 300]


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
        assert (pt2.Recorder(exported.program, record=False)(ids) - model(ids)).abs().max().item() < 1e-5


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
def test_a_live_modules_default_max_length_follows_its_attention():
    from headscan import _live_export

    for implementation, expected in (("sdpa", 4096), ("eager", 1024)):
        import transformers

        config = transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                          num_attention_heads=4, max_position_embeddings=4096)
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=implementation)
        assert _live_export._max_length(model, None) == expected, implementation


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
