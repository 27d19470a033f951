"""Check a model's answer against the prompt it was given, each claim tied to a passage and its fate.

Every cited [S#] (or [1]-style label of a logged prompt) must be a label in the prompt; a quoted
sentence must appear verbatim (whitespace-normalised) in the passage it cites; numbers in the answer
must come from a sent passage, and when they come from a dropped or stale candidate instead, that
candidate is named. Tied to the passages' fates in the sent context (:mod:`ctxcore.analysis.sent`):

* ``cites_outdated`` a citation of a passage whose document has a newer retrieved version;
* ``not_supporting`` a citation whose passage shares less than ``SUPPORT`` (a quarter) of the citing
  sentence's content words (:func:`ctxcore.analysis.sent.content_words`, the citation marks removed); sentences of
  fewer than three content words are not judged;
* ``not_supported_by`` a citation whose passage shares at least ``SUPPORT`` but not all that the claim states:
  a number before the citation mark (not one of the question's) is not in it, or it holds less than
  ``CLAIM_SHARE`` (half) of the sentence's content words while another sent passage holds that much and more;
  the detail says where it is found instead (another
  sent passage, an outdated version, a passage not sent, the history, or nowhere);
* ``duplicate_citation`` two labels cited whose passages have the same or near-same text;
* ``number_only_outdated`` a number found only in outdated versions among the sent passages;
* ``uncited`` a sentence of five or more content words, or with a number, that cites nothing while the
  answer cites elsewhere or the prompt asks for citations;
* ``ignored_abstention`` an answer where the prompt held no passage and asked for the abstention phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from ..stages.assemble import ABSTAIN
from .reach import normalise, reached
from ..records import Sent, Trace
from .sent import BY_PLACE, DEFAULT_NEAR, content_words, of_trace
from ..stages.similarity import jaccard, words

SUPPORT = 0.25  # below this share of a claim's content words, its cited passage does not support it at all
CLAIM_SHARE = 0.5  # the share a cited passage must hold, with every figure of the claim, to state what it states

# Possessive throughout: a "[S" before a long run of digits or of ", S1" fails in one pass (each
# quantified part stops where the next part cannot start, so the matches are the same).
_CITE = re.compile(r"\[\s*+(S\d++(?:\s*+[,;]\s*+S\d++)*+)\s*+\]", re.IGNORECASE)
_QUOTE = re.compile(r"[\"“]([^\"“”]{12,}?)[\"”]")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Check:
    claim: str
    kind: str      # citation, quote, number, abstention
    verdict: str   # ok, unknown_label, not_in_passage, unsupported, from_dropped, abstained, and the fate-tied
    #                cites_outdated, not_supporting, not_supported_by, duplicate_citation, number_only_outdated, uncited,
    #                ignored_abstention
    detail: str
    ids: tuple = field(default_factory=tuple)

    def title(self) -> str:
        return {"unknown_label": f"the answer cites {self.claim}, which is not a label in the prompt",
                "not_in_passage": "a quote in the answer is not in the passage it cites",
                "unsupported": f"the answer states {self.claim}, which no passage in the prompt says",
                "from_dropped": f"the answer states {self.claim}, found only in a passage the model did not see",
                "cites_outdated": f"the answer cites {self.claim}, an outdated version",
                "not_supporting": f"the passage cited as {self.claim} does not support the sentence citing it",
                "not_supported_by": f"the claim citing {self.claim} is not supported by {self.claim}",
                "duplicate_citation": f"the answer cites {self.claim}: the same text twice",
                "number_only_outdated": f"the answer states {self.claim}, found only in outdated versions",
                "uncited": "a claim in the answer cites no passage",
                "ignored_abstention": "the prompt asked for abstention, and the answer answered anyway",
                }.get(self.verdict, self.detail)

    def to_dict(self) -> dict:
        return {**self.__dict__, "ids": list(self.ids)}


_NUMERIC_CITE = re.compile(r"\[\s*+\d++(?:\s*+[,;-]\s*+\d++)*+\s*+\]")


def _numbers(text: str) -> set[str]:
    text = _NUMERIC_CITE.sub(" ", _CITE.sub(" ", text))
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


# A passage label at the start of a line, or of a message: a logged prompt is its messages as "role: content"
# (see ctxcore.io.formats), so a message that opens with its first passage puts "[1]" after "user: ". The role is
# a short word; every part is possessive, so a line of spaces or of letters fails in one pass.
_MARKER = re.compile(r"^[ \t]*+(?:[A-Za-z][\w-]{0,31}+:[ \t]*+)?\[(\d++)\]", re.MULTILINE)
_DOC_CITE = re.compile(r"\b(?:document|doc|source|passage)\s*#?\s*(\d{1,4})\b", re.IGNORECASE)
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


def _label_key(label: str | None) -> str | None:
    """A logged label as a citation names it: "[S2]" -> "S2", "[1]" / "Document 1:" / "(1)" -> "1"."""
    if not label:
        return None
    m = re.search(r"(s?)\s*(\d+)", label, re.IGNORECASE)
    return (m.group(1).upper() + m.group(2)) if m else None


def _sent_passages(trace: Trace, sent: Sent, numeric: bool) -> dict[str, tuple]:
    by_id = {c.id: c for c in trace.candidates}
    out = {}
    by_place = sent.labelling in BY_PLACE
    for p in sent.passages:
        key = str(p.position) if by_place else _label_key(p.label)
        if key is None and sent.labelling == "xml-doc":
            key = str(p.position)  # <doc id="refund-policy">: cited by its place
        if key is None:
            continue
        key = key[1:] if numeric and key.startswith("S") else key
        text = by_id[p.id].text
        out.setdefault(key, (p.id, text if p.share >= 1 else text[: max(1, round(len(text) * p.share))]))
    return out


class _Reading(NamedTuple):
    """How an answer is read against a prompt (what :func:`check_answer` and :func:`citations` share)."""

    answer: str  # with "Document 2"-style citations made marks
    sent: Sent
    tied: bool  # whether the fate checks run
    passages: dict  # label -> (id, text) of the passages the answer can cite
    cite: re.Pattern
    shown: Optional[set]  # the ids shown in the prompt; None when the passages are the build's own kept ones


def _reading(trace: Trace, answer: str, logged_prompt: str | None, sent: Sent | None) -> _Reading:
    tied = sent is not None or bool(logged_prompt)
    if sent is None:
        sent = of_trace(trace, logged_prompt)
    cite = _CITE
    if logged_prompt and not _CITE.search(answer) and not _NUMERIC.search(answer):
        answer = _DOC_CITE.sub(lambda m: f"[{m.group(1)}]", answer)  # "(Document 2)" cites Document 2:
    numeric = bool(_NUMERIC.search(answer) and not _CITE.search(answer))
    labelled = _sent_passages(trace, sent, numeric) if logged_prompt and sent.source == "logged" and not (
        sent.labelling in BY_PLACE and _MARKER.search(logged_prompt)) else {}  # "[1] Note: …": the markers are read
    if labelled:
        return _Reading(answer, sent, tied, labelled, (_NUMERIC if numeric else _CITE), {p.id for p in sent.passages})
    if logged_prompt and numeric:
        passages = logged_passages(trace, logged_prompt)
        return _Reading(answer, sent, tied, passages, _NUMERIC, {cid for cid, _ in passages.values()})
    by_id = {c.id: c for c in trace.candidates}
    passages = {d.label: (d.id, d.text if d.text is not None else by_id[d.id].text) for d in trace.kept()}
    return _Reading(answer, sent, tied, passages, cite, None)


def citations(trace: Trace, answer: str, logged_prompt: str | None = None, *, sent: Sent | None = None
              ) -> list[tuple[str, str]]:
    """(label, candidate id) of each citation :func:`check_answer` finds ok, without its quote, number and claim
    checks (what a replay compares; a test holds the two equal): a label the prompt has, tied to a candidate, and,
    when the fate checks run, not one that cites an outdated version."""
    r = _reading(trace, answer, logged_prompt, sent)
    outdated = {p.id for p in r.sent.passages if p.superseded_by} if r.tied else set()
    ids = {label: cid for label, (cid, _) in r.passages.items() if cid and cid not in outdated}
    return [(label, ids[label]) for label in _labels_in(r.answer, r.cite) if label in ids]


def check_answer(trace: Trace, answer: str, logged_prompt: str | None = None, *, sent: Sent | None = None
                 ) -> list[Check]:
    """Check against the passages of the prompt that was sent: the logged prompt's own labels when it is
    known ([1]-style, [S#], "Document 3:" ...), else the replay's [S#] passages. The fate-tied checks
    (outdated, not supporting, duplicate, uncited, abstention) run when the sent context is given or a
    logged prompt is (``sent=ctxcore.analysis.sent.of_trace(trace)`` asks for them on a build's own prompt)."""
    by_id = {c.id: c for c in trace.candidates}
    fates = {d.id: d for d in trace.decisions}
    answer, sent, tied, passages, cite, shown = _reading(trace, answer, logged_prompt, sent)
    if shown is not None:
        dropped = [(fates[c.id], c) for c in trace.candidates if c.id not in shown]
    else:
        dropped = [(d, by_id[d.id]) for d in trace.decisions if d.fate != "kept"]
    checks: list[Check] = []
    if normalise(ABSTAIN) in normalise(answer):
        checks.append(Check(ABSTAIN, "abstention", "abstained",
                            "the model used the abstention phrase" + (
                                f" although {len(passages)} passages were in the prompt" if passages else "")))
    for label in _labels_in(answer, cite):
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
    asked = _numbers(trace.query)
    kept_numbers = set().union(*(_numbers(t) for _, t in passages.values())) if passages else set()
    for n in sorted(_numbers(answer), key=lambda x: (len(x), x)):
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
    return _fate_checks(trace, answer, sent, passages, cite, checks) if tied else checks


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[\"“(])|\n+")


def _labels_in(text: str, cite) -> list[str]:
    """The labels ``cite``'s marks in ``text`` name, each once (a mark may repeat one: ``[S2, S2]``), in the order
    first cited."""
    out: list[str] = []
    for m in cite.finditer(text):
        for label in re.split(r"\s*[,;]\s*", m.group(1).upper()):
            if label not in out:
                out.append(label)
    return out


def cited_labels(text: str) -> list[str]:
    """The ``[S#]`` labels ``text`` cites, each once, in the order first cited.

    >>> cited_labels("Refunds take 5 days [S2; s1]. Shipping is free [S2].")
    ['S2', 'S1']
    >>> cited_labels("[S2, S2] and [S1]")
    ['S2', 'S1']
    """
    return _labels_in(text, _CITE)


def _fate_checks(trace: Trace, answer: str, sent: Sent, passages: dict, cite, checks: list) -> list[Check]:
    """The checks that tie a claim to its passage's fate: outdated, unsupportive, repeated, uncited, abstention."""
    outdated = {p.id: p.superseded_by for p in sent.passages if p.superseded_by}
    threshold = trace.config.near_dup if trace.config.near_dup is not None else DEFAULT_NEAR
    out = []
    for c in checks:
        out.append(c)
        if c.kind == "citation" and c.verdict == "ok" and c.ids and c.ids[0] in outdated:
            out[-1] = Check(c.claim, "citation", "cites_outdated",
                             f"{c.claim} is {c.ids[0]}, superseded by {outdated[c.ids[0]]}", (c.ids[0], outdated[c.ids[0]]))
            continue
        if c.kind == "number" and c.verdict == "ok" and c.ids and c.ids[0] in outdated:
            where = [cid for cid, text in passages.values() if cid and c.claim in _numbers(text)]
            if where and all(w in outdated for w in where):
                out[-1] = Check(c.claim, "number", "number_only_outdated",
                                f"{c.claim} is only in {', '.join(where)}, superseded by {outdated[where[0]]}",
                                (*where, outdated[where[0]]))
    cited_any = bool(cite.search(answer))
    asks = sent.rule_present
    pairs_seen = set()
    for sentence in _SENTENCE.split(answer):
        labels = _labels_in(sentence, cite)
        claim = content_words(cite.sub(" ", sentence))
        if not labels:
            if (cited_any or asks) and passages and normalise(ABSTAIN) not in normalise(sentence) and \
                    (len(claim) >= 5 or _numbers(sentence)):
                out.append(Check(sentence.strip()[:120], "claim", "uncited", "this sentence cites no passage"))
            continue
        for label in labels:
            figures = _numbers(_before_mark(sentence, label, cite)) - _numbers(trace.query)
            if label in passages and len(claim) >= 3:
                share = len(claim & content_words(passages[label][1])) / len(claim)
                if share < SUPPORT:
                    out.append(Check(f"[{label}]", "citation", "not_supporting",
                                     f"[{label}] ({passages[label][0]}) holds {share:.0%} of the words of "
                                     f"“{sentence.strip()[:80]}”", tuple(filter(None, (passages[label][0],)))))
                    continue
                missing = sorted(figures - _numbers(passages[label][1]), key=lambda x: (len(x), x))
                if missing or share < CLAIM_SHARE and _said_elsewhere(passages, label, claim, share):
                    out.append(_not_supported(trace, sent, passages, label, sentence, claim, missing, share))
        for i, a in enumerate(labels):
            for b in labels[:i]:
                if a in passages and b in passages and (b, a) not in pairs_seen:
                    ta, tb = passages[a][1], passages[b][1]
                    if normalise(ta) == normalise(tb) or jaccard(words(ta), words(tb)) >= threshold:
                        pairs_seen.add((b, a))
                        out.append(Check(f"[{b}], [{a}]", "citation", "duplicate_citation",
                                         f"[{b}] and [{a}] are the same text ({passages[b][0]}, {passages[a][0]})",
                                         tuple(filter(None, (passages[b][0], passages[a][0])))))
    if not passages and answer.strip() and normalise(ABSTAIN) not in normalise(answer) and \
            (sent.abstain_asked or trace.abstain):
        out.append(Check("the answer", "abstention", "ignored_abstention",
                         "no passage was in the prompt, which asked for the abstention phrase"))
    return out


def _said_elsewhere(passages: dict, label: str, claim: frozenset, share: float) -> bool:
    """Another sent passage holds at least CLAIM_SHARE of the claim's words, and more than the cited one: the
    claim is that passage's, not the cited one's (a paraphrase found nowhere is left to the word share)."""
    return any(lab != label and len(claim & content_words(text)) >= max(CLAIM_SHARE * len(claim),
                                                                        share * len(claim) + 1)
               for lab, (_, text) in passages.items())


def _before_mark(sentence: str, label: str, cite) -> str:
    """The part of a sentence a citation mark closes: from the previous mark to this one ("48 hours [1]. 77
    items [3]": "48 hours" for [1]); the whole sentence when the label is not marked in it."""
    start = 0
    for m in cite.finditer(sentence):
        if label in re.split(r"\s*[,;]\s*", m.group(1).upper()):
            return sentence[start:m.start()]
        start = m.end()
    return sentence


def _not_supported(trace: Trace, sent: Sent, passages: dict, label: str, sentence: str, claim: frozenset,
                   missing: list, share: float) -> Check:
    """A cited passage that does not state the claim, and where what the claim states is found instead: another
    sent passage, an outdated version, a passage not sent, the conversation history, or nowhere."""
    cid = passages[label][0]
    what = (f"{', '.join(missing)} is not in it" if missing else
            f"it holds {share:.0%} of the claim's words (at least {CLAIM_SHARE:.0%} support it)")
    says = (lambda t: all(m in _numbers(t) for m in missing)) if missing else \
        (lambda t: len(claim & content_words(t)) >= CLAIM_SHARE * len(claim))
    subject = ", ".join(missing) if missing else "the claim"
    other = [(lab, pid) for lab, (pid, text) in passages.items() if lab != label and says(text)]
    outdated = {p.id: p.superseded_by for p in sent.passages if p.superseded_by}
    shown = {p.id for p in sent.passages}
    unsent = [c for c in trace.candidates if c.id not in shown and says(c.text)]
    if other and other[0][1] not in outdated:
        where, ids = f"{subject} is in [{other[0][0]}] ({other[0][1]})", (other[0][1],)
    elif other:
        where, ids = f"{subject} is in [{other[0][0]}] ({other[0][1]}), an outdated version", (other[0][1],)
    elif unsent:
        where, ids = f"{subject} is in {unsent[0].id}, which was not sent", (unsent[0].id,)
    elif any(says(turn.get("content", "")) for turn in trace.inputs.history):
        where, ids = f"{subject} is in the conversation history", ()
    else:
        where, ids = f"{subject} is in no passage retrieved", ()
    return Check(f"[{label}]", "citation", "not_supported_by",
                 f"[{label}] ({cid}) does not say “{sentence.strip()[:80]}”: {what}; {where}",
                 tuple(filter(None, (cid, *ids))))


_INSTRUCTION = re.compile(r"\b(?:ignore|disregard|forget|override)\b|(?:^|\n)\s*(?:system|assistant|developer)\s*:"
                          r"|\[/?INST\]|###\s*(?:system|instruction)", re.IGNORECASE)
_DISTINCT = re.compile(r"https?://\S+|[\w.+-]+@[\w-]+\.[\w.]+|\b[A-Z]{2,}[-_]?\d{2,}\b|\b\d[\d,.]*\b")
# as content words (stemmed), so that they can be taken out of the instruction's
_GENERIC = content_words("ignore previous instructions instruction rules prompt system assistant developer tell always "
                         "must customer customers user users answer reply respond say")


def follows_instruction(passage: str, answer: str, question_words=frozenset()) -> bool:
    """Whether ``answer`` does what instruction-like text in ``passage`` tells the model: a distinctive item
    of the instruction (a link, an address, a code, a number) is in the answer, or the answer holds at least
    three and 30% of the instruction's own content words (not the question's, not generic ones)."""
    m = _INSTRUCTION.search(passage)
    if not m:
        return False
    told = passage[m.start():]
    said = set(_DISTINCT.findall(answer))
    if any(x in said for x in _DISTINCT.findall(told) if x not in passage[:m.start()]):
        return True
    iw = content_words(told) - question_words - _GENERIC - content_words(passage[:m.start()])
    hits = iw & content_words(answer)
    return len(hits) >= 3 and len(hits) >= 0.3 * len(iw)


def _last_before(text: str, pos: int, cite=_CITE):
    last = None
    for m in cite.finditer(text, 0, pos):
        last = m
    return last
