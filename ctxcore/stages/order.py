"""Stage: place the kept passages for attention.

Models read the start and the end of a long context more reliably than the
middle, so the default puts the best passage first and the second best last.

Two ways to do that, side by side (ranks 1…N, 1 the best):

- ``sandwich`` (the seed's ``order_for_attention``): 1, 3, 4, …, N, 2 — best first, second
  best last, the rest in rank order between, so the weakest sits next to last.
- ``lost-in-the-middle`` (Haystack's ``LostInTheMiddleRanker``): odd ranks from the start,
  even ranks from the end — 9 read 1 3 5 7 9 8 6 4 2, 8 read 1 3 5 7 8 6 4 2 — so the weakest
  is in the very middle.

LangChain's and LlamaIndex's ``LongContextReorder`` fold the same way from the *weakest*
end, so for an even N their output is Haystack's reversed (the best passage last, the
second best first); for an odd N it is the same as Haystack's.
"""

from __future__ import annotations


def sandwich(ranked: list) -> list:
    """Best first, second best last, the rest in rank order between.

    >>> sandwich(["a", "b", "c", "d"])
    ['a', 'c', 'd', 'b']
    >>> sandwich(["a", "b"])
    ['a', 'b']
    """
    if len(ranked) <= 2:
        return list(ranked)
    return [ranked[0], *ranked[2:], ranked[1]]


def lost_in_the_middle(ranked: list) -> list:
    """Haystack's LostInTheMiddleRanker: each next-ranked passage is inserted at the middle of those
    placed so far (at ``len // 2 + len % 2``), so ranks alternate inward from both ends.

    >>> lost_in_the_middle(list("123456789"))
    ['1', '3', '5', '7', '9', '8', '6', '4', '2']
    >>> lost_in_the_middle(list("12345678"))
    ['1', '3', '5', '7', '8', '6', '4', '2']
    >>> lost_in_the_middle(["a", "b"])
    ['a', 'b']
    """
    out: list = []
    for item in ranked:
        out.insert(len(out) // 2 + len(out) % 2, item)
    return out


def by_document(ranked: list, doc_of, index_of) -> list:
    """Group by document in the order of each group's best member; source order inside.

    >>> docs = {"a1": "A", "b0": "B", "a0": "A"}
    >>> idx = {"a1": 1, "b0": 0, "a0": 0}
    >>> by_document(["a1", "b0", "a0"], docs.get, idx.get)
    ['a0', 'a1', 'b0']
    """
    groups: dict = {}
    for item in ranked:
        groups.setdefault(doc_of(item), []).append(item)
    out = []
    for members in groups.values():
        out += sorted(members, key=lambda m: (index_of(m) is None, index_of(m) or 0))
    return out


def run(state):
    kept = list(state.kept)  # rank order
    how = state.config.order
    if how == "sandwich":
        kept = sandwich(kept)
    elif how == "lost-in-the-middle":
        kept = lost_in_the_middle(kept)
    elif how == "document":
        cand = {c.id: c for c in state.alive}
        kept = by_document(kept, lambda d: cand[d.id].doc_id or ("#", d.id), lambda d: cand[d.id].chunk_index)
    elif how == "original":
        position = {c.id: i for i, c in enumerate(state.candidates)}
        kept.sort(key=lambda d: position[d.id])
    return state.replace(kept=tuple(kept))
