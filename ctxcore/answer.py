"""Check a model's answer against the prompt it was given.

Every cited [S#] must be a label in the prompt; a quoted sentence must appear
verbatim (whitespace-normalised) in the passage it cites; numbers in the answer
must come from a kept passage, and when they come from a dropped or stale
candidate instead, that candidate is named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .assemble import ABSTAIN
from .reach import normalise, reached
from .records import Trace

# Possessive throughout: a "[S" before a long run of digits or of ", S1" fails in one pass (each
# quantified part stops where the next part cannot start, so the matches are the same).
_CITE = re.compile(r"\[\s*+(S\d++(?:\s*+[,;]\s*+S\d++)*+)\s*+\]", re.IGNORECASE)
_QUOTE = re.compile(r"[\"“]([^\"“”]{12,}?)[\"”]")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Check:
    claim: str
    kind: str      # citation, quote, number, abstention
    verdict: str   # ok, unknown_label, not_in_passage, unsupported, from_dropped, abstained
    detail: str
    ids: tuple = field(default_factory=tuple)

    def title(self) -> str:
        return {"unknown_label": f"the answer cites {self.claim}, which is not a label in the prompt",
                "not_in_passage": "a quote in the answer is not in the passage it cites",
                "unsupported": f"the answer states {self.claim}, which no passage in the prompt says",
                "from_dropped": f"the answer states {self.claim}, found only in a passage the model did not see"
                }.get(self.verdict, self.detail)

    def to_dict(self) -> dict:
        return {**self.__dict__, "ids": list(self.ids)}


_NUMERIC_CITE = re.compile(r"\[\s*+\d++(?:\s*+[,;-]\s*+\d++)*+\s*+\]")


def _numbers(text: str) -> set[str]:
    text = _NUMERIC_CITE.sub(" ", _CITE.sub(" ", text))
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


# A passage label at the start of a line, or of a message: a logged prompt is its messages as "role: content"
# (see ctxcore.importers), so a message that opens with its first passage puts "[1]" after "user: ". The role is
# a short word; every part is possessive, so a line of spaces or of letters fails in one pass.
_MARKER = re.compile(r"^[ \t]*+(?:[A-Za-z][\w-]{0,31}+:[ \t]*+)?\[(\d++)\]", re.MULTILINE)
_NUMERIC = re.compile(r"\[\s*+(\d++(?:\s*+[,;]\s*+\d++)*+)\s*+\]")


def logged_passages(trace: Trace, logged_prompt: str) -> dict[str, tuple]:
    """The numbered passages of a prompt another system sent ("[1] text…"): label -> (candidate id, text)."""
    marks = list(_MARKER.finditer(logged_prompt))
    out = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        text = logged_prompt[m.end(): nxt.start() if nxt else len(logged_prompt)].split("\n\n")[0].strip()
        found = [r for r in reached(trace.candidates, text) if r.status != "absent"]
        best = max(found, key=lambda r: r.share).id if found else None
        out[m.group(1)] = (best, text)
    return out


def check_answer(trace: Trace, answer: str, logged_prompt: str | None = None) -> list[Check]:
    """Check against the replay's [S#] passages; or, when the answer cites [1]-style labels and the prompt
    that was actually sent is known, against that prompt's numbered passages."""
    by_id = {c.id: c for c in trace.candidates}
    cite = _CITE
    if logged_prompt and _NUMERIC.search(answer) and not _CITE.search(answer):
        passages, cite = logged_passages(trace, logged_prompt), _NUMERIC
        shown = {cid for cid, _ in passages.values()}
        dropped = [(trace.decision(c.id), c) for c in trace.candidates if c.id not in shown]
    else:
        passages = {d.label: (d.id, d.text if d.text is not None else by_id[d.id].text) for d in trace.kept()}
        dropped = [(d, by_id[d.id]) for d in trace.decisions if d.fate != "kept"]
    checks: list[Check] = []
    if normalise(ABSTAIN) in normalise(answer):
        checks.append(Check(ABSTAIN, "abstention", "abstained",
                            "the model used the abstention phrase" + (
                                f" although {len(passages)} passages were in the prompt" if passages else "")))
    cited = []
    for m in cite.finditer(answer):
        for label in re.split(r"\s*[,;]\s*", m.group(1).upper()):
            if label not in cited:
                cited.append(label)
    for label in cited:
        if label in passages:
            checks.append(Check(f"[{label}]", "citation", "ok", f"[{label}] is {passages[label][0] or 'a passage'}",
                                tuple(filter(None, (passages[label][0],)))))
        else:
            checks.append(Check(f"[{label}]", "citation", "unknown_label",
                                f"the prompt has labels {', '.join(passages) or '(none)'}"))
    for m in _QUOTE.finditer(answer):
        quote = m.group(1).strip()
        near = cite.search(answer, m.end(), m.end() + 60) or _last_before(answer, m.start(), cite)
        labels = re.split(r"\s*[,;]\s*", near.group(1).upper()) if near else list(passages)
        hits = [lab for lab in labels if lab in passages and normalise(quote) in normalise(passages[lab][1])]
        if hits:
            checks.append(Check(f"“{quote}”", "quote", "ok", f"verbatim in [{hits[0]}]",
                                tuple(filter(None, (passages[hits[0]][0],)))))
            continue
        elsewhere = [lab for lab, (_, text) in passages.items() if normalise(quote) in normalise(text)]
        lost = [c.id for _, c in dropped if normalise(quote) in normalise(c.text)]
        if elsewhere:
            detail = f"not in {', '.join(labels)}, but verbatim in [{elsewhere[0]}]"
        elif lost:
            detail = f"only in {lost[0]}, which did not reach the prompt"
        else:
            detail = f"not verbatim in {', '.join(f'[{x}]' for x in labels) or 'any passage'}"
        checks.append(Check(f"“{quote}”", "quote", "from_dropped" if lost and not elsewhere else "not_in_passage",
                            detail, tuple(lost)))
    seen_numbers = set()
    asked = _numbers(trace.query)
    kept_numbers = set().union(*(_numbers(t) for _, t in passages.values())) if passages else set()
    for n in sorted(_numbers(answer), key=lambda x: (len(x), x)):
        if n in seen_numbers:
            continue
        seen_numbers.add(n)
        if n in asked and n not in kept_numbers:
            checks.append(Check(n, "number", "ok", "restates the question"))
            continue
        if n in kept_numbers:
            where = [lab for lab, (_, t) in passages.items() if n in _numbers(t)]
            checks.append(Check(n, "number", "ok", f"in [{where[0]}]", tuple(filter(None, (passages[where[0]][0],)))))
            continue
        sources = [(d, c) for d, c in dropped if n in _numbers(c.text)]
        if sources:
            d, c = sources[0]
            checks.append(Check(n, "number", "from_dropped",
                                f"{n} appears in {c.id} ({d.fate}: {d.reason}), not in the prompt",
                                tuple(c.id for _, c in sources)))
        else:
            checks.append(Check(n, "number", "unsupported", f"{n} appears in no candidate"))
    return checks


def _last_before(text: str, pos: int, cite=_CITE):
    last = None
    for m in cite.finditer(text, 0, pos):
        last = m
    return last
