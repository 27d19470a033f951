"""Two candidate corpora of any size, generated deterministically from a seed (issue #18).

- ``prose``: 2-14 sentences of 8-24 words each, words drawn from a 40,000-word vocabulary with
  Zipf weights (word r with weight 1 / (r + 1)): most pairs of texts share only common words.
- ``templated``: 30-300 words drawn uniformly from a 120-word vocabulary, as product listings,
  forms and generated FAQs look to a word-set measure: nearly every pair of long texts shares
  most of its words (the adversarial case for exact set-similarity joins).

In both, 5% of the candidates are exact copies of an earlier one and 5% are copies with one word
changed. Scores are drawn at random, so rank order is not input order.

    python bench/corpora.py prose 10000 /tmp/prose.json      # a candidates file for the CLI
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from typing import Callable

CORPORA = ("prose", "templated")
QUERY = "Does an enterprise refund above the approval threshold need a manager?"
_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "ve", "so", "di", "pa", "gre", "stu", "bri", "on", "el", "ar",
              "mo", "zi", "qu", "fen"]


def made_up_words(words: list[str], size: int, rng: random.Random, syllables) -> list[str]:
    """``words`` followed by distinct made-up words of 2-5 ``syllables`` until there are ``size``."""
    words = list(words)
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 5)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def vocabulary(size: int, seed: int) -> list[str]:
    """``size`` distinct made-up words of 2-5 syllables."""
    return made_up_words([], size, random.Random(seed), _SYLLABLES)


def _prose_maker(seed: int) -> Callable[[random.Random], str]:
    vocab = vocabulary(40_000, seed)
    cum = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(vocab))))

    def text(rng: random.Random) -> str:
        sentences = []
        for _ in range(rng.randint(2, 14)):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(8, 24))
            sentences.append(" ".join(words).capitalize() + ".")
        return " ".join(sentences)

    return text


def _templated_maker(seed: int) -> Callable[[random.Random], str]:
    vocab = vocabulary(120, seed)

    def text(rng: random.Random) -> str:
        return " ".join(rng.choices(vocab, k=rng.randint(30, 300)))

    return text


_MAKERS = {"prose": _prose_maker, "templated": _templated_maker}


def texts(corpus: str, n: int, seed: int = 18) -> list[str]:
    """The texts of ``n`` candidates (input order), the copies planted among them."""
    make = _MAKERS[corpus](seed)
    rng = random.Random(f"{corpus}/{seed}")
    vocab = vocabulary(120 if corpus == "templated" else 40_000, seed)
    out: list[str] = []
    for _ in range(n):
        kind = rng.random()
        if out and kind < 0.05:  # an exact copy of an earlier text
            out.append(rng.choice(out))
        elif out and kind < 0.10:  # a copy with one word changed
            words = rng.choice(out).split(" ")
            words[rng.randrange(len(words))] = rng.choice(vocab)
            out.append(" ".join(words))
        else:
            out.append(make(rng))
    return out


def candidates(corpus: str, n: int, seed: int = 18) -> list[dict]:
    """Candidate objects (id, text, score, doc_id) as a candidates file holds them."""
    rng = random.Random(f"scores/{corpus}/{seed}")
    return [{"id": f"{corpus[0]}{i:06d}", "text": t, "score": round(rng.random(), 4), "doc_id": f"doc-{i // 4}"}
            for i, t in enumerate(texts(corpus, n, seed))]


def write(corpus: str, n: int, path: str, seed: int = 18) -> str:
    """A candidates file (``{"query": ..., "candidates": [...]}``) at ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"query": QUERY, "candidates": candidates(corpus, n, seed)}, fh)
    return path


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in CORPORA:
        sys.exit(f"usage: python bench/corpora.py {{{'|'.join(CORPORA)}}} N FILE [SEED]")
    write(sys.argv[1], int(sys.argv[2]), sys.argv[3], *(int(s) for s in sys.argv[4:]))
