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


def _families(alive):
    """(families with more than one version, {doc: members whose date cannot be read} where the doc has others)."""
    families, unread, sizes = defaultdict(list), defaultdict(list), defaultdict(int)
    for c in alive:
        if c.doc_id is None:
            continue
        sizes[c.doc_id] += 1
        if version_key(c) is not None:
            families[c.doc_id].append(c)
        elif c.date:
            unread[c.doc_id].append(c)
    return ({doc: members for doc, members in families.items() if len({version_key(c) for c in members}) > 1},
            {doc: members for doc, members in unread.items() if sizes[doc] > 1})


def _listing(values: set[str], most: int = 6) -> str:
    ordered = sorted(values, key=lambda v: (float(re.sub(r"[^\d.]", "", v) or 0), v))
    return ", ".join(ordered[:most]) + (f" and {len(ordered) - most} more" if len(ordered) > most else "")


def _short(text: str, most: int = 40) -> str:
    return text if len(text) <= most else text[:most] + "…"


def _label(c) -> str:
    return c.date or c.version or "?"


_FAMILIES = Memo(8)


def newest(state):
    """Mark older versions of a document stale when a newer one is present; report conflicts."""
    families, unread = _FAMILIES.of(state.alive, _families)  # a rebuild (prefer_newest changed): the same tuple
    warnings, out = [], []
    for doc, members in unread.items():
        shown = ", ".join(f"{c.id} ({_short(c.date)!r})" for c in members[:5])
        more = f" and {len(members) - 5} more" if len(members) > 5 else ""
        warnings.append(TraceWarning(
            f"the date of {shown}{more} could not be read, so {'it was' if len(members) == 1 else 'they were'} "
            f"not compared with the other versions of {doc}: neither stale nor making another stale",
            "unparsed_date", [c.id for c in members]))
    for doc, members in families.items():
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
