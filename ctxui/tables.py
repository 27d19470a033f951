"""The fates table (one row per candidate) and the detail view of one candidate."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import unicodedata

import pandas as pd
import streamlit as st

import ctxcore
from ctxcore import Trace

from .state import bound
from .text import md_escape, visible, visible_frame
from .theme import _fate_style


MAX_PICKER = 5000       # above this many candidates the detail view asks for an id instead of a list
FATES_COLUMNS = ["#", "id", "fate", "stage", "reason", "score", "tokens", "prompt_tokens", "label", "position",
                 "duplicate_of", "superseded_by", "merged_into", "similarity"]
NO_CANDIDATES = ("This input has no candidates, so there is nothing to keep or drop: the prompt holds the fixed "
                 "blocks and the question, and the model is told to abstain. Upload a file with candidates or "
                 "pick a sample scenario.")
SHOWN_TEXT = ("id", "stage", "reason", "label", "duplicate_of", "superseded_by", "merged_into")
SHOWN_DEPTH = 12        # metadata deeper than this is shown as "…" in the detail view (the trace keeps it)


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
    visible_frame(df, SHOWN_TEXT)  # for display: the ids themselves are read from the trace by row ("#")
    st.session_state["ctx.fates_memo"] = (trace, df)
    return df


def _select_row() -> None:
    """Clicking a row of the fates table shows that candidate in the detail view."""
    ss = st.session_state
    selection = (ss.get("dbg.table") or {}).get("selection") or {}
    rows = selection.get("rows") or []
    ids = ss.get("ctx.table_ids") or []
    if rows and rows[0] < len(ids):
        ss["dbg.detail"] = ids[rows[0]]


def fates_table(trace: Trace) -> pd.DataFrame:
    """The fates table with a fate filter; returns the shown frame. With no candidates, an empty state."""
    df = fates_frame(trace)
    if not len(df):
        st.info(NO_CANDIDATES, icon=":material/inbox:")
        st.session_state["ctx.table_ids"] = []
        return df
    counts = trace.fate_counts()
    present = [f for f in ctxcore.FATES if counts.get(f)]
    chosen = bound(st.multiselect, "fates", "dbg.fates", "Filter by fate", list(ctxcore.FATES),
                   format_func=lambda f: f"{f} ({counts.get(f, 0)})", placeholder="All fates",
                   help="; ".join(f"{f}: {ctxcore.FATE_MEANINGS[f]}" for f in present))
    shown = (df[df["fate"].isin(chosen)] if chosen else df).reset_index(drop=True)
    st.session_state["ctx.table_ids"] = [trace.decisions[i - 1].id for i in shown["#"].tolist()]
    scores = pd.to_numeric(df["score"], errors="coerce").dropna()
    lo = min(0.0, float(scores.min())) if len(scores) else 0.0
    hi = max(1.0, float(scores.max())) if len(scores) else 1.0
    column_config = {
        "#": st.column_config.NumberColumn("#", help="input order", width=48),
        "id": st.column_config.TextColumn("id", width=170),
        "fate": st.column_config.TextColumn("fate", width=130, help="; ".join(f"{k}: {v}" for k, v in
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
    optional = ("duplicate_of", "superseded_by", "merged_into", "similarity", "prompt_tokens")
    order = ["#", "fate", "id", "reason", "score", "tokens", "label", "position", "stage"]  # the fate before the id: whole on a phone
    order += [c for c in optional if df[c].notna().any()]  # relation columns only when this trace uses them
    readable_table(shown, key="dbg.table", reason="reason", column_config=column_config, styled=("fate",),
                   formats={"score": "{:.3f}", "similarity": "{:.3f}"}, column_order=order,
                   on_select=_select_row, selection_mode="single-row")
    st.caption(f"{len(shown)} of {len(df)} candidates shown · click a row to see it below")
    return shown


def detail_view(trace: Trace, shown: pd.DataFrame) -> None:
    """One candidate: its text (as text), where it went, and the full decision as JSON."""
    if not trace.decisions:
        st.caption("No candidate to show: the input has none.")
        return
    ids = [trace.decisions[i - 1].id for i in shown["#"].tolist()] if len(shown) else [d.id for d in trace.decisions]
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
                           format_func=lambda i: f"{visible(i)}  —  {fates.get(i, '?')}")
    try:
        d = trace.decision(cid)
    except KeyError:
        st.error(md_escape(f"No candidate with id {cid!r}"))
        return
    cand = next((c for c in trace.candidates if c.id == cid), None)
    left, right = st.columns([3, 2])
    with left:
        st.text(visible(f"Fate: {d.fate} · decided by stage: {d.stage}"))  # a saved trace may carry any strings
        st.text(visible(d.reason))
        st.caption("Chunk text as read (shown as plain text)")
        st.code(cand.text if cand else "", language=None, wrap_lines=True)
        if d.text is not None:
            st.caption("Passage text as it enters the prompt (compressed or merged)")
            st.code(d.text, language=None, wrap_lines=True)
    with right:
        decision_tab, fields_tab = st.tabs(["Decision (JSON)", "Candidate fields"])
        decision_tab.code(visible(json.dumps(_fields(d), ensure_ascii=False, indent=2, default=str)),
                          language="json", wrap_lines=True)
        if cand is not None:
            meta = {k: v for k, v in _fields(cand).items() if k not in ("text",) and v not in (None, {}, (), False)}
            if "embedding" in meta:
                meta["embedding"] = f"{len(cand.embedding)} numbers"
            fields_tab.code(visible(json.dumps(meta, ensure_ascii=False, indent=2, default=str)), language="json",
                            wrap_lines=True)


def _fields(record) -> dict:
    """A record's fields as JSON-ready values, nested values cut at SHOWN_DEPTH levels (not
    ``dataclasses.asdict``: it recurses once per level, and metadata nested a few hundred deep, which the
    loaders accept, would end the page in a RecursionError)."""
    return {f.name: _shallow(getattr(record, f.name), SHOWN_DEPTH) for f in dataclasses.fields(record)}


def _shallow(value, depth: int):
    if isinstance(value, dict):
        return {str(k): _shallow(v, depth - 1) for k, v in value.items()} if depth > 0 else "…"
    if isinstance(value, (list, tuple)):
        return [_shallow(v, depth - 1) for v in value] if depth > 0 else "…"
    return value


# px of a reason column: fixed so its wrapping is known, and narrow enough that the fates table (#, fate, id,
# reason: 33 + 48 + 130 + 170 + 430 = 811 px) fits the 818 px main column of a 1280 px window with the sidebar
# open, so no reason runs off the table's edge.
REASON_WIDTH = 430
LINE_PX, ROW_PAD_PX = 21, 14
CELL_PAD_PX = 8.5        # the grid draws a cell's text this far in from each side
SLACK_PX = 6             # kerning and rounding: a wrapped line is kept this much shorter than the room it has
# The grid's font, Source Sans at 14 px: each printable ASCII character's width as chromium's canvas measures it
# (CanvasRenderingContext2D.measureText on the running app, 2026-12-02). A character not listed counts as 8.4 px,
# an East Asian wide one as 14 px. Why: the grid wraps a cell's text only in a row tall enough for two lines, and
# in a one-line row it cuts whatever passes the cell's edge; so a row's height is decided from the text's real
# width (a count of characters let an 80-character reason, 460 px, sit cut in a one-line row).
_ASCII_PX = (
    2.800, 4.046, 5.964, 6.958, 6.958, 11.536, 8.526, 3.486, 4.242, 4.242, 5.852, 6.958, 3.486, 4.354, 3.486, 4.900,
    6.958, 6.958, 6.958, 6.958, 6.958, 6.958, 6.958, 6.958, 6.958, 6.958, 3.486, 3.486, 6.958, 6.958, 6.958, 5.950,
    11.858, 7.602, 8.232, 7.994, 8.610, 7.378, 6.916, 8.638, 9.128, 3.682, 6.706, 8.106, 6.804, 10.178, 9.058, 9.296,
    7.924, 9.296, 7.966, 7.476, 7.504, 9.030, 7.210, 11.004, 7.182, 6.664, 7.546, 4.242, 4.900, 4.242, 6.958, 7.000,
    7.588, 7.056, 7.742, 6.384, 7.770, 6.944, 4.088, 7.056, 7.616, 3.444, 3.458, 6.930, 3.570, 11.606, 7.658, 7.588,
    7.770, 7.770, 4.858, 5.866, 4.732, 7.616, 6.538, 10.066, 6.244, 6.538, 5.950, 4.242, 3.374, 4.242, 6.958)
OTHER_PX, WIDE_PX = 8.4, 14.0


def char_px(ch: str) -> float:
    """How wide the grid draws one character (px)."""
    code = ord(ch)
    if 32 <= code < 127:
        return _ASCII_PX[code - 32]
    return WIDE_PX if unicodedata.east_asian_width(ch) in ("W", "F") else OTHER_PX


def text_px(text: str) -> float:
    """How wide the grid draws ``text`` on one line (px).

    >>> round(text_px("over budget"), 1)
    70.6
    """
    return sum(map(char_px, text))


def line_room(width: int = REASON_WIDTH) -> float:
    """The px a wrapped line may take in a ``width``-px column."""
    return width - 2 * CELL_PAD_PX - SLACK_PX


def wrap_px(text: str, room: float) -> list[str]:
    """``text`` wrapped at spaces into lines no wider than ``room`` px (a word wider than a line is cut into
    pieces that fit); its own line breaks are kept.

    >>> wrap_px("the passage limit was reached", 100)
    ['the passage limit', 'was reached']
    """
    lines: list[str] = []
    for para in str(text).split("\n"):
        line, used = "", 0.0
        for word in para.split():
            need = text_px(word)
            while need > room:  # a word wider than a whole line: as much as fits, then the rest
                if line:
                    lines.append(line)
                    line, used = "", 0.0
                cut, width = 0, 0.0
                while cut < len(word) - 1 and width + char_px(word[cut]) <= room:
                    width += char_px(word[cut])
                    cut += 1
                lines.append(word[:max(cut, 1)])
                word = word[max(cut, 1):]
                need = text_px(word)
            gap = char_px(" ") if line else 0.0
            if line and used + gap + need > room:
                lines.append(line)
                line, used, gap = "", 0.0, 0.0
            line, used = (line + " " + word if line else word), used + gap + need
        lines.append(line)
    return lines


@functools.lru_cache(maxsize=20_000)
def wrap_lines(text: str, width: int = REASON_WIDTH) -> int:
    """How many lines ``text`` takes in a ``width``-px column (remembered: every rerun of a page asks again for
    the same reasons)."""
    return len(wrap_px(text, line_room(width)))


def row_height_for(texts, width: int = REASON_WIDTH) -> int | None:
    """A row height (px) that shows the longest of ``texts`` whole, wrapped in a ``width``-px column; None
    when one line is enough."""
    longest = max((wrap_lines(t, width) for t in texts if isinstance(t, str) and t), default=1)
    # Streamlit wraps a cell's text only in rows taller than 4rem (64 px)
    return None if longest <= 1 else max(longest * LINE_PX + ROW_PAD_PX, 66)


def blank_missing(df: pd.DataFrame, formats: dict | None = None) -> pd.DataFrame:
    """The frame as shown: "" for a missing value (st.dataframe draws one as a grey "None"). A numeric column
    with gaps becomes text, each number written with ``formats[col]`` (default: as it is)."""
    out = df.copy()
    formats = formats or {}
    for col in out.columns:
        series = out[col]
        numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
        if not numeric and not pd.api.types.is_datetime64_any_dtype(series):
            out[col] = series.astype(object).map(lambda v: "" if v is None or (isinstance(v, float) and v != v)
                                                 or v is pd.NA else v)
        elif numeric and series.isna().any():
            fmt = formats.get(col, "{}")
            out[col] = [("" if pd.isna(v) else fmt.format(int(v) if float(v).is_integer() and "f" not in fmt
                                                          else v)) for v in series.tolist()]
    return out


def _as_text_config(cfg):
    """A Number/Progress column config for a column that became text (see ``blank_missing``)."""
    if cfg is None:
        return None
    label, help_text = cfg.get("label"), cfg.get("help")
    width = cfg.get("width")
    return st.column_config.TextColumn(label, help=help_text, width=width)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value):
    """A CSV cell a spreadsheet opens as the text it is: text starting like a formula (=, +, -, @, tab, CR) gets
    a leading single quote, as OWASP advises; numbers, and text that is only a number ("-3"), stay as they are.
    Chunk text is data: it must never run as a formula on the machine of whoever opens the download."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def table_csv(df: pd.DataFrame) -> bytes:
    """A table as UTF-8 CSV (with a BOM, so spreadsheets read the encoding), every text cell spreadsheet-safe,
    column names too."""
    safe = df.copy()
    for col in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[col]) and not pd.api.types.is_datetime64_any_dtype(safe[col]):
            safe[col] = safe[col].astype(object).map(spreadsheet_safe)
    safe.columns = [spreadsheet_safe(str(c)) for c in safe.columns]
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8-sig")


def csv_button(df: pd.DataFrame, key: str, columns=None) -> None:
    """Download a table as CSV (spreadsheet-safe; the table toolbar's own export is switched off in
    .streamlit/config.toml, since it writes formulas as they are). Made when clicked, not on every run."""
    st.download_button("Download as CSV", lambda: table_csv(blank_missing(df[list(columns or df.columns)])),
                       file_name=f"{key.replace('.', '-')}.csv",
                       mime="text/csv", key=f"{key}.csv", on_click="ignore", icon=":material/download:",
                       type="tertiary")


def readable_table(df: pd.DataFrame, *, key: str, reason=None, column_config=None,
                   styled: tuple = (), formats: dict | None = None, max_height: int = 520,
                   reason_width: int = REASON_WIDTH, csv: bool = True, **kwargs):
    """st.dataframe with every missing cell blank, its ``reason`` column wrapped to its full text (each row as
    tall as the longest reason needs; a click on a cell also shows it whole), and the fate colour on the
    ``styled`` columns; below it a spreadsheet-safe CSV download (``csv``)."""
    shown = blank_missing(df, formats)
    config = dict(column_config or {})
    for col in df.columns:
        if col in config and pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_numeric_dtype(shown[col]):
            config[col] = _as_text_config(config[col])
    row_height = None
    reasons = [r for r in ((reason,) if isinstance(reason, str) else (reason or ())) if r in df.columns]
    texts = []
    for col in reasons:
        label = (config.get(col) or {}).get("label") or col
        config[col] = st.column_config.TextColumn(label, width=reason_width)
        texts += shown[col].tolist()
    if reasons and len(df) <= MAX_PICKER:
        row_height = row_height_for(texts, reason_width)
    data = shown.style.map(_fate_style, subset=list(styled)) if styled and len(shown) <= MAX_PICKER else shown
    rows = max(len(df), 1)
    height = min(38 + (row_height or 35) * rows + 2, max_height)
    shown_table = st.dataframe(data, column_config=config, hide_index=True, width="stretch", height=height,
                               row_height=row_height, key=key, **kwargs)
    if csv:
        csv_button(df, key, kwargs.get("column_order"))
    return shown_table
