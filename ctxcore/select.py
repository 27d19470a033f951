"""Stage: choose the evidence that fits the docs budget.

Walk the survivors in one of three orders (rank, score per token, or maximal
marginal relevance); each costs its tokens plus its label line. What does not
fit is ``over_budget`` and the walk goes on. With compression on, a chunk that
would not fit (or is over ``max_chunk_tokens``) is first cut down to its
query-relevant sentences.
"""

from __future__ import annotations

from itertools import accumulate

from .assemble import label_overhead, least_overhead
from .compress import shrink
from .dedup import jaccard, words
from .memo import Memo
from .records import Decision
from .state import score_text


def _density_order(alive, costs, rank):
    return sorted(alive, key=lambda c: (c.score is None, -(c.score or 0.0) / max(costs[c.id], 1), rank[c.id]))


def _fit(state, c, overhead, remaining):
    """(text, tokens, compressed) as the chunk would enter, or None with the reason it cannot."""
    cfg, count = state.config, state.tokenizer.count
    text, tokens, compressed = c.text, c.tokens, False
    cap = cfg.max_chunk_tokens
    if cap is not None and tokens > cap:
        short = shrink(text, state.query, cap, count) if cfg.compress else None
        if short is None:
            why = ("no query-relevant sentence fits in it" if cfg.compress else "compression is off")
            return None, f"{tokens} tokens is over the per-chunk cap of {cap} and {why}"
        text, tokens, compressed = short, count(short), True
    if tokens + overhead > remaining and cfg.compress:
        short = shrink(text, state.query, remaining - overhead, count)
        if short is not None:
            text, tokens, compressed = short, count(short), True
    if tokens + overhead > remaining:
        return None, (f"needs {tokens + overhead} tokens ({tokens} text + {overhead} label) but only "
                      f"{remaining} of the {state.budget.docs}-token docs budget were left")
    return (text, tokens, compressed), None


_TOO_LONG = Memo(4)


def _too_long(state, rest, remaining, docs) -> list[Decision]:
    """over_budget for chunks whose text alone is over what is left (their label lines are not measured).

    Most of a big input ends here, with the same few numbers from one rebuild to the next (a
    near-duplicate or threshold change rarely moves what is left), so the records are remembered,
    per candidate set and what was left. Not with merging on: a merged passage has its head's id."""
    tail = f" text tokens plus a label line but only {remaining} of the {docs}-token docs budget were left"

    def make(chunks):
        return Decision.each("over_budget", "select", [(c.id, f"needs its {c.tokens}{tail}") for c in chunks])

    if state.config.merge_adjacent:
        return make(rest)
    key = (id(state.candidates), remaining, docs)
    held = _TOO_LONG.get(key)
    if held is None or held[0] is not state.candidates:  # the entry holds the candidates: their id is theirs
        held = (state.candidates, {})
    made = _TOO_LONG.keep(key, held)[1]
    if not made:
        out = make(rest)
        made.update(zip([c.id for c in rest], out))
        return out
    missing = [c for c in rest if c.id not in made]
    if missing:
        made.update(zip([c.id for c in missing], make(missing)))
    return [made[c.id] for c in rest]


def _least_from(tokens: list[int]) -> list[int]:
    """least_from[k] = min(tokens[k:]).

    >>> _least_from([5, 3, 9, 4])
    [3, 3, 4, 4]
    """
    return list(accumulate(reversed(tokens), min))[::-1]


def run(state):
    cfg, docs = state.config, state.budget.docs
    rank = state.rank
    overhead = {}
    if cfg.select == "density":
        overhead = {c.id: label_overhead(state, c) for c in state.alive}
        walk = _density_order(state.alive, {c.id: c.tokens + overhead[c.id] for c in state.alive}, rank)
    elif cfg.select == "mmr":
        walk = _mmr(state.alive, cfg.mmr_lambda, rank, accepted := set())
    else:
        walk = state.alive
    # with the walk known in advance, the moment no later chunk's text fits ends it at once
    unmeasured = cfg.label_overhead == "auto" and not cfg.compress
    least_from = _least_from([c.tokens for c in walk]) if unmeasured and cfg.select != "mmr" else None
    limit = cfg.max_passages
    remaining, kept, dropped = docs, [], []
    floor = least_overhead(state)  # no label line costs less: chunks that cannot fit are not measured
    # the passage text is recorded when it is not the candidate's own (compressed, or merged with its neighbours)
    original = {x.id: x.text for x in state.candidates} if cfg.merge_adjacent else None
    chosen = []
    for k, c in enumerate(walk):
        if limit is not None and len(kept) >= limit:
            dropped.append(Decision.quick(c.id, "over_budget", "select",
                                          f"the passage limit (max_passages {limit}) was already reached"))
            continue
        if c.id not in overhead and unmeasured:
            if least_from is not None and least_from[k] + floor > remaining:
                dropped += _too_long(state, walk[k:], remaining, docs)
                break
            if c.tokens + floor > remaining:
                dropped += _too_long(state, [c], remaining, docs)
                continue
        if c.id not in overhead:
            overhead[c.id] = label_overhead(state, c)
        fit, why = _fit(state, c, overhead[c.id], remaining)
        if fit is None:
            dropped.append(Decision.quick(c.id, "over_budget", "select", why))
            continue
        text, tokens, compressed = fit
        chosen.append(c)
        cost = tokens + overhead[c.id]
        remaining -= cost
        if cfg.select == "mmr":
            accepted.add(c.id)
        how = {"score": "by score", "density": "by score per token", "mmr": "by MMR"}[cfg.select]
        kept.append(Decision.quick(
            c.id, "kept", "select",
            f"rank {rank[c.id] + 1}, score {score_text(c.score)}; selected {how} for {cost} tokens "
            f"({docs - remaining} of {docs} used)" + (f"; compressed from {c.tokens} tokens" if compressed else ""),
            tokens=tokens, tokens_before=c.tokens if compressed else None, cost=cost,
            compressed=compressed,
            text=text if text != (original[c.id] if original else c.text) else None))
    kept.sort(key=lambda d: rank[d.id])
    chosen.sort(key=lambda c: rank[c.id])
    return state.drop(dropped, survivors=tuple(chosen)).replace(kept=tuple(kept))


def _mmr(alive, lam, rank, accepted):
    """Yield candidates by maximal marginal relevance: lam * score - (1 - lam) * the highest
    word-set Jaccard with a passage already accepted; ties by rank."""
    pool = list(alive)
    closest = {c.id: 0.0 for c in pool}
    while pool:
        best = max(pool, key=lambda c: (lam * (c.score or 0.0) - (1 - lam) * closest[c.id], -rank[c.id]))
        pool.remove(best)
        yield best
        if best.id not in accepted:
            continue
        w = words(best.text)
        for c in pool:
            closest[c.id] = max(closest[c.id], jaccard(words(c.text), w))
