"""The one shared UI module: state, controls, loading/caching and renderers for the pages.

Pages stay thin: widgets -> ``ctxcore`` -> the renderers here. Nothing in this
module decides a fate or a budget; every number shown comes from a ``Trace`` or
from ``ctxcore.window_budget``.

Safety rule for everything rendered here: text that comes from an input file
(chunk text, ids, reasons, titles, file names, warnings that quote ids) is shown
with ``st.text``/``st.code``/``st.dataframe`` or, when a markdown element is the
only option (``st.error``, ``st.warning``), after :func:`md_escape`. Strings put
into plotly hover text or bar labels go through :func:`html.escape`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import difflib
import html
import json
import logging
import math
import re
import string
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote, urlencode, urlsplit

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ctxcore
from ctxcore import BuildError, Config, InputError, Loaded, Trace
from ctxcore.formats import load_file

ROOT = Path(__file__).resolve().parent
SAMPLE_DIR = ROOT / "sample_data"
STORE = "ctx.controls"  # our own session key: survives page switches (widget keys do not)
LARGE_INPUT = 2000      # candidates from which a build shows a spinner
MAX_PICKER = 5000       # above this many candidates the detail view asks for an id instead of a list

DEFAULTS = Config().to_dict()

# Tokenizer choices: the encodings ctxcore ships, then model names that map to one of them.
MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4", "gpt-3.5-turbo")

FATE_COLORS = {
    "kept": "#2e7d32",
    "exact_duplicate": "#6a1b9a",
    "near_duplicate": "#ab47bc",
    "merged": "#0277bd",
    "below_threshold": "#f9a825",
    "stale": "#795548",
    "not_permitted": "#c62828",
    "over_budget": "#ef6c00",
}
KIND_COLORS = {
    "system": "#37474f",
    "instructions": "#546e7a",
    "schema": "#78909c",
    "tool": "#90a4ae",
    "evidence": "#2e7d32",
    "history": "#5c6bc0",
    "user_document": "#00897b",
    "rule": "#8d6e63",
    "question": "#1565c0",
}
ORDER_HELP = {
    "rank": "best first, in score order",
    "sandwich": "best first, second best last, weakest in the middle",
    "document": "grouped by document, source order inside",
    "original": "the retrieval order as given (shows the failure)",
}
SELECT_HELP = {"score": "greedy by score", "density": "greedy by score per token", "mmr": "maximal marginal relevance"}

# Values a switched-off control falls back to when it is switched on again.
OFF_VALUES = {"budget": 1000, "min_score": 0.5, "near_dup": 0.8, "label_overhead": 10, "max_chunk_tokens": 200,
              "max_passages": 10}
# Slider ranges; a file value outside them is clamped (and the page says so).
SLIDER_RANGES = {"safety": (0.0, 0.9), "history_share": (0.0, 1.0), "near_dup": (0.01, 1.0), "mmr_lambda": (0.0, 1.0)}


# --------------------------------------------------------------------------- text safety

_MD_PUNCT = re.compile("([%s])" % re.escape(string.punctuation))
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(?=(?:\\:\\/\\/|\\@))|(?<=www)(?=\\\.)")
WORD_JOINER = "\u2060"


def md_escape(text: Any) -> str:
    r"""Make markdown show ``text`` literally: backslash-escape every ASCII punctuation mark, and put an
    invisible word joiner into ``://``, ``www.`` and ``@`` so URLs and e-mail addresses are not autolinked.

    >>> print(md_escape("![x](p.png) <b>"))
    \!\[x\]\(p\.png\) \<b\>
    >>> md_escape("http://a.b").startswith("http" + WORD_JOINER)
    True
    """
    return _AUTOLINK.sub(WORD_JOINER, _MD_PUNCT.sub(r"\\\1", str(text)))


def esc(text: Any) -> str:
    """Escape a string for plotly hover/labels (plotly reads a subset of HTML; it decodes &lt; &gt; &amp;)."""
    return html.escape("" if text is None else str(text), quote=False)


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(err).__name__}: {first}"[:400]


def safe_filename(name: str, suffix: str) -> str:
    stem = Path(name or "context").name
    for ext in (".json", ".jsonl", ".csv"):
        if stem.lower().endswith(ext):
            stem = stem[: -len(ext)]
    if stem.lower().endswith(".trace"):
        stem = stem[:-6]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "context"
    return stem[:80] + suffix


# --------------------------------------------------------------------------- settings <-> controls

def controls_from_config(cfg: dict) -> tuple[dict, list[str]]:
    """The UI control values that stand for a complete Config dict, and notes on clamped values."""
    c = Config.from_dict(cfg).to_dict()
    notes = []
    out = {
        "tokenizer": c["model"] or c["encoding"],
        "window": int(c["window"]),
        "max_output": int(c["max_output"]),
        "safety": float(c["safety"]),
        "history_share": float(c["history_share"]),
        "budget_on": c["budget"] is not None,
        "budget": int(c["budget"]) if c["budget"] is not None else OFF_VALUES["budget"],
        "min_score_on": c["min_score"] is not None,
        "min_score": float(c["min_score"]) if c["min_score"] is not None else OFF_VALUES["min_score"],
        "near_dup_on": c["near_dup"] is not None,
        "near_dup": float(c["near_dup"]) if c["near_dup"] is not None else OFF_VALUES["near_dup"],
        "similarity": c["similarity"],
        "select": c["select"],
        "mmr_lambda": float(c["mmr_lambda"]),
        "order": c["order"],
        "label_auto": c["label_overhead"] == "auto",
        "label_overhead": (OFF_VALUES["label_overhead"] if c["label_overhead"] == "auto"
                           else int(c["label_overhead"])),
        "compress": bool(c["compress"]),
        "max_chunk_on": c["max_chunk_tokens"] is not None,
        "max_chunk_tokens": (int(c["max_chunk_tokens"]) if c["max_chunk_tokens"] is not None
                             else OFF_VALUES["max_chunk_tokens"]),
        "merge_adjacent": bool(c["merge_adjacent"]),
        "prefer_newest": bool(c["prefer_newest"]),
        "caller": c["caller"] or "",
        "max_passages_on": c["max_passages"] is not None,
        "max_passages": (int(c["max_passages"]) if c["max_passages"] is not None
                         else OFF_VALUES["max_passages"]),
    }
    for name, (lo, hi) in SLIDER_RANGES.items():
        if not lo <= out[name] <= hi:
            clamped = min(max(out[name], lo), hi)
            notes.append(f"{name} {out[name]} is outside the control's range; using {clamped}")
            out[name] = clamped
    return out, notes


def config_from_controls(v: dict) -> dict:
    """The Config dict the controls stand for (each control sets one Config field)."""
    tok = v["tokenizer"]
    if tok in ctxcore.ENCODINGS:
        encoding, model = tok, None
    else:
        encoding, model = DEFAULTS["encoding"], tok
    return {
        "encoding": encoding,
        "model": model,
        "window": v["window"],
        "max_output": v["max_output"],
        "safety": v["safety"],
        "history_share": v["history_share"],
        "budget": v["budget"] if v["budget_on"] else None,
        "caller": v["caller"] or None,
        "prefer_newest": v["prefer_newest"],
        "near_dup": v["near_dup"] if v["near_dup_on"] else None,
        "similarity": v["similarity"],
        "merge_adjacent": v["merge_adjacent"],
        "min_score": v["min_score"] if v["min_score_on"] else None,
        "select": v["select"],
        "mmr_lambda": v["mmr_lambda"],
        "order": v["order"],
        "label_overhead": "auto" if v["label_auto"] else v["label_overhead"],
        "compress": v["compress"],
        "max_chunk_tokens": v["max_chunk_tokens"] if v["max_chunk_on"] else None,
        "max_passages": v["max_passages"] if v["max_passages_on"] else None,
    }


DEFAULT_CONTROLS, _ = controls_from_config(DEFAULTS)
PAGE_DEFAULTS = {"fixed": 65, "query": "", "fates": []}

# widget key -> store field. Widget keys are per page; Streamlit deletes them when their page is
# not shown, so every widget is re-seeded from the store (see ``bound``).
BINDINGS: dict[str, str] = {}


def favicon():
    """A small prompt-strip icon drawn locally (a material/emoji icon would be fetched from a CDN)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    x = 4
    for width, color in ((10, KIND_COLORS["system"]), (26, KIND_COLORS["evidence"]), (8, KIND_COLORS["rule"]),
                         (12, KIND_COLORS["question"])):
        draw.rectangle([x, 18, x + width - 2, 46], fill=color)
        x += width
    return img


def _leave_pages_directory_mode() -> None:
    """Make sure app.py (and its st.navigation) runs, also when the first visit is a deep link.

    A fresh server treats ``pages/`` as an old-style pages directory until st.navigation has run once, so
    the first session opened on ``/compare?…`` would run that file alone (no app.py: no link reading, no
    navigation titles). Switch that mode off and rerun: app.py then runs and picks the same page.
    (AppTest resets the mode before every run and keeps the page itself; it is left alone there.)"""
    from streamlit import config
    from streamlit.runtime.pages_manager import PagesManager

    # (config.get_option, not st.get_option: AppTest patches the former only)
    if PagesManager.uses_pages_directory and not config.get_option("global.appTest"):
        PagesManager.uses_pages_directory = False
        st.rerun()


def init_state() -> None:
    """Called by app.py on every run: make sure our own keys exist."""
    _leave_pages_directory_mode()
    ss = st.session_state
    if STORE not in ss:
        ss[STORE] = {**DEFAULT_CONTROLS, **PAGE_DEFAULTS}
    for key, default in (("ctx.loaded", None), ("ctx.key", None), ("ctx.sample", None), ("ctx.upload_id", None),
                         ("ctx.load_error", None), ("ctx.notes", []), ("ctx.last_fixed", None)):
        ss.setdefault(key, default)


def store() -> dict:
    init_state()
    return st.session_state[STORE]


def apply_controls(values: dict) -> None:
    """Set control values in the store (call before the bound widgets render, or from a callback)."""
    s = store()
    s.update(values)
    for wkey, field in BINDINGS.items():
        if field in values:
            # Forget the widget's own value (on every page); ``bound`` re-seeds it from the store.
            st.session_state.pop(wkey, None)
    sync_url()


def bound(widget, field: str, wkey: str, *args, **kwargs):
    """Render ``widget`` bound to store[field]: seeded from the store, written back to it."""
    BINDINGS[wkey] = field
    s = store()
    # A widget key used on several pages (the sidebar's) keeps the value of the page it was last shown on,
    # but Streamlit 1.67 gives the widget on another page its default instead: re-seed it from the store.
    where = st.session_state.setdefault("ctx.bound_page", {})
    page = _page_hash()
    if where.get(wkey) != page:
        st.session_state.pop(wkey, None)
        where[wkey] = page
    if wkey not in st.session_state:
        st.session_state[wkey] = s[field]
    value = widget(*args, key=wkey, **kwargs)
    if s.get(field) != value:
        s[field] = value
        sync_url()
    return value


def reset_defaults() -> None:
    apply_controls(dict(DEFAULT_CONTROLS))


def apply_config(cfg: dict, source: str = "settings") -> None:
    """Make a (partial) Config dict the control values: defaults, then ``cfg`` on top."""
    try:
        values, notes = controls_from_config({**DEFAULTS, **(cfg or {})})
    except InputError as err:
        err.source = source
        st.session_state["ctx.load_error"] = str(err)
        return
    apply_controls(values)
    st.session_state["ctx.notes"] = notes


def current_config() -> Config:
    """The Config the controls stand for; raises InputError for impossible combinations."""
    return Config.from_dict(config_from_controls(store()), source="settings")


# --------------------------------------------------------------------------- loading and building

def sample_paths() -> list[Path]:
    return sorted(SAMPLE_DIR.glob("*.json"), key=lambda p: p.name)


def content_key(name: str, data: bytes) -> str:
    return hashlib.sha256(name.encode("utf-8", "replace") + b"\0" + data).hexdigest()


@st.cache_data(show_spinner=False, max_entries=64)
def _load(name: str, data: bytes) -> Loaded:
    return ctxcore.load(data, name=name)


def load_bytes(name: str, data: bytes) -> tuple[str, Loaded]:
    """(cache key, Loaded) for a file's bytes; raises InputError."""
    return content_key(name, data), _load(name, data)


@st.cache_data(show_spinner=False, max_entries=16)
def _sample_title(path: str, mtime: float) -> str:
    """The picker's label for a sample; keyed by the file's mtime so a rerun reads no file."""
    name = Path(path).name
    try:
        scen = ctxcore.load(path).extra.get("scenario")
    except InputError:
        return name
    title = scen.get("title") if isinstance(scen, dict) else None
    return f"{name[:2]} · {title}" if isinstance(title, str) and title.strip() else name


@st.cache_resource(show_spinner=False, max_entries=4)
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


@st.cache_data(show_spinner=False, max_entries=32)
def _pieces(encoding: str, text: str) -> list[str]:
    return ctxcore.get_tokenizer(encoding).pieces(text)


# --------------------------------------------------------------------------- input section (debugger)

def _use(key: str, loaded: Loaded, *, sample: Optional[str]) -> None:
    init_state()  # first: it may rerun the script (see _leave_pages_directory_mode), so before any change
    ss = st.session_state
    ss["ctx.loaded"], ss["ctx.key"], ss["ctx.sample"] = loaded, key, sample
    ss["ctx.load_error"], ss["ctx.notes"] = None, []
    if loaded.config or loaded.format == "trace":
        apply_config(loaded.settings().to_dict(), loaded.source)
    apply_controls({"query": loaded.query})
    pending = ss.pop("ctx.link_pending", None)  # settings from a link that named no scenario (see read_link)
    if pending:
        apply_controls(pending)
    ss.pop("dbg.detail", None)
    sync_url()


def input_section() -> None:
    """Sample picker + uploader; keeps the last good Loaded in session state."""
    init_state()
    ss = st.session_state
    samples = {p.name: p for p in sample_paths()}
    pick_col, up_col = st.columns(2)
    with up_col:  # processed first, so a new upload can clear the picker before it renders
        upload = st.file_uploader("…or upload candidates (JSON, JSONL, CSV) or a saved trace",
                                  type=["json", "jsonl", "csv"], key="dbg.upload",
                                  help="A JSON array or {query, candidates, system, …, config} object, JSONL, "
                                       "CSV with id,text,score columns, or a trace downloaded from this page.")
    if upload is not None and upload.file_id != ss.get("ctx.upload_id"):
        ss["ctx.upload_id"] = upload.file_id
        try:
            key, loaded = load_bytes(upload.name, upload.getvalue())
        except InputError as err:
            ss["ctx.load_error"] = str(err)
        except Exception as err:  # noqa: BLE001
            ss["ctx.load_error"] = f"{upload.name}: could not be read ({one_line(err)})"
        else:
            _use(key, loaded, sample=None)
            ss["dbg.sample"] = None
    elif upload is None and ss.get("ctx.upload_id") is not None:
        ss["ctx.upload_id"] = None
    with pick_col:
        if "dbg.sample" not in ss:
            first = next(iter(samples), None)
            ss["dbg.sample"] = ss["ctx.sample"] if ss.get("ctx.loaded") is not None else first
        if ss["dbg.sample"] not in samples:
            ss["dbg.sample"] = None
        choice = st.selectbox("Sample scenario", list(samples), index=None, key="dbg.sample",
                              placeholder="Pick a sample scenario",
                              format_func=lambda n: _sample_title(str(samples[n]), samples[n].stat().st_mtime))
    if choice is not None and (choice != ss.get("ctx.sample") or ss.get("ctx.loaded") is None):
        try:
            key, loaded = load_bytes(choice, samples[choice].read_bytes())
        except InputError as err:
            ss["ctx.load_error"] = str(err)
        else:
            _use(key, loaded, sample=choice)
    if ss.get("ctx.load_error"):
        st.error(md_escape(ss["ctx.load_error"]), icon=":material/error:")
    for note in ss.get("ctx.notes") or ():
        st.info(md_escape(note))
    if not samples and ss.get("ctx.loaded") is None:
        st.info("No sample scenarios in sample_data/. Upload a candidates file to start.")


@st.cache_data(show_spinner=False, max_entries=16)
def _load_trace(name: str, data: bytes, trace_id: str) -> Loaded:
    return load_file(data, trace_id=trace_id, name=name)


def trace_picker() -> None:
    """When an uploaded log holds several traces, let the user choose the one to look at."""
    ss = st.session_state
    loaded, upload = ss.get("ctx.loaded"), ss.get("dbg.upload")
    logged = (loaded.extra.get("logged") or {}) if loaded is not None else {}
    traces = [t for t in logged.get("traces") or [] if isinstance(t, str)]
    if len(traces) < 2 or upload is None:
        return
    current = logged.get("trace_id")
    choice = st.selectbox(f"This file logged {len(traces)} traces; showing", traces,
                          index=traces.index(current) if current in traces else 0,
                          key=f"dbg.trace.{ss.get('ctx.upload_id')}")
    if choice == current:
        return
    data = upload.getvalue()
    try:
        picked = _load_trace(upload.name, data, choice)
    except InputError as err:
        ss["ctx.load_error"] = str(err)
        return
    _use(content_key(f"{upload.name}#{choice}", data), picked, sample=None)
    st.rerun()


def loaded_input() -> Loaded:
    """The input section, the trace picker and the sidebar; the loaded input (the page stops without one)."""
    input_section()
    trace_picker()
    loaded = st.session_state.get("ctx.loaded")
    sidebar_controls()
    if loaded is None:
        st.stop()
    return loaded


def _scenario(loaded: Loaded) -> dict:
    scen = loaded.extra.get("scenario")
    return scen if isinstance(scen, dict) else {}


def _text(value) -> Optional[str]:
    return value if isinstance(value, str) and value.strip() else None


def scenario_header(loaded: Loaded) -> None:
    """The scenario's title (or the file name) and what is being shown."""
    title = _text(_scenario(loaded).get("title"))
    st.subheader(md_escape(title or loaded.source), anchor=False)
    st.caption(md_escape(f"{loaded.source} · {len(loaded.candidates)} candidates · {loaded.format.upper()}"
                         + (" (a saved trace)" if loaded.trace is not None else "")))


def scenario_story(loaded: Loaded) -> None:
    """What goes wrong and what fixes it, side by side, when the file tells."""
    scen = _scenario(loaded)
    wrong, fix = _text(scen.get("what_goes_wrong")), _text(scen.get("what_fixes_it"))
    if not (wrong or fix):
        return
    cols = st.columns(2) if wrong and fix else [st.container()]
    if wrong:
        cols[0].warning("**What goes wrong:** " + md_escape(wrong), icon=":material/report:")
    if fix:
        cols[-1].success("**What fixes it:** " + md_escape(fix), icon=":material/build:")


def settings_buttons(loaded: Loaded) -> None:
    """One click to the file's own settings or to its naive settings (the failure)."""
    naive = _scenario(loaded).get("naive_config")
    if not (loaded.config or isinstance(naive, dict)):
        return
    mode = _settings_mode(loaded, naive)
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.button("The fix: file's settings" if isinstance(naive, dict) else "File's settings",
                  on_click=apply_config, args=(loaded.settings().to_dict(), loaded.source),
                  help="Set every control to the settings this file carries.", key="dbg.apply_file",
                  type="primary" if mode == "file" else "secondary")
        if isinstance(naive, dict):
            st.button("The failure: naive settings", on_click=apply_config, args=(naive, loaded.source),
                      help="Set the controls to the scenario's naive settings, which show what goes wrong.",
                      key="dbg.apply_naive", type="primary" if mode == "naive" else "secondary")
    st.caption({"file": "Showing the file's own settings" + (" (the fix)." if isinstance(naive, dict) else "."),
                "naive": "Showing the naive settings: this is the failure.",
                "custom": "Showing custom settings."}[mode])


def _settings_mode(loaded: Loaded, naive) -> str:
    try:
        now = current_config()
        if now == loaded.settings():
            return "file"
        if isinstance(naive, dict) and now == Config.from_dict({**DEFAULTS, **naive}):
            return "naive"
    except InputError:
        pass
    return "custom"


def query_input() -> str:
    return bound(st.text_input, "query", "dbg.query", "Query (prefilled from the file; edit to rebuild)",
                 placeholder="The user's question")


# --------------------------------------------------------------------------- sidebar controls

def _tokenizer_options() -> list[str]:
    opts = list(ctxcore.ENCODINGS) + list(MODELS)
    current = store()["tokenizer"]
    if current not in opts:
        opts.append(current)
    return opts


def _tokenizer_label(name: str) -> str:
    if name in ctxcore.ENCODINGS:
        return f"{name} (encoding)"
    try:
        return f"{name} → {ctxcore.encoding_for_model(name)}"
    except KeyError:
        return name


def tokenizer_select(prefix: str, where=None) -> str:
    where = where or st
    return bound(where.selectbox, "tokenizer", f"{prefix}.tokenizer", "Model / encoding",
                 _tokenizer_options(), format_func=_tokenizer_label,
                 help="Token counts use this model's tokenizer (tiktoken encodings, offline).")


def window_controls(prefix: str) -> None:
    bound(st.number_input, "window", f"{prefix}.window", "Context window (tokens)", min_value=1, step=1024)
    bound(st.number_input, "max_output", f"{prefix}.max_output", "Max output (reserved for the answer)",
          min_value=0, step=256)
    bound(st.slider, "safety", f"{prefix}.safety", "Safety margin", min_value=0.0, max_value=0.9, step=0.01,
          help="Fraction taken off after reserving the answer, for tokenizer drift.")
    bound(st.slider, "history_share", f"{prefix}.history_share", "History share", min_value=0.0, max_value=1.0,
          step=0.01, help="Share of what the fixed blocks leave that goes to conversation history.")


def sidebar_controls() -> None:
    """Every control writes one Config field into the store; the page builds from the store."""
    with st.sidebar:
        st.header("Settings", anchor=False)
        tokenizer_select("dbg")

        st.subheader("Evidence budget", anchor=False)
        on = bound(st.toggle, "budget_on", "dbg.budget_on", "Direct docs budget",
                   help="On: evidence gets exactly this many tokens. Off: the window split decides.")
        bound(st.number_input, "budget", "dbg.budget", "Docs budget (tokens)", min_value=0, step=50,
              disabled=not on)
        with st.expander("Window split", expanded=not on):
            window_controls("dbg")

        st.subheader("Filters", anchor=False)
        on = bound(st.toggle, "min_score_on", "dbg.min_score_on", "Minimum score")
        bound(st.number_input, "min_score", "dbg.min_score", "Drop candidates scoring below", step=0.05,
              format="%.3f", disabled=not on)
        on = bound(st.toggle, "near_dup_on", "dbg.near_dup_on", "Near-duplicate removal")
        bound(st.slider, "near_dup", "dbg.near_dup", "Near-duplicate threshold", min_value=0.01, max_value=1.0,
              step=0.01, disabled=not on)
        bound(st.selectbox, "similarity", "dbg.similarity", "Similarity", ["words", "shingles", "cosine"],
              disabled=not on, help="words: word-set Jaccard; shingles: character shingles; cosine: embeddings")
        bound(st.checkbox, "prefer_newest", "dbg.prefer_newest", "Prefer newest version (drop stale)")

        st.subheader("Selection & order", anchor=False)
        sel = bound(st.radio, "select", "dbg.select", "Selection", ["score", "density", "mmr"], horizontal=True,
                    format_func=lambda x: {"score": "score", "density": "density", "mmr": "MMR"}[x],
                    help="; ".join(f"{k}: {v}" for k, v in SELECT_HELP.items()))
        bound(st.slider, "mmr_lambda", "dbg.mmr_lambda", "MMR λ (relevance vs. diversity)", min_value=0.0,
              max_value=1.0, step=0.01, disabled=sel != "mmr")
        on = bound(st.toggle, "max_passages_on", "dbg.max_passages_on", "Limit the number of passages",
                   help="On: at most this many passages are kept, even when the budget has room for more.")
        bound(st.number_input, "max_passages", "dbg.max_passages", "Max passages", min_value=1, step=1,
              disabled=not on)
        bound(st.selectbox, "order", "dbg.order", "Order", ["rank", "sandwich", "document", "original"],
              format_func=lambda x: f"{x} — {ORDER_HELP[x]}")

        with st.expander("Labels, compression, merging"):
            auto = bound(st.toggle, "label_auto", "dbg.label_auto", "Label overhead: measure (auto)")
            bound(st.number_input, "label_overhead", "dbg.label_overhead", "Label overhead per passage (tokens)",
                  min_value=0, step=1, disabled=auto)
            bound(st.checkbox, "compress", "dbg.compress", "Compress (keep query-relevant sentences)")
            on = bound(st.toggle, "max_chunk_on", "dbg.max_chunk_on", "Cap tokens per chunk")
            bound(st.number_input, "max_chunk_tokens", "dbg.max_chunk_tokens", "Max chunk tokens", min_value=1,
                  step=50, disabled=not on)
            bound(st.checkbox, "merge_adjacent", "dbg.merge_adjacent", "Merge adjacent chunks of a document")
            bound(st.text_input, "caller", "dbg.caller", "Caller (for permissions)",
                  help="Candidates whose permissions do not include this caller are not_permitted.")

        st.button("Reset to defaults", on_click=reset_defaults, key="dbg.reset", width="stretch")
    sync_url()


# --------------------------------------------------------------------------- renderers

FATE_BADGES = {"exact_duplicate": "violet", "near_duplicate": "violet", "merged": "blue", "below_threshold": "yellow",
               "stale": "gray", "not_permitted": "red", "over_budget": "orange"}


def metrics(trace: Trace) -> None:
    """Headline numbers: candidates, kept, dropped (with a badge per non-zero fate), tokens vs budgets."""
    counts = trace.fate_counts()
    b = trace.budget
    kept = counts.get("kept", 0)
    row = st.columns([1, 1, 1, 1.5, 1.5])
    row[0].metric("Candidates", len(trace.decisions), border=True)
    row[1].metric("Kept", kept, help=ctxcore.FATE_MEANINGS["kept"], border=True)
    row[2].metric("Dropped", len(trace.decisions) - kept, border=True)
    row[3].metric("Evidence tokens / docs budget", f"{ctxcore.evidence_cost(trace):,} / {b.docs:,}",
                  help="Docs-budget tokens the kept passages use (text plus label lines).", border=True)
    row[4].metric("Prompt tokens / safe input", f"{trace.prompt.tokens:,} / {b.safe_input:,}",
                  help="Counted on the whole final prompt text.", border=True)
    fate_badges(counts)
    note = (f"Tokenizer {trace.tokenizer.encoding}" + ("" if trace.tokenizer.exact else " (approximate counts)")
            + f" · window {b.window:,} · max output {b.max_output:,} · safety {b.safety:.0%} · fixed blocks "
            f"{b.fixed:,} · docs budget {b.docs:,}" + (" (direct)" if b.docs_direct else " (from the split)"))
    st.caption(md_escape(note))
    if trace.abstain:
        st.warning("No passage reached the prompt: the model is told to abstain.", icon=":material/block:")


def warnings_list(trace: Trace, limit: int = 5) -> None:
    ws = list(trace.warnings)
    for w in ws[:limit]:
        st.warning(md_escape(w), icon=":material/warning:")
    if len(ws) > limit:
        with st.expander(f"All {len(ws)} warnings"):
            st.code("\n".join(ws), language=None, wrap_lines=True)


FATES_COLUMNS = ["#", "id", "fate", "stage", "reason", "score", "tokens", "prompt_tokens", "label", "position",
                 "duplicate_of", "superseded_by", "merged_into", "similarity"]


def fates_frame(trace: Trace) -> pd.DataFrame:
    """One row per candidate, in input order: its fate, the stage and reason, and the numbers that decided it.

    Built column by column (a dict per row costs several times more at 10,000 candidates) and remembered for
    the last trace shown, so a rerun that does not change the build (a row click, a toggle) reuses it.
    Callers must not modify the returned frame."""
    memo = st.session_state.get("ctx.fates_memo")
    if memo is not None and memo[0] is trace:
        return memo[1]
    cands = {c.id: c for c in trace.candidates}
    ds = trace.decisions
    cs = [cands.get(d.id) for d in ds]
    df = pd.DataFrame({  # (no rows: every column object, as pandas makes it from an empty list of rows)
        "#": range(1, len(ds) + 1),
        "id": [d.id for d in ds],
        "fate": [d.fate for d in ds],
        "stage": [d.stage for d in ds],
        "reason": [d.reason for d in ds],
        "score": [c.score if c else None for c in cs],
        "tokens": [c.tokens if c else None for c in cs],
        "prompt_tokens": [d.tokens for d in ds],
        "label": [d.label for d in ds],
        "position": [d.position for d in ds],
        "duplicate_of": [d.duplicate_of for d in ds],
        "superseded_by": [d.superseded_by for d in ds],
        "merged_into": [d.merged_into for d in ds],
        "similarity": [d.similarity for d in ds],
    } if ds else {}, columns=FATES_COLUMNS)
    for name in ("tokens", "prompt_tokens", "position"):
        df[name] = df[name].astype("Int64")
    st.session_state["ctx.fates_memo"] = (trace, df)
    return df


def _fate_style(value: str) -> str:
    color = FATE_COLORS.get(value)
    return f"color: {color}; font-weight: 600" if color else ""


def _select_row() -> None:
    """Clicking a row of the fates table shows that candidate in the detail view."""
    ss = st.session_state
    selection = (ss.get("dbg.table") or {}).get("selection") or {}
    rows = selection.get("rows") or []
    ids = ss.get("ctx.table_ids") or []
    if rows and rows[0] < len(ids):
        ss["dbg.detail"] = ids[rows[0]]


def fates_table(trace: Trace) -> pd.DataFrame:
    """The fates table with a fate filter; returns the shown frame."""
    df = fates_frame(trace)
    counts = trace.fate_counts()
    present = [f for f in ctxcore.FATES if counts.get(f)]
    chosen = bound(st.multiselect, "fates", "dbg.fates", "Filter by fate", list(ctxcore.FATES),
                   format_func=lambda f: f"{f} ({counts.get(f, 0)})", placeholder="All fates",
                   help="; ".join(f"{f}: {ctxcore.FATE_MEANINGS[f]}" for f in present))
    shown = (df[df["fate"].isin(chosen)] if chosen else df).reset_index(drop=True)
    st.session_state["ctx.table_ids"] = shown["id"].tolist()
    scores = pd.to_numeric(df["score"], errors="coerce").dropna()
    lo = min(0.0, float(scores.min())) if len(scores) else 0.0
    hi = max(1.0, float(scores.max())) if len(scores) else 1.0
    column_config = {
        "#": st.column_config.NumberColumn("#", help="input order", width="small"),
        "id": st.column_config.TextColumn("id", width="medium"),
        "fate": st.column_config.TextColumn("fate", help="; ".join(f"{k}: {v}" for k, v in
                                                                   ctxcore.FATE_MEANINGS.items())),
        "stage": st.column_config.TextColumn("stage", help="the stage that decided it"),
        "reason": st.column_config.TextColumn("reason", width="large"),
        "score": st.column_config.ProgressColumn("score", min_value=lo, max_value=hi, format="%.3f"),
        "tokens": st.column_config.NumberColumn("tokens", help="tokens of the text as read"),
        "prompt_tokens": st.column_config.NumberColumn("in prompt", help="tokens as it enters the prompt "
                                                                         "(after compression)"),
        "label": st.column_config.TextColumn("label", width="small"),
        "position": st.column_config.NumberColumn("position", help="1-based place among the passages",
                                                  width="small"),
        "duplicate_of": st.column_config.TextColumn("duplicate of"),
        "superseded_by": st.column_config.TextColumn("superseded by"),
        "merged_into": st.column_config.TextColumn("merged into"),
        "similarity": st.column_config.NumberColumn("similarity", format="%.3f"),
    }
    data = shown.style.map(_fate_style, subset=["fate"]) if len(shown) <= MAX_PICKER else shown
    optional = ("duplicate_of", "superseded_by", "merged_into", "similarity", "prompt_tokens")
    order = ["#", "id", "fate", "score", "tokens", "label", "position", "stage", "reason"]
    order += [c for c in optional if df[c].notna().any()]  # relation columns only when this trace uses them
    st.dataframe(data, column_config=column_config, column_order=order, hide_index=True, width="stretch",
                 height=min(38 + 35 * max(len(shown), 1), 420), on_select=_select_row,
                 selection_mode="single-row", key="dbg.table")
    st.caption(f"{len(shown)} of {len(df)} candidates shown · click a row to see it below")
    return shown


def detail_view(trace: Trace, shown: pd.DataFrame) -> None:
    """One candidate: its text (as text), where it went, and the full decision as JSON."""
    ids = shown["id"].tolist() if len(shown) else [d.id for d in trace.decisions]
    ss = st.session_state
    if len(ids) > MAX_PICKER:
        cid = st.text_input("Candidate id", key="dbg.detail_id", placeholder="type an id from the table")
        if not cid:
            return
    else:
        if ss.get("dbg.detail") not in ids:
            kept = [d.id for d in trace.kept() if d.id in ids]
            ss["dbg.detail"] = kept[0] if kept else (ids[0] if ids else None)
        fates = {d.id: d.fate for d in trace.decisions}
        cid = st.selectbox("Candidate", ids, key="dbg.detail",
                           format_func=lambda i: f"{i}  —  {fates.get(i, '?')}")
    try:
        d = trace.decision(cid)
    except KeyError:
        st.error(md_escape(f"No candidate with id {cid!r}"))
        return
    cand = next((c for c in trace.candidates if c.id == cid), None)
    left, right = st.columns([3, 2])
    with left:
        st.text(f"Fate: {d.fate} · decided by stage: {d.stage}")  # a saved trace may carry any strings
        st.text(d.reason)
        st.caption("Chunk text as read (shown as plain text)")
        st.code(cand.text if cand else "", language=None, wrap_lines=True)
        if d.text is not None:
            st.caption("Passage text as it enters the prompt (compressed or merged)")
            st.code(d.text, language=None, wrap_lines=True)
    with right:
        decision_tab, fields_tab = st.tabs(["Decision (JSON)", "Candidate fields"])
        decision_tab.code(json.dumps(dataclasses.asdict(d), ensure_ascii=False, indent=2), language="json",
                          wrap_lines=True)
        if cand is not None:
            meta = {k: v for k, v in dataclasses.asdict(cand).items()
                    if k not in ("text",) and v not in (None, {}, (), False)}
            if "embedding" in meta:
                meta["embedding"] = f"{len(cand.embedding)} numbers"
            fields_tab.code(json.dumps(meta, ensure_ascii=False, indent=2, default=str), language="json",
                            wrap_lines=True)


def _block_text(b, cands: dict, kept: dict) -> str:
    if b.id is None:
        return f"<b>{esc(b.kind)}</b><br>tokens {b.tokens:,} ({b.start_token:,}–{b.end_token:,})"
    c, d = cands.get(b.id), kept.get(b.id)
    score = "unscored" if c is None or c.score is None else f"{c.score:.3f}"
    return (f"<b>{esc(b.label)}</b> · {esc(b.kind)}<br>id {esc(b.id)}<br>score {score}<br>"
            f"tokens {b.tokens:,} ({b.start_token:,}–{b.end_token:,})<br>"
            f"position {esc(d.position if d else '')}")


def prompt_map(trace: Trace, full_scale: bool = False) -> go.Figure:
    """The prompt as one horizontal strip: a segment per block, as wide as its tokens.

    The axis ends just past the prompt and the docs-budget line; ``full_scale`` extends it to the safe input."""
    cands = {c.id: c for c in trace.candidates}
    kept = {d.id: d for d in trace.kept()}
    fig = go.Figure()
    by_kind: dict[str, list] = {}
    for b in trace.blocks:
        by_kind.setdefault(b.kind, []).append(b)
    for kind, blocks in by_kind.items():
        base_color = KIND_COLORS.get(kind, "#9e9e9e")
        fig.add_trace(go.Bar(
            y=["prompt"] * len(blocks), x=[max(b.tokens, 0) for b in blocks], base=[b.start_token for b in blocks],
            orientation="h", name=esc(kind), legendgroup=kind,
            marker=dict(color=base_color, opacity=1.0 if kind != "evidence" else None,
                        line=dict(color="white", width=1.5)),
            marker_opacity=[1.0 if (b.id is not None or kind != "evidence") else 0.4 for b in blocks],
            text=[esc(b.label) if b.label else "" for b in blocks], textposition="inside",
            insidetextanchor="middle", textfont=dict(color="white"),
            hovertext=[_block_text(b, cands, kept) for b in blocks], hoverinfo="text",
        ))
    b = trace.budget
    # (x, label, line style, label height above the strip) — two labels never collide
    lines = [(b.fixed + b.docs, "fixed + docs budget", dict(color="#ef6c00", dash="dash", width=2), 2),
             (b.safe_input, "safe input", dict(color="#c62828", width=2), 18)]
    right = max(trace.prompt.tokens, 1) * 1.08
    for x, *_ in lines:  # widen the axis for a line only when the prompt stays readable
        if full_scale or x <= right * 1.6:
            right = max(right, x * 1.04)
    off = []
    for x, name, style, lift in lines:
        if x <= right:  # the line, labelled just above the strip and ending at the line
            fig.add_vline(x=x, line=style)
            fig.add_annotation(x=x, y=1, xref="x", yref="paper", xanchor="right" if x > right / 2 else "left",
                               yanchor="bottom", text=f"{name} {x:,}", showarrow=False,
                               font=dict(color=style["color"]), yshift=lift)
        else:
            off.append(f"{name} {x:,}")
    if off:
        fig.add_annotation(x=1, y=-0.45, xref="paper", yref="paper", xanchor="right", yanchor="middle",
                           text=" · ".join(off) + " → off the chart", showarrow=False, font=dict(color="#c62828"))
    fig.update_layout(barmode="overlay", height=240, margin=dict(l=10, r=10, t=54, b=30),
                      xaxis=dict(title="token position in the prompt", range=[0, right]),
                      yaxis=dict(visible=False), legend=dict(orientation="h", y=-0.45),
                      hoverlabel=dict(align="left"), bargap=0.2)
    return fig


def position_chart(trace: Trace, highlight: Optional[str] = None, note: str = "") -> go.Figure:
    """Kept passages: place in the prompt (x) against score (y); ``highlight`` rings one passage (by id)."""
    kept = trace.kept()
    cands = {c.id: c for c in trace.candidates}
    xs = [d.position for d in kept]
    ys = [cands[d.id].score if d.id in cands else None for d in kept]
    fig = go.Figure()
    k = len(kept)
    if k >= 3:
        fig.add_vrect(x0=1.5, x1=k - 0.5, fillcolor="#ffe0b2", opacity=0.45, line_width=0, layer="below",
                      annotation_text="middle: read least reliably", annotation_position="top left")
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers+text", text=[esc(d.label) for d in kept], textposition="top center",
        marker=dict(size=[10 + min((d.tokens or 0) / 20, 20) for d in kept], color=[y or 0 for y in ys],
                    colorscale=[[0, "#b0bec5"], [1, "#0d47a1"]], showscale=False,
                    line=dict(color="white", width=1)),
        hovertext=[f"<b>{esc(d.label)}</b><br>id {esc(d.id)}<br>position {d.position}<br>"
                   f"score {'unscored' if y is None else f'{y:.3f}'}<br>tokens {d.tokens}"
                   for d, y in zip(kept, ys)],
        hoverinfo="text", name="kept"))
    mark = [(x, y) for d, x, y in zip(kept, xs, ys) if d.id == highlight and y is not None]
    if mark:
        x, y = mark[0]
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", hoverinfo="skip", name="highlight",
                                 marker=dict(size=34, symbol="circle-open", color="#c62828", line=dict(width=3))))
        if note:
            fig.add_annotation(x=x, y=y, text=esc(note), showarrow=True, arrowhead=2, ax=0, ay=46,
                               font=dict(color="#c62828"), arrowcolor="#c62828")
    known = [y for y in ys if y is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 1.0)
    pad = max(hi - lo, 0.1) * 0.2
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=30, b=30), showlegend=False,
                      xaxis=dict(title="position in the prompt (1 = first passage)", dtick=1,
                                 range=[0.5, max(k, 1) + 0.5]),
                      yaxis=dict(title="score", range=[lo - pad, hi + pad]))
    return fig


def token_bars(trace: Trace) -> None:
    safe = max(trace.budget.safe_input, 1)
    rows = [{"#": i, "kind": b.kind, "label": b.label, "id": b.id, "tokens": b.tokens,
             "share": b.tokens / safe} for i, b in enumerate(trace.blocks, 1)]
    df = pd.DataFrame(rows, columns=["#", "kind", "label", "id", "tokens", "share"])
    st.dataframe(df, hide_index=True, width="stretch", height=min(38 + 35 * max(len(df), 1), 360),
                 column_config={
                     "#": st.column_config.NumberColumn("#", width="small"),
                     "tokens": st.column_config.ProgressColumn("tokens", min_value=0,
                                                               max_value=max([1, *df["tokens"]]), format="%d"),
                     "share": st.column_config.ProgressColumn("share of safe input", min_value=0.0,
                                                              max_value=1.0, format="percent"),
                 })


def _block_name(trace: Trace, i: int) -> str:
    b = trace.blocks[i]
    extra = " · ".join(x for x in (b.label, b.id) if x)
    return f"{i + 1} · {b.kind}" + (f" · {extra}" if extra else "") + f" ({b.tokens} tokens)"


def token_boundaries(trace: Trace) -> None:
    if not trace.blocks:
        return
    show = st.toggle("Show token boundaries of a block", key="dbg.show_pieces")
    if not show:
        return
    idx = st.selectbox("Block", list(range(len(trace.blocks))), key="dbg.piece_block",
                       format_func=lambda i: _block_name(trace, i))
    b = trace.blocks[idx]
    pieces = _pieces(trace.tokenizer.encoding, trace.prompt.text)[b.start_token:b.end_token]
    st.caption(f"{len(pieces)} tokens; each boundary is marked with │ and line breaks with ↵")
    st.code("│".join(p.replace("\n", "↵\n") for p in pieces), language=None, wrap_lines=True)


def prompt_view(trace: Trace) -> None:
    st.code(trace.prompt.text, language=None, wrap_lines=True, height=420)


def download_files(trace: Trace, loaded: Loaded) -> list[tuple]:
    """(label, data, file name, mime, key, help) of the debugger's downloads.

    The trace JSON is a callable: Streamlit runs it when the button is clicked, not on every script run (at
    10,000 candidates it is 13 MB and about 0.2 s of serialisation). The prompt and the settings are small."""
    return [
        ("Trace JSON", trace.to_json, safe_filename(loaded.source, ".trace.json"), "application/json",
         "dbg.dl_trace", "Upload it again to get this same view; the CLI can replay it."),
        ("Prompt text", trace.prompt.text, safe_filename(loaded.source, ".prompt.txt"), "text/plain",
         "dbg.dl_prompt", None),
        ("Settings JSON", json.dumps(trace.config.to_dict(), indent=2),
         safe_filename(loaded.source, ".settings.json"), "application/json", "dbg.dl_settings",
         "Every setting of this build, as a JSON object."),
    ]


def downloads(trace: Trace, loaded: Loaded) -> None:
    """Trace JSON (re-uploading it gives this same view), the prompt text, and the settings."""
    files = download_files(trace, loaded)
    for col, (label, data, name, mime, key, help_text) in zip(st.columns(len(files)), files):
        col.download_button(label, data, file_name=name, mime=mime, key=key, on_click="ignore",
                            icon=":material/download:", help=help_text, width="stretch")


# --------------------------------------------------------------------------- budget page

def budget_waterfall(b) -> go.Figure:
    margin = (b.window - b.max_output) - b.safe_input
    labels = ["window", "answer (max output)", "safety margin", "safe input", "fixed blocks", "history",
              "docs budget"]
    values = [b.window, -b.max_output, -margin, b.safe_input, -b.fixed, -b.history, b.docs]
    measures = ["absolute", "relative", "relative", "total", "relative", "relative", "total"]
    fig = go.Figure(go.Waterfall(
        x=labels, y=values, measure=measures, text=[f"{abs(v):,}" for v in values], textposition="outside",
        connector=dict(line=dict(color="#b0bec5")),
        decreasing=dict(marker=dict(color="#ef6c00")), increasing=dict(marker=dict(color="#1565c0")),
        totals=dict(marker=dict(color="#2e7d32")),
    ))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=20, b=10), yaxis=dict(title="tokens"),
                      showlegend=False)
    return fig


# --------------------------------------------------------------------------- samples outside the debugger

def sample_path(name: Any) -> Optional[Path]:
    """The sample file a link or a page names: its stem (``01_duplicates_crowd_out``) or file name."""
    if not isinstance(name, str) or not name.strip():
        return None
    wanted = name.strip()
    for path in sample_paths():
        if wanted in (path.name, path.stem):
            return path
    return None


def use_sample(path: Path) -> bool:
    """Load a sample scenario as the current input (as the debugger's picker does); False on failure."""
    try:
        key, loaded = load_bytes(path.name, path.read_bytes())
    except InputError as err:
        st.session_state["ctx.load_error"] = str(err)
        return False
    _use(key, loaded, sample=path.name)
    return True


def ensure_loaded() -> Optional[Loaded]:
    """The current input; when nothing is loaded yet, the first sample scenario (as on the debugger)."""
    init_state()
    ss = st.session_state
    if ss.get("ctx.loaded") is None:
        paths = sample_paths()
        if paths:
            use_sample(paths[0])
    return ss.get("ctx.loaded")


def load_named_sample(name: str) -> tuple[str, Loaded]:
    """(cache key, Loaded) of a sample by stem or file name, without making it the current input."""
    path = sample_path(name)
    if path is None:
        raise InputError(f"no sample scenario named {name!r}", source="sample_data")
    return load_bytes(path.name, path.read_bytes())


def scenario_info(loaded: Loaded) -> dict:
    """The scenario block of a sample file (title, what_goes_wrong, what_fixes_it, naive_config, expect)."""
    return _scenario(loaded)


# --------------------------------------------------------------------------- shareable links
# The scenario and every setting travel in the URL's query string: read once when a session opens
# (read_link), rewritten whenever something changes (sync_url). The scheme is in link_params' docstring.

LINK_PAGE_KEYS = {"step", "lv", "a", "b"}
MAX_TOKENS = 10_000_000


@dataclasses.dataclass(frozen=True)
class LinkParam:
    """One link parameter: the store field it sets, how to read and write it, and its valid range."""

    key: str
    field: str                      # store field holding the value
    kind: str                       # int | float | bool | choice | tokenizer | text | list
    config: Optional[str] = None    # the Config field it feeds (to name a parameter in a settings error)
    lo: Optional[float] = None
    hi: Optional[float] = None
    options: tuple = ()
    switch: Optional[str] = None    # store field of the on/off toggle that goes with the value
    word: str = "off"               # the word standing for the toggle's state ``word_state``
    word_state: bool = False

    def encode(self, values: dict) -> str:
        if self.switch and bool(values.get(self.switch)) == self.word_state:
            return self.word
        v = values.get(self.field)
        if self.kind == "bool":
            return "1" if v else "0"
        if self.kind == "float":
            text = repr(float(v))
            return text[:-2] if text.endswith(".0") else text
        if self.kind == "int":
            return str(int(v))
        if self.kind == "list":
            return ",".join(v or [])
        return "" if v is None else str(v)

    def decode(self, text: str) -> dict:
        """Store updates for ``text``; ValueError (saying what is allowed) when it is not valid."""
        text = str(text).strip()
        if self.switch and text.lower() == self.word:
            return {self.switch: self.word_state}
        value = self._value(text)
        return {self.switch: not self.word_state, self.field: value} if self.switch else {self.field: value}

    def _allowed(self) -> str:
        prefix = f"'{self.word}' or " if self.switch else ""
        if self.kind == "int":
            return f"{prefix}a whole number from {self.lo:,.0f} to {self.hi:,.0f}"
        if self.kind == "float":
            return f"{prefix}a number from {self.lo:g} to {self.hi:g}"
        if self.kind == "bool":
            return "1 or 0"
        if self.kind in ("choice", "list"):
            return ("one of " if self.kind == "choice" else "a comma-separated list of ") + ", ".join(self.options)
        if self.kind == "tokenizer":
            return "an encoding (" + ", ".join(ctxcore.ENCODINGS) + ") or a known model name"
        return f"text of at most {self.hi:,.0f} characters"

    def _value(self, text: str):
        bad = ValueError(f"must be {self._allowed()}")
        if self.kind == "int":
            if not re.fullmatch(r"[+-]?\d{1,12}", text):
                raise bad
            value = int(text)
        elif self.kind == "float":
            try:
                value = float(text)
            except ValueError:
                raise bad from None
            if not math.isfinite(value):
                raise bad
        elif self.kind == "bool":
            low = text.lower()
            if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise bad
            return low in ("1", "true", "yes", "on")
        elif self.kind == "choice":
            if text not in self.options:
                raise bad
            return text
        elif self.kind == "list":
            items = [t.strip() for t in text.split(",") if t.strip()]
            if any(t not in self.options for t in items):
                raise bad
            return items
        elif self.kind == "tokenizer":
            if text not in ctxcore.ENCODINGS:
                try:
                    ctxcore.encoding_for_model(text)
                except KeyError:
                    raise bad from None
            return text
        else:  # text
            if len(text) > self.hi:
                raise bad
            return text
        if not self.lo <= value <= self.hi:
            raise bad
        return value


LINK_PARAMS: tuple[LinkParam, ...] = (
    LinkParam("tok", "tokenizer", "tokenizer", "encoding"),
    LinkParam("win", "window", "int", "window", 1, MAX_TOKENS),
    LinkParam("out", "max_output", "int", "max_output", 0, MAX_TOKENS),
    LinkParam("safety", "safety", "float", "safety", *SLIDER_RANGES["safety"]),
    LinkParam("hist", "history_share", "float", "history_share", *SLIDER_RANGES["history_share"]),
    LinkParam("budget", "budget", "int", "budget", 0, MAX_TOKENS, switch="budget_on"),
    LinkParam("min", "min_score", "float", "min_score", -1e9, 1e9, switch="min_score_on"),
    LinkParam("nd", "near_dup", "float", "near_dup", *SLIDER_RANGES["near_dup"], switch="near_dup_on"),
    LinkParam("sim", "similarity", "choice", "similarity", options=("words", "shingles", "cosine")),
    LinkParam("newest", "prefer_newest", "bool", "prefer_newest"),
    LinkParam("sel", "select", "choice", "select", options=tuple(SELECT_HELP)),
    LinkParam("lam", "mmr_lambda", "float", "mmr_lambda", *SLIDER_RANGES["mmr_lambda"]),
    LinkParam("order", "order", "choice", "order", options=tuple(ORDER_HELP)),
    LinkParam("maxp", "max_passages", "int", "max_passages", 1, 100_000, switch="max_passages_on"),
    LinkParam("label", "label_overhead", "int", "label_overhead", 0, 100_000, switch="label_auto", word="auto",
              word_state=True),
    LinkParam("comp", "compress", "bool", "compress"),
    LinkParam("cap", "max_chunk_tokens", "int", "max_chunk_tokens", 1, MAX_TOKENS, switch="max_chunk_on"),
    LinkParam("merge", "merge_adjacent", "bool", "merge_adjacent"),
    LinkParam("caller", "caller", "text", "caller", hi=200),
    LinkParam("fixed", "fixed", "int", None, 0, MAX_TOKENS),
    LinkParam("q", "query", "text", None, hi=4000),
    LinkParam("fates", "fates", "list", None, options=tuple(ctxcore.FATES)),
)
LINK_BY_KEY = {p.key: p for p in LINK_PARAMS}


def _link_base() -> tuple[dict, Optional[str]]:
    """The values a link is written against, and the scenario stem (None for an upload or nothing loaded)."""
    ss = st.session_state
    loaded, sample = ss.get("ctx.loaded"), ss.get("ctx.sample")
    base = {**DEFAULT_CONTROLS, **PAGE_DEFAULTS}
    if loaded is None or not sample:
        return base, None
    try:
        file_controls, _ = controls_from_config({**DEFAULTS, **loaded.settings().to_dict()})
    except InputError:
        file_controls = {}
    return {**base, **file_controls, "query": loaded.query}, Path(sample).stem


def link_params() -> dict[str, str]:
    """The query parameters that reproduce the current view: the scenario, the settings that differ from the
    starting point, and the shown page's own parameters.

    The keys of ``st.query_params`` are short to keep links short. The starting point is the scenario file's
    own settings when ``scenario`` is given, else the engine defaults. Booleans are 1/0; "off" switches an
    optional setting off. A bad value is named in one warning and its default is used.

      scenario  sample file, by stem: 01_duplicates_crowd_out (omitted for an uploaded file: the link then
                carries the settings only)
      tok       tokenizer: an encoding (cl100k_base, o200k_base) or a model name (gpt-4o, …)
      win       context window (tokens)              out     max output reserved for the answer (tokens)
      safety    safety margin, 0–0.9                 hist    history share, 0–1
      budget    direct docs budget (tokens) or off   fixed   fixed-block tokens on the budget page
      min       minimum score, or off                nd      near-duplicate threshold 0.01–1, or off
      sim       similarity: words | shingles | cosine
      newest    prefer the newest version (drop stale), 1/0
      sel       selection: score | density | mmr     lam     MMR λ, 0–1
      order     rank | sandwich | document | original
      maxp      max passages, or off                 label   label overhead per passage (tokens) or auto
      comp      compress, 1/0                        cap     max tokens per chunk, or off
      merge     merge adjacent chunks, 1/0           caller  caller name for permissions
      q         the question, when it was edited (scenario links only)
      fates     the debugger's fate filter, comma-separated
    Page parameters (only on their page): learn: step (1…n), lv (the step's control value);
    compare: a, b (naive | recommended | file | failure | sidebar | defaults).
    """
    s = store()
    base, scenario = _link_base()
    params = {"scenario": scenario} if scenario else {}
    for p in LINK_PARAMS:
        if p.key == "q" and not scenario:
            continue  # an uploaded file's question travels with the file, not the link
        value = p.encode(s)
        if value != p.encode(base):
            params[p.key] = value
    if st.session_state.get("ctx.page_params_page") == _page_hash():
        params.update(st.session_state.get("ctx.page_params") or {})
    return params


def _page_hash() -> Optional[str]:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else None


def set_page_params(params: dict) -> None:
    """A page's own link parameters (e.g. the learn step): in the link while that page is shown."""
    st.session_state["ctx.page_params"] = {k: str(v) for k, v in params.items() if v is not None}
    st.session_state["ctx.page_params_page"] = _page_hash()
    sync_url()


def link_page_param(key: str) -> Optional[str]:
    """A page parameter the opening link carried; returned once, then forgotten (the page keeps its own state)."""
    return (st.session_state.get("ctx.link_page") or {}).pop(key, None)


def link_warning(problems: list[str]) -> None:
    if problems:
        st.warning(md_escape("This link has " + ("a parameter" if len(problems) == 1 else "parameters")
                             + " that could not be used, so the default is shown instead: " + "; ".join(problems)
                             + "."), icon=":material/link_off:")


def start_run() -> None:
    """Called by app.py at the top of every run: state, and on the session's first run the opening link."""
    init_state()
    ss = st.session_state
    if not ss.get("ctx.link_read"):
        ss["ctx.link_read"] = True
        read_link()


def read_link() -> None:
    """Apply the link the session was opened with: select its scenario, set its settings (defaults for bad ones)."""
    ss = st.session_state
    try:
        raw = {k: st.query_params.get(k) for k in st.query_params}
    except Exception:  # noqa: BLE001 - no query string to read
        raw = {}
    if not raw:
        return
    problems: list[str] = []
    scenario = raw.pop("scenario", None)
    found = False
    if scenario is not None:
        path = sample_path(scenario)
        if path is None:
            names = ", ".join(p.stem for p in sample_paths())
            problems.append(f"scenario={scenario!r} is not a sample scenario (known: {names})")
        else:
            found = use_sample(path)
    ss["ctx.link_page"] = {k: raw.pop(k) for k in list(raw) if k in LINK_PAGE_KEYS}
    unknown = sorted(k for k in raw if k not in LINK_BY_KEY)
    if unknown:
        problems.append("unknown " + ", ".join(f"{k}={raw[k]!r}" for k in unknown) + " (ignored)")
    used: dict[str, dict] = {}
    for key, text in raw.items():
        p = LINK_BY_KEY.get(key)
        if p is None:
            continue
        try:
            used[key] = p.decode(text)
        except ValueError as err:
            problems.append(f"{key}={text!r} {err}")
    # settings that are valid one by one but not together (e.g. win not above out): name them, drop them
    for _ in range(len(used) + 1):
        updates = {k: v for upd in used.values() for k, v in upd.items()}
        try:
            Config.from_dict(config_from_controls({**store(), **updates}), source="link")
            break
        except InputError as err:
            bad = [k for k in used if LINK_BY_KEY[k].config == err.field] or list(used)
            for k in bad:
                problems.append(f"{k}={raw[k]!r}: {err.message}")
                used.pop(k)
    updates = {k: v for upd in used.values() for k, v in upd.items()}
    apply_controls(updates)
    if updates and not found:
        # No scenario: the settings are against the engine defaults and must survive the first load.
        keep = {k: store()[k] for k in DEFAULT_CONTROLS}
        if "query" in updates:
            keep["query"] = updates["query"]
        ss["ctx.link_pending"] = keep
    link_warning(problems)


def sync_url() -> None:
    """Keep the address bar equal to the current view.

    Called whenever the store, the input or a page parameter changes, and by app.py after the page ran (AppTest
    in Streamlit 1.67 re-runs only the page file after the first run, so the calls here are what keep it
    updated there)."""
    params = link_params()
    try:
        if st.query_params.to_dict() != params:
            st.query_params.from_dict(params)
    except Exception:  # noqa: BLE001 - the page already rendered; a URL update must never break it
        pass


def link_text(params: Optional[dict] = None) -> tuple[str, bool]:
    """(the shareable link, whether it is absolute). Relative (``?…``) when the app's URL is unknown."""
    params = link_params() if params is None else params
    query = urlencode(params, quote_via=quote, safe=",")
    try:
        base = st.context.url
    except Exception:  # noqa: BLE001
        base = None
    if base:
        if not urlsplit(base).path:
            base += "/"
        return base + (f"?{query}" if query else ""), True
    return f"?{query}", False


def share_box(where) -> None:
    """The "copy link" affordance: the full link to this view in a copyable code box."""
    try:
        link, absolute = link_text()
    except Exception:  # noqa: BLE001 - never let the share box break a page
        logging.getLogger("ctxui").exception("share link failed")
        return
    ss = st.session_state
    upload = ss.get("ctx.loaded") is not None and not ss.get("ctx.sample")
    with where.expander("Share this view", icon=":material/link:"):
        st.code(link, language=None, wrap_lines=True)
        st.caption("Copy it with the button in the box. It opens this page with the same scenario and settings."
                   if absolute else "Add this to the app's address (its URL is not known here) to open this page "
                   "with the same scenario and settings.")
        if upload:
            st.caption("The input is an uploaded file, which cannot travel in a link: the link carries the "
                       "settings only; upload the same file after opening it.")


# --------------------------------------------------------------------------- comparing two builds

PRESET_LABELS = {
    "naive": "Naive preset",
    "recommended": "Recommended preset",
    "file": "File's settings",
    "failure": "Scenario's failure settings",
    "sidebar": "Current sidebar settings",
    "defaults": "Engine defaults",
}
PRESET_HELP = {
    "naive": "The file's settings with the naive preset on top: no near-dedup, no threshold, no stale filter, "
             "greedy by score, retrieval order, at most 10 passages.",
    "recommended": "The file's settings with the recommended preset on top: near-dedup 0.8, newest versions, "
                   "sandwich order.",
    "file": "The settings the file carries.",
    "failure": "The settings the scenario gives for its failure (its naive_config).",
    "sidebar": "Whatever the sidebar controls are set to now.",
    "defaults": "The engine's defaults, ignoring the file's settings.",
}


def preset_options(loaded: Loaded) -> list[str]:
    opts = ["naive", "recommended", "file", "sidebar", "defaults"]
    if isinstance(_scenario(loaded).get("naive_config"), dict):
        opts.insert(3, "failure")
    return opts


def preset_config(name: str, loaded: Loaded) -> Config:
    """The Config a preset stands for on this input; raises InputError."""
    if name in ctxcore.PRESETS:
        return loaded.settings(**ctxcore.PRESETS[name])
    if name == "file":
        return loaded.settings()
    if name == "failure":
        return Config.from_dict({**DEFAULTS, **_scenario(loaded)["naive_config"]}, source=loaded.source)
    if name == "sidebar":
        return current_config()
    return Config()


def fate_changes(a: Trace, b: Trace) -> pd.DataFrame:
    """Candidates whose fate differs between two builds of the same input, in input order."""
    fb = {d.id: d for d in b.decisions}
    rows = [{"id": d.id, "fate_a": d.fate, "fate_b": fb[d.id].fate, "why_a": d.reason, "why_b": fb[d.id].reason}
            for d in a.decisions if d.id in fb and fb[d.id].fate != d.fate]
    return pd.DataFrame(rows, columns=["id", "fate_a", "fate_b", "why_a", "why_b"])


def moved_passages(a: Trace, b: Trace) -> pd.DataFrame:
    """Passages kept by both builds whose place in the prompt differs."""
    pb = {d.id: d for d in b.kept()}
    rows = [{"id": d.id, "position_a": d.position, "position_b": pb[d.id].position, "label_a": d.label,
             "label_b": pb[d.id].label} for d in a.kept() if d.id in pb and pb[d.id].position != d.position]
    return pd.DataFrame(rows, columns=["id", "position_a", "position_b", "label_a", "label_b"])


def changes_table(df: pd.DataFrame, names: tuple[str, str], key: str) -> None:
    """The fate-changes frame with the two sides' names as column titles."""
    a, b = names
    cfg = {
        "id": st.column_config.TextColumn("id", width="medium"),
        "fate_a": st.column_config.TextColumn(f"fate {a}"),
        "fate_b": st.column_config.TextColumn(f"fate {b}"),
        "why_a": st.column_config.TextColumn(f"why {a}", width="large"),
        "why_b": st.column_config.TextColumn(f"why {b}", width="large"),
    }
    st.dataframe(df.style.map(_fate_style, subset=["fate_a", "fate_b"]), column_config=cfg, hide_index=True,
                 width="stretch", height=min(38 + 35 * max(len(df), 1), 420), key=key)


def moved_table(df: pd.DataFrame, names: tuple[str, str], key: str) -> None:
    a, b = names
    st.dataframe(df, hide_index=True, width="stretch", key=key, column_config={
        "id": st.column_config.TextColumn("id", width="medium"),
        "position_a": st.column_config.NumberColumn(f"position {a}"),
        "position_b": st.column_config.NumberColumn(f"position {b}"),
        "label_a": st.column_config.TextColumn(f"label {a}"),
        "label_b": st.column_config.TextColumn(f"label {b}"),
    })


def totals_frame(traces: dict[str, Trace]) -> pd.DataFrame:
    """Headline numbers of several builds side by side (one column per build) with the change B − A."""
    seen = {f for t in traces.values() for f, n in t.fate_counts().items() if n and f != "kept"}

    def row(t: Trace) -> dict:
        counts = t.fate_counts()
        out = {"kept": counts.get("kept", 0), "dropped": len(t.decisions) - counts.get("kept", 0)}
        out.update({f"· {f}": counts.get(f, 0) for f in ctxcore.FATES if f in seen})
        out.update({"evidence tokens": ctxcore.evidence_cost(t), "docs budget": t.budget.docs,
                    "prompt tokens": t.prompt.tokens, "safe input": t.budget.safe_input})
        return out
    cols = {name: row(t) for name, t in traces.items()}
    df = pd.DataFrame(cols)
    if len(cols) == 2:
        first, second = list(cols)
        df["change"] = df[second] - df[first]
    df.index.name = "number"
    return df.reset_index()


def settings_changes(a: Config, b: Config) -> pd.DataFrame:
    da, db = a.to_dict(), b.to_dict()
    rows = [{"setting": k, "A": json.dumps(da[k]), "B": json.dumps(db[k])} for k in da if da[k] != db[k]]
    return pd.DataFrame(rows, columns=["setting", "A", "B"])


def prompt_diff(a: str, b: str, names: tuple[str, str] = ("A", "B"), context: int = 2) -> str:
    """A unified diff of two prompts, line by line (shown with st.code, never as markup)."""
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), fromfile=f"prompt {names[0]}",
                                 tofile=f"prompt {names[1]}", lineterm="", n=context)
    return "\n".join(lines)


def side_metrics(trace: Trace) -> None:
    """The headline numbers for one side of a comparison (two by two, to fit half a page)."""
    counts = trace.fate_counts()
    kept = counts.get("kept", 0)
    b = trace.budget
    top = st.columns(2)
    top[0].metric("Kept", kept, border=True, help=ctxcore.FATE_MEANINGS["kept"])
    top[1].metric("Dropped", len(trace.decisions) - kept, border=True)
    bottom = st.columns(2)
    bottom[0].metric("Evidence / docs budget", f"{ctxcore.evidence_cost(trace):,} / {b.docs:,}", border=True,
                     help="Docs-budget tokens the kept passages use (text plus label lines), against the docs "
                          "budget.")
    bottom[1].metric("Prompt / safe input", f"{trace.prompt.tokens:,} / {b.safe_input:,}", border=True,
                     help="Tokens of the whole final prompt, against the safe input.")
    fate_badges(counts)
    if trace.abstain:
        st.caption("No passage reached the prompt: the model is told to abstain.")


def fate_badges(counts: dict) -> None:
    dropped = [(f, n) for f, n in counts.items() if f != "kept" and n]
    if dropped:
        with st.container(horizontal=True, gap="small"):
            for fate, n in dropped:
                st.badge(md_escape(f"{fate}: {n}"), color=FATE_BADGES.get(fate, "gray"),
                         help=ctxcore.FATE_MEANINGS.get(fate, ""))
    else:
        st.badge("nothing dropped", color="green")


def fate_style(value: str) -> str:
    """Pandas Styler CSS for a fate cell (its colour)."""
    return _fate_style(value)


def block_pieces(trace: Trace, block_index: int) -> list[str]:
    """The tokens of one block of the prompt, as text pieces."""
    b = trace.blocks[block_index]
    return _pieces(trace.tokenizer.encoding, trace.prompt.text)[b.start_token:b.end_token]


def block_text(trace: Trace, block_index: int) -> str:
    """The exact prompt text of one block (from its token range)."""
    return "".join(block_pieces(trace, block_index))
