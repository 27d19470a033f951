"""Loading inputs and building traces, cached: the pages never call the engine's loaders or ``build`` uncached.

Nothing here decides a fate or a budget; every number shown comes from a ``Trace`` or ``ctxcore.window_budget``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any, Optional

import streamlit as st

import ctxcore
from ctxcore import BuildError, Config, InputError, Loaded, Trace, memo
from ctxcore.io.formats import load_file

from .state import current_config
from .text import md_escape, one_line


ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = ROOT / "sample_data"
LARGE_INPUT = 2000      # candidates from which a build shows a spinner


def sample_paths() -> list[Path]:
    return sorted(SAMPLE_DIR.glob("*.json"), key=lambda p: p.name)


def content_key(name: str, data: bytes) -> str:
    return hashlib.sha256(name.encode("utf-8", "replace") + b"\0" + data).hexdigest()


SMALL_FILE = 1024 * 1024  # bytes; files under this (the samples, most uploads) share the bigger cache
SMALL_KEPT, LARGE_KEPT, BUILDS_KEPT = 32, 3, 4  # entries each cache keeps, across every session


# Parsed files are kept as the objects themselves (st.cache_resource), like builds: st.cache_data would pickle
# each one on a miss (a 20 MB upload pickled is tens of MB more, held on top of the object every session
# unpickles from it, and deeply nested metadata cannot be pickled at all, though the CLI reads it). A Loaded is
# frozen and the pages never change one. Large files get a cache of their own with few entries, so that a
# closed session's upload is gone after a few others, and samples are not pushed out by uploads.
@st.cache_resource(show_spinner=False, max_entries=SMALL_KEPT)
def _load_small(key: str, name: str, _data: bytes) -> Loaded:
    return ctxcore.load(_data, name=name)


@st.cache_resource(show_spinner=False, max_entries=LARGE_KEPT)
def _load_large(key: str, name: str, _data: bytes) -> Loaded:
    memo.give_back()  # what uploads before this one left behind, before the next one is read
    return ctxcore.load(_data, name=name)


def _load(name: str, data: bytes) -> Loaded:
    """The file's Loaded (raises InputError); keyed by content, so the same bytes are read once."""
    key = content_key(name, data)
    return (_load_small if len(data) < SMALL_FILE else _load_large)(key, name, data)


def load_bytes(name: str, data: bytes) -> tuple[str, Loaded]:
    """(cache key, Loaded) for a file's bytes; raises InputError."""
    return content_key(name, data), _load(name, data)


@st.cache_resource(show_spinner=False, max_entries=LARGE_KEPT)
def _load_trace_cached(key: str, name: str, trace_id: str, _data: bytes) -> Loaded:
    return load_file(_data, trace_id=trace_id, name=name)


def _load_trace(name: str, data: bytes, trace_id: str) -> Loaded:
    """One trace of a logged file that holds several (raises InputError)."""
    return _load_trace_cached(content_key(name, data), name, trace_id, data)


@st.cache_resource(show_spinner=False, max_entries=BUILDS_KEPT)
def _build(loaded_key: str, config_json: str, query: str, _loaded: Loaded) -> Trace:
    """One build, kept as the object itself (a Trace is frozen, so sharing it is safe).

    Not st.cache_data: that pickles every result on a miss and unpickles it on every hit, which at 10,000
    candidates costs more than the warm rebuild itself (about 55 ms to pickle, 150 ms to unpickle a 12 MB
    trace). A hit here also returns the same object, so per-trace work below (the fates frame) is reused on
    reruns that change nothing the build depends on. Few entries: every kept trace is traversed by each full
    garbage collection (Streamlit runs one after every script run), and a warm rebuild is cheap anyway."""
    return _loaded.build(Config.from_dict(json.loads(config_json)), query)


def build_trace(loaded_key: str, loaded: Loaded, config: Config, query: str) -> Trace:
    """The trace for these settings: the logged one when a trace file is shown as recorded, else a build.

    Raises InputError/BuildError from the engine."""
    if loaded.trace is not None and config == loaded.trace.config and query == loaded.trace.query:
        return loaded.trace
    spin = (st.spinner(f"Building the prompt from {len(loaded.candidates):,} candidates…")
            if len(loaded.candidates) >= LARGE_INPUT else contextlib.nullcontext())
    with spin:
        return _build(loaded_key, json.dumps(config.to_dict(), sort_keys=True), query, loaded)


def safe_build(loaded_key: str, loaded: Loaded, query: str) -> Optional[Trace]:
    """Build with the current controls; every failure becomes one st.error line, never a traceback."""
    try:
        config = current_config()
        return build_trace(loaded_key, loaded, config, query)
    except (InputError, BuildError) as err:
        st.error(md_escape(str(err)), icon=":material/error:")
    except Exception as err:  # noqa: BLE001 - the page must never show a traceback
        st.error(md_escape(f"Unexpected error while building the prompt — {one_line(err)}"), icon=":material/error:")
    return None


def sample_path(name: Any) -> Optional[Path]:
    """The sample file a link or a page names: its stem (``01_duplicates_crowd_out``) or file name."""
    if not isinstance(name, str) or not name.strip():
        return None
    wanted = name.strip()
    for path in sample_paths():
        if wanted in (path.name, path.stem):
            return path
    return None


def load_named_sample(name: str) -> tuple[str, Loaded]:
    """(cache key, Loaded) of a sample by stem or file name, without making it the current input."""
    path = sample_path(name)
    if path is None:
        raise InputError(f"no sample scenario named {name!r}", source="sample_data")
    return load_bytes(path.name, path.read_bytes())
