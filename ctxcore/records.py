"""The records every stage reads and writes: candidates in, decisions and a trace out."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Optional, Union

from .errors import InputError

FORMAT = "ctxcore.trace/1"

Fate = Literal["kept", "exact_duplicate", "near_duplicate", "merged", "below_threshold",
               "stale", "not_permitted", "over_budget"]
FATES: tuple[str, ...] = Fate.__args__  # type: ignore[attr-defined]

FATE_MEANINGS = {
    "kept": "reached the prompt as a labelled passage",
    "exact_duplicate": "same text as a higher-ranked candidate",
    "near_duplicate": "word-set similarity with a higher-ranked survivor at or above the threshold",
    "merged": "joined into the passage of an adjacent chunk of the same document",
    "below_threshold": "score under the minimum score",
    "stale": "an older version of a document whose newer version is present",
    "not_permitted": "the caller may not see it",
    "over_budget": "did not fit in the remaining evidence budget",
}

Trust = Literal["system", "developer", "retrieved", "user", "tool"]
BlockKind = Literal["system", "instructions", "schema", "tool", "evidence", "history",
                    "user_document", "rule", "question"]


@dataclass(frozen=True)
class Candidate:
    """One retrieved chunk as read from the input (after normalisation)."""

    id: str
    text: str
    score: Optional[float] = None
    doc_id: Optional[str] = None
    chunk_index: Optional[int] = None
    title: Optional[str] = None
    section: Optional[str] = None
    date: Optional[str] = None
    version: Optional[str] = None
    source_type: Optional[str] = None
    trust: Trust = "retrieved"
    permissions: Optional[tuple[str, ...]] = None
    embedding: Optional[tuple[float, ...]] = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: Optional[int] = None
    generated_id: bool = False

    def __hash__(self) -> int:  # metadata is a dict; id and text identify a candidate well enough
        return hash((self.id, self.text))


@dataclass(frozen=True)
class Decision:
    """The one fate of one candidate, the stage that decided it, and why."""

    id: str
    fate: Fate
    stage: str
    reason: str
    duplicate_of: Optional[str] = None
    merged_into: Optional[str] = None
    superseded_by: Optional[str] = None
    similarity: Optional[float] = None
    tokens: Optional[int] = None
    tokens_before: Optional[int] = None
    cost: Optional[int] = None
    compressed: Optional[bool] = None
    merged_from: Optional[tuple[str, ...]] = None
    label: Optional[str] = None
    position: Optional[int] = None
    text: Optional[str] = None  # the passage text when it differs from the candidate's

    @classmethod
    def quick(cls, id: str, fate: Fate, stage: str, reason: str, **rest) -> "Decision":
        """``Decision(...)`` without the frozen dataclass's field-by-field setattr: a build over
        10k candidates makes one per dropped candidate. Only the given fields are stored on the
        record; the others read the class's defaults, as every dataclass function does."""
        _known(rest)
        d = object.__new__(cls)
        d.__dict__.update(id=id, fate=fate, stage=stage, reason=reason, **rest)
        return d

    @classmethod
    def each(cls, fate: Fate, stage: str, reasons: Iterable[tuple[str, str]], **columns) -> list["Decision"]:
        """One decision per (id, reason), all with the same fate and stage, and any further fields
        given as columns in the same order: :meth:`quick` for a whole stage's worth (a budget change
        on 10k candidates makes about nine thousand)."""
        _known(columns)
        new, out = object.__new__, []
        for cid, reason in reasons:
            d = new(cls)
            fields = d.__dict__
            fields["id"], fields["fate"], fields["stage"], fields["reason"] = cid, fate, stage, reason
            out.append(d)
        for name, values in columns.items():
            for d, value in zip(out, values, strict=True):
                d.__dict__[name] = value
        return out


_DECISION_FIELDS = frozenset(f.name for f in dataclasses.fields(Decision))


def _known(fields: dict) -> None:
    """The check the dataclass constructor would make: every name is a Decision field."""
    if fields and not fields.keys() <= _DECISION_FIELDS:
        raise TypeError(f"Decision has no field {sorted(fields.keys() - _DECISION_FIELDS)[0]!r}")
if not all(getattr(Decision, f.name) is f.default for f in dataclasses.fields(Decision)
           if f.default is not dataclasses.MISSING):
    raise TypeError("Decision.quick and .each need every optional field's default on the class")


@dataclass(frozen=True)
class Config:
    """Every setting of a build; the trace carries all of them so a replay is exact."""

    encoding: str = "cl100k_base"
    model: Optional[str] = None
    window: int = 8192
    max_output: int = 1024
    safety: float = 0.05
    history_share: float = 0.40
    budget: Optional[int] = None
    caller: Optional[str] = None
    prefer_newest: bool = True
    near_dup: Optional[float] = 0.8
    similarity: Literal["words", "shingles", "cosine"] = "words"
    merge_adjacent: bool = False
    min_score: Optional[float] = None
    select: Literal["score", "density", "mmr"] = "score"
    mmr_lambda: float = 0.7
    order: Literal["rank", "sandwich", "document", "original"] = "sandwich"
    label_overhead: Union[int, Literal["auto"]] = "auto"
    compress: bool = False
    max_chunk_tokens: Optional[int] = None
    max_passages: Optional[int] = None

    def __post_init__(self):
        _check_config(self)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "config") -> "Config":
        if not isinstance(data, dict):
            raise InputError("settings must be a JSON object", source=source)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"unknown setting; known settings are {', '.join(sorted(names))}",
                             source=source, field=unknown[0])
        try:
            return cls(**data)
        except InputError as err:
            err.source = source
            raise

    def replace(self, **changes) -> "Config":
        return dataclasses.replace(self, **changes)


MAX_TOKENS = 100_000_000  # far beyond any model's window; larger numbers are typos or attacks

_CHOICES = {
    "similarity": ("words", "shingles", "cosine"),
    "select": ("score", "density", "mmr"),
    "order": ("rank", "sandwich", "document", "original"),
}


def _is_number(x) -> bool:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer too large for a float
        return False


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_config(c: Config) -> None:
    def bad(name, why):
        raise InputError(f"{why} (got {getattr(c, name)!r})", source="config", field=name)

    from .tokens import ENCODINGS, encoding_for_model  # local: tokens imports nothing from here

    if c.model is not None:
        if not isinstance(c.model, str):
            bad("model", "must be a model name")
        try:
            encoding = encoding_for_model(c.model)
        except KeyError:
            bad("model", f"unknown model; give an encoding instead ({', '.join(ENCODINGS)})")
        object.__setattr__(c, "encoding", encoding)
    if not isinstance(c.encoding, str) or not c.encoding:
        bad("encoding", "must be an encoding name")
    for name in ("window", "max_output", "budget", "max_chunk_tokens"):
        if _is_int(getattr(c, name)) and getattr(c, name) > MAX_TOKENS:
            bad(name, f"must be at most {MAX_TOKENS:,} tokens")
    for name in ("window", "max_output"):
        if not _is_int(getattr(c, name)) or getattr(c, name) < 0:
            bad(name, "must be a whole number of tokens, 0 or more")
    if c.window <= c.max_output:
        bad("window", "must be larger than max_output")
    if not _is_number(c.safety) or not 0 <= c.safety < 1:
        bad("safety", "must be a fraction from 0 up to (not including) 1")
    if not _is_number(c.history_share) or not 0 <= c.history_share <= 1:
        bad("history_share", "must be a fraction from 0 to 1")
    if c.budget is not None and (not _is_int(c.budget) or c.budget < 0):
        bad("budget", "must be a whole number of tokens, 0 or more")
    if c.near_dup is not None and (not _is_number(c.near_dup) or not 0 < c.near_dup <= 1):
        bad("near_dup", "must be a similarity above 0 and at most 1, or null to switch it off")
    if c.min_score is not None and not _is_number(c.min_score):
        bad("min_score", "must be a number or null")
    if not _is_number(c.mmr_lambda) or not 0 <= c.mmr_lambda <= 1:
        bad("mmr_lambda", "must be between 0 and 1")
    if c.label_overhead != "auto" and (not _is_int(c.label_overhead) or c.label_overhead < 0):
        bad("label_overhead", "must be a whole number of tokens or 'auto'")
    if c.max_chunk_tokens is not None and (not _is_int(c.max_chunk_tokens) or c.max_chunk_tokens < 1):
        bad("max_chunk_tokens", "must be a whole number of tokens, 1 or more, or null")
    if c.max_passages is not None and (not _is_int(c.max_passages) or c.max_passages < 1):
        bad("max_passages", "must be a whole number, 1 or more, or null")
    for name in ("prefer_newest", "merge_adjacent", "compress"):
        if not isinstance(getattr(c, name), bool):
            bad(name, "must be true or false")
    if c.caller is not None and not isinstance(c.caller, str):
        bad("caller", "must be a string")
    for name, options in _CHOICES.items():
        if getattr(c, name) not in options:
            bad(name, f"must be one of {', '.join(options)}")


PRESETS: dict[str, dict] = {
    # what many pipelines do by default: top passages by score, pasted in retrieval order, nothing filtered
    "naive": {"near_dup": None, "min_score": None, "prefer_newest": False, "merge_adjacent": False,
              "select": "score", "order": "original", "compress": False, "max_passages": 10},
    # this project's defaults: dedup, newest versions, best passages at the edges
    "recommended": {"near_dup": 0.8, "prefer_newest": True, "select": "score", "order": "sandwich",
                    "max_passages": None},
}


@dataclass(frozen=True)
class Budget:
    """The window arithmetic: what the answer, the margin and the fixed blocks leave."""

    window: int
    max_output: int
    safety: float
    fixed: int
    safe_input: int
    history: int
    docs: int
    docs_direct: bool = False


@dataclass(frozen=True)
class Block:
    """One contiguous piece of the final prompt."""

    kind: BlockKind
    trust: Trust
    start_token: int
    end_token: int
    label: Optional[str] = None
    id: Optional[str] = None

    @property
    def tokens(self) -> int:
        return self.end_token - self.start_token


@dataclass(frozen=True)
class Inputs:
    """The non-evidence parts of a request; kept in the trace so a replay is exact."""

    system: str = ""
    instructions: str = ""
    schema: str = ""
    tools: tuple[str, ...] = ()
    history: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class TokenizerInfo:
    encoding: str
    exact: bool


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: int


@dataclass(frozen=True)
class Trace:
    """Everything one build decided; serialises to the ctxcore.trace/1 JSON format."""

    query: str
    config: Config
    tokenizer: TokenizerInfo
    budget: Budget
    candidates: tuple[Candidate, ...]
    decisions: tuple[Decision, ...]
    blocks: tuple[Block, ...]
    prompt: Prompt
    warnings: tuple[str, ...] = ()
    abstain: bool = False
    inputs: Inputs = Inputs()
    format: str = FORMAT

    def decision(self, cid: str) -> Decision:
        for d in self.decisions:
            if d.id == cid:
                return d
        raise KeyError(cid)

    def kept(self) -> list[Decision]:
        """Kept decisions in prompt order."""
        return sorted((d for d in self.decisions if d.fate == "kept"), key=lambda d: d.position)

    def fate_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(FATES, 0)
        for d in self.decisions:
            counts[d.fate] = counts.get(d.fate, 0) + 1
        return counts

    def to_dict(self) -> dict:
        from .serialize import trace_to_dict  # late import: records -> serialize (serialize imports no records)

        return trace_to_dict(self)

    def to_json(self) -> str:
        from .serialize import dumps  # late import: records -> serialize (serialize imports no records)

        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "trace") -> "Trace":
        from .tracefile import trace_from_json  # late import: the one allowed cycle (records <-> tracefile)

        return trace_from_json(text, source=source)
