"""The reference scores of tests/hf/check_export_hf.py: per-head previous_token, first_token and
entropy as DESIGN.md defines them, from transformers' output_attentions (eager attention)."""

import math

import torch

SCORES = ("previous_token", "first_token", "entropy")

# ---------------------------------------------------------------------------------------------
# The reference scores


def special_ids(tokenizer_json):
    return {t["id"] for t in tokenizer_json.get("added_tokens", []) if t.get("special")}


def query_sets(record, specials, causal):
    """Which queries each score averages over, as bool lists over the record's positions.

    DESIGN.md: previous_token and first_token over content queries i >= 1; entropy over the queries
    with n_i >= 2 visible keys (position 0 included). Tokens a template puts after the text (the
    suffix, [SEP] or </s>; issue 22, item 7) are keys like any other but no score's queries: marked
    by the tokenize record's "special" field when it has one, else as the trailing run of the
    tokenizer's special ids after position 0.
    """
    ids = record["ids"]
    length = len(ids)
    if "special" in record:
        special = [bool(s) for s in record["special"]]
    else:
        special = [i in specials for i in ids]
    suffix = [False] * length
    position = length - 1
    while position > 0 and special[position]:
        suffix[position] = True
        position -= 1
    content = [i >= 1 and not suffix[i] for i in range(length)]
    visible = [(i + 1 if causal else length) for i in range(length)]
    entropy = [visible[i] >= 2 and not suffix[i] for i in range(length)]
    return {"previous_token": content, "first_token": content, "entropy": entropy}, visible


class ReferenceScores:
    """Per-head sums and query counts of previous_token, first_token and entropy."""

    def __init__(self):
        self.sums = {}    # (score, layer) -> float64 [H]
        self.counts = {}  # (score, layer) -> int

    def add(self, score, layer, values, selected):
        """values: [H, T] per-query values; selected: T bools."""
        mask = torch.tensor(selected, dtype=torch.bool)
        key = (score, layer)
        self.sums[key] = self.sums.get(key, 0) + values[:, mask].sum(dim=1)
        self.counts[key] = self.counts.get(key, 0) + int(mask.sum())

    def add_sequence(self, attentions, record, specials, causal, attention_layers=None):
        sets, visible = query_sets(record, specials, causal)
        n = torch.tensor(visible, dtype=torch.float64)
        for layer, attention in layer_maps(attentions, attention_layers):
            a = attention[0].double()  # [H, T, T]
            length = a.shape[-1]
            previous = torch.zeros(a.shape[:2], dtype=torch.float64)
            previous[:, 1:] = a.diagonal(offset=-1, dim1=-2, dim2=-1)
            first = a[:, :, 0].clone()
            first[:, 0] = 0
            entropy = -torch.xlogy(a, a).sum(-1) / n.clamp(min=2).log()
            self.add("previous_token", layer, previous, sets["previous_token"])
            self.add("first_token", layer, first, sets["first_token"])
            self.add("entropy", layer, entropy, sets["entropy"][:length])

    def mean(self, score, layer, head):
        count = self.counts.get((score, layer), 0)
        return float(self.sums[(score, layer)][head] / count) if count else None


def layer_maps(attentions, attention_layers=None):
    """(layer, map) for each attention map of output_attentions. Without attention_layers, a map's
    layer is its place in the tuple, a None entry (a layer without attention) skipped. With it (the
    model's own index of each attention layer, in order), a tuple of one entry per layer keeps
    the index it has, and a tuple of the attention layers' maps only is numbered by the list."""
    if attention_layers is None:
        return [(layer, a) for layer, a in enumerate(attentions) if a is not None]
    if any(a is None for a in attentions):
        maps = [(layer, a) for layer, a in enumerate(attentions) if a is not None]
    else:
        assert len(attentions) == len(attention_layers), \
            f"output_attentions has {len(attentions)} maps, the model {len(attention_layers)} attention layers"
        maps = list(zip(attention_layers, attentions))
    layers = [layer for layer, _ in maps]
    assert layers == list(attention_layers), \
        f"output_attentions gives maps of layers {layers}, the model's attention layers are {list(attention_layers)}"
    return maps


def reference_scores(model_dir, records, specials, causal, attention_layers=None):
    """The reference scores of the records, keyed by the model's layer index (attention_layers: see
    layer_maps); also the number of attention maps and of heads."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(model_dir)
    cls = getattr(transformers, config.architectures[0])
    model = cls.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).eval()
    reference = ReferenceScores()
    layers = 0
    with torch.no_grad():
        for record in records:
            ids = torch.tensor([record["ids"]], dtype=torch.long)
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
            maps = layer_maps(out.attentions, attention_layers)
            reference.add_sequence(out.attentions, record, specials, causal, attention_layers)
            layers = len(maps)
    return reference, layers, maps[0][1].shape[1]


def compare_scores(heads, reference, tolerance):
    """The largest difference of each score of SCORES between heads.json's heads and `reference`
    (reference_scores()); an AssertionError naming the heads beyond `tolerance`, or when every head's
    attention is nearly uniform (a weak test)."""
    worst = {score: 0.0 for score in SCORES}
    problems = []
    for head in heads["heads"]:
        for score in SCORES:
            want = reference.mean(score, head["layer"], head["head"])
            got = head["scores"][score]
            difference = abs(got - want) if got is not None and want is not None else math.inf
            worst[score] = max(worst[score], difference)
            if difference > tolerance:
                problems.append(f"L{head['layer']}H{head['head']} {score}: headscan {got}, transformers {want}")
    if problems:
        raise AssertionError(f"{len(problems)} scores differ by more than {tolerance}:\n  " + "\n  ".join(problems[:12]))
    spread = [head["scores"]["entropy"] for head in heads["heads"]]
    assert min(spread) < 0.9, f"attention is nearly uniform in every head (entropy {min(spread):.3f}): a weak test"
    return worst
