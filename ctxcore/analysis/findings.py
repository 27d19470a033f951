"""What a diagnosis is made of: a finding, the diagnosis, and the context every cause detector reads.

Split from :mod:`ctxcore.analysis.diagnosis` so the detectors in the pipeline's own terms
(:mod:`ctxcore.analysis.causes`) and the older ones share one definition. The context re-runs fixes on
the *inferred policy* of the logged pipeline (:mod:`ctxcore.analysis.policy`), not on ctxcore's defaults:
a fix is a change to what the user's pipeline does, and it is proved on a replay of that pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..errors import BuildError
from ..pipeline import rank_order
from ..records import Config, Trace
from .explain import Case
from .policy import Policy
from .sent import DEFAULT_NEAR, content_words, overlap, relevance

MAX_PROOFS = 5          # fixes proved per diagnosis; the rest are counted
CONSIDER = 200         # how many of the strongest candidates not sent the causes look at
RELEVANT = 0.25         # below this share of the question's content words, a passage is not about the question


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: int            # 3 = the root cause, 2 = another cause, 1 = a note (a consequence, or context)
    title: str               # plain sentence(s) first: what happened, with the decisive ids
    evidence: str
    fix: Optional[dict] = None   # the change, on top of ``base``
    fix_verified: bool = False
    ids: tuple = field(default_factory=tuple)    # the decisive candidate ids first
    role: str = "cause"      # cause or note
    folded: tuple = field(default_factory=tuple)  # the consequences this cause explains, in words
    proof: str = ""          # what the re-run showed
    after: Optional[dict] = None  # {id, fate, label, position, of}: the decisive passage in the fixed build
    resolved: bool = False   # the current replay already does what the fix claims
    fix_said: str = ""       # the fix as a change to the user's pipeline first, the ctxcore setting second
    base: dict = field(default_factory=dict)  # the pipeline's settings the fix goes on (where they differ from
    #                                           the trace's own): a fresh build with {**base, **fix} proves it

    def to_dict(self) -> dict:
        return {**self.__dict__, "ids": list(self.ids), "folded": list(self.folded)}

    @property
    def technical(self) -> str:
        """The second line, for readers who know the settings: the kind and the ctxcore setting."""
        return f"kind: {self.kind}" + (f"; ctxcore: {setting_said(self.fix)}" if self.fix else "")


@dataclass(frozen=True)
class Diagnosis:
    findings: tuple          # the root cause first, then other causes, then notes
    sent: object
    checks: tuple
    proofs: int = 0          # re-runs made
    unproved: int = 0        # further dropped passages counted, not proved
    policy: Policy = field(default_factory=Policy)  # what the logged pipeline appears to do

    @property
    def root(self) -> Optional[Finding]:
        return self.findings[0] if self.findings and self.findings[0].role == "cause" else None

    @property
    def causes(self) -> list:
        return [f for f in self.findings if f.role == "cause"]

    @property
    def notes(self) -> list:
        return [f for f in self.findings if f.role == "note"]


class Ctx:
    """What every detector reads: the trace, the sent context, the answer checks, and the pipeline's policy,
    whose settings are the base every fix is re-run on."""

    def __init__(self, trace, sent, checks, answer, limit, progress, policy: Policy):
        self.trace, self.sent, self.checks, self.answer = trace, sent, checks, answer or ""
        self.policy = policy
        self.by_id = {c.id: c for c in trace.candidates}
        self.q = content_words(trace.query)
        # the pipeline the fixes are proved on: the logged pipeline's policy (whatever the controls say now: they
        # are the replay); without one, the trace's own settings
        self.strict = bool(policy.rules)
        config = policy.config(Config())[0] if self.strict else trace.config
        self.case = Case(trace.candidates, trace.query, config, trace.inputs)
        self.base = {k: v for k, v in config.to_dict().items() if trace.config.to_dict().get(k) != v}
        self.limit = limit if limit is not None else sent.limit
        self.progress = progress or (lambda done, total, what: None)
        self.proofs = 0
        self.sent_ids = {p.id for p in sent.passages}
        near = config.near_dup
        self.threshold = near if near is not None else DEFAULT_NEAR
        order = {c.id: i for i, c in enumerate(rank_order(trace.candidates))}
        # the retrieved passages a cause may name: the strongest not sent, in rank order (a passage ranked
        # below CONSIDER others is not what a wrong answer turns on, and 10k candidates stay cheap)
        self.lost = sorted(sent.not_sent, key=order.__getitem__)[:CONSIDER]
        self.top = [self.by_id[cid] for cid in sorted(self.by_id, key=order.__getitem__)[:CONSIDER]]
        self.sent_words = frozenset().union(*(content_words(self.by_id[p.id].text) for p in sent.passages))
        self._findable: Optional[frozenset] = None

    @property
    def config(self):
        return self.case.config

    def strength(self, cid):
        return relevance(self.by_id[cid], self.q)

    def adds(self, cid) -> frozenset:
        """The question's words this passage holds and no sent passage does: what sending it would add."""
        return (content_words(self.by_id[cid].text) & self.q) - self.sent_words

    def needed(self, cid) -> bool:
        """About the question, and holding question words nothing sent holds: the passage the answer lacked.
        The words it must hold are those missing from what was sent that some retrieved passage could have
        given ("how *long*" is in no passage: no passage is blamed for not holding it)."""
        add = self.adds(cid)
        return overlap(self.by_id[cid].text, self.q) >= RELEVANT and bool(add) and \
            (len(add) >= 2 or add == self.findable)

    @property
    def findable(self) -> frozenset:
        """The question's words that nothing sent holds but one of the strongest retrieved passages does."""
        if self._findable is None:
            held = frozenset().union(*(content_words(c.text) & self.q for c in self.top))
            self._findable = (self.q - self.sent_words) & held
        return self._findable

    def changes(self, fix: dict) -> bool:
        """Whether ``fix`` changes anything in the logged pipeline's settings (a fix that does not is never
        offered); without a logged pipeline every fix counts (a sample's fix is proved on the current settings)."""
        if not self.strict:
            return True
        config = self.config.to_dict()
        return any(config.get(k) != v for k, v in fix.items())

    def run(self, fix: dict) -> Trace:
        self.proofs += 1
        self.progress(self.proofs, MAX_PROOFS + 2, f"re-running your pipeline with {setting_said(fix) or 'no change'}")
        return self.case.run(**fix)

    def reach(self, cid: str, tries, *, edge: bool = False) -> tuple[Optional[dict], bool, Optional[dict]]:
        """The first fix of ``tries`` under which ``cid`` is kept (at an edge when asked), with the budget it
        needs added when it only misses the budget; (fix, verified, where it lands). Fixes that change nothing
        in the pipeline's settings are not tried, and one the engine cannot build (a window too small for the
        blocks that must be sent) keeps nothing."""
        tries = [t for t in tries if t and self.changes(t)]
        last = None
        for fix in tries:  # first as they are; then the first one that only misses the budget, with more
            if self.proofs >= MAX_PROOFS + 2:
                break
            try:
                t = self.run(fix)
            except BuildError:  # the fix leaves no room for the blocks that must be sent: it proves nothing
                continue
            d = t.decision(cid)
            if d.fate == "kept" and (not edge or d.position in (1, len(t.kept()))):
                return fix, True, where(t, cid)
            if d.fate == "over_budget" and last is None:
                last = fix
        if last is not None and not edge and self.proofs < MAX_PROOFS + 2:
            return self.grow(cid, last)
        return (tries[0] if tries else None), False, None

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
            return grown, True, where(after, cid)
        return grown, False, None


def where(t: Trace, cid: str) -> dict:
    d = t.decision(cid)
    return {"id": cid, "fate": d.fate, "label": d.label, "position": d.position, "of": len(t.kept())}


def landing(found: Optional[dict]) -> str:
    if not found or found["fate"] != "kept":
        return ""
    return f"; re-run with it, {found['id']} is in the prompt as [{found['label']}], position {found['position']} " \
           f"of {found['of']}"


def pct(x: float) -> str:
    return f"{x:.0%}"


def setting_said(fix: Optional[dict]) -> str:
    """A ctxcore setting change as a reader of the settings page says it: "min_score 0.45, merge_adjacent on".

    >>> setting_said({"min_score": 0.45, "merge_adjacent": True, "near_dup": None})
    'min_score 0.45, merge_adjacent on, near_dup off'
    """
    def value(v):
        return "on" if v is True else "off" if v is False or v is None else f"{v:g}" if isinstance(v, float) else str(v)
    return ", ".join(f"{k} {value(v)}" for k, v in (fix or {}).items())


def with_budget(said: str, fix: Optional[dict]) -> str:
    """The fix in words, saying the evidence room it needs when the proof had to add a budget.

    >>> with_budget("cap the history (ctxcore: history_share 0.2, budget 502)", {"history_share": 0.2, "budget": 502})
    'cap the history, and give the evidence about 502 tokens (ctxcore: history_share 0.2, budget 502)'
    """
    if not fix or "budget" not in fix or "(ctxcore:" not in said or "tokens (ctxcore" in said:
        return said
    lead, rest = said.split(" (ctxcore:", 1)
    return f"{lead}, and give the evidence about {fix['budget']:,} tokens (ctxcore:{rest}"
