"""headscan's induction probes rebuilt in Python (analyzer/run/sequences/probes.cpp), so the peers
run the very token ids headscan's induction and duplicate-token scores are measured on.

A probe is BOS + R R R R (causal models: no suffix), R of |R| distinct ids drawn by a partial
Fisher-Yates over the vocabulary (every id of the tokenizer but special ones, empty pieces and
byte-fallback pieces <0xNN>) with std::mt19937_64 seeded by --seed, pick = n + random() % (size - n).
The repeat lengths are headscan's for 10 probes (repeat_lengths), or the ones a heads.json's
`probes.repeat_lengths` lists (peer.py --probe-lengths), drawn in that order.
"""

MASK = (1 << 64) - 1


class MersenneTwister64:
    """std::mt19937_64 (C++11 [rand.predef]: the 10000th output of the default seed is
    9981545732273789042)."""

    N, M = 312, 156
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed: int):
        self.state = [seed & MASK]
        for i in range(1, self.N):
            previous = self.state[-1]
            self.state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & MASK)
        self.index = self.N

    def twist(self) -> None:
        state = self.state
        for i in range(self.N):
            y = (state[i] & self.UPPER) | (state[(i + 1) % self.N] & self.LOWER)
            value = state[(i + self.M) % self.N] ^ (y >> 1)
            if y & 1:
                value ^= 0xB5026F5AA96619E9
            state[i] = value
        self.index = 0

    def __call__(self) -> int:
        if self.index >= self.N:
            self.twist()
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK


def repeat_lengths(max_length: int, count: int = 10):
    """|R| of `count` probes and the repeats, for a causal model's max_length (no suffix)."""
    room = max_length - 1
    repeats = 4 if room >= 16 else 2
    longest = min(25, room // repeats)
    shortest = max(2, (longest * 6 + 9) // 10)
    if count == 1:
        return [longest], repeats
    return [longest - (longest - shortest) * k // (count - 1) for k in range(count)], repeats


def probe_vocabulary(pieces, special) -> list:
    """pieces: the token string of each id 0 … vocab_size - 1; special: the set of special ids."""
    def byte_piece(piece: str) -> bool:
        return len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">")
    return [i for i, piece in enumerate(pieces) if i not in special and piece and not byte_piece(piece)]


def make_probes(vocabulary, bos: int, repeat_lengths, repeats: int, seed: int):
    """The probes' ids, [BOS] + R * repeats for each |R| in repeat_lengths."""
    random = MersenneTwister64(seed)
    probes = []
    for length in repeat_lengths:
        pool = list(vocabulary)
        for n in range(length):
            pick = n + random() % (len(pool) - n)
            pool[n], pool[pick] = pool[pick], pool[n]
        probes.append([bos] + pool[:length] * repeats)
    return probes


if __name__ == "__main__":
    twister = MersenneTwister64(5489)
    for _ in range(9999):
        twister()
    assert twister() == 9981545732273789042
    print("std::mt19937_64 reproduced")
