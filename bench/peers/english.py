"""Varied English sentences from a small seeded grammar, for the peers benchmark's corpus.

Simple declarative sentences that link-grammar parses: a subject noun phrase (determiner,
adjectives, noun, now and then a prepositional phrase or a relative clause), a verb phrase in the
past tense (transitive with an object, or intransitive with an adverb), now and then a second
clause joined by a conjunction or a subordinate clause in front. Everything is drawn from one
random.Random, so a seed gives the same text on every machine.
"""

import random

DETERMINERS = ["the", "a", "this", "that", "every", "one", "my", "her", "his", "our", "their", "some"]
ADJECTIVES = ["old", "young", "small", "large", "quiet", "bright", "dark", "happy", "tired", "careful",
              "clever", "strange", "famous", "local", "heavy", "gentle", "busy", "empty", "warm", "cold",
              "green", "red", "blue", "tall", "short", "kind", "brave", "rich", "poor", "simple"]
NOUNS = ["farmer", "teacher", "doctor", "child", "student", "driver", "painter", "writer", "soldier",
         "king", "queen", "neighbor", "friend", "stranger", "dog", "cat", "horse", "bird", "river",
         "city", "village", "house", "garden", "road", "letter", "book", "song", "story", "car", "boat",
         "window", "door", "table", "box", "bridge", "tree", "mountain", "market", "school", "church",
         "train", "ship", "coat", "hat", "apple", "bottle", "picture", "map", "key", "lamp"]
TRANSITIVE = ["saw", "found", "painted", "built", "carried", "opened", "closed", "visited", "watched",
              "followed", "helped", "called", "sold", "bought", "cleaned", "moved", "wrote", "read",
              "remembered", "liked", "pushed", "pulled", "washed", "fixed", "left", "met", "chose",
              "dropped", "noticed", "described"]
INTRANSITIVE = ["slept", "laughed", "waited", "smiled", "arrived", "left", "worked", "danced", "sang",
                "cried", "listened", "walked", "ran", "returned", "stayed", "rested", "talked", "fell"]
ADVERBS = ["quickly", "slowly", "quietly", "happily", "carefully", "suddenly", "often", "rarely",
           "loudly", "gladly", "early", "late", "again", "together", "alone"]
PREPOSITIONS = ["near", "behind", "under", "beside", "across", "inside", "outside", "around",
                "beyond", "with", "without", "after", "before", "along", "toward"]
CONJUNCTIONS = ["and", "but", "so"]
SUBORDINATORS = ["When", "After", "Before", "Because", "Although", "While"]


class Grammar:
    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def pick(self, words):
        return self.random.choice(words)

    def noun_phrase(self, depth: int = 0) -> str:
        words = [self.pick(DETERMINERS)]
        for _ in range(self.random.choice([0, 0, 1, 1, 2])):
            words.append(self.pick(ADJECTIVES))
        words.append(self.pick(NOUNS))
        roll = self.random.random()
        if depth == 0 and roll < 0.2:
            words += [self.pick(PREPOSITIONS), self.noun_phrase(depth + 1)]
        elif depth == 0 and roll < 0.3:
            words += ["that", self.pick(TRANSITIVE), self.noun_phrase(depth + 1)]
        return " ".join(words)

    def verb_phrase(self) -> str:
        if self.random.random() < 0.65:
            words = [self.pick(TRANSITIVE), self.noun_phrase()]
        else:
            words = [self.pick(INTRANSITIVE)]
            if self.random.random() < 0.5:
                words.append(self.pick(ADVERBS))
        if self.random.random() < 0.3:
            words += [self.pick(PREPOSITIONS), self.noun_phrase(1)]
        return " ".join(words)

    def clause(self) -> str:
        return f"{self.noun_phrase()} {self.verb_phrase()}"

    def sentence(self) -> str:
        roll = self.random.random()
        if roll < 0.15:
            text = f"{self.pick(SUBORDINATORS)} {self.clause()}, {self.clause()}"
        elif roll < 0.3:
            text = f"{self.clause()}, {self.pick(CONJUNCTIONS)} {self.clause()}"
        else:
            text = self.clause()
        return text[0].upper() + text[1:] + "."
