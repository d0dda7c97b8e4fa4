"""Whether a tokenizer is the model's, checked before a GGUF file's model is exported: transformers
converts a GGUF file's vocabulary and merges into a tokenizer.json itself (gguf.py), and a
conversion it gets wrong still tokenizes, silently, into ids the model was not trained on. Two
checks catch that instead of analysing it:

round trip  an English sentence encoded and decoded gives the sentence back (special tokens left
            out, whitespace compared as single spaces: a tokenizer's own leading space or BOS is
            normal); a decoder that keeps byte-level or SentencePiece marks, a normalizer that
            changes the text or tokens that do not cover it fail here;
loss        the model's mean next-token loss on an English paragraph (BOS first where headscan
            prepends one) is below LOSS_FRACTION of ln(vocabulary), a uniform guess's loss: a
            trained model is far below it on English, and ids shifted or from another vocabulary
            read as noise to it, at or above a uniform guess.
"""

import math

import torch

from . import ExportInputError
from .model import LogitsOnly

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs home at 5 o'clock."
PARAGRAPH = ("The town library opens at nine in the morning and closes at six in the evening. On weekdays, "
             "students come to read, to write their essays and to borrow books for the week. The children's "
             "room is on the first floor, next to the reading room, and the librarians help anyone who asks "
             "for a book they cannot find. Every Saturday there is a story hour for young readers, and in the "
             "summer the library holds a reading contest with small prizes for those who finish ten books.")
LOSS_FRACTION = 0.8


def spaced(text):
    """The text with every run of whitespace one space, none at the ends."""
    return " ".join(text.split())


def check_round_trip(tokenizer, source, remedy):
    """ExportInputError unless `tokenizer` (a tokenizers.Tokenizer) gives SENTENCE back; `source`
    names the tokenizer, `remedy` says what to do."""
    ids = tokenizer.encode(SENTENCE, add_special_tokens=True).ids
    decoded = tokenizer.decode(ids, skip_special_tokens=True)
    if spaced(decoded) != SENTENCE:
        raise ExportInputError(f"the tokenizer check 'round trip' failed: {source} encodes the sentence "
                               f"{SENTENCE!r} into {len(ids)} tokens that decode to {shortened(decoded)!r}, so it "
                               f"does not read text as the model's tokenizer does; {remedy}")


def check_loss(model, tokenizer, bos_id, device, source, remedy):
    """ExportInputError unless the model's mean next-token loss on PARAGRAPH, as `tokenizer` gives
    its ids (`bos_id` first where not None), is below LOSS_FRACTION of ln(vocabulary). Returns
    (the loss, the bound, the vocabulary: the logits' width); None where the model's output is not
    logits (nothing to measure)."""
    ids = tokenizer.encode(PARAGRAPH, add_special_tokens=False).ids
    ids = ([bos_id] if bos_id is not None else []) + ids
    vocab_size = model.get_input_embeddings().num_embeddings
    beyond = [i for i in ids if i >= vocab_size]
    if beyond:
        raise ExportInputError(f"the tokenizer check 'loss' failed: {source} gives ids up to {max(beyond)} for an "
                               f"English paragraph, beyond the model's {vocab_size} embeddings; {remedy}")
    input_ids = torch.tensor([ids], device=device)
    with torch.no_grad():  # the model's first output, as the program's (model.LogitsOnly)
        logits = LogitsOnly(model, takes_mask=True)(input_ids, torch.ones_like(input_ids))
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[-1] < vocab_size:
        return None
    loss = torch.nn.functional.cross_entropy(logits[0, :-1].float(), input_ids[0, 1:]).item()
    uniform = math.log(logits.shape[-1])
    bound = LOSS_FRACTION * uniform
    if not loss < bound:  # NaN fails too
        raise ExportInputError(f"the tokenizer check 'loss' failed: the model's mean next-token loss on an English "
                               f"paragraph of {len(ids)} tokens, as {source} gives them, is {loss:.2f} nats, not below "
                               f"{bound:.2f} ({LOSS_FRACTION} x ln {logits.shape[-1]}, a uniform "
                               f"guess's {uniform:.2f}), so the ids are not the ones the model was trained on; "
                               f"{remedy}")
    return loss, bound, logits.shape[-1]


def shortened(text, limit=120):
    return text if len(text) <= limit else text[:limit] + "..."
