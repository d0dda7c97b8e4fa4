#!/usr/bin/env python3
"""A llama2.c model as a transformers Llama directory, for bench/kv_plan.py (which applies presses to
transformers models): the TorchScript archive of /work/shared/data/stories260K (Karpathy's
stories260K, with its tokenizer.json inside) to OUT_DIR/model, and text sampled from the model
itself (its own stories, text of its training distribution): OUT_DIR/corpus.txt for headscan and
OUT_DIR/heldout.txt, other stories, for the bench.

    python bench/llama2c_to_hf.py ARCHIVE.pt OUT_DIR [--stories 24] [--seed 0]

llama2.c's RoPE turns the interleaved pairs (x0, x1), (x2, x3), … of each head; transformers' turns
(x_i, x_{i+d/2}): the query and key rows are permuted as transformers' own
convert_llama_weights_to_hf.py does. The conversion is checked: the logits of a 200-token story
equal the archive's within 1e-4."""

import argparse
import json
import zipfile
from pathlib import Path

import torch

EPS = 1e-5  # llama2.c's RMSNorm


def permute(weight, heads):
    rows, columns = weight.shape
    return weight.view(heads, rows // heads // 2, 2, columns).transpose(1, 2).reshape(rows, columns)


def convert(archive_path, out):
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    archive = torch.jit.load(str(archive_path), map_location="cpu")
    state = archive.state_dict()
    with zipfile.ZipFile(archive_path) as bundle:
        extra = {Path(n).name: bundle.read(n) for n in bundle.namelist() if "/extra/" in n}
    meta = json.loads(extra["headscan.json"])
    vocab, hidden = state["tok_embeddings.weight"].shape
    layers = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("layers."))
    head_dim = 2 * state["freqs_cos"].shape[-1]
    heads, kv_heads = hidden // head_dim, state["layers.0.attention.wk.weight"].shape[0] // head_dim
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, head_dim=head_dim,
                         intermediate_size=state["layers.0.feed_forward.w1.weight"].shape[0],
                         max_position_embeddings=meta["max_length"], rms_norm_eps=EPS, tie_word_embeddings=False,
                         bos_token_id=1, eos_token_id=2, pad_token_id=None,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    model = LlamaForCausalLM(config).eval()
    mapped = {"model.embed_tokens.weight": state["tok_embeddings.weight"], "model.norm.weight": state["norm.weight"],
              "lm_head.weight": state["output.weight"]}
    for i in range(layers):
        source, target = f"layers.{i}.", f"model.layers.{i}."
        mapped.update({
            target + "input_layernorm.weight": state[source + "attention_norm.weight"],
            target + "post_attention_layernorm.weight": state[source + "ffn_norm.weight"],
            target + "self_attn.q_proj.weight": permute(state[source + "attention.wq.weight"], heads),
            target + "self_attn.k_proj.weight": permute(state[source + "attention.wk.weight"], kv_heads),
            target + "self_attn.v_proj.weight": state[source + "attention.wv.weight"],
            target + "self_attn.o_proj.weight": state[source + "attention.wo.weight"],
            target + "mlp.gate_proj.weight": state[source + "feed_forward.w1.weight"],
            target + "mlp.down_proj.weight": state[source + "feed_forward.w2.weight"],
            target + "mlp.up_proj.weight": state[source + "feed_forward.w3.weight"],
        })
    missing, unexpected = model.load_state_dict(mapped, strict=False)
    assert not unexpected and not [k for k in missing if "rotary" not in k], (missing, unexpected)
    model_dir = Path(out) / "model"
    model.save_pretrained(model_dir)
    (model_dir / "tokenizer.json").write_bytes(extra["tokenizer.json"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"), bos_token=meta["bos_token"],
                                        eos_token="</s>", unk_token="<unk>", model_max_length=meta["max_length"])
    tokenizer.save_pretrained(model_dir)
    return archive, model, tokenizer


def sample_stories(model, tokenizer, count, length, seed):
    generator = torch.Generator().manual_seed(seed)
    stories = []
    with torch.no_grad():
        for _ in range(count):
            ids = torch.tensor([[tokenizer.bos_token_id]])
            while ids.shape[1] < length:
                probabilities = model(ids).logits[0, -1].softmax(-1)
                ids = torch.cat([ids, torch.multinomial(probabilities, 1, generator=generator)[None]], 1)
            stories.append(" ".join(tokenizer.decode(ids[0, 1:], skip_special_tokens=True).split()))
    return stories


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--stories", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    archive, model, tokenizer = convert(args.archive, args.out)
    torch.set_num_threads(1)
    stories = sample_stories(model, tokenizer, 2 * args.stories, model.config.max_position_embeddings, args.seed)
    ids = torch.tensor([[tokenizer.bos_token_id] + tokenizer(stories[0], add_special_tokens=False)["input_ids"][:199]])
    with torch.no_grad():
        difference = (archive(ids) - model(ids).logits).abs().max().item()
    assert difference < 1e-4, f"the converted model's logits differ from the archive's by {difference}"
    (args.out / "corpus.txt").write_text("\n".join(stories[:args.stories]) + "\n", encoding="utf-8")
    (args.out / "heldout.txt").write_text("\n".join(stories[args.stories:]) + "\n", encoding="utf-8")
    print(f"{args.out / 'model'}: logits equal to the archive's within {difference:.1e}; {args.stories} stories in "
          f"each of corpus.txt and heldout.txt")


if __name__ == "__main__":
    main()
