"""A Llama model directory whose heads are known, for bench/kv_plan.py and its test: a planted
two-layer induction circuit (Olsson et al. 2022) that copies a needle from any depth of its context,
beside heads that only look at their last few tokens.

    python tests/kvpress/make_copy_model.py OUT_DIR [--positions N]

writes OUT_DIR/model (config.json, model.safetensors, tokenizer.json and its config: what
`headscan export` and transformers read), OUT_DIR/corpus.txt (the text headscan analyses) and
OUT_DIR/heldout.txt (held-back text of the same source, the bench's haystacks and loss).

Vocabulary: `<s>` (0), `<unk>` (1), words `w2` … `w63`. The text uses only `w2` … `w31`, drawn from
a Markov chain with two likely successors per word; `w32` … `w63` never occur in it, so a needle of
them is unique in its haystack (as random tokens of a 32k vocabulary are in real text).

Residual stream (192 = 3 × 64): A = the token (one-hot), B = the previous token, D = the copied token.
Key/value heads (2 layers × 4, two query heads each, head_dim 128):

    layer 0, kv 0: query heads 0 and 1 attend to the previous token; head 0 writes it into B
    layer 0, kv 1-3: query heads attend to offsets 0, 1, 2 or 3 and write nothing (local heads)
    layer 1, kv 0: query head 0 is the induction head (query A = key B, its value A written into D);
                   query head 1 attends to the token itself and writes nothing
    layer 1, kv 1-3: local heads as in layer 0

Positions enter only through RoPE. rope_theta = 1e10 makes the upper half of each head's frequency
pairs turn by less than 1e-5 rad per token: the induction head's token codes live there, so its
match does not depend on the distance. The local heads are position-only patterns made of query and
key biases in the fast pairs (a kernel peaked at the chosen offset, its margin checked below up to
the model's positions). The MLPs are zero."""

import argparse
import math
import random
from pathlib import Path

import torch

VOCAB = 64
TEXT_WORDS = range(2, 32)  # the words text uses; w32 … w63 are left for needles
HIDDEN = 3 * VOCAB
A, B, D = 0, VOCAB, 2 * VOCAB  # residual subspaces: token, previous token, copied token
LAYERS, HEADS, KV_HEADS, HEAD_DIM = 2, 8, 4, 128
PAIRS = HEAD_DIM // 2
CONTENT_PAIRS = range(PAIRS // 2, PAIRS)  # the slow half: token codes
POSITION_PAIRS = range(0, 20)  # the fast pairs the local heads' kernel is made of
ROPE_THETA = 1e10
POSITION_MARGIN = 24.0  # attention logits: the chosen offset over any other key
INDUCTION_MARGIN = 24.0  # attention logits: a matching key over any other
COPY_SCALE = 3.0  # D's size against A's and B's after the copy (sharp logits)

# Offsets of the query heads (layer, query head) -> offset; absent heads are the induction head.
OFFSETS = {(0, 0): 1, (0, 1): 1, (0, 2): 0, (0, 3): 2, (0, 4): 1, (0, 5): 3, (0, 6): 0, (0, 7): 2,
           (1, 1): 0, (1, 2): 1, (1, 3): 2, (1, 4): 0, (1, 5): 3, (1, 6): 1, (1, 7): 2}
INDUCTION = (1, 0)
FULL_KV_HEADS = [[0, 0, 0, 0], [1, 0, 0, 0]]  # 1 = the kv head must keep every token (DuoAttention's TSV)


def inverse_frequencies():
    return 1.0 / (ROPE_THETA ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM))


def rotate(x, position):
    """transformers' RoPE (rotate_half layout: pair f is dims f and f + HEAD_DIM/2) of x at position."""
    angles = position * inverse_frequencies()
    cos, sin = torch.cat([angles.cos(), angles.cos()]), torch.cat([angles.sin(), angles.sin()])
    half = torch.cat([-x[PAIRS:], x[:PAIRS]])
    return x * cos + half * sin


def position_kernel(amplitude):
    """Key bias u (fast pairs, equal weight) scaled so that u·R_m u peaks at m = 0 by
    POSITION_MARGIN logits (after 1/sqrt(HEAD_DIM)); returns u."""
    u = torch.zeros(HEAD_DIM, dtype=torch.float64)
    for f in POSITION_PAIRS:
        u[f] = u[f + PAIRS] = math.sqrt(0.5)
    return u * amplitude


def check_position_kernel(u, positions):
    """The peak's margin over every other relative position up to the model's length."""
    m = torch.arange(-positions, positions + 1, dtype=torch.float64)
    angles = m[:, None] * inverse_frequencies()[None, :]
    weights = u[:PAIRS] ** 2 + u[PAIRS:] ** 2
    scores = (angles.cos() * weights).sum(-1) / math.sqrt(HEAD_DIM)
    peak = scores[positions]
    others = torch.cat([scores[:positions], scores[positions + 1:]])
    return float(peak - others.max())


def plant(model, positions):
    """Writes the circuit into a freshly built LlamaForCausalLM (float32, zero-initialised here)."""
    unit = position_kernel(1.0)
    margin_per_unit = check_position_kernel(unit, positions)
    u = unit * math.sqrt(POSITION_MARGIN / margin_per_unit)
    assert check_position_kernel(u, positions) >= POSITION_MARGIN - 1e-6
    content = [f for f in CONTENT_PAIRS] + [f + PAIRS for f in CONTENT_PAIRS]  # VOCAB dims
    assert len(content) == VOCAB
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for layer in model.model.layers:
            layer.input_layernorm.weight.fill_(1.0)
            layer.post_attention_layernorm.weight.fill_(1.0)
        model.model.norm.weight.fill_(1.0)
        model.model.embed_tokens.weight[:, A:A + VOCAB] = torch.eye(VOCAB)
        # RMSNorm's size of one unit vector in a HIDDEN-wide stream holding k of them: sqrt(HIDDEN / k).
        one, two = math.sqrt(HIDDEN), math.sqrt(HIDDEN / 2)
        for layer_index, layer in enumerate(model.model.layers):
            attention = layer.self_attn
            for kv in range(KV_HEADS):
                keys = slice(kv * HEAD_DIM, (kv + 1) * HEAD_DIM)
                attention.k_proj.bias[keys] = u.float()
            for head in range(HEADS):
                rows = slice(head * HEAD_DIM, (head + 1) * HEAD_DIM)
                if (layer_index, head) == INDUCTION:
                    # q·k = (scale·two)^2 [token_i == previous_j] / sqrt(HEAD_DIM)
                    scale = math.sqrt(INDUCTION_MARGIN * math.sqrt(HEAD_DIM)) / two
                    kv = head // (HEADS // KV_HEADS)
                    for token, dim in enumerate(content):
                        attention.q_proj.weight[head * HEAD_DIM + dim, A + token] = scale
                        attention.k_proj.weight[kv * HEAD_DIM + dim, B + token] = scale
                        attention.v_proj.weight[kv * HEAD_DIM + token, A + token] = 1.0 / two
                        attention.o_proj.weight[D + token, head * HEAD_DIM + token] = COPY_SCALE
                    continue
                attention.q_proj.bias[rows] = rotate(u, -OFFSETS[(layer_index, head)]).float()
            if layer_index == 0:  # query head 0 (kv head 0): the previous token into B
                for token in range(VOCAB):
                    attention.v_proj.weight[token, A + token] = 1.0 / one
                    attention.o_proj.weight[B + token, token] = 1.0
        model.lm_head.weight[:, D:D + VOCAB] = torch.eye(VOCAB)


def tokenizer_files(directory, positions):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocabulary = {"<s>": 0, "<unk>": 1, **{f"w{i}": i for i in range(2, VOCAB)}}
    tokenizer = Tokenizer(models.WordLevel(vocabulary, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", unk_token="<unk>",
                                   model_max_length=positions)
    fast.save_pretrained(directory)


def markov_chain(seed):
    """Two likely successors of each text word."""
    rng = random.Random(seed)
    return {w: rng.sample(list(TEXT_WORDS), 2) for w in TEXT_WORDS}


def markov_text(successors, rng, documents, words_per_document):
    """Lines of words from the chain: each word's two likely successors 0.45 each, any text word
    otherwise; text with structure an induction head can use."""
    words = list(TEXT_WORDS)
    lines = []
    for _ in range(documents):
        word, line = rng.choice(words), []
        for _ in range(words_per_document):
            line.append(f"w{word}")
            r = rng.random()
            word = successors[word][0] if r < 0.45 else successors[word][1] if r < 0.9 else rng.choice(words)
        lines.append(" ".join(line))
    return lines


def build(out, positions=1024, seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out)
    model_dir = out / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=8, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
                         attention_bias=True, max_position_embeddings=positions, rms_norm_eps=1e-6,
                         tie_word_embeddings=False, bos_token_id=0, eos_token_id=None,
                         pad_token_id=None, rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA})
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).float().eval()
    plant(model, positions)
    model.save_pretrained(model_dir)
    tokenizer_files(model_dir, positions)
    chain = markov_chain(seed)
    # Needle probes take their haystacks from the corpus's first tokens: lines as long as the model's positions.
    corpus = markov_text(chain, random.Random(seed + 1), 24, positions)
    heldout = markov_text(chain, random.Random(seed + 2), 16, 2 * positions)
    (out / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    (out / "heldout.txt").write_text("\n".join(heldout) + "\n", encoding="utf-8")
    return model_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="directory to write model/, corpus.txt and heldout.txt into")
    parser.add_argument("--positions", type=int, default=1024, help="the model's positions (default 1024)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(build(args.out, args.positions, args.seed))


if __name__ == "__main__":
    main()
