"""Stage: join chunks of one document with consecutive chunk indexes into one passage.

The first chunk in source order carries the passage (its id, the best score of
the run); the later ones are ``merged`` into it. Opt-in (``merge_adjacent``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from ..records import Decision


def runs(indexes: list[int]) -> list[list[int]]:
    """Split sorted chunk indexes into runs of consecutive ones.

    >>> runs([0, 1, 2, 5, 6, 9])
    [[0, 1, 2], [5, 6], [9]]
    """
    out: list[list[int]] = []
    for i in indexes:
        if out and i == out[-1][-1] + 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def run(state):
    if not state.config.merge_adjacent:
        return state
    by_doc = defaultdict(dict)
    for c in state.alive:
        if c.doc_id is not None and c.chunk_index is not None:
            by_doc[c.doc_id].setdefault(c.chunk_index, c)  # an equal index twice: keep the higher-ranked
    runs_of, out = {}, []  # head id -> the chunks it carries
    for doc, chunks in by_doc.items():
        for r in runs(sorted(chunks)):
            if len(r) < 2:
                continue
            members = [chunks[i] for i in r]
            runs_of[members[0].id] = members
            out += [Decision.quick(m.id, "merged", "merge",
                                   f"chunk {m.chunk_index} of {doc} follows chunk {m.chunk_index - 1}; "
                                   f"joined into the passage of {members[0].id} (chunks {r[0]}-{r[-1]})",
                                   merged_into=members[0].id) for m in members[1:]]
    if not runs_of:
        return state
    texts = ["\n".join(m.text for m in members) for members in runs_of.values()]
    heads = {}
    for (head_id, members), text, tokens in zip(runs_of.items(), texts, state.tokenizer.count_many(texts)):
        scores = [m.score for m in members if m.score is not None]
        heads[head_id] = dataclasses.replace(members[0], text=text, score=max(scores) if scores else None,
                                             tokens=tokens)
    state = state.drop(out)
    alive = tuple(heads.get(c.id, c) for c in state.alive)
    rank = dict(state.rank)
    for head_id, members in runs_of.items():  # the passage ranks where its best member ranked
        rank[head_id] = min(state.rank[m.id] for m in members)
    alive = tuple(sorted(alive, key=lambda c: rank[c.id]))
    return state.replace(alive=alive, rank=rank)
