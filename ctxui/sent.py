"""The prompt "as sent" for a logged trace: its passages in the order they were sent, each with its fate in
the replay, the logged prompt as a strip, and the imported run's spans (when the format carries them)."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

import ctxcore
from ctxcore import Logged, Trace
from ctxcore.analysis.reach import normalise, reached

from .charts import map_right, sent_map, span_timeline
from .tables import readable_table
from .text import md_escape

SENT_COLUMNS = ["order", "id", "sent", "sent tokens", "replay fate", "replay label", "reason"]


@st.cache_data(show_spinner=False, max_entries=16)
def _count(encoding: str, text: str) -> int:
    return ctxcore.get_tokenizer(encoding).count(text)


def sent_tokens(trace: Trace, logged: Optional[Logged], prompt: str) -> tuple[int, str]:
    """(tokens of the logged prompt, where the number comes from): the log's own count, else counted here."""
    if logged is not None and logged.prompt_tokens:
        return int(logged.prompt_tokens), "as logged"
    return _count(trace.tokenizer.encoding, prompt), f"counted with {trace.tokenizer.encoding}"


def _sent_rows(trace: Trace, prompt: str) -> list[dict]:
    memo = st.session_state.get("ctx.sent_memo")
    if memo is not None and memo[0] is trace and memo[1] == prompt:
        return memo[2]
    decisions = {d.id: d for d in trace.decisions}
    cands = {c.id: c for c in trace.candidates}
    size = max(len(normalise(prompt)), 1)
    rows = []
    for r in reached(trace.candidates, prompt):
        d, c = decisions.get(r.id), cands.get(r.id)
        rows.append({"order": r.order, "id": r.id,
                     "sent": "whole" if r.status == "whole" else f"partly ({r.share:.0%} of its text)"
                     if r.status == "partly" else "not sent",
                     "sent tokens": round((c.tokens or 0) * r.share) if c is not None and r.order else None,
                     "replay fate": d.fate if d else "", "replay label": (d.label or "") if d else "",
                     "reason": d.reason if d else "", "at": (r.offset or 0) / size})
    rows.sort(key=lambda x: (x["order"] is None, x["order"] or 0))
    st.session_state["ctx.sent_memo"] = (trace, prompt, rows)
    return rows


def sent_frame(trace: Trace, prompt: str, only_sent: bool = True) -> pd.DataFrame:
    """The logged prompt's passages in the order sent, with their fate in the replay (blank where none)."""
    rows = [r for r in _sent_rows(trace, prompt) if r["order"] is not None or not only_sent]
    df = pd.DataFrame(rows, columns=SENT_COLUMNS)
    for col in ("order", "sent tokens"):
        df[col] = df[col].astype("Int64")
    return df


def sent_summary(trace: Trace, prompt: str) -> dict:
    rows = _sent_rows(trace, prompt)
    sent = [r for r in rows if r["order"] is not None]
    return {"sent": len(sent), "whole": sum(r["sent"] == "whole" for r in sent),
            "kept in replay": sum(r["replay fate"] == "kept" for r in sent),
            "not sent but kept": sum(r["order"] is None and r["replay fate"] == "kept" for r in rows)}


def sent_table(df: pd.DataFrame, key: str) -> None:
    readable_table(df, key=key, reason="reason", styled=("replay fate",),
                   column_config={"order": st.column_config.NumberColumn("order sent", width="small"),
                                  "sent tokens": st.column_config.NumberColumn("tokens sent", help="about")})


def sent_view(trace: Trace, logged: Logged, prompt: str, key: str = "dbg.sent") -> None:
    """The debugger's "as sent" mode: the numbers, the strip, the passages in logged order, the prompt."""
    tokens, source = sent_tokens(trace, logged, prompt)
    info = sent_summary(trace, prompt)
    row = st.columns(4)
    row[0].metric("Passages sent", info["sent"], border=True, help="Candidates whose text is in the logged prompt")
    row[1].metric("Sent whole", info["whole"], border=True)
    row[2].metric("Kept by the replay", info["kept in replay"], border=True,
                  help="Of the passages sent, how many the replay under the current controls keeps")
    row[3].metric("Logged prompt tokens", f"{tokens:,}", border=True, help=f"The logged prompt's tokens, {source}")
    st.caption(md_escape(f"Model {logged.model or 'not logged'} · prompt tokens {source}"
                         + (f" · {info['not sent but kept']} passage(s) the replay keeps were never sent"
                            if info["not sent but kept"] else "")))
    right = map_right([trace], "safe")
    st.plotly_chart(sent_map(_sent_rows(trace, prompt), tokens, max(right, tokens), trace.budget),
                    width="stretch", key=f"{key}.map")
    st.subheader("What was sent, in the order sent", anchor=False)
    sent_table(sent_frame(trace, prompt), key=f"{key}.table")
    with st.expander("The logged prompt (exact text as sent)"):
        st.code(prompt, language=None, wrap_lines=True, height=360)


def sent_side(trace: Trace, logged: Logged, prompt: str, right: float, key: str) -> int:
    """Compare's "as sent" side: its numbers and its strip on the shared axis; returns the prompt's tokens."""
    tokens, source = sent_tokens(trace, logged, prompt)
    info = sent_summary(trace, prompt)
    top = st.columns(2)
    top[0].metric("Passages sent", info["sent"], border=True)
    top[1].metric("Sent whole", info["whole"], border=True)
    bottom = st.columns(2)
    bottom[0].metric("Kept by the replay", info["kept in replay"], border=True)
    bottom[1].metric("Logged prompt tokens", f"{tokens:,}", border=True, help=f"{source}")
    st.plotly_chart(sent_map(_sent_rows(trace, prompt), tokens, right, trace.budget), width="stretch", key=key)
    return tokens


def sent_changes(trace: Trace, prompt: str) -> pd.DataFrame:
    """Candidates the logged prompt and the replay treat differently: sent but dropped, or kept but not sent."""
    rows = [r for r in _sent_rows(trace, prompt)
            if (r["order"] is not None) != (r["replay fate"] == "kept")]
    return pd.DataFrame(rows, columns=SENT_COLUMNS)


# --------------------------------------------------------------------------- spans

SPAN_COLUMNS = ["span", "kind", "duration (ms)", "model", "prompt tokens", "completion tokens"]


def _tree(spans: list) -> list[dict]:
    """Spans in tree order (a parent before its children, siblings by start), each with its depth."""
    rows = [dict(s) for s in spans if isinstance(s, dict)]
    ids = {r.get("id") for r in rows}
    children: dict = {}
    for r in rows:
        parent = r.get("parent") if r.get("parent") in ids else None
        children.setdefault(parent, []).append(r)
    out: list[dict] = []
    stack = [(r, 0) for r in reversed(sorted(children.get(None, []), key=lambda r: str(r.get("start") or "")))]
    seen = set()
    while stack:
        r, depth = stack.pop()
        if id(r) in seen:
            continue
        seen.add(id(r))
        out.append({**r, "_depth": depth})
        kids = sorted(children.get(r.get("id"), []) if r.get("id") is not None else [],
                      key=lambda k: str(k.get("start") or ""))
        stack += [(k, depth + 1) for k in reversed(kids)]
    return out


def spans_frame(spans: list) -> pd.DataFrame:
    tree = _tree(spans)
    df = pd.DataFrame([{"span": "  " * s["_depth"] + ("└ " if s["_depth"] else "") + str(s.get("name") or s.get("id") or ""),
                        "kind": str(s.get("kind") or ""), "duration (ms)": s.get("duration_ms"),
                        "model": str(s.get("model") or ""), "prompt tokens": s.get("prompt_tokens"),
                        "completion tokens": s.get("completion_tokens")} for s in tree], columns=SPAN_COLUMNS)
    df["duration (ms)"] = pd.to_numeric(df["duration (ms)"], errors="coerce")
    for col in ("prompt tokens", "completion tokens"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    return df


def spans_panel(logged: Optional[Logged], key: str = "dbg.spans") -> None:
    """The imported run's span tree and timeline, or a plain word that the format carries none."""
    spans = list(getattr(logged, "spans", None) or ()) if logged is not None else []
    with st.expander("The imported run: spans and timings", icon=":material/timeline:"):
        if not spans:
            st.caption("This format carries no span timings (or the file logged none), so there is no timeline "
                       "to show.")
            return
        df = spans_frame(spans)
        readable_table(df, key=f"{key}.table", formats={"duration (ms)": "{:,.1f}"}, column_config={
            "span": st.column_config.TextColumn("span", width="large"),
            "duration (ms)": st.column_config.NumberColumn("duration (ms)", format="%.1f")})
        st.plotly_chart(span_timeline(_tree(spans)), width="stretch", key=f"{key}.timeline")


VIEWS = {"replay": "Replay (the current controls)", "sent": "As sent (the logged prompt)"}
RECORDED = "The trace as recorded (the controls equal its settings)"


def view_label(view: str, recorded: bool) -> str:
    """The mode switch's label: while the controls equal a saved trace's settings, the "replay" shows the trace
    as it was recorded, not a rebuild, and says so (as the note under the switch does)."""
    return RECORDED if view == "replay" and recorded else VIEWS[view]


def view_mode(logged_prompt: Optional[str], recorded: bool = False) -> str:
    """The debugger's mode switch, shown only for a logged trace: the replay (or, with ``recorded``, the trace as
    recorded), or the prompt as it was sent."""
    ss = st.session_state
    if not logged_prompt:
        return "replay"
    if ss.get("dbg.view") not in VIEWS:
        ss["dbg.view"] = "replay"
    return st.radio("Show", list(VIEWS), key="dbg.view", horizontal=True,
                    format_func=lambda v: view_label(v, recorded),
                    help="As sent: the logged prompt's passages in the order they were sent, each with its fate "
                         "in the replay.")
