"""Diagnose the prompt that was actually sent: one root cause first, tied to the answer, with a verified fix.

Findings are computed on the sent context (:mod:`ctxcore.analysis.sent`), never on the replay: the logged
prompt is the evidence of what happened. The replay is the counterfactual: each cause names its
decisive candidate ids, and its fix is a settings change checked by re-running the engine on the same
candidates (the decisive passage reaches the prompt; for a buried passage, at an edge position).

Causes are ranked causally, not by a flat severity: the finding that explains the others comes first
and folds its consequences in (the passages its failure kept out, the answer checks it explains);
those consequences are listed after it as notes. Kinds, in the order a cause is preferred when
several are present (the first is the one that explains the rest):

``instruction_followed``  a sent passage carries instruction-like text and the answer does what it says
``unsupported_answer``    nothing relevant was retrieved and the answer did not abstain
``nothing_relevant``      the same, with no answer to check
``outdated_version_sent`` an older version of a document was sent while a newer one was retrieved
``prompt_over_window``    the recounted prompt is longer than the window; the strongest passage is past it
``prompt_cut_off``        a passage was sent only in part, or the question is missing from the prompt
``duplicates_crowd_out``  copies of one passage took the sent evidence; a retrieved passage was never sent
``buried_in_middle``      the strongest sent passage sits in the middle of many
``fragmented_document``   chunks of one document were sent apart, out of their order
``not_sent``              the strongest retrieved passage was never sent (no other cause explains it)
``instruction_in_content``a sent passage carries instruction-like text (no answer shows it was followed)

Re-runs are bounded: only the candidates a finding names are proved (at most ``MAX_PROOFS``), each
re-run resumes from the engine's remembered states (:func:`ctxcore.pipeline.build`), and a
``progress`` callback is told each step so a caller can show it and stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from .answer import Check, check_answer, follows_instruction
from ..stages.assemble import INSTRUCTION_LIKE, suspicious
from .explain import Case
from ..stages.filters import family_name, version_key
from ..pipeline import rank_order
from ..records import Sent, Trace
from .sent import DEFAULT_NEAR, content_words, of_trace, overlap, relevance
from ..stages.similarity import jaccard, words

MAX_PROOFS = 5          # fixes proved per diagnosis; the rest are counted
RELEVANT = 0.25         # below this share of the question's content words, a passage is not about the question
UNRELATED = 0.2        # nothing retrieved is about the question when the closest shares less than this ...
LOW_SCORE = 0.35       # ... or when every score is below this and the closest shares less than twice that
CONSIDER = 200         # how many of the strongest candidates not sent the causes look at
CROWD_SHARE = 0.25      # duplicates must take at least this share of the sent evidence to crowd anything out

ORDER = ("instruction_followed", "unsupported_answer", "nothing_relevant", "outdated_version_sent",
         "prompt_over_window", "prompt_cut_off", "duplicates_crowd_out", "buried_in_middle", "fragmented_document",
         "not_sent", "instruction_in_content")

KINDS = {
    "instruction_followed": "a sent passage holds instruction-like text, and the answer does what it says",
    "unsupported_answer": "nothing retrieved is about the question, and the answer did not abstain",
    "nothing_relevant": "nothing retrieved is about the question: the right answer is to abstain",
    "outdated_version_sent": "an older version of a document was sent while a newer one was retrieved",
    "prompt_over_window": "the prompt as sent is longer than the window; the strongest passage lies past it",
    "prompt_cut_off": "a passage was cut off mid-text, or the question is missing from the prompt",
    "duplicates_crowd_out": "copies of one passage took the sent evidence; a retrieved passage was never sent",
    "buried_in_middle": "the strongest sent passage sits in the weak middle of the prompt",
    "fragmented_document": "chunks of one document were sent as separate passages, out of their order",
    "not_sent": "the strongest retrieved passage was never sent",
    "instruction_in_content": "a sent passage holds instruction-like text",
}


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: int            # 3 = the root cause, 2 = another cause, 1 = a note (a consequence, or context)
    title: str               # one sentence: what happened, with the decisive ids
    evidence: str
    fix: Optional[dict] = None
    fix_verified: bool = False
    ids: tuple = field(default_factory=tuple)    # the decisive candidate ids first
    role: str = "cause"      # cause or note
    folded: tuple = field(default_factory=tuple)  # the consequences this cause explains, in words
    proof: str = ""          # what the re-run showed
    after: Optional[dict] = None  # {id, fate, label, position, of}: the decisive passage in the fixed build
    resolved: bool = False   # the current replay already does what the fix claims

    def to_dict(self) -> dict:
        return {**self.__dict__, "ids": list(self.ids), "folded": list(self.folded)}


@dataclass(frozen=True)
class Diagnosis:
    findings: tuple          # the root cause first, then other causes, then notes
    sent: object
    checks: tuple
    proofs: int = 0          # re-runs made
    unproved: int = 0        # further dropped passages counted, not proved

    @property
    def root(self) -> Optional[Finding]:
        return self.findings[0] if self.findings and self.findings[0].role == "cause" else None

    @property
    def causes(self) -> list:
        return [f for f in self.findings if f.role == "cause"]

    @property
    def notes(self) -> list:
        return [f for f in self.findings if f.role == "note"]


class _Ctx:
    def __init__(self, trace, sent, checks, answer, limit, progress):
        self.trace, self.sent, self.checks, self.answer = trace, sent, checks, answer or ""
        self.by_id = {c.id: c for c in trace.candidates}
        self.q = content_words(trace.query)
        self.case = Case.of(trace)
        self.limit = limit if limit is not None else sent.limit
        self.progress = progress or (lambda done, total, what: None)
        self.proofs = 0
        self.sent_ids = {p.id for p in sent.passages}
        self.threshold = trace.config.near_dup if trace.config.near_dup is not None else DEFAULT_NEAR
        order = {c.id: i for i, c in enumerate(rank_order(trace.candidates))}
        # the retrieved passages a cause may name: the strongest not sent, in rank order (a passage ranked
        # below CONSIDER others is not what a wrong answer turns on, and 10k candidates stay cheap)
        self.lost = sorted(sent.not_sent, key=order.__getitem__)[:CONSIDER]
        self.top = [self.by_id[cid] for cid in sorted(self.by_id, key=order.__getitem__)[:CONSIDER]]

    def strength(self, cid):
        return relevance(self.by_id[cid], self.q)

    def run(self, fix: dict) -> Trace:
        self.proofs += 1
        self.progress(self.proofs, MAX_PROOFS + 2, f"re-running the engine with {_describe(fix)}")
        return self.case.run(**fix)

    def reach(self, cid: str, tries, *, edge: bool = False) -> tuple[Optional[dict], bool, Optional[dict]]:
        """The first fix of ``tries`` under which ``cid`` is kept (at an edge when asked), with the budget it
        needs added when it only misses the budget; (fix, verified, where it lands)."""
        last = None
        for fix in tries:  # first as they are; then the first one that only misses the budget, with more
            if self.proofs >= MAX_PROOFS + 2:
                break
            t = self.run(fix)
            d = t.decision(cid)
            if d.fate == "kept" and (not edge or d.position in (1, len(t.kept()))):
                return fix, True, _where(t, cid)
            if d.fate == "over_budget" and last is None:
                last = fix
        if last is not None and not edge and self.proofs < MAX_PROOFS + 2:
            return self.grow(cid, last)
        last = tries[0] if tries else None
        return last, False, None


    def grow(self, cid: str, fix: dict) -> tuple[dict, bool, Optional[dict]]:
        """``fix`` plus the docs budget ``cid`` needs: the current budget and the passage's own cost (text and
        label line), one re-run to prove it. Never a search over budgets: a docs budget past what the window
        allows would only make the final count drop passages one by one."""
        t = self.run(fix)
        c = self.by_id[cid]
        cost = (c.tokens or t.decision(cid).tokens or len(c.text) // 3) + 60
        budget = t.budget.docs + cost
        if budget > t.budget.safe_input:
            return fix, False, None
        grown = {**fix, "budget": budget}
        after = self.run(grown)
        if after.decision(cid).fate == "kept":
            return grown, True, _where(after, cid)
        return grown, False, None


def _where(t: Trace, cid: str) -> dict:
    d = t.decision(cid)
    return {"id": cid, "fate": d.fate, "label": d.label, "position": d.position, "of": len(t.kept())}


def _describe(fix: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in fix.items())


def _landing(where: Optional[dict]) -> str:
    if not where or where["fate"] != "kept":
        return ""
    return f"; re-run with it, {where['id']} is in the prompt as [{where['label']}], position {where['position']} " \
           f"of {where['of']}"


def _pct(x: float) -> str:
    return f"{x:.0%}"


# detectors: each reads the sent context and returns findings (causes) with their proofs ----------------------

def _duplicates(ctx: _Ctx) -> list[Finding]:
    groups: dict = {}
    for p in ctx.sent.passages:
        root = p.duplicate_of
        while root and ctx.sent.passage(root) and ctx.sent.passage(root).duplicate_of:
            root = ctx.sent.passage(root).duplicate_of
        if root:
            groups.setdefault(root, [root]).append(p.id)
    if not groups or not ctx.sent.evidence_tokens:
        return []
    head, members = max(groups.items(), key=lambda kv: len(kv[1]))
    tokens = sum(ctx.sent.passage(i).tokens for i in members)
    share = tokens / ctx.sent.evidence_tokens
    if share < CROWD_SHARE:
        return []
    sent_words = [words(ctx.by_id[p.id].text) for p in ctx.sent.passages]
    lost = [cid for cid in ctx.lost
            if overlap(ctx.by_id[cid].text, ctx.q) > 0
            and all(jaccard(words(ctx.by_id[cid].text), w) < ctx.threshold for w in sent_words)]
    if not lost:
        return []
    decisive = max(lost, key=lambda cid: (overlap(ctx.by_id[cid].text, ctx.q), ctx.strength(cid)))
    fix, ok, where = ctx.reach(decisive, [{"near_dup": min(ctx.threshold, 0.8)}])
    n = len(members)
    title = (f"{n} copies of one passage ({head}) took {_pct(share)} of the sent evidence; {decisive}, the "
             f"retrieved passage most about the question, was never sent")
    return [Finding("duplicates_crowd_out", 3, title,
                    f"{', '.join(members)}: {tokens} of {ctx.sent.evidence_tokens} evidence tokens say the same thing",
                    fix, ok, (decisive, *members), proof=("near-duplicate removal frees the room" + _landing(where))
                    if ok else "no re-run tried brought it in", after=where)]


def _buried(ctx: _Ctx) -> list[Finding]:
    ps = ctx.sent.passages
    n = len(ps)
    if n < 4:
        return []
    best = max(ps, key=lambda p: (ctx.strength(p.id), -p.position))
    edge = max(1, math.ceil(n / 4))
    if not edge < best.position <= n - edge:
        return []
    fix, ok, where = ctx.reach(best.id, [{"order": "sandwich"}, {"order": "rank"}], edge=True)
    s = ctx.by_id[best.id].score
    why = f"score {s:g}, the highest sent" if s is not None else \
        f"{_pct(overlap(ctx.by_id[best.id].text, ctx.q))} of the question's words, the most of any sent passage"
    title = f"the strongest passage, {best.id}, was sent at position {best.position} of {n}, in the weak middle"
    return [Finding("buried_in_middle", 3, title, f"{best.id} ({why}) sits where models attend least", fix, ok,
                    (best.id,), proof=("ordering for attention puts it at an edge" + _landing(where)) if ok
                    else "no ordering tried put it at an edge", after=where)]


def _outdated(ctx: _Ctx) -> list[Finding]:
    old = [p for p in ctx.sent.passages if p.superseded_by]
    if not old:
        return []
    cited = {i for c in ctx.checks if c.verdict in ("cites_outdated", "number_only_outdated") for i in c.ids}
    p = next((p for p in old if p.id in cited), old[0])
    newer = p.superseded_by
    fix, ok, where = ctx.reach(newer, [{"prefer_newest": True}])
    if ok:
        ok = ctx.case.run(**fix).decision(p.id).fate != "kept"
    doc = family_name([ctx.by_id[p.id], ctx.by_id[newer]])  # one passage: the document and its section
    newer_sent = newer in ctx.sent_ids
    title = (f"an outdated version of {doc}, {p.id}, was sent while the newer {newer} was retrieved"
             + ("" if newer_sent else " but never sent"))
    used = " and the answer relies on it" if p.id in cited else ""
    return [Finding("outdated_version_sent", 3, title,
                    f"{p.id} ({_version(ctx.by_id[p.id])}) predates {newer} ({_version(ctx.by_id[newer])}){used}",
                    fix, ok, (p.id, newer), proof=("keeping only the newest version sends it instead"
                                                   + _landing(where)) if ok else "the re-run did not replace it",
                    after=where)]


def _version(c) -> str:
    return c.date or c.version or "?"


def _window_fixes(ctx: _Ctx) -> list[dict]:
    window = ctx.limit + ctx.trace.budget.max_output
    return [{"window": window}] + ([{"window": window, "near_dup": 0.8}] if ctx.trace.config.near_dup is None else [])


def _over_window(ctx: _Ctx) -> list[Finding]:
    s = ctx.sent
    if s.prompt_tokens <= ctx.limit or not s.passages:
        return []
    # where each passage starts, in tokens, read proportionally off its place in the prompt text
    total_chars = max(p.offset for p in s.passages) + 1
    last_end = s.passages[-1].offset
    scale = s.prompt_tokens / max(total_chars, last_end + 1)
    past = [p for p in s.passages if p.offset * scale + p.tokens > ctx.limit] or [s.passages[-1]]
    decisive = max(past, key=lambda p: (ctx.strength(p.id), -p.position))
    fix, ok, where = ctx.reach(decisive.id, _window_fixes(ctx))
    title = (f"the prompt as sent counts {s.prompt_tokens:,} tokens against a {ctx.limit:,}-token limit; "
             f"{decisive.id}, the strongest passage past the limit, is where the tail gets cut")
    return [Finding("prompt_over_window", 3, title,
                    f"{len(past)} passages lie past token {ctx.limit:,}: {', '.join(p.id for p in past[:6])}"
                    + ("…" if len(past) > 6 else ""), fix, ok, (decisive.id,),
                    proof=("a build that counts the prompt against the window keeps it" + _landing(where)) if ok
                    else "no re-run tried kept it", after=where)]


def _cut_off(ctx: _Ctx) -> list[Finding]:
    s = ctx.sent
    cut = [p for p in s.passages if p.cut]
    if not cut and s.question_present:
        return []
    if cut:
        p = max(cut, key=lambda p: (ctx.strength(p.id), -p.position))
        title = f"the prompt was cut off inside {p.id}: only {_pct(p.share)} of its text was sent"
        evidence = f"{p.id} is passage {p.position} of {len(s.passages)}, and it breaks off mid-text"
        if not s.question_present:
            evidence += "; the question after it is missing too"
    elif s.passages:
        p = s.passages[-1]
        title = f"the question is missing from the prompt as sent: it ends inside the evidence, after {p.id}"
        evidence = "the model was shown passages but not what to answer"
    else:
        return []
    fix, ok, where = ctx.reach(p.id, _window_fixes(ctx))
    return [Finding("prompt_cut_off", 3, title, evidence, fix, ok, (p.id,),
                    proof=("a build that fits the window sends it whole, with the question last" + _landing(where))
                    if ok else "no re-run tried kept it", after=where)]


def _instructions(ctx: _Ctx) -> list[Finding]:
    out = []
    for p in ctx.sent.passages:
        found = [w for w in suspicious(ctx.by_id[p.id].text) if w in INSTRUCTION_LIKE]
        if not found:
            continue
        followed = bool(ctx.answer) and follows_instruction(ctx.by_id[p.id].text, ctx.answer, ctx.q)
        t = ctx.run({})
        fenced = any(w.kind == "instruction_text" and p.id in w.ids for w in t.warnings) or \
            t.decision(p.id).fate != "kept"
        kind = "instruction_followed" if followed else "instruction_in_content"
        title = (f"{p.id} carries {found[0]} and the answer does what it says" if followed
                 else f"{p.id} carries {found[0]}, sent as if it were evidence")
        out.append(Finding(kind, 3, title, f"sent as {p.label or 'a passage'} at position {p.position}", None,
                           False, (p.id,), proof=("the replay neutralises it and fences it as data (warning "
                                                  "instruction_text)") if fenced else "the replay keeps it as is"))
    return out


def _unsupported(ctx: _Ctx) -> list[Finding]:
    cands = ctx.top + [ctx.by_id[p.id] for p in ctx.sent.passages if ctx.by_id[p.id] not in ctx.top]
    if not cands or not ctx.q:
        return []
    best = max(cands, key=lambda c: overlap(c.text, ctx.q))
    scores = [c.score for c in cands if c.score is not None]
    closest = overlap(best.text, ctx.q)
    if not (closest < UNRELATED or (scores and max(scores) < LOW_SCORE and closest < 2 * UNRELATED)):
        return []
    abstained = any(c.verdict == "abstained" for c in ctx.checks)
    if abstained:
        return []
    answered = bool(ctx.answer.strip())
    said = content_words(ctx.answer)
    if answered and said and any(len(said & content_words(ctx.by_id[p.id].text)) >= 0.5 * len(said)
                                 for p in ctx.sent.passages):
        return []  # the answer says what a sent passage says: worded unlike the question, but supported
    fix, ok = None, False
    if scores:
        fix = {"min_score": round(math.floor(max(scores) * 100 + 1e-6) / 100 + 0.01, 2)}
        ok = ctx.run(fix).abstain
    top = sorted(cands, key=lambda c: -overlap(c.text, ctx.q))[:3]
    kind = "unsupported_answer" if answered else "nothing_relevant"
    title = (f"nothing retrieved is about the question (the closest, {best.id}, shares "
             f"{_pct(overlap(best.text, ctx.q))} of its words), yet the answer did not abstain" if answered else
             f"nothing retrieved is about the question: the closest, {best.id}, shares "
             f"{_pct(overlap(best.text, ctx.q))} of its words")
    return [Finding(kind, 3, title, "; ".join(f"{c.id}: {_pct(overlap(c.text, ctx.q))}" for c in top), fix, ok,
                    tuple(c.id for c in top), proof=("with a score floor above every candidate, the replay tells the "
                                                     "model to abstain") if ok else "")]


def _fragmented(ctx: _Ctx) -> list[Finding]:
    docs: dict = {}
    for p in ctx.sent.passages:
        c = ctx.by_id[p.id]
        if c.doc_id and c.chunk_index is not None:
            docs.setdefault((c.doc_id, version_key(c)), []).append((p.position, c.chunk_index, p.id))
    for (doc, _), parts in docs.items():
        if len(parts) < 2:
            continue
        in_sent = [cid for _, _, cid in sorted(parts)]
        in_doc = [cid for _, _, cid in sorted(parts, key=lambda x: x[1])]
        positions = sorted(pos for pos, _, _ in parts)
        if in_sent == in_doc and positions == list(range(positions[0], positions[0] + len(positions))):
            continue
        fix = {"merge_adjacent": True}
        t = ctx.run(fix)
        head = t.decision(in_doc[0])
        ok = head.fate == "kept" and all(t.decision(i).merged_into == in_doc[0] for i in in_doc[1:])
        title = (f"{len(parts)} chunks of {doc} were sent as separate passages, out of order "
                 f"({', '.join(in_sent)}): the text is cut apart")
        return [Finding("fragmented_document", 3, title, f"document order: {', '.join(in_doc)}", fix, ok,
                        tuple(in_doc), proof=(f"merging adjacent chunks sends them as one passage [{head.label}]"
                                              if ok else "merging did not join them"),
                        after=_where(t, in_doc[0]) if ok else None)]
    return []


def _not_sent(ctx: _Ctx) -> list[Finding]:
    scored = sorted((c.score for c in ctx.trace.candidates if c.score is not None), reverse=True)
    top = scored[min(len(scored), max(5, 2 * len(ctx.sent.passages))) - 1] if scored else None
    sent_words = [words(ctx.by_id[p.id].text) for p in ctx.sent.passages]
    lost = [cid for cid in ctx.lost
            if ((ctx.by_id[cid].score is not None and ctx.by_id[cid].score >= top)
                or (ctx.by_id[cid].score is None and overlap(ctx.by_id[cid].text, ctx.q) >= RELEVANT))
            and all(jaccard(words(ctx.by_id[cid].text), w) < ctx.threshold for w in sent_words)]
    if not lost:
        return []
    decisive = max(lost, key=ctx.strength)
    here = {"select": ctx.trace.config.select}  # the replay's own budgeted selection
    fix, ok, where = ctx.reach(decisive, [here, {"select": "density"}, {"near_dup": 0.8}, {"prefer_newest": True}])
    s = ctx.by_id[decisive].score
    title = f"{decisive}" + (f" (score {s:g})" if s is not None else "") + " was retrieved but never sent"
    if decisive in _reranker_cut(ctx.trace):
        title += f": {_reranker_said(ctx.trace)} cut it before context construction"
    return [Finding("not_sent", 3, title, f"{len(lost)} retrieved passages about the question are not in the prompt",
                    fix, ok, (decisive,), proof=("the re-run sends it" + _landing(where)) if ok else
                    "no re-run tried sent it", after=where)]


DETECTORS = (_instructions, _unsupported, _outdated, _over_window, _cut_off, _duplicates, _buried, _fragmented,
             _not_sent)


# notes: consequences and context --------------------------------------------------------------------------

_BAD = ("unknown_label", "not_in_passage", "unsupported", "from_dropped", "cites_outdated", "not_supporting",
        "not_supported_by",
        "duplicate_citation", "number_only_outdated", "uncited", "ignored_abstention")


def _answer_notes(checks) -> list[Finding]:
    return [Finding("answer_" + c.verdict, 1, c.title(), c.detail, ids=c.ids, role="note")
            for c in checks if c.verdict in _BAD]


def _missing_notes(ctx: _Ctx, skip: set) -> tuple[list[Finding], int]:
    """The strongest retrieved passages that were not sent, with what the replay does with them."""
    lost = [cid for cid in ctx.lost if cid not in skip and overlap(ctx.by_id[cid].text, ctx.q) > 0]
    lost.sort(key=ctx.strength, reverse=True)
    out = []
    cut = _reranker_cut(ctx.trace)
    for cid in lost[:MAX_PROOFS]:
        d = ctx.trace.decision(cid)
        replay = f"the replay keeps it as [{d.label}]" if d.fate == "kept" else f"the replay: {d.fate} ({d.reason})"
        if cid in cut:  # not a context-construction decision: the reranker dropped it upstream
            kept = ctx.trace.logged.reranked
            out.append(Finding("cut_by_reranker", 1, f"{cid} was cut by {_reranker_said(ctx.trace)} before context "
                               f"construction", f"the reranker kept {len(kept)} passages ({', '.join(kept[:8])}); "
                               f"{replay}", ids=(cid,), role="note"))
            continue
        out.append(Finding("missing_from_logged_prompt", 1, f"{cid} was retrieved but never sent",
                           f"{replay}; the prompt as sent does not contain it", ids=(cid,), role="note"))
    return out, max(0, len(ctx.sent.not_sent) - len(skip & set(ctx.sent.not_sent)) - len(out))


def _reranker_cut(trace: Trace) -> frozenset:
    """Ids the logged reranker was given but did not return (a logged trace that recorded a reranker)."""
    logged = trace.logged
    return frozenset(getattr(logged, "reranker_cut", ()) or ()) if logged is not None else frozenset()


def _reranker_said(trace: Trace) -> str:
    info = trace.logged.reranker or {}
    return f"the reranker ({info['span']})" if info.get("span") else "the reranker"


def _cut_notes(ctx: _Ctx, skip: set) -> list[Finding]:
    return [Finding("cut_in_logged_prompt", 1, f"{p.id} reached the prompt only in part",
                    f"{_pct(p.share)} of its text is in what was sent: it was cut off", ids=(p.id,), role="note")
            for p in ctx.sent.passages if p.cut and p.id not in skip]


_SWALLOWS = ("prompt_cut_off", "prompt_over_window", "duplicates_crowd_out")


def _explains(root: Finding, note: Finding) -> bool:
    return bool(set(root.ids) & set(note.ids)) or root.kind in _SWALLOWS \
        and note.kind in ("missing_from_logged_prompt", "cut_by_reranker", "not_sent")


def diagnose(trace: Trace, *, logged_prompt: Optional[str] = None, answer: Optional[str] = None,
             limit: Optional[int] = None, progress: Optional[Callable[[int, int, str], None]] = None,
             sent: Optional[Sent] = None) -> Diagnosis:
    """The sent context's causes, the root cause first, each with a fix proved by a re-run, then the notes.

    ``limit`` is the prompt limit of the model that was really called (window minus answer tokens), when it
    differs from the trace's config (a sample opened in its failure state); ``progress(done, total, what)``
    is called before each re-run. ``sent`` gives the sent context directly (a sample's failure-state build,
    while ``trace`` is the replay under other settings)."""
    sent = sent if sent is not None else of_trace(trace, logged_prompt)
    checks = tuple(check_answer(trace, answer, logged_prompt, sent=sent)) if answer and answer.strip() else ()
    ctx = _Ctx(trace, sent, checks, answer, limit, progress)
    ctx.progress(0, MAX_PROOFS + 2, "reading the sent prompt")
    causes: list[Finding] = []
    for detector in DETECTORS:
        found = detector(ctx)
        causes += found
        if found and detector in (_unsupported,) and found[0].kind == "unsupported_answer":
            break
    if any(f.kind == "prompt_over_window" for f in causes):  # the same tail: one cause, not two
        causes = [f for f in causes if f.kind != "prompt_cut_off" or "question" not in f.title]
    causes.sort(key=lambda f: ORDER.index(f.kind))
    if any(f.kind in ("unsupported_answer", "nothing_relevant") for f in causes):
        causes = [f for f in causes if f.kind not in ("not_sent", "buried_in_middle")]
    decisive = {i for f in causes for i in f.ids}
    notes = _cut_notes(ctx, decisive) + _answer_notes(checks)
    missing, more = _missing_notes(ctx, decisive)
    notes += missing
    if not causes:
        return Diagnosis(tuple(notes), sent, checks, ctx.proofs, more)
    root = causes[0]
    if root.kind in _SWALLOWS:  # a prompt cut short or crowded: the passages it left out are its consequences
        notes = [replace(f, severity=1, role="note") for f in causes[1:] if f.kind == "not_sent"] + notes
        causes = [root] + [f for f in causes[1:] if f.kind != "not_sent"]
    folded = tuple(n.title for n in notes if _explains(root, n))
    root = replace(root, severity=3, folded=folded, resolved=_resolved(trace, root, ctx.limit))
    rest = [replace(f, severity=2, resolved=_resolved(trace, f, ctx.limit)) for f in causes[1:]
            if not f.ids or f.ids[0] not in root.ids]
    ordered = [n for n in notes if _explains(root, n)] + [n for n in notes if not _explains(root, n)]
    ctx.progress(MAX_PROOFS + 2, MAX_PROOFS + 2, "done")
    return Diagnosis(tuple([root, *rest, *ordered]), sent, checks, ctx.proofs, more)


def _resolved(trace: Trace, f: Finding, limit: int) -> bool:
    """The current replay already does what the fix claims: the decisive passage is in it (at an edge when
    buried; the newer version instead of the older)."""
    if not f.ids or not f.fix_verified:
        return False
    if f.kind == "outdated_version_sent":
        return trace.decision(f.ids[1]).fate == "kept" and trace.decision(f.ids[0]).fate != "kept"
    if f.kind in ("unsupported_answer", "nothing_relevant"):
        return trace.abstain
    d = trace.decision(f.ids[0])
    if f.kind in ("prompt_over_window", "prompt_cut_off"):
        return d.fate == "kept" and not d.compressed and trace.prompt.tokens <= limit
    if f.kind == "buried_in_middle":
        return d.fate == "kept" and d.position in (1, len(trace.kept()))
    if f.kind == "fragmented_document":
        return d.fate == "kept" and all(trace.decision(i).merged_into == f.ids[0] for i in f.ids[1:])
    return d.fate == "kept"


def findings(trace: Trace, **kw) -> list[Finding]:
    """The diagnosis as a flat list: root cause first, then other causes, then notes."""
    return list(diagnose(trace, **kw).findings)


def answer_checks(trace: Trace, answer: str, logged_prompt: Optional[str] = None) -> list[Check]:
    return check_answer(trace, answer, logged_prompt, sent=of_trace(trace, logged_prompt))
