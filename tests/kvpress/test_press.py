"""headscan.kvpress: headscan's KV-cache plan applied by kvpress 0.5.5 in transformers generation.

A Llama with planted local and uniform heads (planted_llama.py) is exported and analysed by
headscan (the wheel's export() and scan(), --sink 2 --window 8), and the press built from the
report directory is applied to a fresh copy of the model: after the prefill, each streaming
key/value head has exactly its prompt's middle keys (between the sink and the recent window) masked
out of every later attention and overwritten in the cache, each full head keeps all of them, and
the decoding step's logits do not depend on what the masked cache held. Run in the kvpress venv
(tests/kvpress/run.sh).
"""

import copy
import json
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tokenizers
import torch
import transformers

import headscan
import headscan.kvpress as headscan_kvpress
from planted_llama import STREAMING_KV_HEADS, planted_llama

ROOT = Path(__file__).resolve().parents[2]
SINK, WINDOW = 2, 8
PROMPT = 40  # tokens of the prompt the press compresses: longer than SINK + WINDOW


@pytest.fixture(scope="module")
def tokenizer() -> tokenizers.Tokenizer:
    """The demo's WordLevel tokenizer (62 tokens), read out of data/demo.pt."""
    with zipfile.ZipFile(ROOT / "data" / "demo.pt") as archive:
        name = next(n for n in archive.namelist() if n.endswith("extra/tokenizer.json"))
        return tokenizers.Tokenizer.from_str(archive.read(name).decode("utf-8"))


@pytest.fixture(scope="module")
def scanned(tokenizer) -> headscan.Report:
    """headscan's Report of the planted model: 16 documents of 60 words, 64 tokens."""
    words = sorted(word for word in tokenizer.get_vocab() if word.isalnum())
    rng = random.Random(0)
    corpus = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(16)]
    archive = headscan.export(planted_llama(tokenizer.get_vocab_size()), tokenizer=tokenizer, max_length=64)
    return headscan.scan(archive, corpus, parser="none", sink=SINK, window=WINDOW, needle_lengths=[48],
                         thresholds={"streaming": 0.5}, progress=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory, scanned) -> Path:
    return scanned.save(tmp_path_factory.mktemp("planted") / "report", html=False, plots=False)


@pytest.fixture()
def model(tokenizer) -> transformers.LlamaForCausalLM:
    return planted_llama(tokenizer.get_vocab_size())


def prompt(vocab_size: int) -> torch.Tensor:
    return torch.randint(0, vocab_size, (1, PROMPT), generator=torch.Generator().manual_seed(1))


def prefill(model, ids, press=None) -> transformers.DynamicCache:
    cache = transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        if press is None:
            model(ids, past_key_values=cache, use_cache=True)
        else:
            with press(model):
                model(ids, past_key_values=cache, use_cache=True)
    return cache


def decode(model, cache, token=7) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([[token]]), past_key_values=cache, use_cache=True).logits[0, -1]


def middle(streaming: list) -> torch.Tensor:
    """bool [key/value heads, PROMPT]: the keys a streaming head drops, between sink and window."""
    dropped = torch.zeros(len(streaming), PROMPT, dtype=torch.bool)
    for head, streams in enumerate(streaming):
        if streams:
            dropped[head, SINK:PROMPT - WINDOW] = True
    return dropped


def test_the_report_plans_the_planted_heads(report, scanned):
    plan = json.loads((report / "heads.json").read_text())["kv_plan"]
    assert (plan["sink_size"], plan["recent_size"]) == (SINK, WINDOW)
    assert plan["full_attention_heads"] == [[0, 1], [1, 0]]
    assert (report / "kv_plan" / "full_attention_heads.tsv").read_text() == "0\t1\n1\t0\n"
    assert headscan_kvpress.streaming_mask(report).tolist() == STREAMING_KV_HEADS
    assert headscan_kvpress.streaming_mask(scanned).tolist() == STREAMING_KV_HEADS
    assert headscan_kvpress.streaming_mask(report / "heads.json").tolist() == STREAMING_KV_HEADS
    assert headscan_kvpress.plan(report).layers == (0, 1)


def test_streaming_heads_keep_the_sink_and_the_window_and_full_heads_everything(report, model):
    press = headscan_kvpress.press(report)
    assert (press.sink_size, press.recent_size, press.head_compression_ratio) == (SINK, WINDOW, 0.5)
    ids = prompt(model.config.vocab_size)
    cache = prefill(model, ids, press)
    kept_before = [layer.keys.clone() for layer in cache.layers]
    for index, layer in enumerate(model.model.layers):
        batch, heads, positions = layer.self_attn.masked_key_indices
        masked = torch.zeros(2, PROMPT, dtype=torch.bool)
        masked[heads, positions] = True
        assert batch.eq(0).all()
        assert torch.equal(masked, middle(STREAMING_KV_HEADS[index])), index
    decode(model, cache)
    # The decoding step writes kvpress's fake keys over the masked ones: the cache holds no more of them.
    for index, (before, layer) in enumerate(zip(kept_before, cache.layers)):
        changed = (layer.keys[0, :, :PROMPT] != before[0]).any(dim=-1)
        assert torch.equal(changed, middle(STREAMING_KV_HEADS[index])), index
    assert press.compression_ratio == pytest.approx(0.5 * (1 - (SINK + WINDOW) / PROMPT))


def test_what_a_streaming_head_drops_does_not_reach_the_logits(report, model):
    """A value changed in the cache after the prefill: with the press, one between a streaming
    head's sink and window changes nothing (without it, it does); one that a head keeps (a full
    head's, a streaming head's window) changes the logits."""
    press = headscan_kvpress.press(report)
    ids = prompt(model.config.vocab_size)

    def logits(pressed, layer=None, head=None, position=None):
        cache = prefill(model, ids, press if pressed else None)
        if layer is not None:
            cache.layers[layer].values[0, head, position] += 10.0
        return decode(model, cache)

    pressed, plain = logits(True), logits(False)
    dropped = PROMPT - WINDOW - 1  # the last key before the window: a local head's heaviest dropped key
    for layer, streaming in enumerate(STREAMING_KV_HEADS):
        for head, streams in enumerate(streaming):
            if streams:
                assert torch.equal(logits(True, layer, head, dropped), pressed), (layer, head)
                assert not torch.allclose(logits(False, layer, head, dropped), plain, rtol=0, atol=1e-5)
                kept = PROMPT - 1
            else:
                kept = dropped
            assert not torch.allclose(logits(True, layer, head, kept), pressed, rtol=0, atol=1e-5), (layer, head)


def test_generate_with_the_press_decodes_as_the_pressed_cache(report, model):
    press = headscan_kvpress.press(report)
    ids = prompt(model.config.vocab_size)
    with torch.no_grad(), press(model):
        generated = model.generate(ids, max_new_tokens=4, do_sample=False, pad_token_id=0)
    cache = transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        with press(model):
            token = model(ids, past_key_values=cache, use_cache=True).logits[0, -1].argmax().item()
        greedy = [token]
        for _ in range(3):
            greedy.append(decode(model, cache, greedy[-1]).argmax().item())
    assert generated[0, PROMPT:].tolist() == greedy


def test_head_compression_ratio_streams_the_heads_of_highest_streaming_score(report, model):
    # Planted local key/value heads score ≈ 0.96 (the least of their query heads'), the others ≈ 0.35.
    assert headscan_kvpress.streaming_mask(report, 0.5).tolist() == STREAMING_KV_HEADS
    assert headscan_kvpress.streaming_mask(report, 0.25).tolist() == [[True, False], [False, False]]
    assert headscan_kvpress.streaming_mask(report, 0).tolist() == [[False, False], [False, False]]
    heads = json.loads((report / "heads.json").read_text())["heads"]
    score = {(h["layer"], h["kv_group"]): min(g["scores"]["streaming"] for g in heads
                                              if (g["layer"], g["kv_group"]) == (h["layer"], h["kv_group"]))
             for h in heads}
    third = max([(0, 1), (1, 0)], key=lambda cell: (score[cell], -cell[0]))
    three = headscan_kvpress.streaming_mask(report, 0.75)
    assert three.sum() == 3 and three[third] and three[0, 0] and three[1, 1]

    press = headscan_kvpress.press(report, head_compression_ratio=0.25, sink_size=1, recent_size=4)
    assert (press.sink_size, press.recent_size, press.head_compression_ratio) == (1, 4, 0.25)
    prefill(model, prompt(model.config.vocab_size), press)
    batch, heads_, positions = model.model.layers[0].self_attn.masked_key_indices
    assert heads_.eq(0).all() and positions.tolist() == list(range(1, PROMPT - 4))
    assert model.model.layers[1].self_attn.masked_key_indices[2].numel() == 0
    with pytest.raises(ValueError, match="head_compression_ratio must be a number from 0 to 1"):
        headscan_kvpress.press(report, head_compression_ratio=1.5)


def test_rows_of_a_plan_with_layer_indices_press_those_layers(tmp_path, model):
    """kv_plan/ alone (a hybrid's config.json names the model's layer of each row): the row
    presses layer 1, layer 0 keeps its whole cache."""
    (tmp_path / "kv_plan").mkdir()
    (tmp_path / "kv_plan" / "full_attention_heads.tsv").write_text("0\t1\n")
    (tmp_path / "kv_plan" / "config.json").write_text(json.dumps({"sink_size": 3, "recent_size": 5, "layers": [1]}))
    press = headscan_kvpress.press(tmp_path)
    prefill(model, prompt(model.config.vocab_size), press)
    assert press.streaming_mask.tolist() == [[False, False], [True, False]]
    assert model.model.layers[0].self_attn.masked_key_indices[2].numel() == 0
    batch, heads, positions = model.model.layers[1].self_attn.masked_key_indices
    assert heads.eq(0).all() and positions.tolist() == list(range(3, PROMPT - 5))
    with pytest.raises(ValueError, match="only kv_plan/"):
        headscan_kvpress.press(tmp_path, head_compression_ratio=0.5)


def test_a_model_the_plan_does_not_fit_is_refused(report, model):
    with pytest.raises(ValueError, match="the plan has 3 key/value heads per layer, LlamaForCausalLM has 2"):
        with headscan_kvpress.press_from_mask(torch.zeros(2, 3, dtype=torch.bool), 2, 8)(model):
            pass
    with pytest.raises(ValueError, match="the plan's model has 1 layers, LlamaForCausalLM has 2"):
        with headscan_kvpress.press_from_mask(torch.zeros(1, 2, dtype=torch.bool), 2, 8)(model):
            pass
    hybrid = copy.deepcopy(model)
    del hybrid.model.layers[0].self_attn
    with pytest.raises(ValueError, match=r"layers \[0\] have none .* kvpress cannot press this model"):
        with headscan_kvpress.press(report)(hybrid):
            pass
    with pytest.raises(ValueError, match="recent_size must be a whole number ≥ 1"):
        headscan_kvpress.press(report, recent_size=0)


def test_a_report_without_a_plan_is_refused(report, tmp_path):
    document = json.loads((report / "heads.json").read_text())
    bidirectional = copy.deepcopy(document)
    del bidirectional["kv_plan"]
    bidirectional["model"]["causal"] = False
    (tmp_path / "heads.json").write_text(json.dumps(bidirectional))
    with pytest.raises(ValueError, match=r"heads.json has no kv_plan.*the model is not causal"):
        headscan_kvpress.press(tmp_path)
    unmeasured = copy.deepcopy(document)
    for head in unmeasured["heads"]:
        head["scores"]["streaming"] = None
    unmeasured["kv_plan"]["note"] = "no sequence is longer than sink + window"
    with pytest.raises(ValueError, match="has none \\(no sequence is longer than sink \\+ window\\)"):
        headscan_kvpress.press(unmeasured, head_compression_ratio=0.5)
    with pytest.raises(ValueError, match="holds neither heads.json nor kv_plan"):
        headscan_kvpress.press(report.parent)


def test_without_kvpress_the_error_names_the_extra(report, monkeypatch):
    monkeypatch.setitem(sys.modules, "kvpress", None)
    monkeypatch.setattr(headscan_kvpress, "_press_class", None)
    with pytest.raises(ImportError, match=r"pip install headscan\[kvpress\]"):
        headscan_kvpress.press(report)
    # Importing headscan.kvpress, and reading a plan, needs no kvpress.
    script = ("import sys; sys.modules['kvpress'] = None; import headscan.kvpress as k; "
              f"print(k.streaming_mask({str(report)!r}).tolist())")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == str(STREAMING_KV_HEADS)
