"""What did the model not see, and why? Search, counterfactual fixes, and findings.

A fix is never guessed: the engine is re-run with the changed setting and the
fix is marked verified only when the candidate then reaches the prompt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..stages.filters import version_key
from ..pipeline import build, rank_order
from .reach import normalise, reached
from . import policy as pipeline_policy
from .sent import of_trace
from ..stages.similarity import jaccard, words
from ..settings import AUTO_HISTORY_SHARE
from ..records import Config, Trace, TraceWarning


@dataclass(frozen=True)
class Case:
    """Everything needed to re-run a build: the candidates, query, blocks and settings."""

    candidates: tuple
    query: str
    config: Config
    inputs: object

    @classmethod
    def of(cls, trace: Trace) -> "Case":
        return cls(trace.candidates, trace.query, trace.config, trace.inputs)

    def run(self, **changes) -> Trace:
        return build(self.candidates, self.query, self.config.replace(**changes) if changes else self.config,
                     self.inputs)


@dataclass(frozen=True)
class Explanation:
    id: str
    fate: str
    stage: str
    reason: str
    fix: Optional[dict]
    fix_verified: bool
    note: str
    label: Optional[str] = None
    position: Optional[int] = None
    sent: Optional[str] = None  # for a logged trace: whether the prompt that was actually sent had it

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def find(trace: Trace, text: str) -> list[str]:
    """Ids of the candidates whose text contains ``text`` (case- and whitespace-insensitive)."""
    needle = normalise(text)
    return [c.id for c in trace.candidates if needle and needle in normalise(c.text)]


def _kept(trace: Trace, cid: str) -> bool:
    return trace.decision(cid).fate == "kept"


def budget_needed(case: Case, cid: str, docs: int) -> Optional[int]:
    """A docs budget, from ``docs`` (the current one) up, at which ``cid`` is kept, by bisection; None if none.

    The smallest such budget wherever keeping it only grows with the budget; where it does not (a larger budget
    lets a higher-ranked chunk take its room), a budget that keeps it, not always the smallest."""
    lo = docs
    first = case.run()
    # never past what the window lets the evidence have: a bigger docs budget only makes the final count
    # drop passages one at a time (quadratic on thousands of candidates) and keeps nothing more
    ceiling = max(docs, first.budget.safe_input)
    hi = max(docs, min(sum(c.tokens or 0 for c in case.candidates) + 80 * len(case.candidates), ceiling))
    if not _kept(case.run(budget=hi), cid):
        # 80 tokens a label is a guess (a fixed label_overhead or a long source name costs more): the ceiling decides
        if hi >= ceiling or not _kept(case.run(budget=ceiling), cid):
            return None
        hi = ceiling
    return _least(case, cid, "budget", lo, hi)


def limit_needed(case: Case, cid: str, limit: Optional[int]) -> Optional[int]:
    """The smallest passage limit above ``limit`` that keeps ``cid`` (None when no limit does): raising the limit
    only lets the walk go further, so the kept set grows with it and a bisection finds the edge."""
    if limit is None or not _kept(case.run(max_passages=None), cid):
        return None
    return _least(case, cid, "max_passages", limit + 1, max(limit + 1, len(case.candidates)))


def _least(case: Case, cid: str, setting: str, lo: int, hi: int) -> int:
    """The smallest value of ``setting`` in [lo, hi] that keeps ``cid``, by bisection: the kept set grows with the
    setting, and ``hi`` is known to keep it."""
    while lo < hi:
        mid = (lo + hi) // 2
        if _kept(case.run(**{setting: mid}), cid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _with_budget(case: Case, cid: str, fix: dict) -> tuple[dict, bool]:
    """Apply ``fix``; if the candidate then only misses the budget, add the budget it needs."""
    trial = case.run(**fix)
    if _kept(trial, cid):
        return fix, True
    if trial.decision(cid).fate == "over_budget":
        b = budget_needed(Case(case.candidates, case.query, case.config.replace(**fix), case.inputs), cid,
                          trial.budget.docs)
        if b is not None:
            fix = {**fix, "budget": b}
            return fix, _kept(case.run(**fix), cid)
    return fix, False


def _near_fix(case: Case, cid: str, trace: Trace) -> dict:
    t = trace
    for _ in range(20):  # each step clears one survivor; stop if something odd keeps it a duplicate
        d = t.decision(cid)
        if d.fate != "near_duplicate":
            break
        threshold = math.floor(d.similarity * 1000 + 1) / 1000
        if threshold > 1:
            return {"near_dup": None}
        t = case.run(near_dup=threshold)
    return {"near_dup": t.config.near_dup}


_FREEING = ({"prefer_newest": True}, {"near_dup": 0.8})


def _freeing_fixes(case: Case, cid: str) -> list[dict]:
    """Recommended settings the case does not use yet that would keep ``cid`` within the same budget."""
    out = []
    for fix in _FREEING:
        if any(getattr(case.config, k) != v for k, v in fix.items()) and _kept(case.run(**fix), cid):
            out.append(fix)
    return out


_FREEING_SAID = {"prefer_newest": "dropping older versions of a passage", "near_dup": "removing near-copies"}


def _describe(fix: dict) -> str:
    """A freeing setting in plain words first, the ctxcore setting second.

    >>> _describe({"prefer_newest": True})
    'dropping older versions of a passage (ctxcore: prefer_newest on)'
    """
    plain = " and ".join(_FREEING_SAID.get(k, k) for k in fix)
    setting = ", ".join(f"{k} {'on' if v is True else v}" for k, v in fix.items())
    return f"{plain} (ctxcore: {setting})"


def explain(trace: Trace, cid: str) -> Explanation:
    """One candidate's fate, and the smallest settings change that brings it into the prompt."""
    case = Case.of(trace)
    d = trace.decision(cid)
    fix, verified, note = None, False, ""
    if d.fate == "kept":
        n = len(trace.kept())
        if 1 < d.position < n:
            note = f"it is kept but sits at position {d.position} of {n}, in the middle where models read least"
            for order in ("sandwich", "rank"):
                t = case.run(order=order)
                if t.decision(cid).fate == "kept" and t.decision(cid).position in (1, len(t.kept())):
                    fix, verified = {"order": order}, True
                    break
        else:
            note = f"it is in the prompt as [{d.label}], at position {d.position} of {n}"
    elif d.fate == "over_budget":
        alternatives = _freeing_fixes(case, cid)
        b = budget_needed(case, cid, trace.budget.docs)
        if alternatives:
            fix, verified = alternatives[0], True
            note = f"{_describe(fix)} frees enough of the docs budget to keep it"
            if b is not None:
                note += f"; so would a docs budget of {b} tokens (now {trace.budget.docs})"
        elif b is not None:
            fix, verified = {"budget": b}, True
            note = f"a docs budget of {b} tokens (now {trace.budget.docs}) keeps it"
        else:
            note = "no budget keeps it under these settings"
    elif d.fate == "over_limit":
        n = limit_needed(case, cid, trace.config.max_passages)
        if n is not None:
            fix, verified = {"max_passages": n}, True
            note = (f"a passage limit of {n} (now {trace.config.max_passages}) keeps it; the docs budget had room, "
                    f"the limit did not")
        else:
            fix, verified = _with_budget(case, cid, {"max_passages": None})
            note = "even without the passage limit it does not fit the docs budget"
    elif d.fate == "below_threshold":
        score = next(c.score for c in trace.candidates if c.id == cid)
        fix, verified = _with_budget(case, cid, {"min_score": score})
        note = f"a minimum score of {score:g} or lower lets it through"
    elif d.fate == "near_duplicate":
        fix, verified = _with_budget(case, cid, _near_fix(case, cid, trace))
        note = f"it is {d.similarity:.3f} similar to {d.duplicate_of}"
    elif d.fate == "stale":
        fix, verified = _with_budget(case, cid, {"prefer_newest": False})
        note = f"{d.superseded_by} is a newer version of the same document"
    elif d.fate == "exact_duplicate":
        twin = trace.decision(d.duplicate_of)
        note = (f"its text is identical to {d.duplicate_of}, which is in the prompt as [{twin.label}]"
                if twin.fate == "kept" else f"its text is identical to {d.duplicate_of} ({twin.fate})")
    elif d.fate == "merged":
        head = trace.decision(d.merged_into)
        note = (f"its text is in the prompt inside [{head.label}] ({d.merged_into})" if head.fate == "kept"
                else f"it was merged into {d.merged_into} ({head.fate})")
    elif d.fate == "not_permitted":
        note = f"the caller {trace.config.caller!r} may not see it; no setting should change that"
    return Explanation(cid, d.fate, d.stage, d.reason, fix, verified, note, d.label, d.position)


FIND_LIMIT = 25  # candidates explained per search (the strongest): each explanation re-builds to verify its fix


def explain_text(trace: Trace, text: str, logged_prompt: Optional[str] = None,
                 limit: Optional[int] = None) -> list[Explanation]:
    """Every candidate containing ``text`` (the ``limit`` strongest, when given), explained. For a logged trace,
    first whether it was in what was *sent* (the evidence), then what the replay would do with it (the
    counterfactual)."""
    ids = find(trace, text)
    if limit is not None and len(ids) > limit:
        rank = {c.id: i for i, c in enumerate(rank_order(trace.candidates))}
        ids = sorted(sorted(ids, key=rank.__getitem__)[:limit], key=ids.index)
    prompt = logged_prompt if logged_prompt is not None else (trace.logged.prompt_text if trace.logged else None)
    out = [explain(trace, cid) for cid in ids]
    if not prompt or not out:
        return out
    sent = of_trace(trace, prompt)
    rules = pipeline_policy.of(trace) if trace.logged is not None and sent.source == "logged" else None
    result = []
    for e in out:
        p = sent.passage(e.id)
        if p is None:
            said = "not sent: the logged prompt lacks it"
            rule = pipeline_policy.reason_for(rules, trace, e.id, sent) if rules is not None else None
            if rule is not None:
                said += f" (your pipeline appears to {pipeline_policy.said(rule)}: {rule.evidence})"
        elif p.cut:
            said = f"sent in part: {p.share:.0%} of it, as {p.label or 'a passage'} at position {p.position} of " \
                   f"{len(sent.passages)}"
        else:
            said = f"sent as {p.label or 'a passage'}, at position {p.position} of {len(sent.passages)}"
        result.append(Explanation(e.id, e.fate, e.stage, e.reason, e.fix, e.fix_verified,
                                  f"{said}; the replay: {e.note}",
                                  e.label, e.position, said))
    return result


_UNEXPLAINED = Explanation("", "", "", "", None, False, "")


def _unexplained(cid: str) -> Explanation:
    """What :func:`findings` uses for an explanation when it does not verify: no fix, nothing re-built."""
    return _UNEXPLAINED


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: int          # 3 = likely cause of a wrong answer, 2 = worth fixing, 1 = note
    title: str
    evidence: str
    fix: Optional[dict] = None
    fix_verified: bool = False
    ids: tuple = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {**self.__dict__, "ids": list(self.ids)}


def findings(trace: Trace, *, answer_checks=None, logged_prompt_tokens: Optional[int] = None,
             logged_prompt: Optional[str] = None, verify: bool = True) -> list[Finding]:
    """Ranked list of what is most likely wrong with this context, each with a verified fix.

    ``verify=False`` finds the same findings (the same kinds, titles and evidence) without the re-builds that
    find and prove each fix (``fix`` None, not verified): what a replay comparing kinds needs, at a fraction of
    the cost (a binary search over the budget is about fifteen builds a dropped passage)."""
    out: list[Finding] = []
    explained = (lambda cid: explain(trace, cid)) if verify else _unexplained
    if logged_prompt:
        for r in reached(trace.candidates, logged_prompt):
            kept_now = _kept(trace, r.id)
            if r.status == "partly":
                out.append(Finding("cut_in_logged_prompt", 3, f"{r.id} reached the logged prompt only in part",
                                   f"{r.share:.0%} of its text is in what was sent: it was cut off"
                                   + ("; the replay keeps it whole" if kept_now else ""), ids=(r.id,)))
            elif r.status == "absent" and kept_now:
                out.append(Finding("missing_from_logged_prompt", 3, f"{r.id} was retrieved but never sent",
                                   f"the replay keeps it as [{trace.decision(r.id).label}]; the logged prompt "
                                   f"does not contain it", ids=(r.id,)))
    case = Case.of(trace)
    rerun = case.run if verify else None
    kept = trace.kept()
    by_id = {c.id: c for c in trace.candidates}
    kept_scores = [by_id[d.id].score for d in kept if by_id[d.id].score is not None]
    floor = min(kept_scores) if kept_scores else None

    # strong passages dropped for budget
    for d in trace.decisions:
        s = by_id[d.id].score
        if d.fate == "over_budget" and s is not None and (floor is None or s >= floor):
            e = explained(d.id)
            out.append(Finding("dropped_for_budget", 3, f"{d.id} (score {s:g}) was dropped for budget",
                               f"{d.reason}; weaker passages were kept" if floor is not None else d.reason,
                               e.fix, e.fix_verified, (d.id,)))

    # duplicates inside the prompt
    dup_cost, dup_ids = 0, []
    for i, a in enumerate(kept):
        for b in kept[:i]:
            if jaccard(words(by_id[a.id].text), words(by_id[b.id].text)) >= 0.8:
                dup_cost += a.cost or 0
                dup_ids.append(a.id)
                break
    if dup_ids and trace.budget.docs:
        share = dup_cost / trace.budget.docs
        t = rerun(near_dup=0.8) if rerun else None
        out.append(Finding("duplicates_in_prompt", 3 if share >= 0.25 else 2,
                           f"near-duplicates took {share:.0%} of the docs budget",
                           f"{', '.join(dup_ids)} repeat passages already in the prompt ({dup_cost} tokens)",
                           {"near_dup": 0.8} if t else None,
                           bool(t) and all(t.decision(i).fate != "kept" for i in dup_ids), tuple(dup_ids)))

    # best passage in the weak middle
    if len(kept) >= 3:
        best = min(kept, key=lambda d: trace.candidates.index(by_id[d.id]) if by_id[d.id].score is None
                   else -by_id[d.id].score)
        if 1 < best.position < len(kept):
            e = explained(best.id)
            out.append(Finding("buried_in_middle", 3,
                               f"the best passage {best.id} sits in the middle where models read least",
                               f"position {best.position} of {len(kept)} in the prompt", e.fix, e.fix_verified,
                               (best.id,)))

    # versions: stale kept, or the newest dropped
    families: dict = {}
    for c in trace.candidates:
        if c.doc_id and version_key(c) is not None:  # an unreadable date is compared with nothing
            families.setdefault(c.doc_id, []).append(c)
    for doc, members in families.items():
        if len({version_key(c) for c in members}) < 2:
            continue
        newest = max(version_key(c) for c in members)
        old_kept = [c.id for c in members if version_key(c) != newest and _kept(trace, c.id)]
        new_lost = [c.id for c in members if version_key(c) == newest and not _kept(trace, c.id)]
        if old_kept:
            t = rerun(prefer_newest=True) if rerun else None
            verb = "predates" if len(old_kept) == 1 else "predate"
            out.append(Finding("stale_version_kept", 3, f"an older version of {doc} is in the prompt",
                               f"{', '.join(old_kept)} {verb} the newest version present",
                               {"prefer_newest": True} if t else None,
                               bool(t) and all(not _kept(t, i) for i in old_kept), tuple(old_kept)))
        if new_lost:
            e = explained(new_lost[0])
            out.append(Finding("newest_version_dropped", 3, f"the newest version of {doc} did not reach the prompt",
                               f"{new_lost[0]}: {trace.decision(new_lost[0]).reason}", e.fix, e.fix_verified,
                               tuple(new_lost)))

    # history crowding out evidence
    hist = sum(b.tokens for b in trace.blocks if b.kind == "history")
    evid = sum(b.tokens for b in trace.blocks if b.kind == "evidence")
    lost = [d.id for d in trace.decisions if d.fate == "over_budget"]
    if hist > evid and lost and not trace.budget.docs_direct:
        current = trace.config.history_share
        share = max(0.0, round((AUTO_HISTORY_SHARE if current == "auto" else current) / 2, 2))  # auto: up to 0.4
        t = rerun(history_share=share) if rerun else None
        regained = [i for i in lost if _kept(t, i)] if t else []
        out.append(Finding("history_crowding", 2, "conversation history outweighs the evidence",
                           f"history {hist} tokens vs evidence {evid}; {len(lost)} passages dropped for budget",
                           {"history_share": share} if t else None, bool(regained), tuple(regained)))

    # the prompt as logged was longer than the window allows
    limit = trace.budget.window - trace.budget.max_output
    if logged_prompt_tokens is not None and logged_prompt_tokens > limit:
        out.append(Finding("prompt_over_window", 3, "the logged prompt was longer than the window allows",
                           f"{logged_prompt_tokens} prompt tokens against {limit} (window {trace.budget.window} - "
                           f"max output {trace.budget.max_output}); the client may have cut the tail"))

    # instruction-like text in retrieved content
    for w in map(TraceWarning.of, trace.warnings):
        if w.kind == "instruction_text" and w.ids:
            cid = w.ids[0]
            out.append(Finding("instruction_in_content", 2, f"retrieved text in {cid} reads like instructions", w,
                               ids=(cid,)))

    # the answer
    for check in answer_checks or ():
        if check.verdict in ("unknown_label", "not_in_passage", "unsupported", "from_dropped"):
            out.append(Finding("answer_" + check.verdict, 3, check.title(), check.detail, ids=check.ids))

    out.sort(key=lambda f: -f.severity)
    return out

