"""Head scores from captured attention [B, H, T, T], summed batch by batch, in two definitions:

headscan's (README, "Head types"), on causal windows that start with BOS:
  previous_token  mean A[i, i-1] over queries i >= 1 of the corpus windows;
  first_token     mean A[i, 0] over the same queries;
  duplicate_token mean over probe queries with an earlier occurrence s < i of their token (BOS
                  aside) of sum_s A[i, s];
  induction       mean over probe queries with an earlier occurrence s < i - 1 of
                  sum_s A[i, s + 1].
  Means pool the queries of all sequences.

TransformerLens' head_detector ("mul", its default): per sequence sum(A * P) / sum(A) over the
whole T x T pattern, P its detection pattern (previous token: the subdiagonal; duplicate token:
earlier positions holding the query's token, BOS included; induction: those moved one key to the
right), then the mean over sequences. As every row of A sums to 1, sum(A) = T: the previous-token
score divides by all T rows, BOS's included, where headscan divides by T - 1 queries.

Padding: each sequence gives its real length; rows and keys beyond it are left out (a causal
model's real rows do not see right padding).
"""

import torch

HEADSCAN = ("previous_token", "first_token", "duplicate_token", "induction")
DETECTOR = ("previous_token_head", "duplicate_token_head", "induction_head")


def earlier_occurrences(ids: torch.Tensor, bos: int) -> torch.Tensor:
    """[T, T] bool: key s < query i holds the query's token, neither of them BOS."""
    same = ids.unsqueeze(1) == ids.unsqueeze(0)
    content = ids != bos
    return same & torch.ones_like(same).tril(-1) & content.unsqueeze(1) & content.unsqueeze(0)


def detector_patterns(ids: torch.Tensor) -> dict:
    """TransformerLens' three detection patterns for one sequence's ids (head_detector.py)."""
    length = ids.numel()
    previous = torch.zeros(length, length)
    previous[1:, :-1] = torch.eye(length - 1)
    same = (ids.unsqueeze(1) == ids.unsqueeze(0)).float()
    same.fill_diagonal_(0)
    duplicate = same.tril()
    induction = torch.zeros_like(duplicate)
    induction[:, 1:] = duplicate[:, :-1]
    return {"previous_token_head": previous.tril(), "duplicate_token_head": duplicate,
            "induction_head": induction.tril()}


class Scores:
    """Sums per layer and head; add() one batch of one layer at a time."""

    def __init__(self, layers: int, heads: int, bos: int, detector: bool = True):
        """detector: also compute TransformerLens' definitions (the TransformerLens runner calls
        its own head_detector instead)."""
        self.bos = bos
        self.with_detector = detector
        zeros = lambda: torch.zeros(layers, heads, dtype=torch.float64)  # noqa: E731
        self.sums = {name: zeros() for name in HEADSCAN}
        self.counts = {name: 0 for name in HEADSCAN}
        self.detector_sequences = {"corpus": 0, "probes": 0}
        self.detector = {source: {name: zeros() for name in DETECTOR} for source in ("corpus", "probes")}

    def add_corpus(self, layer: int, attention: torch.Tensor, ids: torch.Tensor, lengths=None) -> None:
        """attention [B, H, T, T] of right-padded windows; ids [B, T]; lengths: real lengths
        (default: T each, no padding)."""
        if lengths is None:
            lengths = [ids.shape[1]] * ids.shape[0]
        a = attention.double()
        # queries i = 1 … length - 1 of each window: position i - 1 of [B, H, T - 1]
        real = torch.arange(ids.shape[1] - 1).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1) - 1
        real = real.unsqueeze(1).double()
        self.sums["previous_token"][layer] += (a.diagonal(offset=-1, dim1=-2, dim2=-1) * real).sum(dim=(0, 2))
        self.sums["first_token"][layer] += (a[:, :, 1:, 0] * real).sum(dim=(0, 2))
        if layer == 0:
            queries = sum(length - 1 for length in lengths)
            self.counts["previous_token"] += queries
            self.counts["first_token"] += queries
        self.add_detector("corpus", layer, attention, ids, lengths)

    def add_probes(self, layer: int, attention: torch.Tensor, ids: torch.Tensor, lengths) -> None:
        """attention [B, H, T, T] of right-padded probes; ids [B, T]; lengths: real lengths."""
        for b, length in enumerate(lengths):
            a = attention[b, :, :length, :length].double()
            occurrences = earlier_occurrences(ids[b, :length], self.bos)
            targets = torch.zeros_like(occurrences)
            targets[:, 1:] = occurrences.tril(-2)[:, :-1]
            for name, mask in (("duplicate_token", occurrences), ("induction", targets)):
                rows = mask.any(dim=1)
                self.sums[name][layer] += (a * mask).sum(dim=2)[:, rows].sum(dim=1)
                if layer == 0:
                    self.counts[name] += int(rows.sum())
        self.add_detector("probes", layer, attention, ids, lengths)

    def add_detector(self, source: str, layer: int, attention: torch.Tensor, ids: torch.Tensor, lengths) -> None:
        if not self.with_detector:
            return
        for b, length in enumerate(lengths):
            a = attention[b, :, :length, :length].double()
            for name, pattern in detector_patterns(ids[b, :length]).items():
                self.detector[source][name][layer] += (a * pattern.double()).sum(dim=(1, 2)) / a.sum(dim=(1, 2))
            if layer == 0:
                self.detector_sequences[source] += 1

    def result(self) -> dict:
        out = {name: (self.sums[name] / max(self.counts[name], 1)).tolist() for name in HEADSCAN}
        if not self.with_detector:
            return out
        out["detector"] = {source: {name: (sums / max(self.detector_sequences[source], 1)).tolist()
                                    for name, sums in by_name.items()}
                           for source, by_name in self.detector.items()}
        return out
