"""`headscan export MODEL.gguf OUT.pt2` (issue 42, item 5): a GGUF file read by transformers' GGUF
loader, its weights dequantized, its tokenizer checked. Built here, nothing downloaded:

- a tiny byte-level BPE tokenizer (the tokenizers library's trainer, on the checks' own English
  text) and a tiny Llama trained on the checks' paragraph until it knows it (a random model's loss
  is a uniform guess's, which the loss check refuses), written as a GGUF file by the gguf package's
  GGUFWriter as llama.cpp's converter writes one: llama.cpp's tensor names, q/k rows permuted for
  its rotary layout, matrices in Q8_0 blocks, the tokenizer as tokenizer.ggml.* fields;
- exported by the headscan command (the wheel's, or build/headscan) and run on a corpus; the
  program computes what transformers' dequantized model computes;
- refused with exit 2 and one line naming the check: the file's tokenizer converted wrongly
  (labelled a SentencePiece vocabulary: round trip), a --tokenizer without its decoder (round trip)
  and one whose ids are shuffled (loss); a .gguf file that is not one.

Run by pytest with the wheel installed (tests/python/run.sh), or on the source tree with a Python
that has gguf and accelerate: PYTHONPATH=build/python python -m pytest tests/python/test_export_gguf.py
(the command is then build/headscan).
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from test_export import headscan

if headscan is not None:
    from headscan._export import command, tokenizer_checks
else:  # test_export put the source tree's exporter on sys.path
    from _export import command, tokenizer_checks

ROOT = Path(__file__).resolve().parents[2]
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]
BOS_ID = 1
HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE, POSITIONS = 32, 2, 4, 2, 64, 512
# llama.cpp's tensor names for transformers' Llama modules (gguf's tensor_mapping.py).
GGUF_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def tiny_tokenizer():
    """A byte-level BPE of 320 tokens (3 special, the 256 bytes, 61 merges) trained on the checks'
    sentence and paragraph, as SmolLM2's and Llama 3's tokenizers are byte-level BPEs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([tokenizer_checks.PARAGRAPH, tokenizer_checks.SENTENCE], trainer)
    return tokenizer


def paragraph_ids(tokenizer):
    return [BOS_ID] + tokenizer.encode(tokenizer_checks.PARAGRAPH, add_special_tokens=False).ids


def trained_llama(tokenizer):
    """A tiny Llama that has learnt the paragraph (BOS first, as headscan feeds it): its loss there
    is far below the loss check's bound, 0.8 x ln(320)."""
    import transformers

    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=HIDDEN,
                                      intermediate_size=INTERMEDIATE, num_hidden_layers=LAYERS,
                                      num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                                      max_position_embeddings=POSITIONS, bos_token_id=BOS_ID, eos_token_id=2,
                                      tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    ids = torch.tensor([paragraph_ids(tokenizer)])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        loss = model(input_ids=ids, labels=ids).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1, loss.item()
    return model.eval()


def rotary_permuted(weight, heads):
    """llama.cpp's converter's permutation of q/k rows (transformers' GGUF loader undoes it)."""
    return weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(
        weight.shape)


def write_gguf(path, model, tokenizer, tokenizer_model="gpt2"):
    """The model and tokenizer as a GGUF file of architecture llama: 2-D weights in Q8_0 blocks,
    norms in float32; the tokenizer's vocabulary, token types and merges as llama.cpp writes a
    byte-level BPE's (tokenizer.ggml.model "gpt2"), or labelled `tokenizer_model`."""
    import gguf

    config = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny llama")
    writer.add_context_length(POSITIONS)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(INTERMEDIATE)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_rope_freq_base(float(config.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    writer.add_tokenizer_model(tokenizer_model)
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if token in SPECIAL_TOKENS else gguf.TokenType.NORMAL
                            for token in tokens])
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    writer.add_token_merges([" ".join(merge) if isinstance(merge, list) else merge for merge in merges])
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    blocks = gguf.GGMLQuantizationType.Q8_0
    for name, tensor in model.state_dict().items():
        weight = tensor.float().numpy()
        top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
               "lm_head.weight": "output.weight"}
        if name in top:
            gguf_name = top[name]
        else:  # model.layers.{i}.{module}.weight
            parts = name.split(".")
            module = ".".join(parts[3:-1])
            gguf_name = f"blk.{parts[2]}.{GGUF_NAMES[module]}.weight"
            if module in ("self_attn.q_proj", "self_attn.k_proj"):
                weight = rotary_permuted(weight, HEADS if module == "self_attn.q_proj" else KV_HEADS)
        if weight.ndim == 2:
            writer.add_tensor(gguf_name, gguf.quants.quantize(weight, blocks), raw_dtype=blocks)
        else:
            writer.add_tensor(gguf_name, weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(the GGUF file, its tokenizer, a GGUF file of the same model whose tokenizer transformers
    converts wrongly)."""
    folder = tmp_path_factory.mktemp("gguf")
    tokenizer = tiny_tokenizer()
    model = trained_llama(tokenizer)
    good = write_gguf(folder / "tiny-llama.Q8_0.gguf", model, tokenizer)
    # Labelled a SentencePiece vocabulary, the byte-level tokens are read with SentencePiece's "▁"
    # for spaces, which this vocabulary lacks.
    wrong = write_gguf(folder / "mislabelled.gguf", model, tokenizer, tokenizer_model="llama")
    return good, tokenizer, wrong


def dequantized_model(path):
    """transformers' own model of the GGUF file, dequantized: what the program must compute."""
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32,
        quantization_config=transformers.GgufConfig(dequantize=True)).eval()


def headscan_command():
    """The headscan command to run: the wheel's console script, else the build's binary (its
    `export` run with this Python, which has gguf and accelerate); None without either."""
    script = Path(sys.executable).parent / "headscan"
    if headscan is not None and script.is_file():
        return [str(script)]
    binary = ROOT / "build" / "headscan"
    return [str(binary)] if binary.is_file() and os.access(binary, os.X_OK) else None


def run(start, *arguments):
    environment = dict(os.environ, HEADSCAN_PYTHON=sys.executable, OMP_NUM_THREADS="1")
    return subprocess.run([*start, *map(str, arguments)], capture_output=True, text=True, env=environment,
                          timeout=600)


def export_in_process(*arguments):
    """command.main(ARGUMENTS): (exit status, what it printed on stderr)."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        code = command.main([str(argument) for argument in arguments])
    return code, said.getvalue()


def error_line(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and "Traceback" not in stderr, stderr
    return lines[-1]


def test_the_tiny_gguf_is_read_by_transformers_as_written(tiny):
    path, tokenizer, _ = tiny
    model = dequantized_model(path)
    assert type(model.model.layers[0].self_attn.q_proj) is torch.nn.Linear  # dequantized, not GGUF blocks
    ids = torch.tensor([paragraph_ids(tokenizer)])
    with torch.no_grad():
        loss = model(input_ids=ids, labels=ids).loss.item()
    assert loss < 0.5, loss  # Q8_0 blocks and the un-permuted q/k rows keep what it learnt


def test_the_checks_pass_the_models_tokenizer_and_refuse_others(tiny):
    from tokenizers import Tokenizer

    path, tokenizer, _ = tiny
    model = dequantized_model(path)
    tokenizer_checks.check_round_trip(tokenizer, "the tokenizer", "remedy")
    loss, bound, vocabulary = tokenizer_checks.check_loss(model, tokenizer, BOS_ID, "cpu", "the tokenizer", "remedy")
    assert loss < 0.5 and vocabulary == 320 and abs(bound - 0.8 * torch.log(torch.tensor(320.0)).item()) < 1e-6
    undecoded = Tokenizer.from_str(without_decoder(tokenizer))
    with pytest.raises(command.ExportInputError, match="tokenizer check 'round trip' failed: .* remedy$"):
        tokenizer_checks.check_round_trip(undecoded, "the tokenizer", "remedy")
    shuffled = Tokenizer.from_str(shuffled_ids(tokenizer))
    tokenizer_checks.check_round_trip(shuffled, "the tokenizer", "remedy")  # the same text, other ids
    with pytest.raises(command.ExportInputError, match="tokenizer check 'loss' failed: .* nats, not below 4.61"):
        tokenizer_checks.check_loss(model, shuffled, BOS_ID, "cpu", "the tokenizer", "remedy")


def without_decoder(tokenizer):
    """tokenizer.json without its decoder: the byte-level marks (Ġ for a space) stay in the text."""
    document = json.loads(tokenizer.to_str())
    document["decoder"] = None
    return json.dumps(document)


def shuffled_ids(tokenizer):
    """tokenizer.json whose ordinary tokens are renumbered (the special ones kept): it reads the
    same text into other ids, as another model's vocabulary would."""
    document = json.loads(tokenizer.to_str())
    vocab = document["model"]["vocab"]
    ordinary = sorted((token for token in vocab if token not in SPECIAL_TOKENS), key=vocab.get)
    ids = sorted(vocab[token] for token in ordinary)
    for token, new in zip(ordinary, ids[7:] + ids[:7]):
        vocab[token] = new
    return json.dumps(document)


def test_headscan_export_of_a_gguf_file_runs_as_transformers_computes_it(tiny, tmp_path):
    start = headscan_command()
    if start is None:
        pytest.skip("needs the headscan command (the wheel, or build/headscan)")
    path, tokenizer, _ = tiny
    out = tmp_path / "tiny.pt2"
    result = run(start, "export", path, out, "--max-length", 128)
    assert result.returncode == 0, result.stderr
    assert "GGUF: dequantized by transformers to float32; tokenizer checked: round trip exact, the model's mean " \
           "loss on an English paragraph 0.0" in result.stdout and "(below 4.61, 0.8 x ln 320)" in result.stdout
    assert f"tokenizer: converted by transformers from {path} (320 tokens)" in result.stdout
    with zipfile.ZipFile(out) as archive:
        metadata = json.loads(archive.read("tiny/extra/headscan.json"))
        embedded = archive.read("tiny/extra/tokenizer.json").decode()
    assert metadata["name"] == "tiny-llama.Q8_0" and metadata["bos_token"] == "<s>"
    assert metadata["max_length"] == 128 and metadata["n_kv_heads"] == KV_HEADS
    from tokenizers import Tokenizer
    assert Tokenizer.from_str(embedded).encode(tokenizer_checks.PARAGRAPH).ids == \
        tokenizer.encode(tokenizer_checks.PARAGRAPH).ids

    from torch.export import graph_signature
    from torch.export.pt2_archive._package import load_pt2
    exported = load_pt2(str(out)).exported_programs["model"]
    ids = torch.tensor([paragraph_ids(tokenizer)[:100]])
    inputs = [ids, torch.ones_like(ids), torch.arange(ids.shape[1])]  # a third: the rows whose logits it gives
    taken = [spec for spec in exported.graph_signature.input_specs if spec.kind == graph_signature.InputKind.USER_INPUT]
    with torch.no_grad():
        want = dequantized_model(path)(input_ids=ids, use_cache=False).logits
        assert (exported.module()(*inputs[:len(taken)]) - want).abs().max().item() < 1e-4

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(tokenizer_checks.PARAGRAPH.replace(". ", ".\n") + "\n", encoding="utf-8")
    result = run(start, out, corpus, "-o", tmp_path / "report", "--parser", "none", "--no-plots", "-q")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report" / "heads.json").read_text(encoding="utf-8"))
    assert [layer["index"] for layer in report["model"]["layers"]] == list(range(LAYERS))
    assert len(report["heads"]) == LAYERS * HEADS


def test_a_tokenizer_transformers_converts_wrongly_is_refused(tiny, tmp_path):
    start = headscan_command()
    if start is None:
        pytest.skip("needs the headscan command (the wheel, or build/headscan)")
    _, _, wrong = tiny
    result = run(start, "export", wrong, tmp_path / "out.pt2")
    line = error_line(result.stderr)
    assert result.returncode == 2, result.stderr
    assert line.startswith(f"headscan export: error: {wrong}: the tokenizer check 'round trip' failed: the "
                           f"tokenizer converted by transformers from {wrong} encodes the sentence"), line
    assert line.endswith("give the model's own tokenizer.json (from its original repository) with --tokenizer FILE")
    assert not (tmp_path / "out.pt2").exists()


def test_a_wrong_tokenizer_given_is_refused_by_either_check(tiny, tmp_path):
    path, tokenizer, _ = tiny
    undecoded = tmp_path / "undecoded.json"
    undecoded.write_text(without_decoder(tokenizer), encoding="utf-8")
    code, stderr = export_in_process(path, tmp_path / "a.pt2", "--tokenizer", undecoded)
    line = error_line(stderr)
    assert code == 2 and f"the tokenizer check 'round trip' failed: the tokenizer {undecoded} encodes" in line, line
    assert line.endswith(f"check that {undecoded} is this model's own tokenizer.json"), line
    shuffled = tmp_path / "shuffled.json"
    shuffled.write_text(shuffled_ids(tokenizer), encoding="utf-8")
    code, stderr = export_in_process(path, tmp_path / "b.pt2", "--tokenizer", shuffled)
    line = error_line(stderr)
    assert code == 2 and "the tokenizer check 'loss' failed: the model's mean next-token loss on an English " \
                         f"paragraph of {len(paragraph_ids(tokenizer))} tokens, as the tokenizer {shuffled} gives " \
                         "them, is " in line, line
    assert not list(tmp_path.glob("*.pt2"))


def test_a_gguf_name_on_another_file_is_refused(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a GGUF file")
    code, stderr = export_in_process(fake, tmp_path / "out.pt2")
    assert code == 2 and "does not begin with GGUF's magic bytes 'GGUF'" in error_line(stderr)
    other = tmp_path / "config.json"
    other.write_text("{}")
    code, stderr = export_in_process(other, tmp_path / "out.pt2")
    assert code == 2 and "is a file, and not a GGUF file" in error_line(stderr)


def test_headscan_export_in_python_takes_a_gguf_file(tiny, tmp_path):
    """headscan.export(PATH, out): the command line's export of a model directory or GGUF file."""
    if headscan is None:
        pytest.skip("needs the headscan package")
    path, _, wrong = tiny
    out = tmp_path / "tiny.pt2"
    assert headscan.export(path, out, max_length=64, metadata={"name": "tiny"}) == out
    with zipfile.ZipFile(out) as archive:
        metadata = json.loads(archive.read("tiny/extra/headscan.json"))
    assert metadata["name"] == "tiny" and metadata["max_length"] == 64
    with pytest.raises(headscan.InputError, match="the tokenizer check 'round trip' failed"):
        headscan.export(wrong, tmp_path / "wrong.pt2")
    with pytest.raises(headscan.InputError, match="give out="):
        headscan.export(path)
    with pytest.raises(headscan.InputError, match="takes name and bos_token only, not causal"):
        headscan.export(path, tmp_path / "other.pt2", metadata={"causal": True})
    assert not (tmp_path / "wrong.pt2").exists() and not (tmp_path / "other.pt2").exists()
