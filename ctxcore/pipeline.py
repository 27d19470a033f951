"""The runner: normalise the input, then pass one state through each stage in turn."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Iterable, Optional

from . import memo
from .stages import assemble, budget, dedup, filters, merge, order, select, tokens
from .memo import Memo
from .records import Candidate, Config, Decision, Inputs, Prompt, TokenizerInfo, Trace, TraceWarning
from .stages.state import State, score_text
from .stages.tokens import get_tokenizer


def recency_scope(state):
    """Warn when dated candidates carry no doc_id: recency is judged only among the versions of one doc_id
    (``filters.newest``), so they were compared with nothing (LlamaIndex's recency postprocessors compare
    the dates of all nodes)."""
    if not state.config.prefer_newest:
        return state
    dated = [c for c in state.alive if filters.version_key(c) is not None]
    loose = [c for c in dated if c.doc_id is None]
    if not loose or len(dated) < 2:
        return state
    return state.warn(TraceWarning(
        f"{len(loose)} of {len(dated)} dated candidates have no doc_id, so their dates were not compared with any "
        f"other: prefer_newest compares versions only within one doc_id", "no_doc_id", [c.id for c in loose][:50]))


STAGES = (
    filters.permitted,  # not_permitted
    filters.newest,     # stale
    recency_scope,      # a warning: dated candidates without a doc_id were not compared
    dedup.exact,        # exact_duplicate
    dedup.near,         # near_duplicate
    merge.run,          # merged
    tokens.run,         # counts (started in the background when the build began)
    filters.threshold,  # below_threshold
    budget.run,         # how many tokens evidence may use
    select.run,         # over_budget / kept (compression happens here, as chunks are fitted)
    order.run,          # prompt order
    assemble.run,       # labels, blocks, final count (over_budget when the whole prompt is too long)
)


def rank_order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Score descending, ties by input order; unscored candidates after all scored ones."""
    indexed = list(enumerate(candidates))
    indexed.sort(key=lambda ic: (ic[1].score is None, -(ic[1].score or 0.0), ic[0]))
    return [c for _, c in indexed]


def _better(c: Candidate) -> tuple:
    """Sort key: the better-scored copy first (unscored after scored)."""
    return (c.score is None, -(c.score or 0.0))


def unique_ids(candidates: tuple[Candidate, ...]) -> tuple[tuple[Candidate, ...], list[Decision], list]:
    """Make every id unique, the way a hybrid-retrieval join needs (the same document from two retrievers).

    For an id given more than once: one occurrence keeps the id — the best-scored of the copies whose text
    is the first occurrence's text (ties: the first in input order); every other occurrence is renamed
    ``id#2``, ``id#3``, … in input order (skipping any id the input already uses). A renamed copy whose
    text is the same as a copy that keeps or gets an id is ``exact_duplicate`` (stage ``ids``) of the
    best-scored copy with that text; a copy with other text is a candidate of its own under its new id.
    The candidates stay in input order, so decision k is still input candidate k.

    >>> cs = (Candidate("a", "x", 0.2), Candidate("a", "x", 0.9), Candidate("a", "y", 0.5))
    >>> out, dropped, _ = unique_ids(cs)
    >>> [c.id for c in out], [(d.id, d.duplicate_of) for d in dropped]
    (['a#2', 'a', 'a#3'], [('a#2', 'a')])
    """
    counts = Counter(c.id for c in candidates)
    if len(counts) == len(candidates):
        return candidates, [], []
    taken = set(counts)
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        if counts[c.id] > 1:
            groups.setdefault(c.id, []).append(i)
    new_ids = [c.id for c in candidates]
    dropped, notes = [], []
    for cid, where in groups.items():
        first_text = candidates[where[0]].text
        keeper = min((i for i in where if candidates[i].text == first_text), key=lambda i: _better(candidates[i]))
        n = 1
        for i in where:
            if i == keeper:
                continue
            n += 1
            while f"{cid}#{n}" in taken:
                n += 1
            new_ids[i] = f"{cid}#{n}"
            taken.add(new_ids[i])
        best_of_text: dict[str, int] = {}
        for i in sorted(where, key=lambda i: (_better(candidates[i]), i != keeper, i)):
            best_of_text.setdefault(candidates[i].text, i)
        copies = [i for i in where if best_of_text[candidates[i].text] != i]
        for i in copies:
            best = best_of_text[candidates[i].text]
            dropped.append(Decision.quick(
                new_ids[i], "exact_duplicate", "ids",
                f"id {cid!r} was given {len(where)} times; this copy (score {score_text(candidates[i].score)}) has "
                f"the same text as {new_ids[best]} (score {score_text(candidates[best].score)}), which is kept "
                f"in its place", duplicate_of=new_ids[best]))
        renamed = [new_ids[i] for i in where if i != keeper and i not in copies]
        notes.append(TraceWarning(
            f"id {cid!r} appears {len(where)} times in the input: "
            + (f"{len(copies)} same-text {'copy was' if len(copies) == 1 else 'copies were'} dropped as "
               f"exact_duplicate" if copies else "")
            + ("; " if copies and renamed else "")
            + (f"{'a copy' if len(renamed) == 1 else 'copies'} with other text renamed {', '.join(renamed)}"
               if renamed else ""),
            "repeated_ids", [cid] + [new_ids[i] for i in where if i != keeper]))
    out = tuple(c if new_ids[i] == c.id else dataclasses.replace(c, id=new_ids[i]) for i, c in enumerate(candidates))
    return out, dropped, notes


def _start(candidates, query, config, inputs) -> State:
    tok = get_tokenizer(config.encoding)
    candidates, repeated, id_notes = unique_ids(tuple(candidates))
    ranked = rank_order(candidates)
    gone = {d.id for d in repeated}
    state = State(query=query, config=config, inputs=inputs, tokenizer=tok, candidates=candidates,
                  alive=tuple([c for c in ranked if c.id not in gone]), rank={c.id: i for i, c in enumerate(ranked)},
                  removed={d.id: d for d in repeated},
                  counting=tok.count_later(c.text for c in candidates))
    unscored = sum(c.score is None for c in candidates)
    generated = sum(c.generated_id for c in candidates)
    notes = []
    if not tok.exact:
        notes.append(TraceWarning(f"token counts are approximate (about 4 characters a token): the "
                                  f"{config.encoding} vocabulary is not available", "approximate_tokens"))
    if unscored and unscored < len(candidates):
        notes.append(TraceWarning(f"{unscored} of {len(candidates)} candidates have no score; they rank after "
                                  f"the scored ones, in input order", "unscored",
                                  [c.id for c in candidates if c.score is None][:50]))
    elif unscored and candidates:
        notes.append(TraceWarning("no candidate has a score: the input order is the rank", "unscored"))
    if generated:
        notes.append(TraceWarning(f"{generated} candidates had no id; ids were generated from their position",
                                  "generated_ids", [c.id for c in candidates if c.generated_id][:50]))
    return state.warn(*id_notes, *notes)


# Rebuilds start from the last remembered state whose stages read none of the changed settings:
# (first stage not covered, settings read by the stages before it that earlier entries do not list;
# "inputs" stands for the mandatory blocks and history, which the budget measures).
_EARLY = (("encoding",), ("caller", "prefer_newest"), ("near_dup", "similarity"), ("merge_adjacent",),
          ("min_score", "drop_unscored"))
CHECKPOINTS = (
    (0, _EARLY[0]),  # the state the start made: ranked, and counting with the encoding's tokenizer
    (STAGES.index(dedup.near), _EARLY[1]),
    (STAGES.index(merge.run), _EARLY[2]),
    (STAGES.index(filters.threshold), _EARLY[3]),
    (STAGES.index(budget.run), _EARLY[4]),
    # budget and select read the rest, save the order; listing them by exclusion keeps a new setting safe
    (STAGES.index(order.run), ("inputs",) + tuple(f.name for f in dataclasses.fields(Config)
                                                  if f.name != "order" and all(f.name not in e for e in _EARLY))),
)
_REMEMBERED = Memo(32)


def build(candidates: Iterable[Candidate], query: str, config: Optional[Config] = None,
          inputs: Optional[Inputs] = None) -> Trace:
    """Decide every candidate's fate and assemble the prompt. Deterministic."""
    candidates = tuple(candidates)
    # (memos file their entries under this input, and keep entries for the last memo.INPUTS inputs only)
    with memo.collector_paused(), memo.building(candidates):  # re-scanning cached records: a fifth of a build
        return _trace(_run(candidates, query, config, inputs, len(STAGES)))


def prepared(candidates: Iterable[Candidate], query: str, config: Optional[Config] = None,
             inputs: Optional[Inputs] = None) -> State:
    """The state the selection stage receives: candidates counted, filtered and de-duplicated, and the budget
    set, with no fate of selection or assembly decided. For a caller that reads the counts and the budget, not
    the fates (a policy inferred for a replay): the build's first stages, resumed and remembered as a build's."""
    candidates = tuple(candidates)
    with memo.collector_paused(), memo.building(candidates):
        return _run(candidates, query, config, inputs, STAGES.index(select.run))


def _run(candidates, query, config, inputs, until: int) -> State:
    """The stages before ``until`` on a fresh or remembered state."""
    config, inputs, candidates = config or Config(), inputs or Inputs(), tuple(candidates)
    # keyed by the candidates' identities: an entry holds them, so no other object can take those ids
    key, keys = (tuple(map(id, candidates)), query), []
    for _, settings in CHECKPOINTS:
        key = key + tuple(repr(inputs) if f == "inputs" else getattr(config, f) for f in settings)
        keys.append(key)
    done, state = 0, None
    for (stop, _), key in reversed(list(zip(CHECKPOINTS, keys))):
        if stop <= until and key in _REMEMBERED:
            done, state = stop, _REMEMBERED[key][1].replace(config=config, inputs=inputs)
            break
    if state is None:
        state = _start(candidates, query, config, inputs)
    for i, stage in enumerate(STAGES[done:until], done):
        for (stop, _), key in zip(CHECKPOINTS, keys):
            if i == stop and key not in _REMEMBERED:
                _REMEMBERED.keep(key, (candidates, state))
        state = stage(state)
    return state


def state_before(stage, candidates: Iterable[Candidate], query: str, config: Optional[Config] = None,
                 inputs: Optional[Inputs] = None) -> State:
    """The state as ``stage`` receives it: the stages before it run, nothing remembered (for holding a
    stage's fast path to its definition on the same state)."""
    state = _start(tuple(candidates), query, config or Config(), inputs or Inputs())
    for earlier in STAGES[:STAGES.index(stage)]:
        state = earlier(state)
    return state


def _trace(state: State) -> Trace:
    decided = {**state.removed, **{d.id: d for d in state.kept}}
    return Trace(
        query=state.query, config=state.config,
        tokenizer=TokenizerInfo(state.config.encoding, state.tokenizer.exact),
        budget=state.budget, candidates=state.candidates,
        decisions=tuple([decided[c.id] for c in state.candidates]),
        blocks=state.blocks, prompt=Prompt(state.prompt_text, state.prompt_tokens),
        warnings=state.warnings, abstain=state.abstain, inputs=state.inputs)


def evidence_cost(trace: Trace) -> int:
    """Docs-budget tokens the kept passages use (text plus label lines)."""
    return sum(d.cost or 0 for d in trace.decisions if d.fate == "kept")


__all__ = ["STAGES", "build", "clear_caches", "evidence_cost", "forget_stage_results", "prepared", "rank_order",
           "state_before"]


def forget_stage_results() -> None:
    """Forget what rebuilds resume from (remembered states, joins, decisions), keeping the caches by
    text (token counts, word sets): the next build is a first rebuild with those settings."""
    memo.forget()


def clear_caches() -> None:
    """Forget cached token counts, word sets and stage results (for measuring a cold build)."""
    memo.clear()
