"""The notes of a diagnosis: consequences and context, not causes (the passages left out, the ones cut, the
answer checks that failed), each one plain sentence first. Split from :mod:`ctxcore.analysis.diagnosis`."""

from __future__ import annotations

from ..records import Trace
from .findings import MAX_PROOFS, Ctx, Finding, pct
from .sent import overlap

QUOTE = 60             # characters of an uncited sentence a note quotes


_BAD = ("unknown_label", "not_in_passage", "unsupported", "from_dropped", "cites_outdated", "not_supporting",
        "not_supported_by", "duplicate_citation", "number_only_outdated", "ignored_abstention")


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return f"\"{text[:QUOTE]}…\"" if len(text) > QUOTE else f"\"{text}\""


def answer_notes(checks) -> list[Finding]:
    """One note per bad check; the sentences that cite no passage folded into one note that quotes each."""
    out = [Finding("answer_" + c.verdict, 1, c.title(), c.detail, ids=c.ids, role="note")
           for c in checks if c.verdict in _BAD]
    uncited = [c for c in checks if c.verdict == "uncited"]
    if uncited:
        n = len(uncited)
        title = (f"The answer's sentence {_quote(uncited[0].claim)} cites no passage." if n == 1 else
                 f"{n} sentences of the answer cite no passage: " + "; ".join(_quote(c.claim) for c in uncited) + ".")
        out.append(Finding("answer_uncited", 1, title, "a claim without a citation cannot be checked against what "
                           "was sent", ids=tuple(i for c in uncited for i in c.ids), role="note"))
    return out


def missing_notes(ctx: Ctx, skip: set) -> tuple[list[Finding], int]:
    """The strongest retrieved passages that were not sent, with what the replay does with them."""
    lost = [cid for cid in ctx.lost if cid not in skip and overlap(ctx.by_id[cid].text, ctx.q) > 0]
    lost.sort(key=ctx.strength, reverse=True)
    out = []
    cut = reranker_cut(ctx.trace)
    for cid in lost[:MAX_PROOFS]:
        d = ctx.trace.decision(cid)
        replay = f"the replay keeps it as [{d.label}]" if d.fate == "kept" else f"the replay drops it too: {d.reason}"
        if cid in cut:  # not a context-construction decision: the reranker dropped it upstream
            kept = ctx.trace.logged.reranked
            out.append(Finding("cut_by_reranker", 1, f"{cid} was cut by {reranker_said(ctx.trace)} before context "
                               f"construction", f"the reranker kept {len(kept)} passages ({', '.join(kept[:8])}); "
                               f"{replay}", ids=(cid,), role="note"))
            continue
        out.append(Finding("missing_from_logged_prompt", 1, f"{cid} was retrieved but never sent",
                           f"{replay}; the prompt as sent does not contain it", ids=(cid,), role="note"))
    return out, max(0, len(ctx.sent.not_sent) - len(skip & set(ctx.sent.not_sent)) - len(out))


def reranker_cut(trace: Trace) -> frozenset:
    """Ids the logged reranker was given but did not return (a logged trace that recorded a reranker)."""
    logged = trace.logged
    return frozenset(getattr(logged, "reranker_cut", ()) or ()) if logged is not None else frozenset()


def reranker_said(trace: Trace) -> str:
    info = trace.logged.reranker or {}
    return f"the reranker ({info['span']})" if info.get("span") else "the reranker"


def cut_notes(ctx: Ctx, skip: set) -> list[Finding]:
    return [Finding("cut_in_logged_prompt", 1, f"{p.id} reached the prompt only in part",
                    f"{pct(p.share)} of its text is in what was sent: it was cut off", ids=(p.id,), role="note")
            for p in ctx.sent.passages if p.cut and p.id not in skip]
