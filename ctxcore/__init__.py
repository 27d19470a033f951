"""ctxcore: context construction, one explicit decision at a time.

>>> from ctxcore import Candidate, Config, build
>>> t = build([Candidate("a", "Refunds take five days.", 0.9)], "How long do refunds take?", Config(budget=100))
>>> [(d.id, d.fate, d.label) for d in t.decisions]
[('a', 'kept', 'S1')]
"""

from .stages.budget import window_budget
from .errors import BuildError, InputError
from .io.loaders import Loaded, load, loads
from .pipeline import STAGES, build, evidence_cost, rank_order
from .records import (FATE_MEANINGS, FATES, FORMAT, PRESETS, Block, Budget, Candidate, Config, Decision, Inputs, Logged, Prompt,
                      TokenizerInfo, Trace, TraceWarning)
from .io.schema import trace_schema
from .encodings import ENCODINGS, encoding_for_model
from .stages.tokens import get_tokenizer
from .io.tracefile import trace_from_json

__all__ = [
    "Block", "Budget", "BuildError", "Candidate", "Config", "Decision", "ENCODINGS", "FATES", "FATE_MEANINGS",
    "FORMAT", "PRESETS", "Inputs", "InputError", "Logged", "Loaded", "Prompt", "STAGES", "TokenizerInfo", "Trace", "TraceWarning", "build",
    "encoding_for_model", "evidence_cost", "get_tokenizer", "load", "loads", "rank_order", "trace_from_json",
    "trace_schema",
    "window_budget",
]
