"""Stage: choose the evidence that fits the docs budget.

Walk the survivors in one of three orders (rank, score per token, or maximal
marginal relevance); each costs its tokens plus its label line. What does not
fit is ``over_budget`` and the walk goes on. With compression on, a chunk that
would not fit (or is over ``max_chunk_tokens``) is first cut down to its
query-relevant sentences.
"""

from __future__ import annotations

import heapq
import math
from itertools import accumulate

from .assemble import label_overhead, label_overheads, least_overhead
from .compress import shrink
from .similarity import jaccard, words
from ..memo import Memo
from ..records import Decision, TraceWarning
from .state import score_text


def similarity_for(alive):
    """How MMR compares two passages: ``("cosine", f)`` on the candidates' embeddings when every one carries
    an embedding of the same length (as LangChain's ``maximal_marginal_relevance`` compares embeddings),
    else ``("words", f)``, word-set Jaccard of the texts. ``f(a, b)`` takes two candidates. A negative
    cosine counts as 0 (LangChain lets it lower the redundancy below 0; here accepting a passage never
    raises another's value, which the lazy walk relies on).

    >>> from ctxcore.records import Candidate
    >>> pair = [Candidate("a", "x", embedding=(1.0, 0.0)), Candidate("b", "y", embedding=(1.0, 1.0))]
    >>> name, f = similarity_for(pair)
    >>> name, round(f(*pair), 4)
    ('cosine', 0.7071)
    >>> similarity_for([Candidate("a", "x", embedding=(1.0,)), Candidate("b", "y")])[0]
    'words'
    """
    vectors = [c.embedding for c in alive]
    if vectors and all(v is not None for v in vectors) and len({len(v) for v in vectors}) == 1:
        norms = {}

        def norm(v):
            n = norms.get(v)
            if n is None:
                n = norms[v] = math.sqrt(math.fsum(x * x for x in v))
            return n

        def cosine(a, b):
            na, nb = norm(a.embedding), norm(b.embedding)
            if not na or not nb:  # a zero vector is like nothing (LangChain's NaN -> 0)
                return 0.0
            # a negative cosine counts as no similarity: redundancy never raises a passage's value
            return max(0.0, math.fsum(x * y for x, y in zip(a.embedding, b.embedding)) / (na * nb))

        return "cosine", cosine
    return "words", lambda a, b: jaccard(words(a.text), words(b.text))


def _similarity_note(alive, measure: str) -> TraceWarning:
    if measure == "cosine":
        return TraceWarning("MMR compared passages by the cosine of their embeddings (every candidate carries one)",
                            "similarity_used")
    missing = sum(c.embedding is None for c in alive)
    why = (f"{missing} of {len(alive)} candidates carry no embedding" if missing else
           "the embeddings have different lengths" if alive else "there was nothing to compare")
    return TraceWarning(f"MMR compared passages by word-set Jaccard of their texts ({why})", "similarity_used")


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


def definition(state):
    """The plain rule the fast :func:`run` is held to (tests compare their fates, costs and order):
    walk the candidates in the chosen order; a passage that fits what is left is kept, one that
    does not is over_budget and the walk goes on; after ``max_passages`` every other one is over_limit.
    MMR picks, at each step, the highest ``lam * score - (1 - lam) * max similarity`` with the passages
    kept so far, ties by rank; the similarity is :func:`similarity_for`'s (cosine of the embeddings when
    every candidate carries one, else word-set Jaccard), and the trace says which."""
    cfg, docs, rank = state.config, state.budget.docs, state.rank
    overhead = {c.id: label_overhead(state, c) for c in state.alive}
    if cfg.select == "density":
        pending = _density_order(state.alive, {c.id: c.tokens + overhead[c.id] for c in state.alive}, rank)
    else:
        pending = list(state.alive)
    remaining, kept, dropped, chosen = docs, [], [], []
    measure, similar = similarity_for(state.alive)
    while pending:
        if cfg.select == "mmr":
            def value(c):
                closest = max((similar(c, a) for a in chosen), default=0.0)
                return (-(cfg.mmr_lambda * (c.score or 0.0) - (1 - cfg.mmr_lambda) * closest), rank[c.id])
            c = min(pending, key=value)
            pending.remove(c)
        else:
            c = pending.pop(0)
        if cfg.max_passages is not None and len(kept) >= cfg.max_passages:
            dropped.append(Decision(c.id, "over_limit", "select", "the passage limit was already reached"))
            continue
        fit, why = _fit(state, c, overhead[c.id], remaining)
        if fit is None:
            dropped.append(Decision(c.id, "over_budget", "select", why))
            continue
        text, tokens, compressed = fit
        remaining -= tokens + overhead[c.id]
        chosen.append(c)
        kept.append(Decision(c.id, "kept", "select", "fits", tokens=tokens, cost=tokens + overhead[c.id],
                             compressed=compressed, text=text))
    kept.sort(key=lambda d: rank[d.id])
    chosen.sort(key=lambda c: rank[c.id])
    notes = [_similarity_note(state.alive, measure)] if cfg.select == "mmr" else []
    return state.drop(dropped, survivors=tuple(chosen)).replace(kept=tuple(kept)).warn(*notes)


def run(state):
    """:func:`definition`, fast: label lines are measured only for chunks that could fit, chunks whose
    text alone is over what is left are decided together, and MMR compares lazily."""
    cfg, docs = state.config, state.budget.docs
    rank = state.rank
    overhead = {}
    unmeasured = cfg.label_overhead == "auto" and not cfg.compress
    if cfg.select == "density" or not unmeasured:  # every label line is needed: measure them together
        overhead = dict(zip([c.id for c in state.alive], label_overheads(state, state.alive)))
    if cfg.select == "density":
        walk = _Walk(_density_order(state.alive, {c.id: c.tokens + overhead[c.id] for c in state.alive}, rank))
    elif cfg.select == "mmr":
        walk = _Mmr(state.alive, cfg.mmr_lambda, rank)
    else:
        walk = _Walk(state.alive)
    measure = similarity_for(state.alive)[0] if cfg.select == "mmr" else None
    mmr_by = "cosine of embeddings" if measure == "cosine" else "word-set Jaccard"
    limit = cfg.max_passages
    remaining, kept, dropped = docs, [], []
    floor = least_overhead(state)  # no label line costs less: chunks that cannot fit are not measured
    # the passage text is recorded when it is not the candidate's own (compressed, or merged with its neighbours)
    original = {x.id: x.text for x in state.candidates} if cfg.merge_adjacent else None
    chosen = []
    too_long = []  # text alone over what is left: decided together when what is left changes, or at the end
    for k, c in enumerate(walk):
        if limit is not None and len(kept) >= limit:
            dropped += Decision.each("over_limit", "select", [
                (x.id, f"the passage limit (max_passages {limit}) was already reached") for x in walk.rest(k)])
            break
        if c.id not in overhead and unmeasured:
            if walk.least(k) + floor > remaining:  # no text left to walk fits: the walk ends here
                too_long += walk.rest(k)
                break
            if c.tokens + floor > remaining:
                too_long.append(c)
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
        if too_long:
            dropped += _too_long(state, too_long, remaining, docs)
            too_long = []
        remaining -= cost
        walk.accept(c)
        how = {"score": "by score", "density": "by score per token", "mmr": f"by MMR ({mmr_by})"}[cfg.select]
        kept.append(Decision.quick(
            c.id, "kept", "select",
            f"rank {rank[c.id] + 1}, score {score_text(c.score)}; selected {how} for {cost} tokens "
            f"({docs - remaining} of {docs} used)" + (f"; compressed from {c.tokens} tokens" if compressed else ""),
            tokens=tokens, tokens_before=c.tokens if compressed else None, cost=cost,
            compressed=compressed,
            text=text if text != (original[c.id] if original else c.text) else None))
    dropped += _too_long(state, too_long, remaining, docs) if too_long else []
    kept.sort(key=lambda d: rank[d.id])
    chosen.sort(key=lambda c: rank[c.id])
    notes = [_similarity_note(state.alive, measure)] if cfg.select == "mmr" else []
    return state.drop(dropped, survivors=tuple(chosen)).replace(kept=tuple(kept)).warn(*notes)


class _Walk:
    """The survivors in an order known in advance."""

    def __init__(self, order):
        self.order = order
        self.least_from = None

    def __iter__(self):
        return iter(self.order)

    def least(self, k: int) -> int:
        """Fewest text tokens from the k-th on (suffix minima, made on first use)."""
        if self.least_from is None:
            self.least_from = _least_from([c.tokens for c in self.order])
        return self.least_from[k]

    def rest(self, k: int):
        """The k-th and all after it."""
        return self.order[k:]

    def accept(self, c) -> None:
        """An order known in advance does not depend on what was kept."""


class _Mmr:
    """Candidates by maximal marginal relevance: lam * score - (1 - lam) * the highest similarity
    (:func:`similarity_for`: cosine of embeddings, else word-set Jaccard) with a passage already accepted
    (the caller says which with :meth:`accept`); ties by rank.

    Lazily: accepting a passage only ever lowers values, so a candidate is compared with the passages
    accepted since it was last looked at only when it reaches the top of the heap, and it is next if
    it is still on top. With the walk ending once no text left fits, most of a big input is never
    compared at all (a lambda change on 10k candidates: 10.7 s before, 35 ms now).
    """

    def __init__(self, alive, lam: float, rank: dict):
        self.lam, self.accepted = lam, []
        self.measure, self.similar = similarity_for(alive)
        self.heap = [(-(lam * (c.score or 0.0)), rank[c.id], c) for c in alive]  # closest 0: lam * score
        heapq.heapify(self.heap)
        self.seen: dict[str, tuple[float, int]] = {}  # id -> (highest similarity, accepted passages compared)
        self.by_tokens = sorted((c.tokens, rank[c.id], c.id) for c in alive)
        self.shortest = 0  # by_tokens[:shortest] has been walked
        self.walked: set[str] = set()
        self.current = None

    def __iter__(self):
        heap, lam, accepted = self.heap, self.lam, self.accepted
        while heap:
            _, r, c = heap[0]
            closest, upto = self.seen.get(c.id, (0.0, 0))
            if upto < len(accepted):
                similar = self.similar
                for a in accepted[upto:]:
                    closest = max(closest, similar(c, a))
                self.seen[c.id] = (closest, len(accepted))
                heapq.heapreplace(heap, (-(lam * (c.score or 0.0) - (1 - lam) * closest), r, c))
                continue
            heapq.heappop(heap)
            self.walked.add(c.id)
            self.current = c
            yield c

    def least(self, _k=None) -> int:
        """Fewest text tokens of the current candidate and those not walked yet."""
        while self.by_tokens[self.shortest][2] in self.walked and self.by_tokens[self.shortest][2] != self.current.id:
            self.shortest += 1
        return self.by_tokens[self.shortest][0]

    def rest(self, _k=None) -> list:
        """The current candidate and all not walked yet (in no particular order); the walk ends."""
        out = [self.current] + [c for _, _, c in self.heap]
        self.heap.clear()
        return out

    def accept(self, c) -> None:
        self.accepted.append(c)
