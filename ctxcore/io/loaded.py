"""What any input file yields, whoever read it (the loaders or a logged-trace format)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from ..pipeline import build
from ..records import Candidate, Config, Inputs, Logged, Trace


@dataclass(frozen=True)
class Loaded:
    """What a file holds: candidates, the question, the fixed blocks, and any settings."""

    candidates: tuple[Candidate, ...]
    query: str = ""
    inputs: Inputs = Inputs()
    config: dict = field(default_factory=dict)
    format: str = "json"
    source: str = "input"
    trace: Optional[Trace] = None
    extra: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    logged: Optional[Logged] = None  # a logged trace's request, as sent

    def settings(self, **overrides) -> Config:
        """The file's settings with ``overrides`` on top."""
        return Config.from_dict({**self.config, **overrides}, source=self.source)

    def build(self, config: Optional[Config] = None, query: Optional[str] = None) -> Trace:
        trace = build(self.candidates, self.query if query is None else query,
                      config or self.settings(), self.inputs)
        if self.warnings or self.logged is not None:
            trace = dataclasses.replace(trace, warnings=self.warnings + trace.warnings,
                                        logged=self.logged or trace.logged)
        return trace
