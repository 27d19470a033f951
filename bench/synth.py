"""Deterministic synthetic candidate sets that look like production reranker output.

Lengths 40-400 tokens, planted exact and near duplicates, several dated versions
of some documents, and a spread of scores.
"""

from __future__ import annotations

import itertools
import random

from corpora import made_up_words
from ctxcore import Candidate

_TOPICS = ["refund", "shipping", "warranty", "invoice", "account", "password", "router", "subscription",
           "delivery", "exchange", "discount", "payment", "order", "return", "billing", "support"]
_WORDS = ("the a customer can must will within days business policy request approval manager enterprise "
          "team email confirmation tracking number original method card bank transfer store credit item "
          "damaged missing package carrier label free standard express international fee charge plan "
          "annual monthly cancel renew upgrade downgrade limit threshold amount EUR USD receipt proof "
          "purchase date serial device firmware reset settings network cable power light status").split()


_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "ve", "so", "di", "pa", "gre", "stu", "bri", "on", "el", "ar"]


def _vocabulary(size: int, rng: random.Random) -> list[str]:
    return made_up_words(_WORDS, size, rng, _SYLLABLES)


_VOCAB = _vocabulary(100_000, random.Random(1))
# Zipf-like weights: word r is drawn with weight 1 / (r + 1): common words are common, most are rare.
_CUM = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(_VOCAB))))


def _sentence(rng: random.Random, topic: str) -> str:
    n = rng.randint(8, 22)
    words = rng.choices(_VOCAB, cum_weights=_CUM, k=n)
    words.insert(rng.randint(0, n), topic)
    words.insert(rng.randint(0, n), f"{rng.randint(1, 999)}")
    return " ".join(words).capitalize() + "."


def _text(rng: random.Random, topic: str) -> str:
    target = rng.randint(40, 400)  # tokens, roughly
    out, approx = [], 0
    while approx < target:
        s = _sentence(rng, topic)
        out.append(s)
        approx += int(len(s.split()) * 2.4)
    return " ".join(out)


def candidates(n: int, seed: int = 7) -> list[Candidate]:
    rng = random.Random(seed)
    out: list[Candidate] = []
    for i in range(n):
        topic = rng.choice(_TOPICS)
        kind = rng.random()
        if out and kind < 0.05:  # exact copy of an earlier chunk
            src = rng.choice(out)
            text = src.text
        elif out and kind < 0.12:  # near copy: one word changed
            src = rng.choice(out)
            words = src.text.split()
            words[rng.randrange(len(words))] = rng.choice(_WORDS)
            text = " ".join(words)
        else:
            text = _text(rng, topic)
        doc = f"{topic}-doc-{rng.randint(0, n // 8)}"
        version_date = rng.choice(["2024-11-02", "2025-06-15", "2026-07-01"]) if rng.random() < 0.3 else None
        out.append(Candidate(id=f"c{i:06d}", text=text, score=round(rng.betavariate(2, 3), 4), doc_id=doc,
                             chunk_index=rng.randint(0, 20), title=f"{topic.title()} guide",
                             section=f"{topic.title()} > Details", date=version_date))
    return out
