"""A trace's seal: proof that this engine decided it from what it holds, so a replay can take its fates as
they are instead of deciding them again.

A build is a pure function of its inputs, settings and engine, so a trace this engine wrote and nobody
changed is its own rebuild. The seal is a SHA-256 over the engine (the source of every module a build runs,
the tokenizer and array libraries' versions, Python's and its Unicode tables') and over the trace's decided
part: every field but ``logged`` and ``warnings``, which a loader adds to. An edited trace, or one another
engine wrote, fails the check and is rebuilt as before; only a seal made on purpose for an edited trace
passes, and that is an assertion by whoever made it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import unicodedata
from typing import Mapping, Optional

SEALED = ("format", "query", "config", "tokenizer", "budget", "candidates", "decisions", "blocks", "prompt",
          "abstain", "inputs")  # what a build decides; a trace's ``logged`` block and warnings a loader adds to

_HERE = os.path.dirname(os.path.abspath(__file__))
# every module a build runs (tests/test_seal.py holds this to the imports ctxcore.pipeline reaches)
ENGINE_FILES = ("errors.py", "records.py", "settings.py", "encodings.py", "memo.py", "serialize.py", "escape.py",
                "seal.py", "pipeline.py", "stages")
LIBRARIES = (("tiktoken", "tiktoken"), ("bpe_openai", "bpe_openai"), ("numpy", "numpy"))  # (module, distribution)

_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":")).encode
_engine: list = []  # the fingerprint, once per process


def _sources() -> Optional[list[tuple[str, bytes]]]:
    out = []
    for name in ENGINE_FILES:
        path = os.path.join(_HERE, name)
        paths = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".py")) \
            if os.path.isdir(path) else [path]
        for p in paths:
            try:
                with open(p, "rb") as f:
                    out.append((os.path.relpath(p, _HERE), f.read()))
            except OSError:
                return None  # an engine without its sources (a frozen build) cannot say what it is
    return out


def _version(module: str, distribution: str) -> str:
    """The installed version of a library, read off its ``.dist-info`` folder's name without importing it
    (``importlib.metadata`` costs 40 ms to import; numpy, more): ``absent`` or ``unknown`` otherwise."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return "absent"
    site = os.path.dirname(os.path.dirname(spec.origin))
    prefix = distribution.replace("-", "_") + "-"
    try:
        found = sorted(f for f in os.listdir(site) if f.startswith(prefix) and f.endswith(".dist-info"))
    except OSError:
        found = []
    return found[-1][len(prefix):-len(".dist-info")] if found else "unknown"


def engine() -> Optional[str]:
    """This engine's fingerprint (a hex SHA-256), or None when its sources cannot be read: nothing is sealed then."""
    if not _engine:
        sources = _sources()
        if sources is None:
            _engine.append(None)
        else:
            h = hashlib.sha256()
            for name, data in sources:
                h.update(f"{name}\0{len(data)}\0".encode())
                h.update(data)
            extra = [f"{m}={_version(m, d)}" for m, d in LIBRARIES]
            extra += [f"python={sys.version_info[0]}.{sys.version_info[1]}", f"unicode={unicodedata.unidata_version}"]
            h.update("\0".join(extra).encode())
            _engine.append(h.hexdigest())
    return _engine[0]


def seal_of(body: Mapping, fingerprint: Optional[str] = None) -> Optional[str]:
    """The seal of a trace's JSON object made by the engine ``fingerprint`` (default: this one); None when this
    engine cannot seal. Key order and layout do not matter; every value of a sealed field does.

    >>> body = {"format": "ctxcore.trace/1", "query": "q", "decisions": [{"id": "a", "fate": "kept"}]}
    >>> seal_of(body, "e") == seal_of(dict(reversed(body.items())), "e") != seal_of({**body, "query": "Q"}, "e")
    True
    """
    fingerprint = engine() if fingerprint is None else fingerprint
    if fingerprint is None:
        return None
    h = hashlib.sha256(fingerprint.encode())
    try:
        for key in SEALED:
            h.update(b"\0" + key.encode() + b"\0" + (_ENCODE(body[key]).encode() if key in body else b"-"))
    except (TypeError, ValueError):  # a value JSON cannot hold: no trace this engine writes, so nothing to seal
        return None
    return "sha256:" + h.hexdigest()


def is_sealed(body: Mapping) -> bool:
    """Does the trace's JSON object carry this engine's seal of what it holds (it was written by this engine,
    and its decided part is unchanged)?"""
    seal = body.get("seal")
    return isinstance(seal, str) and seal == seal_of(body)
