"""The one record the stages pass along: survivors so far and the fates decided so far."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Optional

from ..records import Block, Budget, Candidate, Config, Decision, Inputs, TraceWarning
from .tokens import Counting, Tokenizer


@dataclass(frozen=True)
class State:
    query: str
    config: Config
    inputs: Inputs
    tokenizer: Tokenizer
    candidates: tuple[Candidate, ...]          # input order, with tokens
    alive: tuple[Candidate, ...]               # survivors, in rank order
    rank: Mapping[str, int]                    # id -> 0-based rank
    removed: Mapping[str, Decision] = field(default_factory=dict)
    budget: Optional[Budget] = None
    kept: tuple[Decision, ...] = ()            # after select: rank order; after order: prompt order
    blocks: tuple[Block, ...] = ()
    prompt_text: str = ""
    prompt_tokens: int = 0
    history_used: tuple[dict, ...] = ()
    abstain: bool = False
    warnings: tuple[TraceWarning, ...] = ()
    counting: Optional[Counting] = None        # token counts being made in the background

    def drop(self, decisions: list[Decision], survivors: Optional[tuple[Candidate, ...]] = None) -> "State":
        """Remove the decided candidates from the survivors and record their fates (a stage that
        already knows who is left, in rank order, passes them as ``survivors``)."""
        if not decisions:
            return self if survivors is None else dataclasses.replace(self, alive=survivors)
        gone = {d.id: d for d in decisions}
        alive = tuple([c for c in self.alive if c.id not in gone]) if survivors is None else survivors
        return dataclasses.replace(self, alive=alive, removed={**self.removed, **gone})

    def warn(self, *messages: str) -> "State":
        """Add warnings: structured ones as they are, a plain message as kind ``note``."""
        if not messages:
            return self
        return dataclasses.replace(self, warnings=self.warnings + tuple(map(TraceWarning.of, messages)))

    def replace(self, **changes) -> "State":
        return dataclasses.replace(self, **changes)


def score_text(score: Optional[float]) -> str:
    return "unscored" if score is None else f"{score:.3g}"
