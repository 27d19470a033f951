"""Causes in the logged pipeline's own terms (issue #28): which of ITS rules left the passage out, and what to
change in it.

Each detector reads the sent context and the policy the pipeline appears to follow
(:mod:`ctxcore.analysis.policy`), names the decisive passage, and proves its fix by re-running that policy
plus the change (:class:`ctxcore.analysis.findings.Ctx`). A cause is claimed only when the passage it names is
one the answer needed (:meth:`Ctx.needed`: about the question, with question words nothing sent holds): a
rule that dropped only passages nobody needed is how the pipeline works, not why an answer went wrong.

``reranker_cut``            the reranker (or a filter step) dropped the decisive passage before context
                            construction
``history_crowding``        a long conversation history took the window; the strongest passage did not fit
``paraphrased_duplicates``  rewordings of one passage (word sets too different for the copy check) filled the
                            context and crowded out the passage the rest of the question needed
``threshold_cut``           the decisive passage scored just under the pipeline's minimum score
``per_document_cap``        one chunk per document: the next chunk of a sent document, its continuation, was
                            retrieved and not sent
``conflicting_sources``     two sent passages disagree on a number or date; the answer used the one that
                            should lose (older, or a forum post against an official page)
"""

from __future__ import annotations

import math
import re
from itertools import combinations
from typing import Optional

from ..pipeline import rank_order
from ..stages.filters import version_key
from ..stages.similarity import jaccard, words
from .findings import CONSIDER, RELEVANT, Ctx, Finding, landing, pct, setting_said, where
from .sent import content_words, overlap

NEAR_THRESHOLD = 0.15   # "just under" a score threshold: at most this far below it
HISTORY_CROWD = 0.3     # the history took at least this share of the window before it can crowd anything out
HISTORY_FIX = 0.2       # the history share a fix tries first
PARAPHRASE = 0.6        # content words shared (of the smaller passage's) for two passages to say the same thing
SAME_TOPIC = 0.5        # content words shared for two passages to be about the same thing
CROWD_SHARE = 0.25      # rewordings must take at least this share of the sent evidence to crowd anything out
TRUST = {"official": 3, "policy": 3, "documentation": 2, "docs": 2, "kb": 2, "blog": 1, "forum": 0,
         "community": 0, "draft": 0}   # which source wins when two disagree (unknown types: no winner)

_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_CITATION = re.compile(r"\[[^\[\]\n]{0,20}\]")  # [1], [S2]: a label, not a number the text states


def numbers(text: str) -> frozenset:
    """The numbers, dates and amounts a text states (commas dropped).

    >>> sorted(numbers("Refunds up to 1,500 EUR within 14 days (since 2025-03) [2]."))
    ['03', '14', '1500', '2025']
    """
    return frozenset(n.replace(",", "") for n in _NUMBER.findall(_CITATION.sub(" ", text)))


def _asks(ctx: Ctx, cid: str) -> str:
    """The question's own words (not their stems) that only this passage holds."""
    adds = ctx.adds(cid)
    said = [w for w in re.findall(r"[a-z0-9]+", ctx.trace.query.lower()) if content_words(w) & adds]
    return ", ".join(list(dict.fromkeys(said))[:4])


def threshold_cut(ctx: Ctx) -> list[Finding]:
    rule = ctx.policy.rule("threshold")
    if rule is None:
        return []
    floor = float(rule.value)
    # 1e-9: 0.45 - 0.15 is 0.30000000000000004, and a score of 0.30 is 0.15 under 0.45
    under = [cid for cid in ctx.lost if ctx.by_id[cid].score is not None
             and floor - NEAR_THRESHOLD - 1e-9 <= ctx.by_id[cid].score < floor and ctx.needed(cid)]
    if not under:
        return []
    cid = max(under, key=ctx.strength)
    s = ctx.by_id[cid].score
    new = math.floor(s * 100 + 1e-9) / 100
    k = ctx.config.max_passages
    fix, ok, at = ctx.reach(cid, [{"min_score": new}] + ([{"min_score": new, "max_passages": k + 1}] if k else []))
    more = f" and send {k + 1} passages instead of {k}" if fix and "max_passages" in fix else ""
    return [Finding(
        "threshold_cut", 3,
        f"{cid} scored {s:.2f}, just under your pipeline's minimum relevance score of {floor:.2f}, so it was "
        f"never sent; it holds what the question asks about ({_asks(ctx, cid)}) and nothing sent does.",
        f"Your pipeline's rule: {rule.evidence}.", fix, ok, (cid,),
        proof=("re-running your pipeline with the lower minimum sends it" + landing(at)) if ok
        else "re-running your pipeline with the lower minimum did not send it", after=at,
        fix_said=f"lower the minimum relevance score from {floor:.2f} to {new:.2f}{more} "
                 f"(ctxcore: {setting_said(fix or {'min_score': new})})")]


def _next_chunks(ctx: Ctx):
    """(sent id, not-sent id) for each not-sent chunk next to a sent chunk of the same document and version."""
    lost = [ctx.by_id[i] for i in ctx.sent.not_sent]
    for p in ctx.sent.passages:
        c = ctx.by_id[p.id]
        if not c.doc_id or c.chunk_index is None:
            continue
        for n in lost:
            if n.doc_id == c.doc_id and n.chunk_index == c.chunk_index + 1 and version_key(n) == version_key(c):
                yield c, n


def per_document_cap(ctx: Ctx) -> list[Finding]:
    if ctx.policy.rule("per_document") is None:
        return []
    pairs = [(c, n) for c, n in _next_chunks(ctx) if c.text.rstrip().endswith(":") or ctx.needed(n.id)]
    if not pairs:
        return []
    c, n = max(pairs, key=lambda cn: (cn[0].text.rstrip().endswith(":"), ctx.strength(cn[1].id)))
    fix = {"merge_adjacent": True}
    ok, at = False, None
    if ctx.changes(fix):
        t = ctx.run(fix)
        ok = t.decision(c.id).fate == "kept" and t.decision(n.id).merged_into == c.id
        at = where(t, c.id) if ok else None
    ends = c.text.rstrip()[-60:]
    why = (f"{c.id} ends \"…{ends}\" and the text it leads into is {n.id}" if c.text.rstrip().endswith(":")
           else f"{n.id} holds what the question asks about ({_asks(ctx, n.id)}) and nothing sent does")
    return [Finding(
        "per_document_cap", 3,
        f"Your pipeline sends one chunk per document, so {n.id}, the next chunk of {c.doc_id} after the sent "
        f"{c.id}, was retrieved but never sent: {why}.",
        f"{c.id} is chunk {c.chunk_index} and {n.id} chunk {n.chunk_index} of {c.doc_id}.", fix if ok or
        ctx.changes(fix) else None, ok, (n.id, c.id),
        proof=(f"merging adjacent chunks sends {n.id} together with {c.id}" + landing(at)) if ok
        else "merging adjacent chunks did not send them together", after=at,
        fix_said=f"send the next chunk of the same document, or merge adjacent chunks before the one-per-document "
                 f"cap (ctxcore: {setting_said(fix)})")]


def reranker_cut(ctx: Ctx) -> list[Finding]:
    logged = ctx.trace.logged
    cut = set(getattr(logged, "reranker_cut", ()) or ()) if logged is not None else set()
    if not cut:
        return []
    needed = [cid for cid in ctx.sent.not_sent if cid in cut and ctx.needed(cid)][:CONSIDER]
    if not needed:
        return []
    cid = max(needed, key=lambda i: overlap(ctx.by_id[i].text, ctx.q))
    info = logged.reranker or {}
    kept = len(logged.reranked)
    top = info.get("top_k") if isinstance(info.get("top_k"), int) else kept
    ranked = [c.id for c in rank_order(ctx.trace.candidates)]
    need = max(ranked.index(cid) + 1, top + 1)  # at least one more than the step kept
    step = (f"your filter step ({info['span']})" if info.get("step") == "filter" and info.get("span")
            else f"your reranker ({info['span']})" if info.get("span") else "your reranker")
    fix, ok, at = ctx.reach(cid, [{"max_passages": need}])
    said = (f"let {step} keep {need} passages instead of {top}" if info.get("step") == "filter"
            else f"raise the reranker's top_n from {top} to {need}")
    return [Finding(
        "reranker_cut", 3,
        f"{step[0].upper() + step[1:]} kept {kept} of the retrieved passages and dropped {cid} before the "
        f"prompt was built, yet {cid} holds what the question asks about ({_asks(ctx, cid)}) and nothing sent does.",
        f"It kept {', '.join(logged.reranked[:6])}" + ("…" if kept > 6 else "") + f"; {len(cut)} passages were "
        f"dropped at that step.", fix, ok, (cid,),
        proof=(f"re-running your pipeline with {need} passages sends it" + landing(at)) if ok
        else "re-running your pipeline with more passages did not send it", after=at,
        fix_said=f"{said} (ctxcore: {setting_said(fix or {'max_passages': need})})")]


def history_crowding(ctx: Ctx) -> list[Finding]:
    rule = ctx.policy.rule("history")
    if rule is None or rule.value < HISTORY_CROWD:
        return []
    lost = [cid for cid in ctx.lost[:5] if overlap(ctx.by_id[cid].text, ctx.q) >= RELEVANT]
    if not lost or ctx.top[0].id not in lost:
        return []
    cid = ctx.top[0].id
    tries = [{"history_share": s} for s in (HISTORY_FIX, HISTORY_FIX / 2)]
    fix, ok, at = ctx.reach(cid, tries)
    cap = ctx.case.run(**fix).budget.history if fix else None
    return [Finding(
        "history_crowding", 3,
        f"The conversation history took {pct(rule.value)} of the model's window, so {cid}, the best-scored "
        f"passage for the current question, did not fit and was never sent.",
        f"{rule.evidence}; {len(ctx.sent.passages)} passages were sent.", fix, ok, (cid,),
        proof=("re-running your pipeline with the history capped sends it" + landing(at)) if ok
        else "capping the history did not send it", after=at,
        fix_said=(f"cap the history at {cap:,} tokens, the most recent turns first" if cap is not None else
                  "cap the history") + f" (ctxcore: {setting_said(fix or tries[0])})")]


def _same(a: frozenset, b: frozenset) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def paraphrased_duplicates(ctx: Ctx) -> list[Finding]:
    ps = ctx.sent.passages
    cw = {p.id: content_words(ctx.by_id[p.id].text) for p in ps}
    ws = {p.id: words(ctx.by_id[p.id].text) for p in ps}
    groups: list[list[str]] = []
    for p in ps:
        home = next((g for g in groups if _same(cw[g[0]], cw[p.id]) >= PARAPHRASE), None)
        home.append(p.id) if home is not None else groups.append([p.id])
    members = max(groups, key=len) if groups else []
    if len(members) < 3:
        return []
    pairs = list(combinations(members, 2))
    jac = [jaccard(ws[a], ws[b]) for a, b in pairs]
    if min(jac) >= ctx.threshold:
        return []  # copies the pipeline's own copy check would catch: duplicates_crowd_out says it
    tokens = sum(ctx.sent.passage(i).tokens for i in members)
    share = tokens / ctx.sent.evidence_tokens if ctx.sent.evidence_tokens else 0.0
    lost = [cid for cid in ctx.lost if ctx.needed(cid)]
    if share < CROWD_SHARE or not lost:
        return []
    cid = max(lost, key=lambda i: (len(ctx.adds(i)), ctx.strength(i)))
    same = min(_same(cw[a], cw[b]) for a, b in pairs)
    cut = math.floor(min(jac) * 20) / 20
    fix, ok, at = ctx.reach(cid, [{"near_dup": cut}, {"select": "mmr"}])
    as_copies = bool(fix and "near_dup" in fix)
    return [Finding(
        "paraphrased_duplicates", 3,
        f"{len(members)} rewordings of one passage ({members[0]}) took {pct(share)} of what was sent, so {cid}, "
        f"which covers the rest of the question ({_asks(ctx, cid)}), was never sent.",
        f"{', '.join(members)} share at least {pct(same)} of their content words, though only {min(jac):.2f} of "
        f"their word sets (too different for a copy check at {ctx.threshold:g}).", fix, ok, (cid, *members),
        proof=(("re-running your pipeline with rewordings removed sends it" if as_copies else
                "re-running your pipeline preferring passages that add something new sends it") + landing(at)) if ok
        else "no re-run tried sent it", after=at,
        fix_said=("treat passages that say the same thing in other words as copies" if as_copies
                  else "prefer passages that add something new over rewordings")
        + f" (ctxcore: {setting_said(fix or {'near_dup': cut})})")]


def _winner(a, b) -> Optional[tuple]:
    """(winner, loser, why) when one of two disagreeing passages should win, else None."""
    if a.date and b.date and a.date != b.date:
        w, l = (a, b) if a.date > b.date else (b, a)
        return w, l, f"{w.id} is newer ({w.date} against {l.date})"
    ta, tb = TRUST.get((a.source_type or "").lower()), TRUST.get((b.source_type or "").lower())
    if ta is not None and tb is not None and ta != tb:
        w, l = (a, b) if ta > tb else (b, a)
        return w, l, f"{w.id} is {w.source_type}, {l.id} is {l.source_type}"
    return None


def conflicting_sources(ctx: Ctx) -> list[Finding]:
    said = numbers(ctx.answer)
    sent = [ctx.by_id[p.id] for p in ctx.sent.passages if not p.superseded_by]
    for a, b in combinations(sent, 2):
        if _same(content_words(a.text), content_words(b.text)) < SAME_TOPIC:
            continue
        na, nb = numbers(a.text), numbers(b.text)
        if not (na - nb) or not (nb - na):
            continue
        found = _winner(a, b)
        if found is None:
            continue
        w, l, why = found
        used = said & (numbers(l.text) - numbers(w.text))
        if said and not used:
            continue  # the answer took the right one (or neither): not why it went wrong
        lw, ll = sorted(numbers(w.text) - numbers(l.text)), sorted(numbers(l.text) - numbers(w.text))
        title = (f"Two passages that were sent disagree ({w.id} says {', '.join(lw[:3])}; {l.id} says "
                 f"{', '.join(ll[:3])}), and the answer used {l.id}, the one that should lose: {why}."
                 if used else f"Two passages that were sent disagree ({w.id} says {', '.join(lw[:3])}; {l.id} says "
                 f"{', '.join(ll[:3])}); {w.id} should win: {why}.")
        return [Finding(
            "conflicting_sources", 3, title,
            f"{w.id} and {l.id} share {pct(_same(content_words(a.text), content_words(b.text)))} of their content "
            f"words" + (f"; the answer states {', '.join(sorted(used))}" if used else ""), None, False,
            (l.id, w.id), proof="no ctxcore setting ranks sources by trust: the replay cannot prove this fix",
            fix_said=f"when sources disagree, send only the one that should win ({w.id}), or drop "
                     f"{l.source_type or 'older'} sources like {l.id} from the index (ctxcore: no setting for this)")]
    return []


PIPELINE_DETECTORS = (conflicting_sources, reranker_cut, history_crowding, paraphrased_duplicates, threshold_cut,
                      per_document_cap)
