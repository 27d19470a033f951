"""The policy a logged pipeline appears to follow, read off what it retrieved and what it sent (issue #28).

A counterfactual built under ctxcore's own defaults answers "what would ctxcore do?"; a support engineer
asks "why did OUR pipeline leave the passage out, and what do we change?". So, from the retrieved
candidates, the reranker step, the sent context (:mod:`ctxcore.analysis.sent`) and any limits stated in
span metadata (``Logged.stated``), each rule the pipeline appears to follow is named with its evidence in
numbers and a confidence: ``stated`` (read from span metadata), ``certain`` (the evidence admits nothing
else), ``likely`` (the simplest rule that explains it) or ``guess``. A rule the evidence does not need is
not claimed: a score threshold that explains nothing a top-k cut does not is left out.

:meth:`Policy.config` turns the rules into a ctxcore :class:`~ctxcore.records.Config` as far as the settings
reach, with what they cannot express said in words: that Config is the replay's baseline.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import InputError
from ..pipeline import build, evidence_cost, prepared, rank_order
from ..records import Budget, Candidate, Config, Inputs, Logged, Sent, Trace
from ..settings import AUTO_HISTORY_SHARE, MAX_TOKENS
from ..stages.similarity import jaccard, words
from ..stages.tokens import get_tokenizer
from .reach import normalise
from .sent import DEFAULT_NEAR, reconstruct

STRONGEST = 200  # not-sent passages checked for copies of a sent one, strongest first (a copy held back scores
#                 like the passage it repeats; a 10k-candidate run is not compared pair by pair)
CONFIDENCES = ("stated", "certain", "likely", "guess")
HEADING = "Your pipeline appears to:"


@dataclass(frozen=True)
class Rule:
    """One rule the logged pipeline appears to follow: what (``kind``, ``value``), why we think so
    (``evidence``: one plain sentence with numbers) and how sure (``confidence``)."""

    kind: str
    value: Any
    evidence: str
    confidence: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "value": self.value, "evidence": self.evidence, "confidence": self.confidence}


@dataclass(frozen=True)
class Policy:
    """The rules, the ctxcore settings that reproduce them (only those that differ from the defaults),
    and what those settings cannot express."""

    rules: tuple[Rule, ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()
    cannot: tuple[str, ...] = ()

    def config(self, base: Config) -> tuple[Config, list[str]]:
        """``base`` with the policy's settings on top, and what the settings cannot express."""
        return base.replace(**dict(self.settings)), list(self.cannot)

    def rule(self, kind: str) -> Optional[Rule]:
        return next((r for r in self.rules if r.kind == kind), None)

    def to_dict(self) -> dict:
        """The ``logged.policy`` block of a trace."""
        return {"rules": [r.to_dict() for r in self.rules], "config": dict(self.settings),
                "cannot": list(self.cannot)}

    @classmethod
    def from_dict(cls, data: Optional[dict]) -> "Policy":
        if not data:
            return cls()
        return cls(tuple(Rule(**r) for r in data.get("rules", ())), tuple(sorted(data.get("config", {}).items())),
                   tuple(data.get("cannot", ())))


# --- the rules, one small pure function each ------------------------------------------------------------------


def roundest(low: float, high: Optional[float]) -> float:
    """The roundest cut that keeps ``low`` and drops ``high``: the coarsest of 1, 2, 3 decimals (rounded down)
    above ``high``; ``low`` itself when none is.

    >>> roundest(0.52, 0.47), roundest(0.52, 0.51), roundest(0.5234, 0.5231), roundest(0.8, None)
    (0.5, 0.52, 0.5234, 0.8)
    """
    for places in (1, 2, 3):
        cut = math.floor(low * 10 ** places + 1e-9) / 10 ** places
        if high is None or cut > high:
            return cut
    return low


def passages_rule(k: int, n: int, stated: Optional[int]) -> Optional[Rule]:
    """Top-k: k sent of n retrieved. Nothing to say when nothing was sent.

    >>> passages_rule(3, 5, None).evidence
    'sent 3 of the 5 passages retrieved'
    >>> passages_rule(3, 5, 3).confidence, passages_rule(0, 5, None), passages_rule(5, 5, None).kind
    ('stated', None, 'all_passages')
    """
    if k == 0:
        return None
    if k == n and stated is None:
        return Rule("all_passages", n, f"sent all {n} passages retrieved", "certain")
    if stated is not None:
        return Rule("passages", stated, f"top_n {stated} is stated in the span metadata; sent {k} of the {n} "
                                        f"passages retrieved", "stated")
    return Rule("passages", k, f"sent {k} of the {n} passages retrieved", "certain")


def threshold_rule(sent: list[float], not_sent: list[float], first_k: bool,
                   stated: Optional[float]) -> Optional[Rule]:
    """A minimum score, claimed only when it explains what a top-k cut does not: every sent passage scored at
    least the cut, every not-sent one below it, and the sent ones are not simply the first k retrieved.

    >>> threshold_rule([0.81, 0.52], [0.47, 0.31], False, None).value
    0.5
    >>> threshold_rule([0.81, 0.52], [0.47, 0.31], True, None) is None   # top-k explains it as well
    True
    >>> threshold_rule([0.81, 0.52], [0.6], False, None) is None          # a not-sent one scored above a sent one
    True
    """
    if stated is not None:
        return Rule("threshold", stated, f"a minimum score of {stated:g} is stated in the span metadata"
                    + (f"; the lowest sent scored {min(sent):.2f}" if sent else ""), "stated")
    if not sent or not not_sent or first_k:
        return None
    low, high = min(sent), max(not_sent)
    if high >= low:
        return None
    cut = roundest(low, high)
    shown = " and ".join(f"{s:.2f}" for s in sorted(not_sent, reverse=True)[:3])
    return Rule("threshold", cut, f"all {len(sent)} sent scored >= {cut:.2f}; the {len(not_sent)} not sent scored "
                                  f"{shown}" + (" …" if len(not_sent) > 3 else ""), "likely")


def per_document_rule(sent_docs: list[Optional[str]], not_sent: list[tuple[str, Optional[str], bool]]
                      ) -> Optional[Rule]:
    """One chunk per document: no two sent passages share a doc_id, while some not-sent ones share a doc_id
    with a sent one. ``not_sent``: (id, doc_id, scored above a sent passage). ``likely`` when such a
    passage out-scored a sent one (nothing else explains it), else ``guess``.

    >>> per_document_rule(["a", "b"], [("a#2", "a", True)]).value
    1
    >>> per_document_rule(["a", "a"], [("a#2", "a", True)]) is None
    True
    """
    docs = [d for d in sent_docs if d]
    if len(docs) < 2 or len(set(docs)) != len(docs):
        return None
    shared = [(cid, above) for cid, doc, above in not_sent if doc in set(docs)]
    if not shared:
        return None
    ids = ", ".join(cid for cid, _ in shared[:3])
    verb = "shares a document with a sent one and was" if len(shared) == 1 else "share documents with sent ones and were"
    strong = any(above for _, above in shared)
    return Rule("per_document", 1, f"the {len(docs)} sent passages come from {len(docs)} different documents; "
                                   f"{ids} {verb} not sent"
                + ("" if strong else " (they also scored lower)"), "likely" if strong else "guess")


def dedup_rule(copies_sent: list[tuple[str, str, float]], copies_held: list[str]) -> Optional[Rule]:
    """Copies sent (``value`` False) or held back (True). ``copies_sent``: (id, copy of, similarity).

    >>> dedup_rule([("b", "a", 1.0)], []).evidence
    'sent 1 copy of passages already sent: b repeats a (similarity 1.00)'
    >>> dedup_rule([], ["b"]).value, dedup_rule([], []) is None
    (True, True)
    """
    if copies_sent:
        said = ", ".join(f"{c} repeats {of} (similarity {s:.2f})" for c, of, s in copies_sent[:3])
        n = len(copies_sent)
        return Rule("dedup", False, f"sent {n} cop{'y' if n == 1 else 'ies'} of passages already sent: {said}",
                    "certain")
    if copies_held:
        return Rule("dedup", True, f"{', '.join(copies_held[:3])} repeat{'s' if len(copies_held) == 1 else ''} a "
                                   f"sent passage and {'was' if len(copies_held) == 1 else 'were'} not sent", "likely")
    return None


def versions_rule(outdated_sent: list[tuple[str, str, bool]]) -> Optional[Rule]:
    """Outdated versions sent: (id, newer id, the newer one was sent too).

    >>> versions_rule([("v1", "v2", True)]).evidence
    'sent v1, an older version of v2, which was sent too'
    """
    if not outdated_sent:
        return None
    old, new, both = outdated_sent[0]
    return Rule("versions", False, f"sent {old}, an older version of {new}, "
                                   f"{'which was sent too' if both else 'which was retrieved but not sent'}", "certain")


def order_rule(sent: list[str], retrieved: list[str], by_score: list[str]) -> Optional[Rule]:
    """The order of the sent passages: the retrieval order, by score, or another one.

    >>> order_rule(["a", "c"], ["a", "b", "c"], ["a", "c", "b"]).value
    'original'
    >>> order_rule(["c", "a"], ["a", "b", "c"], ["c", "b", "a"]).value
    'rank'
    >>> order_rule(["c", "a", "b"], ["a", "b", "c"], ["a", "b", "c"]).value
    'other'
    """
    if len(sent) < 2:
        return None
    place = {cid: i for i, cid in enumerate(retrieved)}
    in_retrieval = sorted(sent, key=place.__getitem__) == sent
    by = [cid for cid in by_score if cid in set(sent)]
    if in_retrieval:
        also = ", which is also by score" if by == sent else ""
        return Rule("order", "original", f"the {len(sent)} sent passages are in the order retrieval returned "
                                         f"them{also}", "certain")
    if by == sent:
        return Rule("order", "rank", f"the {len(sent)} sent passages are in score order, not retrieval order",
                    "certain")
    ranks = " ".join(str(place[cid] + 1) for cid in sent)
    return Rule("order", "other", f"the sent passages are retrieval ranks {ranks}: neither retrieval nor score order",
                "certain")


def budget_rule(evidence: int, skipped: Optional[tuple[str, int]]) -> Optional[Rule]:
    """An evidence budget: likely when a passage that out-scored a sent one was skipped and it would have
    taken the evidence past what was sent (``skipped``: its id and tokens).

    >>> budget_rule(120, ("big", 300)).evidence
    'the sent evidence took 120 tokens; big (300 tokens) out-scored a sent passage and would have made it 420'
    >>> budget_rule(120, None) is None
    True
    """
    if skipped is None:
        return None
    cid, tokens = skipped
    return Rule("budget", evidence, f"the sent evidence took {evidence} tokens; {cid} ({tokens} tokens) out-scored a "
                                    f"sent passage and would have made it {evidence + tokens}", "likely")


def history_rule(history: int, window: int) -> Optional[Rule]:
    """The history's share of the window, from the history turns found in the logged prompt.

    >>> history_rule(820, 8192).evidence
    'the conversation history took 820 of the 8192-token window (10%)'
    """
    if history <= 0:
        return None
    share = history / window
    return Rule("history", round(share, 3), f"the conversation history took {history} of the {window}-token window "
                                            f"({share:.0%})", "certain")


def reranker_rule(reranker: Optional[dict], kept: int, cut: int) -> Optional[Rule]:
    """A reranker's top_n: stated in its span, else what it returned.

    >>> reranker_rule({"model": "rr", "top_k": 3}, 3, 1).confidence
    'stated'
    """
    if not reranker:
        return None
    top = reranker.get("top_k")
    model = reranker.get("model") or "the reranker"
    said = f"{model} returned {kept} of the {kept + cut} candidates it was given"
    if isinstance(top, int) and not isinstance(top, bool):
        return Rule("reranker", top, f"top_n {top} is stated in the reranker span; {said}", "stated")
    return Rule("reranker", kept, said, "certain" if cut else "guess")


def truncation_rule(cut: list[tuple[str, int, float]], total: int) -> Optional[Rule]:
    """A passage cut part-way: (id, position, share of its text sent).

    >>> truncation_rule([("kb#1", 2, 0.411)], 3).evidence
    'kb#1, passage 2 of 3, was cut after 41% of its text'
    """
    if not cut:
        return None
    cid, pos, share = cut[0]
    return Rule("truncation", cid, f"{cid}, passage {pos} of {total}, was cut after {share:.0%} of its text", "certain")


# --- reading the evidence ------------------------------------------------------------------------------------


def _stated(logged: Logged) -> dict:
    """Limits the span metadata states; a hand-edited trace's ``stated`` that is not an object states none."""
    return logged.stated if isinstance(logged.stated, dict) else {}


def _number(value) -> Optional[float]:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def _history_tokens(trace: Trace, prompt: str) -> int:
    """Tokens of the history turns whose text is in the logged prompt."""
    hay, tok = normalise(prompt), get_tokenizer(trace.config.encoding)
    return sum(tok.count(t.get("content", "")) for t in trace.inputs.history
               if t.get("content") and normalise(t["content"]) in hay)


def _skipped(trace: Trace, sent: Sent, strongest: list) -> Optional[tuple[str, int]]:
    """The best not-sent passage that out-scored a sent one, is not a copy or another version of one, and
    that a budget walk by score would have skipped: with the sent passages that out-scored it, it takes more
    than the whole sent evidence, so some budget keeps every sent passage and not it. ``strongest``: the
    not-sent passages in rank order, the first ``STRONGEST``."""
    by_id = {c.id: c for c in trace.candidates}
    sent_ids = [p.id for p in sent.passages]
    scores = [by_id[i].score for i in sent_ids if by_id[i].score is not None]
    if not scores:
        return None
    docs = {by_id[i].doc_id for i in sent_ids if by_id[i].doc_id}
    for c in strongest:
        if c.score is None or c.score <= min(scores):
            return None
        before = sum(p.tokens for p in sent.passages if (by_id[p.id].score or 0) > c.score)
        if c.doc_id not in docs and not _copy_of(c, [by_id[i] for i in sent_ids]) \
                and skipped_by_budget(before, c.tokens or 0, sent.evidence_tokens):
            return c.id, c.tokens or 0
    return None


def skipped_by_budget(before: int, tokens: int, evidence: int) -> bool:
    """Whether some budget keeps all ``evidence`` tokens that were sent and skips a passage of ``tokens`` that a
    walk by score reached after ``before`` tokens of the sent ones: only if together they exceed the evidence.

    >>> skipped_by_budget(0, 17, 54), skipped_by_budget(30, 24, 54), skipped_by_budget(30, 25, 54)
    (False, False, True)
    """
    return before + tokens > evidence


def _copy_of(c, others) -> Optional[tuple[str, float]]:
    cw = words(c.text)
    for o in others:
        ow = words(o.text)
        if min(len(cw), len(ow)) < DEFAULT_NEAR * max(len(cw), len(ow)):
            continue  # word sets this unequal in size cannot reach the similarity: no need to compare them
        s = jaccard(cw, ow)
        if s >= DEFAULT_NEAR:
            return o.id, s
    return None


def rules_of(trace: Trace, sent: Sent) -> list[Rule]:
    """Every rule the evidence supports, strongest claims first."""
    logged, stated = trace.logged, _stated(trace.logged)
    by_id = {c.id: c for c in trace.candidates}
    sent_ids = [p.id for p in sent.passages]
    scored = [by_id[i].score for i in sent_ids if by_id[i].score is not None]
    not_scored = [by_id[i].score for i in sent.not_sent if by_id[i].score is not None]
    retrieved = [c.id for c in trace.candidates]
    first_k = set(sent_ids) == set(retrieved[:len(sent_ids)])
    low = min(scored) if scored else None
    top_n = stated.get("top_n")
    ranked = rank_order(trace.candidates)
    not_sent = set(sent.not_sent)
    strongest = [c for c in ranked if c.id in not_sent][:STRONGEST]
    out = [
        passages_rule(len(sent_ids), len(retrieved), top_n if isinstance(top_n, int) else None),
        threshold_rule(scored, not_scored, first_k, _number(stated.get("min_score"))),
        per_document_rule([by_id[i].doc_id for i in sent_ids],
                          [(i, by_id[i].doc_id, low is not None and (by_id[i].score or 0) > low)
                           for i in sent.not_sent]),
        dedup_rule([(p.id, p.duplicate_of, p.similarity or 1.0) for p in sent.passages if p.duplicate_of],
                   [c.id for c in strongest if _copy_of(c, [by_id[s] for s in sent_ids])]),
        versions_rule([(p.id, p.superseded_by, p.superseded_by in set(sent_ids)) for p in sent.passages
                       if p.superseded_by]),
        order_rule(sent_ids, retrieved, [c.id for c in ranked]),
        budget_rule(sent.evidence_tokens, _skipped(trace, sent, strongest)),
        history_rule(_history_tokens(trace, logged.prompt_text), trace.config.window),
        reranker_rule(logged.reranker, len(logged.reranked), len(logged.reranker_cut)),
        truncation_rule([(p.id, p.position, p.share) for p in sent.passages if p.cut], len(sent.passages)),
    ]
    return [r for r in out if r is not None]


# --- as ctxcore settings ---------------------------------------------------------------------------------------


def settings_of(rules: list[Rule], retrieved: int, stated: dict) -> tuple[dict, list[str]]:
    """The ctxcore settings the rules come to, and what they cannot express (the budget is fitted later).

    >>> settings_of([Rule("passages", 2, "", "certain"), Rule("order", "original", "", "certain")], 4, {})
    ({'max_passages': 2, 'order': 'original'}, [])
    """
    out: dict = {}
    cannot: list[str] = []
    window, max_tokens = stated.get("context_window"), stated.get("max_output")
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        out["window"] = window
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 0:
        out["max_output"] = max_tokens
    for r in rules:
        if r.kind == "passages" and r.value < retrieved:
            out["max_passages"] = r.value
        elif r.kind == "threshold":
            out["min_score"] = r.value
        elif r.kind == "per_document":
            cannot.append("one chunk per document: ctxcore has no per-document cap")
        elif r.kind == "dedup" and r.value is False:
            out["near_dup"] = None
            if "similarity 1.00" in r.evidence:
                cannot.append("identical copies sent more than once: ctxcore always removes exact copies")
        elif r.kind == "versions":
            out["prefer_newest"] = False
        elif r.kind == "order":
            if r.value == "other":
                cannot.append(f"the order of the sent passages ({r.evidence.split(': ')[0].split('ranks ')[-1]}): "
                              "none of ctxcore's orders puts them so")
            else:
                out["order"] = r.value
        elif r.kind == "truncation":
            cannot.append(f"a passage cut part-way ({r.value}): ctxcore keeps or drops whole passages and "
                          "compresses only at sentence ends")
        elif r.kind == "reranker" and r.confidence != "guess":
            cannot.append("the reranker's cut: ctxcore does not rerank; it selects from every retrieved candidate")
    return out, cannot


def _fit(trace: Trace, settings: dict, sent_ids: set, budget_likely: bool) -> dict:
    """Settings with a ``budget`` when one is needed: the docs tokens the sent passages cost in ctxcore, when a
    budget cut is likely, or when the window's own split would drop a sent passage."""
    try:
        config = trace.config.replace(**settings)
    except InputError:  # a stated limit ctxcore refuses (window <= max_tokens): leave the stated limits out
        settings = {k: v for k, v in settings.items() if k not in ("window", "max_output")}
        config = trace.config.replace(**settings)
    first = build(trace.candidates, trace.query, config.replace(max_passages=None), trace.inputs)
    lost = any(first.decision(i).fate == "over_budget" for i in sent_ids)  # the budget's doing, not the count's
    if not budget_likely and not lost:
        return settings
    # the sent passages' own costs: a build of them alone (the others cannot change what a sent one costs, and
    # rendering every retrieved passage of a 10k-candidate run is what made this slow)
    roomy = build(tuple(c for c in trace.candidates if c.id in sent_ids), trace.query, config.replace(
        budget=min(MAX_TOKENS, 10 * first.budget.safe_input + 10_000), max_passages=None), trace.inputs)
    cost = sum(d.cost or 0 for d in roomy.decisions if d.fate == "kept" and d.id in sent_ids)
    return {**settings, "budget": max(cost, evidence_cost(first)) if not budget_likely else cost}


def _differs(settings: dict) -> dict:
    defaults = Config()
    return {k: v for k, v in sorted(settings.items()) if getattr(defaults, k) != v}


@dataclass(frozen=True)
class Counted:
    """What inferring a policy reads of a run that has not been built: its candidates counted, its settings,
    budget, blocks and log. A build stopped before selection gives it (:func:`counted`): no fate is needed to
    read what was sent against what was retrieved, and deciding them all under the file's own settings was
    a third of a replayed span run."""

    query: str
    config: Config
    budget: Budget
    candidates: tuple[Candidate, ...]
    inputs: Inputs
    logged: Optional[Logged]


def counted(loaded) -> Counted:
    """A loaded run (:class:`ctxcore.io.loaded.Loaded`) as :class:`Counted`, under the file's own settings."""
    state = prepared(loaded.candidates, loaded.query, loaded.settings(), loaded.inputs)
    return Counted(state.query, state.config, state.budget, state.candidates, state.inputs, loaded.logged)


def infer(trace_or_loaded, sent: Optional[Sent] = None, reproduce: bool = True) -> Policy:
    """The policy of an imported run whose log holds the prompt that was sent; an empty one otherwise. ``sent``:
    the sent context when the caller has already read it (a diagnosis: read once, not twice). ``reproduce``
    False leaves out the build that checks the settings reproduce what was sent (``cannot``'s last lines):
    a replay needs the settings only."""
    trace = trace_or_loaded if isinstance(trace_or_loaded, Trace) else counted(trace_or_loaded)
    logged = trace.logged
    if logged is None or not logged.prompt_text:
        return Policy()
    if sent is None or sent.source != "logged":
        sent = logged.sent if logged.sent is not None and logged.sent.source == "logged" \
            else reconstruct(trace, logged.prompt_text)
    rules = rules_of(trace, sent)
    settings, cannot = settings_of(rules, len(trace.candidates), _stated(logged))
    if sent.passages:
        settings = _fit(trace, settings, {p.id for p in sent.passages}, any(r.kind == "budget" for r in rules))
    history = next((r for r in rules if r.kind == "history"), None)
    if history is not None and trace.budget.safe_input > trace.budget.fixed:
        share = history.value * trace.config.window / (trace.budget.safe_input - trace.budget.fixed)
        if share > AUTO_HISTORY_SHARE:
            settings["history_share"] = min(1.0, math.ceil(share * 100) / 100)
    settings = _differs({**trace.config.to_dict(), **settings})
    if sent.passages and reproduce:
        replica = build(trace.candidates, trace.query, Config.from_dict(settings), trace.inputs)
        cannot += unreproduced([p.id for p in sent.passages], replica)
    return Policy(tuple(rules), tuple(settings.items()), tuple(cannot))


def unreproduced(sent_ids: list[str], replica: Trace) -> list[str]:
    """Where a build under the policy's settings keeps other passages than were sent, one line each."""
    kept = [d.id for d in replica.kept()]
    out = [f"{cid} was sent, but the replay drops it ({replica.decision(cid).fate})"
           for cid in sent_ids if cid not in kept]
    out += [f"{cid} was not sent, but the replay keeps it: no setting expresses why it was left out"
            for cid in kept if cid not in set(sent_ids)]
    return out


def attach(trace: Trace) -> Trace:
    """The trace with ``logged.policy`` filled in (a logged trace with a prompt only; others as they are)."""
    logged = trace.logged
    if logged is None or not logged.prompt_text or logged.policy is not None:
        return trace
    return dataclasses.replace(trace, logged=dataclasses.replace(logged, policy=infer(trace).to_dict()))


def of(trace: Trace, sent: Optional[Sent] = None) -> Policy:
    """The trace's policy: the stored one when a saved trace carries it, else inferred (from ``sent`` if given)."""
    stored = trace.logged.policy if trace.logged is not None else None
    return Policy.from_dict(stored) if stored is not None else infer(trace, sent)


def reason_for(policy: Policy, trace: Trace, cid: str, sent: Sent) -> Optional[Rule]:
    """The rule of the policy that explains why ``cid`` was not sent, if one does."""
    by_id = {c.id: c for c in trace.candidates}
    c, sent_ids = by_id[cid], [p.id for p in sent.passages]
    rule = policy.rule
    checks = (
        ("threshold", lambda r: c.score is not None and c.score < r.value),
        ("per_document", lambda r: c.doc_id is not None and c.doc_id in {by_id[i].doc_id for i in sent_ids}),
        ("dedup", lambda r: r.value is True and _copy_of(c, [by_id[i] for i in sent_ids]) is not None),
        ("budget", lambda r: r.evidence.split("; ", 1)[-1].startswith(f"{cid} (")),  # an id may hold "; " too
        ("passages", lambda r: cid not in sent_ids and _after_all(trace, c, [by_id[i] for i in sent_ids])),
    )
    for kind, applies in checks:
        r = rule(kind)
        if r is not None and applies(r):
            return r
    return None


def _after_all(trace: Trace, c, sent) -> bool:
    """Whether a top-k cut explains leaving ``c`` out: every sent passage came before it, by score or in the
    order retrieval returned them (a passage first on both counts was not cut by a top-k)."""
    place = {x.id: i for i, x in enumerate(trace.candidates)}
    by_score = c.score is None or all(s.score is not None and s.score >= c.score for s in sent)
    return by_score or all(place[s.id] < place[c.id] for s in sent)


# --- in words ----------------------------------------------------------------------------------------------


def said(rule: Rule) -> str:
    """The rule in plain words, as a continuation of "Your pipeline appears to:".

    >>> said(Rule("threshold", 0.5, "", "likely"))
    'send only passages scoring 0.50 or more'
    """
    v = rule.value
    return {
        "passages": lambda: f"send the top {v} passage{'s' if v != 1 else ''}",
        "all_passages": lambda: "send every passage retrieved",
        "threshold": lambda: f"send only passages scoring {v:.2f} or more",
        "per_document": lambda: "send at most 1 chunk per document",
        "dedup": lambda: "remove copies before sending" if v else "send copies of the same passage",
        "versions": lambda: "send outdated versions alongside newer ones",
        "order": lambda: {"original": "keep the retrieval order", "rank": "order passages by score"}.get(
            v, "order passages in its own way"),
        "budget": lambda: f"cap the evidence at about {v} tokens",
        "history": lambda: f"give the conversation history {v:.0%} of the window",
        "reranker": lambda: f"keep the reranker's top {v}",
        "truncation": lambda: f"cut the prompt part-way through {v}",
    }.get(rule.kind, lambda: f"{rule.kind}: {v}")()


def lines(policy: Policy) -> list[str]:
    """The policy as the CLI and the pages print it: a heading, one line per rule, then what the replay
    cannot reproduce."""
    if not policy.rules:
        return []
    out = [HEADING] + [f"  - {said(r)} ({r.evidence}) [{r.confidence}]" for r in policy.rules]
    if policy.cannot:
        out += ["The replay cannot reproduce:"] + [f"  - {c}" for c in policy.cannot]
    return out


def report(loaded) -> dict:
    """What ``inspect`` adds for a logged run: the policy and its lines (io cannot import this layer; the CLI
    hands this function to :func:`ctxcore.io.inspect.inspect_file`)."""
    policy = infer(loaded)
    return {"policy": policy.to_dict(), "policy_lines": lines(policy)} if policy.rules else {}
