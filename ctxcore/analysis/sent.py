"""The sent context, reconstructed from a logged trace: the evidence of what the model read.

From the prompt text a tracing tool logged, and the candidates retrieval returned, this says which
candidates reached the prompt, in what order, under which label (``[1]``, ``[S2]``,
``Document 3:`` ...), whole or cut (the share of their text found), the tokens each took, the
duplicates among them (identical text, or word-set Jaccard at or above the near-dedup threshold
of the config: the engine's own definitions in :mod:`ctxcore.stages.similarity`), the versions among them
(one passage across versions, :func:`ctxcore.stages.filters.version_families`), whether the
question and an answer rule are present, and whether the recounted prompt is over the window.

Without a logged prompt, a build's own prompt is the sent context (``source="replay"``): that is how
the sample scenarios are diagnosed in their failure state.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections import Counter
from typing import Optional

from ..stages.compress import sentences
from ..stages.filters import version_families, version_key
from ..memo import Memo, by_text
from .reach import _longest_prefix, normalise
from ..records import Logged, Sent, SentPassage, Trace
from ..stages.similarity import jaccard, words
from ..stages.tokens import get_tokenizer

DEFAULT_NEAR = 0.8  # the near-dedup threshold used when the config switched near-dedup off

# labels other systems put before a passage, read on the normalised (case-folded) prompt, at the end
# of the text just before the passage
_LABEL = re.compile(
    r"(\[\s*s?\d{1,4}\s*\]|\(\s*\d{1,4}\s*\)|(?:document|doc|source|passage|context|chunk|result)\s*#?\s*\d{1,4}"
    r"|\b\d{1,3}[.)])[^\w\n]{0,12}$")
_STOP = frozenset("""a an and are as at be but by can could do does did for from had has have how i if in is it its
    me my not of on or our should so that the their them then there these they this to was we were what when where
    which who why will with would you your yes no""".split())
_RULE = re.compile(r"answer only|only (?:use|from|with) the|based (?:only|solely) on|\bcite\b|citation|"
                   r"use the (?:context|sources|passages|documents)|(?:reply|say|respond|answer)[^.]{0,40}"
                   r"(?:don'?t know|do not know|cannot|can't|not sure|unable)", re.IGNORECASE)
_ABSTAIN = re.compile(r"(?:don'?t|do not) know|cannot answer|can'?t answer|unable to answer|reply exactly|"
                      r"not (?:in|covered by) the (?:context|sources|passages|documents)", re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 16)
def _stem(w: str) -> str:
    """A light suffix strip, so "refund", "refunds" and "refunded" meet ("damaged" and "damage" too)."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


@by_text("content words")
def content_words(text: str) -> frozenset[str]:
    """The words that carry meaning, lightly stemmed: :func:`ctxcore.stages.similarity.words` without common
    function words."""
    return _content(words(text))


def _content(ws: frozenset) -> frozenset[str]:
    return frozenset(_stem(w) for w in ws if w not in _STOP and (len(w) > 2 or w.isdigit()))


def overlap(text: str, query_words: frozenset) -> float:
    """Share of the question's content words that ``text`` contains (0..1)."""
    return len(content_words(text) & query_words) / len(query_words) if query_words else 0.0


def relevance(candidate, query_words: frozenset) -> tuple:
    """How strong a candidate is for the question: its score when scored, then word overlap with it."""
    return (candidate.score is not None, candidate.score or 0.0, overlap(candidate.text, query_words))


def _label(hay: str, offset: int, lo: int = 0) -> Optional[str]:
    m = _LABEL.search(hay, max(lo, offset - 40), offset)
    if not m:
        return None
    raw = m.group(1)
    if raw.startswith("["):
        return "[" + raw[1:-1].strip().upper() + "]"
    return raw[0].upper() + raw[1:]


# Labels read on the prompt as sent (its lines kept), at the end of the text just before a passage. Each is
# bounded, and read only on the few hundred characters before a passage.
_BEFORE = 400
_XML_DOC = re.compile(r"<(?:doc|document)\b([^<>\n]{0,200})>\s*(?:<source>[^<>]{0,300}</source>\s*)?"
                      r"(?:<document_content>\s*)?\Z", re.IGNORECASE)
_XML_KEY = re.compile(r"\b(index|id)\s*=\s*[\"']?([^\"'\s>]{1,64})", re.IGNORECASE)
_TITLED = re.compile(r"(?:^|\n)[ \t]*(passage|source|document|doc|chunk|context|result)[ \t]*#?[ \t]*(\d{1,4})"
                     r"[ \t]*[-\u2013\u2014:|][^\n]{0,160}\n\s*\Z", re.IGNORECASE)
_HEADING = re.compile(r"(?:^|\n)[ \t]*(#{1,6}[ \t]+[^\n]{1,160}?)[ \t]*\n\s*\Z")
_ROLES = r"(?!(?:system|user|assistant|human|ai|developer|tool|function)[ \t]*:)"
_METADATA = re.compile(r"(?:^|\n)(%s[A-Za-z_][\w.-]{0,40}:[ \t]*\S[^\n]{0,300})\n(?:%s[A-Za-z_][\w.-]{0,40}:[^\n]{0,300}\n)"
                       r"{0,12}[ \t]*\n\s*\Z" % (_ROLES, _ROLES))
# the labelling names; passages of the last six are cited by their place ([2]: the second passage)
LABELLINGS = ("bracket-number", "bracket-s", "paren-number", "numbered-list", "document-number", "doc-number",
              "source-number", "passage-number", "context-number", "chunk-number", "result-number", "xml-doc",
              "markdown-heading", "llamaindex-metadata", "blank-line", "line", "space", "unlabelled")
BY_PLACE = frozenset(LABELLINGS[-6:])


def _read_label(prompt: str, raw: tuple, hay: str, at: tuple) -> tuple[Optional[str], Optional[str]]:
    """(label, labelling) of the passage starting at ``raw[1]`` in the prompt (``at[1]`` in ``hay``), read after
    the previous passage's end (``raw[0]``, ``at[0]``); (None, None) when nothing labels it."""
    before = prompt[max(raw[0], raw[1] - _BEFORE):raw[1]]
    m = _XML_DOC.search(before)
    if m:
        key = _XML_KEY.search(m.group(1))
        return (f'<document {key.group(1).lower()}="{key.group(2)}">' if key else "<document>"), "xml-doc"
    m = _TITLED.search(before)
    if m:
        return f"{m.group(1).capitalize()} {m.group(2)}", f"{m.group(1).lower()}-number"
    m = _HEADING.search(before)
    if m:
        return m.group(1).strip(), "markdown-heading"
    m = _METADATA.search(before)
    if m:
        return m.group(1).strip(), "llamaindex-metadata"
    label = _label(hay, at[1], at[0])
    return (label, _labelling_of(label)) if label else (None, None)


def _labelling_of(label: str) -> str:
    if label.startswith("["):
        return "bracket-s" if label[1:2] == "S" else "bracket-number"
    if label.startswith("("):
        return "paren-number"
    word = re.match(r"[a-z]*", label.lower()).group(0)
    return f"{word}-number" if word else "numbered-list"


def _gap_labelling(gap: str) -> str:
    """How unlabelled passages were joined: a blank line (LangChain's stuff chain; Haystack's default loop,
    each document on its own indented line), a line break, one space; "unlabelled" when other text stands
    between them."""
    if gap.strip():
        return "unlabelled"
    return "blank-line" if gap.count("\n") >= 2 else "line" if "\n" in gap else "space"


def _raw_offsets(prompt: str) -> tuple[list[int], list[int]]:
    """Where each whitespace-separated word starts in :func:`normalise`'s text and in the prompt itself."""
    hay_at, raw_at, pos = [], [], 0
    for m in re.finditer(r"\S+", prompt):
        hay_at.append(pos)
        raw_at.append(m.start())
        pos += len(m.group(0).casefold()) + 1
    return hay_at, raw_at


def _to_raw(offsets, at: int) -> int:
    hay_at, raw_at = offsets
    i = bisect.bisect_right(hay_at, at) - 1
    return 0 if i < 0 else raw_at[i] + (at - hay_at[i])


def _labels(prompt: str, hay: str, found: list) -> tuple[list, str]:
    """Each found passage's label, and the prompt's labelling: the one most of its labelled passages have, else
    how its unlabelled passages were joined."""
    offsets = _raw_offsets(prompt)
    ends = [at + round(len(normalise(c.text)) * share) for c, share, at in found]
    spans = [(_to_raw(offsets, at), _to_raw(offsets, end)) for (_, _, at), end in zip(found, ends)]
    read = [_read_label(prompt, (spans[i - 1][1] if i else 0, spans[i][0]), hay, (ends[i - 1] if i else 0, at))
            for i, (_, _, at) in enumerate(found)]
    gaps = [prompt[spans[i - 1][1]:spans[i][0]] for i in range(1, len(spans))]
    kinds = [kind for _, kind in read if kind] or [_gap_labelling(gap) for gap in gaps or ["x"]]
    labelling = Counter(kinds).most_common(1)[0][0] if found else ""
    return [label for label, _ in read], labelling


def _matches(candidates, hay: str, hay_words: frozenset, min_chars: int = 40):
    """(candidate, share, offset) for each candidate found in the normalised prompt ``hay``.

    Identical texts claim successive occurrences, so five copies of a paragraph sent five times are five
    passages, and a copy retrieved twice but sent once is one. A candidate most of whose words are not in
    the prompt at all is skipped without a text search (10k candidates against one prompt stay cheap)."""
    taken: set[int] = set()
    out = []
    for c in candidates:
        text = normalise(c.text)
        cw = words(c.text)
        if not text or (cw and len(cw & hay_words) < 0.3 * len(cw)):
            continue
        head = hay.find(text[:min_chars])
        if head < 0 and len(cw & hay_words) < 0.6 * len(cw):
            continue  # neither its opening nor most of its words: not a passage of this prompt
        pos = hay.find(text) if head >= 0 else -1
        while pos >= 0 and pos in taken:
            pos = hay.find(text, pos + 1)
        if pos >= 0:
            taken.add(pos)
            out.append((c, 1.0, pos))
            continue
        if head >= 0 and hay.find(text) >= 0:  # every occurrence already claimed by an identical candidate
            continue
        length, at = _longest_prefix(text, hay) if head >= 0 else (0, -1)
        found = length if length >= min(min_chars, len(text)) else 0
        present = [p for p in (normalise(s) for s in sentences(c.text)) if len(p) >= 20 and p in hay]
        by_sentences = sum(len(p) for p in present)
        if by_sentences > found:
            found, at = by_sentences, hay.find(present[0])
        if found and at not in taken:
            taken.add(at)
            out.append((c, round(found / len(text), 3), at))
    return out


_READ = Memo(8)  # sent contexts read lately: a replay reads one run's prompt against several builds of it


def reconstruct(trace: Trace, prompt: str, source: str = "logged") -> Sent:
    """The sent context of ``prompt`` (what a logged system sent) against the trace's candidates.

    Where the passages are, their labels and version families are remembered for the same candidates (by
    identity) and prompt: the policy's build and the baseline's are two traces of one run, so a replay reads
    the prompt once; what depends on the settings (duplicates at the near-dup threshold, tokens, the window)
    is worked out for each trace."""
    key = (id(trace.candidates), prompt)
    held = _READ.get(key)
    if held is None or held[0] is not trace.candidates:
        held = _READ.keep(key, (trace.candidates, _found(trace.candidates, prompt)))
    return read_sent(trace, prompt, source, held[1])


def _found(candidates, prompt: str) -> tuple:
    """What reading a prompt costs, and depends on the candidates and the prompt only: where each passage is,
    its label, the labelling, the version families."""
    hay = normalise(prompt)
    found = sorted(_matches(candidates, hay, words(prompt)), key=lambda m: m[2])
    return hay, found, _labels(prompt, hay, found), _newest(candidates)


def read_sent(trace: Trace, prompt: str, source: str = "logged", found: Optional[tuple] = None) -> Sent:
    """:func:`reconstruct` without the memo (the plain definition), or on its remembered reading ``found``."""
    hay, found, (labels, labelling), newest = found or _found(trace.candidates, prompt)
    tok = get_tokenizer(trace.config.encoding)
    threshold = trace.config.near_dup if trace.config.near_dup is not None else DEFAULT_NEAR
    passages, earlier = [], []  # earlier: (candidate, its normalised text, its words), each made once
    for i, (c, share, at) in enumerate(found, 1):
        dup, sim = None, None
        cw, cn = words(c.text), normalise(c.text)
        for e, en, ew in earlier:
            if _versions_of_one(c, e, newest):
                continue
            if en == cn:
                dup, sim = e.id, 1.0
                break
            s = jaccard(cw, ew)
            if s >= threshold:
                dup, sim = e.id, round(s, 3)
                break
        earlier.append((c, cn, cw))
        sent_tokens = tok.count(c.text) if share >= 1 else max(1, round(tok.count(c.text) * share))
        passages.append(SentPassage(c.id, i, labels[i - 1], share, sent_tokens, at, dup, sim,
                                    _superseded(c, newest, {x[0].id for x in found})))
    sent_ids = {p.id for p in passages}
    total = tok.count(prompt)
    limit = trace.budget.window - trace.budget.max_output
    return Sent(tuple(passages), tuple(c.id for c in trace.candidates if c.id not in sent_ids),
                sum(p.tokens for p in passages), total, limit, total > limit,
                _question_present(trace.query, hay, max((at + round(len(normalise(c.text)) * share)
                                                         for c, share, at in found), default=0)),
                bool(_RULE.search(prompt)), bool(_ABSTAIN.search(prompt)),
                source, labelling)


def of_build(trace: Trace) -> Sent:
    """A build's own prompt as the sent context: its kept passages, labelled [S1]..., in prompt order."""
    by_id = {c.id: c for c in trace.candidates}
    tok = get_tokenizer(trace.config.encoding)
    threshold = trace.config.near_dup if trace.config.near_dup is not None else DEFAULT_NEAR
    kept = trace.kept()
    newest = _newest(trace.candidates)
    kept_ids = {d.id for d in kept}
    passages, earlier = [], []
    offsets = {b.id: b.start_token for b in trace.blocks if b.kind == "evidence" and b.id}
    for d in kept:
        c = by_id[d.id]
        text = d.text if d.text is not None else c.text
        dup, sim = None, None
        for e in earlier:
            if _versions_of_one(c, e, newest):
                continue
            s = 1.0 if e.text == c.text else jaccard(words(c.text), words(e.text))
            if s >= threshold:
                dup, sim = e.id, round(s, 3)
                break
        earlier.append(c)
        share = 1.0 if not d.compressed else round(len(text) / max(1, len(c.text)), 3)
        passages.append(SentPassage(d.id, d.position, f"[{d.label}]", share, d.tokens or tok.count(text),
                                    offsets.get(d.id, 0), dup, sim, _superseded(c, newest, kept_ids)))
    limit = trace.budget.window - trace.budget.max_output
    return Sent(tuple(passages), tuple(c.id for c in trace.candidates if c.id not in kept_ids),
                sum(p.tokens for p in passages), trace.prompt.tokens, limit, trace.prompt.tokens > limit,
                True, True, True, "replay", "bracket-s")


def of_trace(trace: Trace, logged_prompt: Optional[str] = None) -> Sent:
    """The sent context: the logged prompt when there is one, else the build's own prompt."""
    prompt = logged_prompt if logged_prompt is not None else (trace.logged.prompt_text if trace.logged else None)
    if prompt:
        if trace.logged is not None and trace.logged.sent is not None and prompt == trace.logged.prompt_text \
                and trace.logged.sent.source == "logged":
            return trace.logged.sent
        return reconstruct(trace, prompt)
    return of_build(trace)


def attach(trace: Trace) -> Trace:
    """The trace with ``logged.sent`` filled in (a logged trace only; others are returned as they are)."""
    logged: Optional[Logged] = trace.logged
    if logged is None or not logged.prompt_text or logged.sent is not None:
        return trace
    return dataclasses.replace(trace, logged=dataclasses.replace(logged, sent=reconstruct(trace, logged.prompt_text)))


def _newest(candidates) -> dict:
    """candidate id -> (newest version key, its id) of the version family it belongs to: one passage (one
    document's same section) across versions, :func:`ctxcore.stages.filters.version_families`."""
    out: dict = {}
    for members in version_families(candidates)[0]:
        top = max((version_key(c), c.id) for c in members)
        out.update((c.id, top) for c in members)
    return out


def _superseded(c, newest: dict, sent_ids: set) -> Optional[str]:
    top = newest.get(c.id)
    if top is None or version_key(c) >= top[0]:
        return None
    return top[1]


def _versions_of_one(c, e, newest: dict) -> bool:
    """Two versions of one passage: a version question, not a duplicate."""
    return c.id in newest and newest.get(e.id) == newest[c.id] and version_key(c) != version_key(e)


def _question_present(query: str, hay: str, evidence_end: int = 0) -> bool:
    """The question is in the prompt: verbatim, or (reworded) most of its words after the last passage, or
    before the first one."""
    q = normalise(query)
    if not q or q in hay:
        return True
    qw = content_words(query)
    after = hay[evidence_end:]
    return bool(qw) and len(qw & content_words(after)) >= 0.8 * len(qw)


def family_members(trace: Trace, cid: str) -> list:
    """The candidates of ``cid``'s version family (one passage across versions), newest first."""
    for members in version_families(trace.candidates)[0]:
        if any(c.id == cid for c in members):
            return sorted(members, key=version_key, reverse=True)
    return []
