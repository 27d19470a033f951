"""Stage: place the kept passages for attention.

Models read the start and the end of a long context more reliably than the
middle, so the default puts the best passage first and the second best last.
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
    elif how == "document":
        cand = {c.id: c for c in state.alive}
        kept = by_document(kept, lambda d: cand[d.id].doc_id or ("#", d.id), lambda d: cand[d.id].chunk_index)
    elif how == "original":
        position = {c.id: i for i, c in enumerate(state.candidates)}
        kept.sort(key=lambda d: position[d.id])
    return state.replace(kept=tuple(kept))
