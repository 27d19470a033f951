"""Plotly figures (prompt map, position chart, budget waterfall) and the token bars; labels pass through ``esc``."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ctxcore import Trace

from .tables import readable_table
from .text import esc, visible_frame
from .theme import FATE_COLORS, KIND_COLORS


def _block_text(b, cands: dict, kept: dict) -> str:
    if b.id is None:
        return f"<b>{esc(b.kind)}</b><br>tokens {b.tokens:,} ({b.start_token:,}–{b.end_token:,})"
    c, d = cands.get(b.id), kept.get(b.id)
    score = "unscored" if c is None or c.score is None else f"{c.score:.3f}"
    return (f"<b>{esc(b.label)}</b> · {esc(b.kind)}<br>id {esc(b.id)}<br>score {score}<br>"
            f"tokens {b.tokens:,} ({b.start_token:,}–{b.end_token:,})<br>"
            f"position {esc(d.position if d else '')}")


MAP_SCALES = ("auto", "safe", 500, 1000, 2000, 4000, 8000, 16000, 32000)  # fitted, the safe input, or a zoom
_FIXED = tuple(x for x in MAP_SCALES if isinstance(x, int))


def map_scale_label(option) -> str:
    if option == "auto":
        return "auto: fitted to the prompt"
    return "to the safe input" if option == "safe" else f"fixed: the first {option:,} tokens"


def map_right(traces, scale="auto") -> int:
    """The right end of the prompt map's axis.

    ``safe``: the largest safe input of ``traces`` (so maps of several builds share one axis); a number: a
    fixed zoom; ``auto``: the smallest fixed zoom that holds every prompt with a tenth to spare, so a
    445-token prompt is drawn on 500 (not as a sliver of a 6,809-token axis) and the axis moves only when a
    prompt crosses a step; the safe input when the prompt needs half of it or more.

    >>> from types import SimpleNamespace as NS
    >>> small = NS(budget=NS(safe_input=6809), prompt=NS(tokens=445))
    >>> map_right([small]), map_right([small], "safe"), map_right([small], 2000)
    (500, 6809, 2000)
    >>> map_right([NS(budget=NS(safe_input=6809), prompt=NS(tokens=3600))])
    6809
    """
    if scale not in ("safe", "auto"):
        return max(int(scale), 1)
    safe = max([1, *(t.budget.safe_input for t in traces), *(t.prompt.tokens for t in traces)])
    if scale == "safe":
        return safe
    need = max([1, *(t.prompt.tokens for t in traces)]) * 1.1
    fitted = next((x for x in _FIXED if x >= need), safe)
    return fitted if fitted * 2 <= safe else safe


def map_scale_note(traces, right: int) -> str:
    """One line saying which scale the map uses, so a short axis is never mistaken for the window."""
    safe = max([1, *(t.budget.safe_input for t in traces)])
    longest = max([0, *(t.prompt.tokens for t in traces)])
    if right >= safe:
        return f"Scale: the safe input, {safe:,} tokens; the prompt uses {longest:,}."
    return (f"Scale: the first {right:,} tokens, fitted to the prompt ({longest:,} tokens); the safe input, "
            f"{safe:,}, is off the chart.")


MAP_HEIGHT, MAP_BOTTOM = 300, 100  # px: the strip, its axis title, and a legend of up to three rows below


def _strip_layout(fig: go.Figure, right: float, lines: list, overflow: int) -> None:
    """Budget lines labelled above the strip (never two labels at one height), those past the axis named below."""
    off = []
    for x, name, style, lift in lines:
        if 0 < x <= right:
            fig.add_vline(x=x, line=style)
            fig.add_annotation(x=x, y=1, xref="x", yref="paper", xanchor="right" if x > right / 2 else "left",
                               yanchor="bottom", text=f"{name} {x:,}", showarrow=False,
                               font=dict(color=style["color"]), yshift=lift)
        elif x > right:
            off.append(f"{name} {x:,}")
    if overflow > right:
        off.insert(0, f"the prompt continues to {overflow:,}")
    if off:  # in the strip of the top margin above the budget lines' labels, never over the legend
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="bottom", yshift=35,
                           text=" · ".join(off) + " → off the chart", showarrow=False, font=dict(color="#c62828"))
    # the legend sits in the bottom margin below the axis title (in pixels, not a share of the plot's height, so
    # it never rides up onto the title when the legend wraps in a narrow column); the margin grows to hold it
    fig.update_layout(barmode="overlay", height=MAP_HEIGHT, margin=dict(l=10, r=10, t=54, b=MAP_BOTTOM),
                      xaxis=dict(title=dict(text="token position in the prompt", standoff=6), range=[0, right]),
                      yaxis=dict(visible=False),
                      legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left"),
                      hoverlabel=dict(align="left"), bargap=0.2,
                      uniformtext=dict(minsize=10, mode="hide"))  # a label that does not fit is not drawn


def prompt_map(trace: Trace, full_scale: bool = True, right: Optional[float] = None) -> go.Figure:
    """The prompt as one horizontal strip: a segment per block, as wide as its tokens.

    The axis is stable: it runs to ``right`` (a shared axis or a fixed zoom) or else to the safe input, so
    moving a control never rescales it; ``full_scale=False`` fits it to the prompt instead (the old view)."""
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
            insidetextanchor="middle", textfont=dict(color="white"), constraintext="inside",
            hovertext=[_block_text(b, cands, kept) for b in blocks], hoverinfo="text",
        ))
    b = trace.budget
    lines = [(b.fixed + b.docs, "fixed + docs budget", dict(color="#ef6c00", dash="dash", width=2), 2),
             (b.safe_input, "safe input", dict(color="#c62828", width=2), 18)]
    if right is None:
        right = map_right([trace]) if full_scale else max(trace.prompt.tokens, 1) * 1.08
    _strip_layout(fig, right, lines, trace.prompt.tokens)
    return fig


def sent_map(rows, prompt_tokens: int, right: float, budget=None) -> go.Figure:
    """The logged prompt as a strip: each passage it sent, in the order sent, as wide as its tokens (a part
    sent counts its share); the rest of the prompt (instructions, question) is the grey remainder.

    ``rows``: dicts with label, id, tokens, order, status, fate (the replay's), as ``ctxui.sent_frame`` makes."""
    fig = go.Figure()
    sent = [r for r in rows if r.get("order") is not None]
    widths = [max(int(r["sent tokens"] or 0), 1) for r in sent]
    bases = [min(float(r.get("at") or 0.0), 1.0) * prompt_tokens for r in sent]  # where it starts, by characters
    if sent:
        fig.add_trace(go.Bar(y=["sent"], x=[prompt_tokens], base=[0], orientation="h", name="rest of the prompt",
                             marker=dict(color="#cfd8dc"), hoverinfo="skip"))
        fig.add_trace(go.Bar(
            y=["sent"] * len(sent), x=widths, base=bases, orientation="h", name="passage as sent",
            marker=dict(color=[FATE_COLORS.get(r["replay fate"], "#9e9e9e") for r in sent],
                        line=dict(color="white", width=1.5)),
            text=[f"#{r['order']}" for r in sent], textposition="inside", insidetextanchor="middle",
            textfont=dict(color="white"), constraintext="inside",
            hovertext=[f"<b>sent #{r['order']}</b> · {esc(r['sent'])}<br>id {esc(r['id'])}<br>"
                       f"about {int(r['sent tokens'] or 0):,} tokens<br>replay: {esc(r['replay fate'])}"
                       for r in sent], hoverinfo="text"))
    lines = []
    if budget is not None:
        lines = [(budget.safe_input, "safe input", dict(color="#c62828", width=2), 18)]
    _strip_layout(fig, right, lines, prompt_tokens)
    fig.update_layout(xaxis=dict(title="token position in the logged prompt (passages in the order sent)",
                                 range=[0, right]), showlegend=False)
    return fig




def span_timeline(spans: list) -> go.Figure:
    """The imported run's spans as a timeline: one bar per span (start, duration), children under parents."""
    rows = [s for s in spans if isinstance(s, dict)]
    starts = [_seconds(s.get("start")) for s in rows]
    t0 = min([t for t in starts if t is not None], default=0.0)
    names = [f"{'· ' * int(s.get('_depth', 0))}{s.get('name') or s.get('id') or '?'}" for s in rows]
    fig = go.Figure(go.Bar(
        y=[esc(n) for n in names], x=[max(float(s.get("duration_ms") or 0), 0.5) for s in rows],
        base=[((t - t0) * 1000 if t is not None else 0) for t in starts], orientation="h",
        marker=dict(color=[KIND_COLORS.get({"llm": "question", "retriever": "evidence", "reranker": "rule"}
                                           .get(str(s.get("kind") or "").lower(), ""), "#90a4ae") for s in rows]),
        hovertext=[f"<b>{esc(s.get('name'))}</b> · {esc(s.get('kind'))}<br>{float(s.get('duration_ms') or 0):,.0f} ms"
                   for s in rows], hoverinfo="text"))
    fig.update_layout(height=max(160, 34 * len(rows) + 60), margin=dict(l=10, r=10, t=10, b=30),
                      xaxis=dict(title="ms from the first span"), yaxis=dict(autorange="reversed"),
                      showlegend=False)
    return fig


def _seconds(value) -> Optional[float]:
    """A span start as seconds: a number (seconds, or ms/µs/ns when large) or an ISO-8601 time."""
    if isinstance(value, (int, float)):
        v = float(value)
        for limit, scale in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):  # ns, µs, ms since the epoch
            if v > limit:
                return v / scale
        return v
    if isinstance(value, str) and value.strip():
        try:
            return pd.Timestamp(value).timestamp()
        except (ValueError, TypeError):
            return None
    return None


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


def token_bars(trace: Trace) -> None:
    safe = max(trace.budget.safe_input, 1)
    rows = [{"#": i, "kind": b.kind, "label": b.label, "id": b.id, "tokens": b.tokens,
             "share": b.tokens / safe} for i, b in enumerate(trace.blocks, 1)]
    df = pd.DataFrame(rows, columns=["#", "kind", "label", "id", "tokens", "share"])
    visible_frame(df, ("label", "id"))
    readable_table(df, key="dbg.bars", max_height=360, column_config={
        "#": st.column_config.NumberColumn("#", width="small"),
        "tokens": st.column_config.ProgressColumn("tokens", min_value=0, max_value=max([1, *df["tokens"]]),
                                                  format="%d"),
        "share": st.column_config.ProgressColumn("share of safe input", min_value=0.0, max_value=1.0,
                                                 format="percent"),
    })
