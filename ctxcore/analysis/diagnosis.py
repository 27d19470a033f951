"""Diagnose the prompt that was actually sent: one root cause first, tied to the answer, with a verified fix.

Findings are computed on the sent context (:mod:`ctxcore.analysis.sent`), never on the replay: the logged
prompt is the evidence of what happened. The replay is the counterfactual: each cause names its
decisive candidate ids, and its fix is a settings change checked by re-running the logged pipeline's
inferred policy (:mod:`ctxcore.analysis.policy`) plus the change on the same candidates (the decisive
passage reaches the prompt; for a buried passage, at an edge position). A change the policy already has is
never offered. Each finding leads with plain words; the kind and the ctxcore setting come second.

Causes are ranked causally, not by a flat severity: the finding that explains the others comes first
and folds its consequences in (the passages its failure kept out, the answer checks it explains);
those consequences are listed after it as notes. Kinds, in the order a cause is preferred when
several are present (the first is the one that explains the rest):

``instruction_followed``   a sent passage carries instruction-like text and the answer does what it says
``unsupported_answer``     nothing relevant was retrieved and the answer did not abstain
``nothing_relevant``       the same, with no answer to check
``outdated_version_sent``  an older version of a document was sent while a newer one was retrieved
``conflicting_sources``    two sent passages disagree and the answer took the wrong one: like an outdated
                           version, it is what the answer says, so it outranks what was left out
``reranker_cut``           the decisive passage never reached context construction: nothing downstream
                           (window, copies, order) could have sent it, so it explains their notes -- unless
                           copies filled the step's slots: then the copies come first and the cut is theirs
``history_crowding``       the history took the window: why the prompt had no room, so it comes before
                           the window and crowding causes it produces
``prompt_over_window``     the recounted prompt is longer than the window; the strongest passage is past it
``prompt_cut_off``         a passage was sent only in part, or the question is missing from the prompt
``duplicates_crowd_out``   copies of one passage took the sent evidence; a retrieved passage was never sent
``paraphrased_duplicates`` rewordings did the same; after exact copies, which the pipeline could catch more simply
``threshold_cut``          one passage under the minimum score: a single rule dropping a single passage,
                           after the causes that crowd many out
``per_document_cap``       the continuation of a sent chunk, dropped by a one-chunk-per-document rule
``buried_in_middle``       the strongest sent passage sits in the middle of many
``fragmented_document``    chunks of one document were sent apart, out of their order
``not_sent``               the strongest retrieved passage, which the question needed, was never sent (no
                           other cause explains it); it names the pipeline's rule that left it out, if any
``instruction_in_content`` a sent passage carries instruction-like text (no answer shows it was followed)

The causes in the pipeline's own terms live in :mod:`ctxcore.analysis.causes`; the finding, the diagnosis
and the context the detectors share in :mod:`ctxcore.analysis.findings`. Re-runs are bounded: only the
candidates a finding names are proved (at most ``MAX_PROOFS``), each re-run resumes from the engine's
remembered states (:func:`ctxcore.pipeline.build`), and a ``progress`` callback is told each step so a
caller can show it and stop.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Optional

from . import policy as pipeline_policy
from .answer import check_answer, follows_instruction
from .causes import PIPELINE_DETECTORS
from .notes import answer_notes, cut_notes, missing_notes, reranker_cut, reranker_said
from .findings import MAX_PROOFS, RELEVANT, Ctx, Diagnosis, Finding, landing, pct, setting_said, where, with_budget
from ..stages.assemble import INSTRUCTION_LIKE, suspicious
from ..stages.filters import family_name, version_key
from ..records import Sent, Trace
from .sent import content_words, of_trace, overlap
from ..stages.similarity import jaccard, words

UNRELATED = 0.2        # nothing retrieved is about the question when the closest shares less than this ...
LOW_SCORE = 0.35       # ... or when every score is below this and the closest shares less than twice that
CROWD_SHARE = 0.25      # duplicates must take at least this share of the sent evidence to crowd anything out

ORDER = ("instruction_followed", "unsupported_answer", "nothing_relevant", "outdated_version_sent",
         "conflicting_sources", "reranker_cut", "history_crowding", "prompt_over_window", "prompt_cut_off",
         "duplicates_crowd_out", "paraphrased_duplicates", "threshold_cut", "per_document_cap", "buried_in_middle",
         "fragmented_document", "not_sent", "instruction_in_content")

KINDS = {
    "instruction_followed": "a sent passage holds instruction-like text, and the answer does what it says",
    "unsupported_answer": "nothing retrieved is about the question, and the answer did not abstain",
    "nothing_relevant": "nothing retrieved is about the question: the right answer is to abstain",
    "outdated_version_sent": "an older version of a document was sent while a newer one was retrieved",
    "conflicting_sources": "two sent passages disagree on a number or date; the answer used the one that should lose",
    "reranker_cut": "the reranker or a filter step dropped the passage the answer needed before the prompt was built",
    "history_crowding": "a long conversation history filled the window; the best passage did not fit",
    "prompt_over_window": "the prompt as sent is longer than the window; the strongest passage lies past it",
    "prompt_cut_off": "a passage was cut off mid-text, or the question is missing from the prompt",
    "duplicates_crowd_out": "copies of one passage took the sent evidence; a retrieved passage was never sent",
    "paraphrased_duplicates": "rewordings of one passage took the sent evidence; the passage the rest of the "
                              "question needed was never sent",
    "threshold_cut": "the passage the answer needed scored just under the pipeline's minimum score",
    "per_document_cap": "one chunk per document: the continuation of a sent chunk was retrieved and not sent",
    "buried_in_middle": "the strongest sent passage sits in the middle of many, where models attend least",
    "fragmented_document": "chunks of one document were sent as separate passages, out of their order",
    "not_sent": "the strongest retrieved passage was never sent",
    "instruction_in_content": "a sent passage holds instruction-like text",
}


# detectors: each reads the sent context and returns findings (causes) with their proofs ----------------------

def _duplicates(ctx: Ctx) -> list[Finding]:
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
    fix, ok, at = ctx.reach(decisive, [{"near_dup": min(ctx.threshold, 0.8)}])
    title = (f"{len(members)} copies of one passage ({head}) took {pct(share)} of the sent evidence, so "
             f"{decisive}, the retrieved passage most about the question, was never sent.")
    return [Finding("duplicates_crowd_out", 3, title,
                    f"{', '.join(members)}: {tokens} of {ctx.sent.evidence_tokens} evidence tokens say the same thing",
                    fix, ok, (decisive, *members), proof=("removing copies frees the room" + landing(at))
                    if ok else "no re-run tried brought it in", after=at,
                    fix_said=f"remove copies of a passage before sending (ctxcore: {setting_said(fix)})" if fix
                    else "")]


_ORDERS = {"sandwich": "put the strongest passage first and the next strongest last",
           "rank": "order the passages by score, strongest first"}


def _buried(ctx: Ctx) -> list[Finding]:
    ps = ctx.sent.passages
    n = len(ps)
    if n < 4:
        return []
    best = max(ps, key=lambda p: (ctx.strength(p.id), -p.position))
    edge = max(1, math.ceil(n / 4))
    if not edge < best.position <= n - edge:
        return []
    fix, ok, at = ctx.reach(best.id, [{"order": "sandwich"}, {"order": "rank"}], edge=True)
    s = ctx.by_id[best.id].score
    why = f"score {s:g}, the highest sent" if s is not None else \
        f"{pct(overlap(ctx.by_id[best.id].text, ctx.q))} of the question's words, the most of any sent passage"
    title = (f"The passage most about the question, {best.id}, was sent in the middle of the prompt (position "
             f"{best.position} of {n}), where models pay the least attention.")
    return [Finding("buried_in_middle", 3, title, f"{best.id} ({why}) sits among {n} passages, away from both ends",
                    fix, ok, (best.id,), proof=("ordering for attention puts it at an edge" + landing(at)) if ok
                    else "no ordering tried put it at an edge", after=at,
                    fix_said=f"{_ORDERS[fix['order']]} (ctxcore: {setting_said(fix)})")]  # two orders: one is a change


def _outdated(ctx: Ctx) -> list[Finding]:
    old = [p for p in ctx.sent.passages if p.superseded_by]
    if not old:
        return []
    cited = {i for c in ctx.checks if c.verdict in ("cites_outdated", "number_only_outdated") for i in c.ids}
    p = next((p for p in old if p.id in cited), old[0])
    newer = p.superseded_by
    fix, ok, at = ctx.reach(newer, [{"prefer_newest": True}])
    if ok:
        ok = ctx.case.run(**fix).decision(p.id).fate != "kept"
    doc = family_name([ctx.by_id[p.id], ctx.by_id[newer]])  # one passage: the document and its section
    newer_sent = newer in ctx.sent_ids
    was, now = _version(ctx.by_id[p.id]), _version(ctx.by_id[newer])
    lead = "The answer used" if p.id in cited else "The prompt carried"
    title = (f"{lead} an older version of {doc}, {p.id} ({was}); the newer {newer} ({now}) was "
             + ("sent too." if newer_sent else "retrieved but not sent."))
    evidence = (f"Your pipeline sent both the {was} and the {now} version of the section" if newer_sent else
                f"Your pipeline kept the {was} version of the section and dropped the {now} one")
    return [Finding("outdated_version_sent", 3, title, evidence, fix, ok, (p.id, newer),
                    proof=("keeping only the newest version sends it instead" + landing(at)) if ok
                    else "the re-run did not replace it", after=at,
                    fix_said=f"send only the newest version of a section when several are retrieved (ctxcore: "
                             f"{setting_said(fix)})" if fix else "")]


def _version(c) -> str:
    return c.date or c.version or "?"


def _window_fixes(ctx: Ctx) -> list[dict]:
    """Fit the prompt that was sent: reserve fewer tokens for the answer, or count against the real window."""
    cfg = ctx.config
    window = ctx.limit + ctx.trace.budget.max_output
    room = math.floor((cfg.window * (1 - cfg.safety) - ctx.sent.prompt_tokens) / 100) * 100
    out = [{"max_output": room}] if 0 < room < cfg.max_output else []
    return out + [{"window": window}] + ([{"window": window, "near_dup": 0.8}] if cfg.near_dup is None else [])


def _window_said(fix: Optional[dict], ctx: Ctx) -> str:
    if not fix:
        return ""
    if "max_output" in fix:
        return (f"reserve fewer tokens for the answer, {fix['max_output']:,} instead of {ctx.config.max_output:,}, "
                f"so the prompt fits the window (ctxcore: {setting_said(fix)})")
    return (f"count the prompt against the model's {fix['window']:,}-token window before sending, leaving out "
            f"passages that do not fit (ctxcore: {setting_said(fix)})")


def _whole(ctx: Ctx, cid: str) -> bool:
    """The replay of the pipeline's own rules sends ``cid`` whole (ctxcore never cuts a passage part-way)."""
    d = ctx.run({}).decision(cid)
    return d.fate == "kept" and not d.compressed


def _over_window(ctx: Ctx) -> list[Finding]:
    s = ctx.sent
    if s.prompt_tokens <= ctx.limit or not s.passages:
        return []
    # where each passage starts, in tokens: a build's own prompt knows (its offsets are token offsets); a logged
    # prompt's are characters of its text, read proportionally
    scale = 1.0 if s.source == "replay" else s.prompt_tokens / (max(p.offset for p in s.passages) + 1)
    past = [p for p in s.passages if p.offset * scale + p.tokens > ctx.limit] or [s.passages[-1]]
    decisive = max(past, key=lambda p: (ctx.strength(p.id), -p.position))
    fix, ok, at = ctx.reach(decisive.id, _window_fixes(ctx))
    title = (f"The prompt that was sent was longer than the model could read: {s.prompt_tokens:,} tokens where "
             f"{ctx.limit:,} fit, so {decisive.id}, the strongest passage near the end, is where it gets cut.")
    lie = f"{len(past)} passages lie" if len(past) > 1 else "1 passage lies"
    return [Finding("prompt_over_window", 3, title,
                    f"{lie} past token {ctx.limit:,} (the window minus the room kept for the answer): "
                    f"{', '.join(p.id for p in past[:6])}" + ("…" if len(past) > 6 else ""), fix, ok,
                    (decisive.id,), proof=("re-running your pipeline with it keeps the passage" + landing(at)) if ok
                    else "no re-run tried kept it", after=at, fix_said=_window_said(fix, ctx))]


def _cut_off(ctx: Ctx) -> list[Finding]:
    s = ctx.sent
    cut = [p for p in s.passages if p.cut]
    if not cut and s.question_present:
        return []
    if cut:
        p = max(cut, key=lambda p: (ctx.strength(p.id), -p.position))
        title = f"The prompt was cut off in the middle of {p.id}: only {pct(p.share)} of its text was sent."
        evidence = f"{p.id} is passage {p.position} of {len(s.passages)}, and it breaks off mid-text"
        if not s.question_present:
            evidence += "; the question after it is missing too"
    elif s.passages:
        p = s.passages[-1]
        title = f"The question was missing from the prompt that was sent: it ends inside the evidence, after {p.id}."
        evidence = "the model was shown passages but not what to answer"
    else:
        return []
    fix, ok, at = ctx.reach(p.id, _window_fixes(ctx))
    said = _window_said(fix, ctx)
    if fix is None and _whole(ctx, p.id):
        said = ("send whole passages and the question last: leave out a passage that does not fit instead of "
                "cutting the prompt at a fixed length (ctxcore always does)")
    return [Finding("prompt_cut_off", 3, title, evidence, fix, ok, (p.id,),
                    proof=("a build that fits the window sends it whole, with the question last" + landing(at))
                    if ok else "the replay of your pipeline's rules sends it whole, with the question last"
                    if fix is None and said else "no re-run tried kept it", after=at, fix_said=said)]


def _instructions(ctx: Ctx) -> list[Finding]:
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
        title = (f"{p.id} contains {found[0]}, and the answer does what it says: text inside a retrieved passage "
                 f"steered the answer." if followed else
                 f"{p.id} contains {found[0]}, and it was sent as if it were evidence.")
        out.append(Finding(kind, 3, title, f"sent as {p.label or 'a passage'} at position {p.position}", None,
                           False, (p.id,), proof=("the replay neutralises it and fences it off as data") if fenced
                           else "the replay keeps it as is",
                           fix_said="mark retrieved text as data in the prompt and tell the model never to follow "
                                    "instructions found in it (ctxcore fences passages as data)"))
    return out


def _unsupported(ctx: Ctx) -> list[Finding]:
    cands = ctx.top + [ctx.by_id[p.id] for p in ctx.sent.passages if ctx.by_id[p.id] not in ctx.top]
    if not cands or not ctx.q:
        return []
    best = max(cands, key=lambda c: overlap(c.text, ctx.q))
    scores = [c.score for c in cands if c.score is not None]
    closest = overlap(best.text, ctx.q)
    if not (closest < UNRELATED or (scores and max(scores) < LOW_SCORE and closest < 2 * UNRELATED)):
        return []
    if any(c.verdict == "abstained" for c in ctx.checks):
        return []
    answered = bool(ctx.answer.strip())
    said = content_words(ctx.answer)
    if answered and said and any(len(said & content_words(ctx.by_id[p.id].text)) >= 0.5 * len(said)
                                 for p in ctx.sent.passages):
        return []  # the answer says what a sent passage says: worded unlike the question, but supported
    fix, ok = None, False
    if scores:
        fix = {"min_score": round(math.floor(max(scores) * 100 + 1e-6) / 100 + 0.01, 2)}
        fix = fix if ctx.changes(fix) else None
        ok = bool(fix) and ctx.run(fix).abstain
    top = sorted(cands, key=lambda c: -overlap(c.text, ctx.q))[:3]
    kind = "unsupported_answer" if answered else "nothing_relevant"
    share = pct(overlap(best.text, ctx.q))
    title = (f"Nothing retrieved is about the question (the closest, {best.id}, shares {share} of its words), yet "
             f"the answer did not say it could not answer." if answered else
             f"Nothing retrieved is about the question: the closest, {best.id}, shares {share} of its words.")
    return [Finding(kind, 3, title, "; ".join(f"{c.id}: {pct(overlap(c.text, ctx.q))}" for c in top), fix, ok,
                    tuple(c.id for c in top), proof=("with a minimum score above every passage, the replay tells "
                                                     "the model to say it cannot answer") if ok else "",
                    fix_said=(f"set a minimum relevance score of {fix['min_score']:.2f}, so the model is told to say "
                              f"it cannot answer when nothing scores that high (ctxcore: {setting_said(fix)})")
                    if fix else "")]


def _fragmented(ctx: Ctx) -> list[Finding]:
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
        if not ctx.changes(fix):
            return []
        t = ctx.run(fix)
        head = t.decision(in_doc[0])
        ok = head.fate == "kept" and all(t.decision(i).merged_into == in_doc[0] for i in in_doc[1:])
        title = (f"{len(parts)} chunks of {doc} were sent as separate passages, out of their order "
                 f"({', '.join(in_sent)}), so its text reached the model cut apart.")
        return [Finding("fragmented_document", 3, title, f"document order: {', '.join(in_doc)}", fix, ok,
                        tuple(in_doc), proof=(f"merging adjacent chunks sends them as one passage [{head.label}]"
                                              if ok else "merging did not join them"),
                        after=where(t, in_doc[0]) if ok else None,
                        fix_said=f"send the chunks of one document together, in their order, or merge adjacent "
                                 f"chunks (ctxcore: {setting_said(fix)})")]
    return []


def _rule_fixes(ctx: Ctx, rule, cid: str) -> list[dict]:
    """The changes to the rule that left ``cid`` out, as ctxcore settings."""
    c = ctx.by_id[cid]
    k = ctx.config.max_passages
    if rule is None:
        return []
    if rule.kind == "threshold" and c.score is not None:
        low = {"min_score": math.floor(c.score * 100 + 1e-9) / 100}
        return [low] + ([{**low, "max_passages": k + 1}] if k is not None else [])
    if rule.kind == "passages" and k is not None:
        return [{"max_passages": k + 1}]
    return []


def _rule_said(rule, fix: Optional[dict], ctx: Ctx) -> str:
    if not fix:
        return ""
    if "min_score" in fix:
        more = f" and send {fix['max_passages']} passages" if "max_passages" in fix else ""
        return f"lower the minimum relevance score from {rule.value:.2f} to {fix['min_score']:.2f}{more} " \
               f"(ctxcore: {setting_said(fix)})"
    if "budget" in fix:
        return f"give the evidence more room, about {fix['budget']:,} tokens (ctxcore: {setting_said(fix)})"
    if "max_passages" in fix:
        return f"send {fix['max_passages']} passages instead of {ctx.config.max_passages} (ctxcore: " \
               f"{setting_said(fix)})"
    return f"change your pipeline's settings (ctxcore: {setting_said(fix)})"


def _not_sent(ctx: Ctx) -> list[Finding]:
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
    rule = pipeline_policy.reason_for(ctx.policy, ctx.trace, decisive, ctx.sent) if ctx.policy.rules else None
    role = "cause" if ctx.needed(decisive) else "note"  # left out, but it held nothing the answer lacked
    fix, ok, at = (ctx.grow(decisive, {}) if rule is not None and rule.kind == "budget"
                   else ctx.reach(decisive, _rule_fixes(ctx, rule, decisive)))
    s = ctx.by_id[decisive].score
    title = f"{decisive}" + (f" (score {s:g})" if s is not None else "") + " was retrieved but never sent"
    if decisive in reranker_cut(ctx.trace):
        title += f": {reranker_said(ctx.trace)} cut it before the prompt was built."
    elif rule is not None:
        title += f": your pipeline appears to {pipeline_policy.said(rule)} ({rule.evidence})."
    else:
        title += ": none of the rules your pipeline appears to follow explains why."
    proof = ("the re-run sends it" + landing(at)) if ok else "no re-run tried sent it"
    if fix is None and rule is None and _whole(ctx, decisive):
        proof = "the replay of your pipeline's rules sends it: something the log does not show left it out"
    return [Finding("not_sent", 3 if role == "cause" else 1, title,
                    f"{len(lost)} retrieved passages about the question are not in the prompt", fix, ok, (decisive,),
                    role=role, proof=proof, after=at, fix_said=_rule_said(rule, fix, ctx))]


DETECTORS = (_instructions, _unsupported, _outdated, *PIPELINE_DETECTORS, _over_window, _cut_off, _duplicates,
             _buried, _fragmented, _not_sent)


_SWALLOWS = ("prompt_cut_off", "prompt_over_window", "duplicates_crowd_out", "paraphrased_duplicates",
             "history_crowding")


def _copies_filled_the_step(causes: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """Copies that filled a reranker's or filter step's slots are why it cut the passage they crowded out: the
    copies come first, and the step's cut of that passage is their consequence (a note), since removing the
    copies sends it without keeping more passages."""
    crowd = next((f for f in causes if f.kind in ("duplicates_crowd_out", "paraphrased_duplicates")), None)
    if crowd is None:
        return causes, []
    cut = [f for f in causes if f.kind == "reranker_cut" and f.ids and f.ids[0] in crowd.ids]
    if not cut:
        return causes, []
    rest = [f for f in causes if f is not crowd and f not in cut]
    return [crowd] + rest, [replace(f, severity=1, role="note") for f in cut]


def _explains(root: Finding, note: Finding) -> bool:
    return bool(set(root.ids) & set(note.ids)) or root.kind in _SWALLOWS \
        and note.kind in ("missing_from_logged_prompt", "cut_by_reranker", "not_sent")


def _policy(trace: Trace, sent: Sent) -> pipeline_policy.Policy:
    """The logged pipeline's policy when the prompt it sent is the evidence; none otherwise (ctxcore's own
    settings are then the pipeline)."""
    if trace.logged is None or not trace.logged.prompt_text or sent.source != "logged":
        return pipeline_policy.Policy()
    return pipeline_policy.of(trace, sent)


def diagnose(trace: Trace, *, logged_prompt: Optional[str] = None, answer: Optional[str] = None,
             limit: Optional[int] = None, progress: Optional[Callable[[int, int, str], None]] = None,
             sent: Optional[Sent] = None) -> Diagnosis:
    """The sent context's causes, the root cause first, each with a fix proved by re-running the logged
    pipeline's policy plus the change, then the notes.

    ``limit`` is the prompt limit of the model that was really called (window minus answer tokens), when it
    differs from the trace's config (a sample opened in its failure state); ``progress(done, total, what)``
    is called before each re-run. ``sent`` gives the sent context directly (a sample's failure-state build,
    while ``trace`` is the replay under other settings)."""
    sent = sent if sent is not None else of_trace(trace, logged_prompt)
    checks = tuple(check_answer(trace, answer, logged_prompt, sent=sent)) if answer and answer.strip() else ()
    policy = _policy(trace, sent)
    ctx = Ctx(trace, sent, checks, answer, limit, progress, policy)
    ctx.progress(0, MAX_PROOFS + 2, "reading the sent prompt")
    found: list[Finding] = []
    for detector in DETECTORS:
        got = detector(ctx)
        found += got
        if got and detector is _unsupported and got[0].kind == "unsupported_answer":
            break
    causes = [f for f in found if f.role == "cause"]
    quiet = [f for f in found if f.role == "note"]  # a rule that left out a passage nobody needed
    if any(f.kind == "prompt_over_window" for f in causes):  # the same tail: one cause, not two
        causes = [f for f in causes if f.kind != "prompt_cut_off" or "question" not in f.title]
    causes.sort(key=lambda f: ORDER.index(f.kind))
    causes, filled = _copies_filled_the_step(causes)
    if any(f.kind in ("unsupported_answer", "nothing_relevant") for f in causes):
        causes = [f for f in causes if f.kind not in ("not_sent", "buried_in_middle")]
    named = {f.ids[0] for f in causes if f.kind != "not_sent" and f.ids}
    causes = [f for f in causes if f.kind != "not_sent" or f.ids[0] not in named]  # one cause per passage
    causes = [replace(f, base=dict(ctx.base), fix_said=with_budget(f.fix_said, f.fix)) if f.fix else f
              for f in causes]
    decisive = {i for f in causes for i in f.ids}
    quiet = [f for f in quiet if f.ids[0] not in decisive]
    notes = filled + quiet + cut_notes(ctx, decisive) + answer_notes(checks)
    missing, more = missing_notes(ctx, decisive | {i for f in quiet for i in f.ids})
    notes += missing
    if not causes:
        return Diagnosis(tuple(notes), sent, checks, ctx.proofs, more, policy)
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
    return Diagnosis(tuple([root, *rest, *ordered]), sent, checks, ctx.proofs, more, policy)


def _resolved(trace: Trace, f: Finding, limit: int) -> bool:
    """The current replay already does what the fix claims: the decisive passage is in it (at an edge when
    buried; the newer version instead of the older; merged with the chunk it continues)."""
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
    if f.kind == "per_document_cap":
        return trace.decision(f.ids[1]).fate == "kept" and d.merged_into == f.ids[1]
    return d.fate == "kept"


__all__ = ["Diagnosis", "Finding", "KINDS", "MAX_PROOFS", "ORDER", "diagnose"]
