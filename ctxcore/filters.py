"""Stages that drop a candidate for what it is, not for what else is there:
the caller may not see it, a newer version of its document is present, or its
score is under the threshold."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date, datetime

from .memo import Memo, by_text
from .records import Decision, TraceWarning


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

    >>> sorted(["v10", "v2", "v1.5"], key=_natural)
    ['v1.5', 'v2', 'v10']
    """
    return tuple((0, int(p), "") if p.isascii() and p.isdigit() else (1, 0, p.lower())
                 for p in re.findall(r"[0-9]+|[^0-9\W]+", text))


def _when(value: str):
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError:
        pass
    try:
        return datetime.combine(date.fromisoformat(value[:10]), datetime.min.time())
    except ValueError:
        return None


def version_key(c):
    """How new a candidate is within its document: by date, else by version; None if neither."""
    return _version_key(c.date, c.version)


@by_text("version key")
def _version_key(date_text, version):
    if date_text:
        when = _when(date_text)
        return (1, when.isoformat() if when else date_text, ())
    if version:
        return (0, "", _natural(version))
    return None


_UNIT = r"(?:EUR|USD|GBP|CHF|€|\$|£|%|percent|(?:business |working |calendar )?(?:days?|hours?|weeks?|months?|years?))"
_MONEY = r"(?:EUR|USD|GBP|CHF|€|\$|£)\s?\d[\d,]*(?:\.\d+)?\b"
# The definition: an amount is a currency then a number, or a number then a unit.
_AMOUNT = re.compile(r"(?:(?:EUR|USD|GBP|CHF|€|\$|£)\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?%s)\b" % _UNIT,
                     re.IGNORECASE)
# The same matches in linear time. Retried at every digit of a long run of digits and commas, the
# number-then-unit branch reads the run to its end each time, and fails or succeeds the same way
# from each of them (what follows the run decides); so it is tried once per run, from where the run
# begins (leading commas skipped), and from where a money match stopped inside one (_AT).
_NUMBER_UNIT = r",*+(\d[\d,]*+(?:\.\d++)?\s?+%s\b)" % _UNIT
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
    families = defaultdict(list)
    for c in alive:
        if c.doc_id is not None and version_key(c) is not None:
            families[c.doc_id].append(c)
    return {doc: members for doc, members in families.items()
            if len({version_key(c) for c in members}) > 1}


def _listing(values: set[str], most: int = 6) -> str:
    ordered = sorted(values, key=lambda v: (float(re.sub(r"[^\d.]", "", v) or 0), v))
    return ", ".join(ordered[:most]) + (f" and {len(ordered) - most} more" if len(ordered) > most else "")


def _label(c) -> str:
    return c.date or c.version or "?"


_FAMILIES = Memo(8)


def newest(state):
    """Mark older versions of a document stale when a newer one is present; report conflicts."""
    families = _FAMILIES.of(state.alive, _families)  # a rebuild (prefer_newest changed) brings the same tuple
    warnings, out = [], []
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
