"""A sealed trace (:mod:`ctxcore.seal`) read for a replay: the run as input and its fates as stored.

An unsealed trace is rebuilt before it is believed (:func:`ctxcore.io.loaders.from_object`); a trace this
engine sealed is its own rebuild, so a replay can compare the new settings with its stored fates and skip
the rebuild, the whole-trace schema walk and a record per decision. Only what a replay compares is read, and
each of those fields is checked for its type, so a seal made on purpose for a malformed trace cannot slip a
wrong type past the loader. An unsealed trace, one another engine wrote or one that fails a check gives None,
and is loaded the plain way (which says what is wrong).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ..errors import InputError
from ..records import FATES, FORMAT, Candidate, Config, Logged, Trace
from ..seal import is_sealed
from .loaded import Loaded
from .reading import candidates as read_candidates
from .schema import field_problems
from .tracefile import inputs_of, logged_of, warnings_of

_COUNT = (int, type(None))


@dataclass(frozen=True)
class Stored:
    """What a replay compares of a sealed trace, read off its JSON."""

    loaded: Loaded                            # the run as input: candidates, question, blocks, settings
    fates: dict                               # candidate id -> (fate, stage, reason), in input order
    places: tuple                             # (fate, stage, position) of each decision, in input order
    order: tuple                              # the kept ids in prompt order
    labels: dict                              # label -> the kept candidate's id
    evidence: int                             # docs-budget tokens the kept passages use
    prompt_tokens: int
    budget: dict
    blocks: list
    logged: Optional[Logged]
    warnings: tuple                           # the trace's stored warnings (the loader's notes among them)


def stored_trace(stored: Stored) -> Trace:
    """The sealed trace's records as the loader gives them: its rebuild under its own settings, with the log and
    warnings it stores. Asked for after another build of the run (a replay's findings), the rebuild resumes from
    that build's counting, which costs less than walking the JSON's schema and making its records."""
    return dataclasses.replace(stored.loaded.build(), logged=stored.logged, warnings=stored.warnings)


def _decision_ok(d) -> bool:
    return (isinstance(d, dict) and isinstance(d.get("id"), str) and d.get("fate") in FATES
            and isinstance(d.get("stage"), str) and isinstance(d.get("reason"), str)
            and all(isinstance(d.get(k), _COUNT) and not isinstance(d.get(k), bool) for k in ("position", "cost"))
            and isinstance(d.get("label"), (str, type(None))))


def read_sealed(data, source: str) -> Optional[Stored]:
    """The stored side of a trace this engine sealed, or None (read it the plain way)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or not is_sealed(data):
        return None
    query, decisions, prompt = data.get("query"), data.get("decisions"), data.get("prompt")
    if not (isinstance(query, str) and isinstance(data.get("candidates"), list) and isinstance(decisions, list)
            and isinstance(data.get("config"), dict) and isinstance(prompt, dict)
            and isinstance(prompt.get("tokens"), int) and isinstance(data.get("budget"), dict)
            and isinstance(data.get("blocks"), list) and all(map(_decision_ok, decisions))):
        return None
    if any(field_problems(data[key], key, most=1) for key in ("inputs", "logged", "warnings")
           if data.get(key) is not None):
        return None
    try:
        cands = read_candidates(data["candidates"], source, "candidates", None, Candidate)[0]
        config = Config.from_dict(data["config"], source=source)
        logged = logged_of(data.get("logged"), source)
        warnings = warnings_of(data.get("warnings", []), source)
    except (InputError, TypeError, ValueError):
        return None
    if sorted(c.id for c in cands) != sorted(d["id"] for d in decisions):
        return None
    kept = sorted((d for d in decisions if d["fate"] == "kept"), key=lambda d: d.get("position") or 0)
    loaded = Loaded(cands, query, inputs_of(data), config.to_dict(), "trace", source)
    return Stored(loaded, {d["id"]: (d["fate"], d["stage"], d["reason"]) for d in decisions},
                  tuple((d["fate"], d["stage"], d.get("position")) for d in decisions), tuple(d["id"] for d in kept),
                  {d["label"]: d["id"] for d in kept if d.get("label")}, sum(d.get("cost") or 0 for d in kept),
                  prompt["tokens"], data["budget"], data["blocks"], logged, warnings)
