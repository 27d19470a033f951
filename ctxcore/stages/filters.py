"""Stages that drop a candidate for what it is, not for what else is there:
the caller may not see it, a newer version of its document is present, or its
score is under the threshold."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from ..memo import Memo, by_text
from ..records import Decision, TraceWarning
from .similarity import words


def permitted(state):
    """Drop candidates whose permissions exclude the caller (only when a caller is given)."""
    caller = state.config.caller
    if caller is None:
        return state
    out = [Decision.quick(c.id, "not_permitted", "permissions",
                          f"caller {caller!r} is not among the permitted {', '.join(c.permissions) or '(none)'}")
           for c in state.alive if c.permissions is not None and caller not in c.permissions]
    return state.drop(out)


def _natural(text: str) -> tuple:
    """Sort key that orders 'v2' before 'v10' and '1.9' before '1.10'.

    Numbers compare by value without becoming ints (a run of thousands of digits would not convert):
    leading zeros off, then shorter is smaller, then digit by digit.

    >>> sorted(["v10", "v2", "v1.5", "v" + "9" * 5000], key=_natural)[:3]
    ['v1.5', 'v2', 'v10']
    """
    out = []
    for p in re.findall(r"[0-9]+|[^0-9\W]+", text):
        if p.isascii() and p.isdigit():
            digits = p.lstrip("0")
            out.append((0, len(digits), digits))
        else:
            out.append((1, 0, p.lower()))
    return tuple(out)


_MONTHS = {name: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), 1) for name in names}
_MONTH = r"(?P<month>[a-z]+)\.?"
_WEEKDAY = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
_WRITTEN = [re.compile(r"\A" + _WEEKDAY + pattern + r"\Z", re.IGNORECASE) for pattern in (
    r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(?P<year>\d{4})",      # 1 March 2025
    _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})",            # March 1, 2025
    _MONTH + r",?\s+(?P<year>\d{4})",                                                # March 2025
)]
_NUMERIC_DATE = re.compile(r"\A(?P<year>\d{4})(?:[-/.](?P<month>\d{1,2})(?:[-/.](?P<day>\d{1,2}))?)?\Z")
_LONGEST_DATE = 64  # longer text is no date this reads (and is never scanned)


def _when(value) -> datetime | None:
    """The moment a date field names, as a naive UTC datetime; None when it is no date this can read.

    Reads ISO 8601 (``2025-03-01``, ``2025-03-01T10:00:00Z``, ``2025-03``), ``2025/03/01``, RFC 2822
    (``Sat, 01 Mar 2025 10:00:00 +0000``) and written dates (``1 March 2025``, ``March 1, 2025``,
    ``March 2025``, English month names or their abbreviations). A month alone is its first day.

    >>> [str(_when(v)) for v in ("2025-03-01T10:00:00Z", "Sat, 01 Mar 2025 10:00:00 +0000", "March 2025",
    ...                          "March 1, 2025", "2025/03/01", "2025-03", "soon")]
    ['2025-03-01 10:00:00', '2025-03-01 10:00:00', '2025-03-01 00:00:00', '2025-03-01 00:00:00', \
'2025-03-01 00:00:00', '2025-03-01 00:00:00', 'None']
    """
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text or len(text) > _LONGEST_DATE:
        return None
    try:
        return _utc(datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")))
    except ValueError:
        pass
    m = _NUMERIC_DATE.match(text)
    if m:
        return _made(m["year"], m["month"] or 1, m["day"] or 1)
    for pattern in _WRITTEN:
        m = pattern.match(text)
        if m:
            month = _MONTHS.get(m["month"].lower())
            return _made(m["year"], month, m.groupdict().get("day") or 1) if month else None
    try:
        return _utc(parsedate_to_datetime(text))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _made(year, month, day) -> datetime | None:
    try:
        return datetime(int(year), int(month), int(day))
    except ValueError:  # 2025-02-30, month 13
        return None


def _utc(when: datetime) -> datetime:
    """Aware times converted to UTC; naive ones taken as UTC already."""
    return when.astimezone(timezone.utc).replace(tzinfo=None) if when.tzinfo is not None else when


def version_key(c):
    """How new a candidate is within its document: by date, else by version; None if neither, and None
    when its date cannot be read (it is then compared with nothing, and :func:`newest` says so)."""
    return _version_key(c.date, c.version)


@by_text("version key")
def _version_key(date_text, version):
    if date_text:
        when = _when(date_text)
        return (1, when.isoformat(), ()) if when else None
    if version:
        return (0, "", _natural(version))
    return None


_CODES, _SYMBOLS = "EUR|USD|GBP|CHF", "€$£"
# a unit spelt in letters ends at a word boundary ("5 days", not "5 daysago"); a symbol ends where it is ("10%.")
_UNIT = (r"(?:[%s%%]|(?:%s|percent|(?:business |working |calendar )?(?:days?|hours?|weeks?|months?|years?))\b)"
         % (_SYMBOLS, _CODES))
_MONEY = r"(?:%s|[%s])\s?\d[\d,]*(?:\.\d+)?\b" % (_CODES, _SYMBOLS)
# The definition: an amount is a currency then a number, or a number then a unit.
_AMOUNT = re.compile(r"%s|\d[\d,]*(?:\.\d+)?\s?%s" % (_MONEY, _UNIT), re.IGNORECASE)
# The same matches in linear time. Retried at every digit of a long run of digits and commas, the
# number-then-unit branch reads the run to its end each time, and fails or succeeds the same way
# from each of them (what follows the run decides); so it is tried once per run, from where the run
# begins (leading commas skipped), and from where a money match stopped inside one (_AT).
_NUMBER_UNIT = r",*+(\d[\d,]*+(?:\.\d++)?\s?+%s)" % _UNIT
_AMOUNT_FAST = re.compile(r"(%s)|(?<![\d,])%s" % (_MONEY, _NUMBER_UNIT), re.IGNORECASE)
_AMOUNT_AT = re.compile(_NUMBER_UNIT, re.IGNORECASE)


def amount_matches(text: str) -> list[str]:
    """``_AMOUNT.findall(text)``, without its quadratic time on runs of digits.

    >>> amount_matches("SKU 1,2,3,4 costs $1,000x or 5 days")
    ['$1,', '5 days']
    """
    out, pos, n = [], 0, len(text)
    while pos <= n:
        if 0 < pos < n and text[pos - 1] in _RUN and text[pos] in _RUN:  # a money match ended in a run
            m = _AMOUNT_AT.match(text, pos)
            if m:
                out.append(m.group(1))
                pos = m.end()
                continue
        m = _AMOUNT_FAST.search(text, pos)
        if not m:
            break
        out.append(m.group(1) or m.group(2))
        pos = m.end()  # never empty: every match holds a digit
    return out


_RUN = frozenset("0123456789,")


def amounts(texts) -> set[str]:
    """Numbers that carry a unit (money, percentages, durations): what policies disagree about.

    >>> sorted(amounts(["Approval above 1,000 EUR within 5 business days (see 15 September 2025)."]))
    ['1000 eur', '5 business days']
    """
    return set().union(*map(_amounts, texts))


@by_text("amounts")
def _amounts(text: str) -> frozenset[str]:
    return frozenset(" ".join(a.replace(",", "").lower().split()) for a in amount_matches(text))


# A version marker ending a document name: "-v3.1", "_v2", " version 4", "-2024", "-2024-03-01". Only these:
# "doc-1" and "doc-2" stay two documents.
_VERSION_TAIL = re.compile(r"[-_ .@/]+(?:v(?:ersion)?[-_ .]?\d+(?:[._-]\d+)*|(?:19|20)\d\d(?:[-_.]\d{1,2}){0,2})\Z",
                           re.IGNORECASE)
SAME_PASSAGE = 0.5  # word overlap (numbers aside) at which two unplaced chunks of a document are one passage
LIKENESS_GROUPS = 64  # unplaced chunks of one document are compared with at most this many groups


def document_name(doc_id: str) -> str:
    """The document a doc_id names, its version marker removed: versions published under their own ids meet.

    >>> [document_name(d) for d in ("hp-wording-v3.1", "hp-wording-v4.0", "handbook-2024-03", "doc-1")]
    ['hp-wording', 'hp-wording', 'handbook', 'doc-1']
    """
    return _VERSION_TAIL.sub("", doc_id) or doc_id


def passage_place(c) -> tuple | None:
    """Where a chunk sits in its document, the same in every version: its section (heading path), else the
    id's part after '#', else its chunk_index, else its title; None when it says none of these.

    >>> from ctxcore.records import Candidate
    >>> passage_place(Candidate("hp-wording-v3.1#7.2", "x")), passage_place(Candidate("h", "x", chunk_index=3))
    (('part', '7.2'), ('chunk', '3'))
    """
    if c.section and c.section.strip():
        return ("section", " ".join(c.section.split()).casefold())
    _, sep, tail = c.id.rpartition("#")
    if sep and tail.strip() and not _VERSION_TAIL.search("-" + tail.strip()):
        return ("part", tail.strip())
    if c.chunk_index is not None:
        return ("chunk", str(c.chunk_index))
    if c.title and c.title.strip():
        return ("title", " ".join(c.title.split()).casefold())
    return None


@by_text("words without numbers")
def _plain_words(text: str) -> frozenset[str]:
    return frozenset(w for w in words(text) if not w.isdigit())


def alike(a: str, b: str) -> bool:
    """Two texts are one passage in two versions: at least SAME_PASSAGE of the shorter's words (numbers aside,
    since versions differ in their figures) are in the other."""
    wa, wb = _plain_words(a), _plain_words(b)
    return bool(wa and wb) and len(wa & wb) >= SAME_PASSAGE * min(len(wa), len(wb))


def _by_likeness(members: list) -> list[list]:
    """Unplaced chunks grouped by :func:`alike` with each group's first member, in input order."""
    groups: list[list] = []
    for c in members:
        home = next((g for g in groups[:LIKENESS_GROUPS] if alike(g[0].text, c.text)), None)
        if home is None:
            groups.append([c])
        else:
            home.append(c)
    return groups


def version_families(candidates) -> tuple[list[list], list[list]]:
    """(families, ambiguous). A family is one passage across versions: the dated or versioned chunks of one
    document (its doc_id, version marker aside) at one place (:func:`passage_place`), or, when they have no
    place, whose texts are :func:`alike`; only families of two or more versions are returned. Ambiguous: per
    document, the unplaced chunks that paired with no other version although the document has several."""
    placed, loose = defaultdict(list), defaultdict(list)
    for c in candidates:
        if c.doc_id is None or version_key(c) is None:
            continue
        where = passage_place(c)
        if where is None:
            loose[document_name(c.doc_id)].append(c)
        else:
            placed[(document_name(c.doc_id), where)].append(c)
    groups, ambiguous = list(placed.values()), []
    for members in loose.values():
        alike_groups = _by_likeness(members)
        groups += alike_groups
        unpaired = [c for g in alike_groups if len({version_key(x) for x in g}) == 1 for c in g]
        if unpaired and len(alike_groups) > 1 and len({version_key(c) for c in members}) > 1:
            ambiguous.append(unpaired)
    return [g for g in groups if len({version_key(c) for c in g}) > 1], ambiguous


def family_name(members) -> str:
    """How a family is named: its doc_id (the common name when the versions have their own), and its place."""
    docs = {c.doc_id for c in members}
    doc = members[0].doc_id if len(docs) == 1 else document_name(members[0].doc_id)
    where = passage_place(members[0])
    if where is None or where[0] in ("chunk", "title"):
        return doc
    shown = members[0].section.strip() if where[0] == "section" else where[1]
    return f"{doc} ({'section ' if where[0] == 'section' else '#'}{shown})"


def _families(alive):
    """(version families, {doc: members whose date cannot be read} where the doc has others, ambiguous groups)."""
    unread, sizes = defaultdict(list), defaultdict(int)
    for c in alive:
        if c.doc_id is None:
            continue
        sizes[c.doc_id] += 1
        if version_key(c) is None and c.date:
            unread[c.doc_id].append(c)
    families, ambiguous = version_families(alive)
    return families, {doc: members for doc, members in unread.items() if sizes[doc] > 1}, ambiguous


def _listing(values: set[str], most: int = 6) -> str:
    ordered = sorted(values, key=lambda v: (float(re.sub(r"[^\d.]", "", v) or 0), v))
    return ", ".join(ordered[:most]) + (f" and {len(ordered) - most} more" if len(ordered) > most else "")


def _short(text: str, most: int = 40) -> str:
    return text if len(text) <= most else text[:most] + "…"


def _label(c) -> str:
    return c.date or c.version or "?"


_FAMILIES = Memo(8)


def newest(state):
    """Mark older versions of a passage stale when a newer one is present; report conflicts, and the chunks
    of a document no section, chunk or likeness pairs with its other versions (those are kept)."""
    families, unread, ambiguous = _FAMILIES.of(state.alive, _families)  # a rebuild: the same tuple
    warnings, out = [], []
    for doc, members in unread.items():
        shown = ", ".join(f"{c.id} ({_short(c.date)!r})" for c in members[:5])
        more = f" and {len(members) - 5} more" if len(members) > 5 else ""
        warnings.append(TraceWarning(
            f"the date of {shown}{more} could not be read, so {'it was' if len(members) == 1 else 'they were'} "
            f"not compared with the other versions of {doc}: neither stale nor making another stale",
            "unparsed_date", [c.id for c in members]))
    for members in ambiguous:
        shown = ", ".join(f"{c.id} ({_label(c)})" for c in members[:5])
        more = f" and {len(members) - 5} more" if len(members) > 5 else ""
        warnings.append(TraceWarning(
            f"{shown}{more} of {family_name(members)} have no section, chunk index or title to pair them with the "
            f"other versions, and their texts differ: not compared as versions, none made stale",
            "ambiguous_versions", [c.id for c in members][:50]))
    for members in families:
        doc = family_name(members)
        top = max(version_key(c) for c in members)
        newest_members = [c for c in members if version_key(c) == top]
        survivor = min(newest_members, key=lambda c: state.rank[c.id])
        older = [c for c in members if version_key(c) != top]
        new_nums, old_nums = amounts(c.text for c in newest_members), amounts(c.text for c in older)
        if old_nums and new_nums and old_nums != new_nums:
            warnings.append(TraceWarning(
                f"versions of {doc} disagree: older ({', '.join(sorted({_label(c) for c in older}))}) says "
                f"{_listing(old_nums)}; newest ({_label(survivor)}) says {_listing(new_nums)}",
                "versions_disagree", [c.id for c in members]))
        if state.config.prefer_newest:
            out += [Decision.quick(c.id, "stale", "stale",
                                   f"{doc} version {_label(c)} is older than {_label(survivor)} "
                                   f"(present as {survivor.id})", superseded_by=survivor.id)
                    for c in older]
    return state.drop(out).warn(*warnings)


def threshold(state):
    """Drop scored candidates under min_score; when nothing is left, the prompt abstains.

    An unscored candidate cannot be checked against min_score: it passes, with an ``unscored_unchecked``
    warning, or, with ``drop_unscored``, it is below_threshold too (as LlamaIndex's SimilarityPostprocessor
    drops a node whose score is None when a cutoff is set)."""
    floor = state.config.min_score
    if floor is None:
        return state
    if state.alive and all(c.score is None for c in state.alive) and not state.config.drop_unscored:
        return state.warn(TraceWarning(f"min_score {floor} not applied: no candidate has a score",
                                       "min_score_unused"))
    tail = f" is below the minimum {floor:g}"
    drop_unscored = state.config.drop_unscored
    under = [(c.score < floor) if c.score is not None else drop_unscored for c in state.alive]
    out = Decision.each("below_threshold", "threshold", [
        (c.id, f"score {c.score:.3g}{tail}" if c.score is not None else
         f"unscored: it cannot be checked against the minimum {floor:g}, and drop_unscored drops it")
        for c, low in zip(state.alive, under) if low])
    unscored = [c.id for c in state.alive if c.score is None]
    notes = []
    if unscored and not drop_unscored:
        notes.append(TraceWarning(
            f"{len(unscored)} unscored {'candidate was' if len(unscored) == 1 else 'candidates were'} not checked "
            f"against min_score {floor:g}: they passed (drop_unscored drops them)", "unscored_unchecked",
            unscored[:50]))
    return state.drop(out, survivors=tuple([c for c, low in zip(state.alive, under) if not low])).warn(*notes)
