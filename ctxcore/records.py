"""The records every stage reads and writes: candidates in, decisions and a trace out."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Optional, Union

from .errors import InputError
from .serialize import dumps_records, trace_to_dict
from .settings import check as check_settings

FORMAT = "ctxcore.trace/1"

Fate = Literal["kept", "exact_duplicate", "near_duplicate", "merged", "below_threshold",
               "stale", "not_permitted", "over_budget", "over_limit"]
FATES: tuple[str, ...] = Fate.__args__  # type: ignore[attr-defined]

FATE_MEANINGS = {
    "kept": "reached the prompt as a labelled passage",
    "exact_duplicate": "same text as a higher-ranked candidate (stage ids: the same id and text as a better-scored "
                       "copy)",
    "near_duplicate": "word-set similarity with a higher-ranked survivor at or above the threshold",
    "merged": "joined into the passage of an adjacent chunk of the same document",
    "below_threshold": "score under the minimum score (or no score, with drop_unscored)",
    "stale": "an older version of a document whose newer version is present",
    "not_permitted": "the caller may not see it",
    "over_budget": "did not fit in the remaining evidence budget",
    "over_limit": "the passage limit (max_passages) was reached before it: tokens were left, passages were not",
}

class TraceWarning(str):
    """A warning: its message, plus a ``kind`` and the candidate ``ids`` it is about, so that code reads
    what a warning is without matching its wording. It is a ``str`` (the message), so printing it and
    comparing it with text still work.

    >>> w = TraceWarning("a contains a role marker", kind="instruction_text", ids=("a",))
    >>> (str(w), w.kind, w.ids)
    ('a contains a role marker', 'instruction_text', ('a',))
    """

    kind: str
    ids: tuple[str, ...]

    def __new__(cls, message: str, kind: str = "note", ids: Iterable[str] = ()):
        self = super().__new__(cls, message)
        self.kind, self.ids = kind, tuple(ids)
        return self

    def __reduce__(self):  # pickled by the app's cache and the replay's worker processes
        return (TraceWarning, (str(self), self.kind, self.ids))

    @classmethod
    def of(cls, value) -> "TraceWarning":
        """A warning from a plain message (kind ``note``) or one already structured."""
        return value if isinstance(value, TraceWarning) else cls(str(value))


WARNING_KINDS = {
    "note": "anything else worth knowing about the build",
    "approximate_tokens": "the encoding's vocabulary is not available: counts are estimates",
    "unscored": "some or all candidates carry no score",
    "generated_ids": "candidates without an id got one from their position",
    "history_trimmed": "the oldest conversation turns did not fit the history budget",
    "cosine_missing": "cosine near-dedup could not compare candidates without an embedding",
    "cosine_skipped": "cosine near-dedup was skipped (embeddings of different lengths)",
    "versions_disagree": "versions of one document state different amounts",
    "ambiguous_versions": "chunks of one document with different dates that nothing pairs as versions of one passage",
    "unparsed_date": "a candidate's date could not be read, so it was not compared with other versions",
    "min_score_unused": "min_score was set but no candidate has a score",
    "instruction_text": "a kept passage holds text that reads like instructions; it was neutralised and fenced",
    "markup": "a kept passage holds HTML, a chat special token or a remote image; it is shown as text",
    "forged_structure": "text tried to forge a label or a fence; it was neutralised",
    "abstain": "no passage reached the prompt: the model is told to abstain",
    "import": "something about reading a logged trace",
    "replay_differs": "a saved trace's stored prompt or fates differ from a rebuild of its candidates and settings",
    "repeated_ids": "an id appeared more than once in the input: copies with the same text were dropped as "
                    "exact_duplicate (stage ids), copies with other text were renamed id#2, id#3, … in input order",
    "similarity_used": "which similarity a stage compared passages with (MMR: cosine of the embeddings when every "
                       "candidate carries one of the same length, else word-set Jaccard)",
    "unscored_unchecked": "min_score was set and some candidates carry no score: they passed without being checked "
                          "(drop_unscored drops them)",
    "no_doc_id": "dated candidates without a doc_id were not compared for recency: versions are compared only "
                 "within one doc_id",
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
    """Every setting of a build; the trace carries all of them so a replay is exact. Each is declared,
    with its bounds and meaning, in :data:`ctxcore.settings.SETTINGS`."""

    encoding: str = "cl100k_base"
    model: Optional[str] = None
    window: int = 8192
    max_output: int = 1024
    safety: float = 0.05
    history_share: Union[float, Literal["auto"]] = "auto"
    budget: Optional[int] = None
    caller: Optional[str] = None
    prefer_newest: bool = True
    near_dup: Optional[float] = 0.8
    similarity: Literal["words", "shingles", "cosine"] = "words"
    merge_adjacent: bool = False
    min_score: Optional[float] = None
    drop_unscored: bool = False
    select: Literal["score", "density", "mmr"] = "score"
    mmr_lambda: float = 0.7
    order: Literal["rank", "sandwich", "lost-in-the-middle", "document", "original"] = "sandwich"
    label_overhead: Union[int, Literal["auto"]] = "auto"
    compress: bool = False
    max_chunk_tokens: Optional[int] = None
    max_passages: Optional[int] = None

    def __post_init__(self):
        check_settings(self)

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
    """The window arithmetic: what the answer, the margin and the fixed blocks leave.

    ``history`` is what is held for the conversation history. With ``history_share`` auto
    (``history_auto``), it is the tokens the history's kept turns use, at most ``history_cap`` (the
    0.4 share), and the documents get the rest; with a fixed share it is that share of what is left.
    ``history_used`` is what the kept turns use in either case."""

    window: int
    max_output: int
    safety: float
    fixed: int
    safe_input: int
    history: int
    docs: int
    docs_direct: bool = False
    history_auto: bool = False
    history_cap: Optional[int] = None
    history_used: Optional[int] = None


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
class SentPassage:
    """One candidate as it appears in a prompt that was actually sent (reconstructed by :mod:`ctxcore.analysis.sent`)."""

    id: str
    position: int                                 # 1-based place among the passages found in the sent prompt
    label: Optional[str] = None                   # the label the prompt gave it: [1], [S2], Document 3: ...
    share: float = 1.0                            # fraction of its text found; below 1 it was cut
    tokens: int = 0                               # tokens of the part that was sent
    offset: int = 0                               # where it starts: a character of the normalised logged
    #                                               prompt, or a token of a build's own prompt (source "replay")
    duplicate_of: Optional[str] = None            # an earlier sent passage with the same or near-same text
    similarity: Optional[float] = None            # word-set Jaccard with duplicate_of (1.0: identical text)
    superseded_by: Optional[str] = None           # a newer version of the same document that was retrieved

    @property
    def cut(self) -> bool:
        return self.share < 1.0


@dataclass(frozen=True)
class Sent:
    """The sent context, reconstructed: which candidates reached the prompt, in which order, whole or cut,
    duplicates and versions among them, and whether the question and the answer rule were there."""

    passages: tuple[SentPassage, ...] = ()
    not_sent: tuple[str, ...] = ()                # retrieved candidates whose text is not in the prompt
    evidence_tokens: int = 0                      # tokens of the sent passages together
    prompt_tokens: int = 0                        # the whole prompt, recounted with the replay's tokenizer
    limit: int = 0                                # window minus reserved answer tokens
    over_window: bool = False                     # prompt_tokens > limit
    question_present: bool = True
    rule_present: bool = False                    # an answer rule: answer only from the context, cite, abstain
    abstain_asked: bool = False                   # the prompt tells the model what to say when it cannot answer
    source: str = "logged"                        # "logged": the logged prompt; "replay": a build's own prompt
    labelling: str = ""                           # how the prompt marked its passages (sent.LABELLINGS), "" unread

    def __post_init__(self):  # read back from JSON: the passages arrive as objects
        if any(isinstance(p, dict) for p in self.passages):
            object.__setattr__(self, "passages", tuple(
                SentPassage(**{k: v for k, v in p.items() if k in _SENT_FIELDS}) if isinstance(p, dict) else p
                for p in self.passages))

    def passage(self, cid: str) -> Optional[SentPassage]:
        return next((p for p in self.passages if p.id == cid), None)


_SENT_FIELDS = frozenset(f.name for f in dataclasses.fields(SentPassage))


@dataclass(frozen=True)
class Logged:
    """What a tracing tool logged for one run: the request that was actually sent, and its answer.

    The evidence of what happened; a replay of the same candidates is the counterfactual."""

    format: str                                   # the source format family (openinference, langfuse, ...)
    trace_id: Optional[str] = None
    model: Optional[str] = None
    prompt_text: Optional[str] = None             # the prompt as sent: the LLM call's messages, joined
    prompt_tokens: Optional[int] = None           # as the log counted them
    answer: Optional[str] = None
    traces: tuple[str, ...] = ()                  # every run id the file holds
    unmapped: tuple[str, ...] = ()                # what the log held that was not read, in words
    query_from: Optional[str] = None              # where the question was found
    llm_span: Optional[str] = None
    retriever_spans: tuple[str, ...] = ()
    reranker: Optional[dict[str, Any]] = None     # {span, model, top_k} when a reranker ran
    reranked: tuple[str, ...] = ()                # candidate ids the reranker returned, in its order
    reranker_cut: tuple[str, ...] = ()            # candidate ids the reranker was given but did not return
    runs: tuple[dict[str, Any], ...] = ()         # every run in the file: {id, retrieval, llm, documents, start}
    spans: tuple[dict[str, Any], ...] = ()        # the run's spans: {name, kind, id, parent, start, duration_ms,
                                                  #   model, prompt_tokens, completion_tokens}
    conventions: tuple[str, ...] = ()             # attribute conventions seen (openinference, gen_ai, traceloop)
    stated: Optional[dict[str, float]] = None     # limits the log states: {context_window, max_output, min_score,
                                                  #   top_n, top_k: value}, as logged (never applied)
    sent: Optional[Sent] = None                   # the sent context, reconstructed (ctxcore.analysis.sent.attach)
    policy: Optional[dict[str, Any]] = None       # the rules the logged pipeline appears to follow: {rules, config,
                                                  #   cannot} (ctxcore.analysis.policy.attach)

    def __post_init__(self):  # read back from JSON: the sent context arrives as an object
        if isinstance(self.sent, dict):
            names = {f.name for f in dataclasses.fields(Sent)}
            object.__setattr__(self, "sent", Sent(**{k: tuple(v) if isinstance(v, list) else v
                                                    for k, v in self.sent.items() if k in names}))


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
    warnings: tuple[TraceWarning, ...] = ()
    abstain: bool = False
    inputs: Inputs = Inputs()
    format: str = FORMAT
    logged: Optional[Logged] = None               # only for a trace imported from a tracing tool

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
        return trace_to_dict(self)

    def to_json(self) -> str:
        return dumps_records(self.to_dict())

