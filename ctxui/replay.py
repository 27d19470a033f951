"""The Replay page's pieces: the log and the new settings it is replayed under, the run with a
progress bar, the aggregate as charts and tables, and opening one run in the Debugger or Compare.

Every number comes from :func:`ctxcore.replay.replay`; nothing here decides a fate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from typing import Iterator, Optional

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ctxcore import Config, InputError, Loaded
from ctxcore.io.reading import parse_json
from ctxcore.replay import replay
from ctxcore.replay.read import items, load_item

from .inputs import _use
from .loading import SAMPLE_DIR, content_key
from .state import apply_config, current_config
from .theme import FATE_COLORS

SAMPLE_LOG = SAMPLE_DIR / "replay_log.jsonl"
RESULT = "rp.result"  # session key: the last replay (report, compact rows, the log, the settings)
_UPLOADS = os.path.join(tempfile.gettempdir(), "ctxcore-replay-uploads")
STALE_UPLOAD_SECONDS = 3600  # a run folder older than this was left by a process that ended mid-replay


def sweep_uploads(folder: Optional[str] = None, now: Optional[float] = None) -> int:
    """Remove run folders (and stray files) older than an hour from the shared upload folder; how many went.
    A replay removes its own folder when it ends; this clears those of a server killed mid-replay."""
    folder = folder or _UPLOADS
    now = time.time() if now is None else now
    gone = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime <= STALE_UPLOAD_SECONDS:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.remove(entry.path)
            gone += 1
        except OSError:
            continue  # another session removed it, or it is not ours to remove
    return gone


@contextlib.contextmanager
def upload_paths(upload: Optional[tuple[str, bytes]]) -> Iterator[list[str]]:
    """An uploaded log, (name, bytes), as a file the replay can read, for the length of the ``with`` only: in a
    folder of its own, removed afterwards whatever happens. None gives no path."""
    if upload is None:
        yield []
        return
    sweep_uploads()
    os.makedirs(_UPLOADS, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="run-", dir=_UPLOADS)
    try:
        name, data = upload
        suffix = os.path.splitext(name)[1].lower() if name.lower().endswith((".json", ".jsonl", ".csv")) else ".jsonl"
        path = os.path.join(folder, hashlib.sha256(data).hexdigest()[:24] + suffix)
        with open(path, "wb") as f:
            f.write(data)
        yield [path]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def settings_upload(name: str, data: bytes) -> dict:
    """A settings JSON (an object of settings, or one holding ``config``), checked; raises InputError."""
    value = parse_json(data, name)
    if isinstance(value, dict) and isinstance(value.get("config"), dict):
        value = value["config"]
    if not isinstance(value, dict):
        raise InputError("settings must be a JSON object", source=name)
    Config.from_dict(value, source=name)
    return value


def sidebar_settings() -> dict:
    """The sidebar's settings, every one of them (raises InputError for an impossible combination)."""
    return current_config().to_dict()


def _compact(result: dict) -> dict:
    if not result["ok"]:
        return {"index": result["index"], "source": result["source"], "ok": False}
    r = result["row"]
    return {"index": r["index"], "source": r["source"], "ok": True, "run_id": r["run_id"] or r["source"],
            "time": r["time"], "query": r["query"], "changed": r["changed"], "regression": r["regression"],
            "tokens_saved": r["tokens_saved"], "newly_dropped": len(r["newly_dropped"]),
            "newly_kept": len(r["newly_kept"]), "lost": ", ".join(r["lost_ids"]),
            "cited": ", ".join(r["lost_labels"]), "baseline": r["baseline"]}


def run(paths: list[str], new: dict, baseline: Optional[dict] = None,
        upload: Optional[tuple[str, bytes]] = None) -> dict:
    """Replay ``paths`` (or an ``upload``, (name, bytes), written to a temporary file for the run only) in this
    process with a progress bar; the result is kept in the session."""
    bar = st.progress(0.0, text="Replaying…")
    rows: list[dict] = []

    def moved(state: dict) -> None:
        bar.progress(min(state["fraction"], 1.0), text=f"{state['runs']:,} runs · {state['rate']:.1f} runs/s")

    with upload_paths(upload) as uploaded:
        report = replay(list(paths) + uploaded, new, baseline, engine="inprocess", on_progress=moved,
                        on_row=lambda result: rows.append(_compact(result)))
    bar.progress(1.0, text=f"Done: {report['runs']:,} runs replayed")
    result = {"report": report, "rows": rows, "paths": list(paths), "upload": upload, "new": new,
              "baseline": baseline}
    st.session_state[RESULT] = result
    return result


def regressions_frame(result: dict) -> pd.DataFrame:
    rows = [r for r in result["rows"] if r["ok"] and r["regression"]]
    return pd.DataFrame([{"run": r["run_id"], "time": r["time"], "lost passages": r["lost"], "cited as": r["cited"],
                          "query": r["query"]} for r in rows], columns=["run", "time", "lost passages", "cited as",
                                                                        "query"])


def tokens_chart(result: dict) -> go.Figure:
    """Prompt tokens saved per run (negative: added), the likely regressions in red."""
    rows = [r for r in result["rows"] if r["ok"]]
    fig = go.Figure(go.Bar(x=[r["run_id"] for r in rows], y=[r["tokens_saved"] for r in rows],
                           marker_color=["#d62728" if r["regression"] else "#1f77b4" for r in rows],
                           hovertext=[f"{r['run_id']}: {r['tokens_saved']:+,} tokens saved"
                                      + (" · cited passage lost" if r["regression"] else "") for r in rows],
                           hoverinfo="text"))
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), title="Prompt tokens saved per run",
                      xaxis=dict(title="run", showticklabels=len(rows) <= 60), yaxis=dict(title="tokens saved"))
    return fig


def fates_chart(report: dict) -> go.Figure:
    """Runs in which a candidate moved from one fate to another, per move."""
    moves = report["fate_moves"]
    fig = go.Figure(go.Bar(x=[m["runs"] for m in moves], y=[f"{m['from']} → {m['to']}" for m in moves],
                           orientation="h", marker_color=[FATE_COLORS.get(m["to"], "#7f7f7f") for m in moves],
                           hovertext=[f"{m['runs']:,} runs, {m['candidates']:,} candidates" for m in moves],
                           hoverinfo="text"))
    fig.update_layout(height=120 + 30 * len(moves), margin=dict(l=10, r=10, t=30, b=10),
                      title="Runs changed, per fate move", xaxis=dict(title="runs"),
                      yaxis=dict(autorange="reversed"))
    return fig


def unreadable_frame(report: dict) -> pd.DataFrame:
    return pd.DataFrame(report["unreadable"], columns=["source", "reason"])


def run_choices(result: dict) -> list[int]:
    """Indexes of the replayed runs, the likely regressions first."""
    rows = [r for r in result["rows"] if r["ok"]]
    return [r["index"] for r in sorted(rows, key=lambda r: (not r["regression"], not r["changed"], r["index"]))]


def run_label(result: dict, index: int) -> str:
    r = next(r for r in result["rows"] if r["index"] == index)
    mark = " · cited passage lost" if r["regression"] else " · changed" if r["changed"] else ""
    return f"{r['run_id']}{mark}"


def open_run(result: dict, index: int, page: str) -> None:
    """Make run ``index`` the session's input, its baseline the file's settings and the new settings the
    sidebar's (Compare: A = the file's, B = the sidebar's), then switch to ``page``."""
    with upload_paths(result.get("upload")) as uploaded:
        item = next(i for i in items(result["paths"] + uploaded) if i.index == index)
        loaded, _, _ = load_item(item)
    if result["baseline"] is not None:
        loaded = with_baseline(loaded, result["baseline"])
    ss = st.session_state
    raw = item.payload if isinstance(item.payload, (bytes, str)) else json.dumps(item.payload, sort_keys=True)
    _use(content_key(item.source, raw.encode() if isinstance(raw, str) else raw), loaded, sample=None)
    ss["dbg.sample"] = None
    apply_config(loaded.settings(**result["new"]).to_dict(), "new settings")
    ss["cmp.a.choice"], ss["cmp.b.choice"] = "file", "sidebar"
    ss.pop("cmp.a", None)
    ss.pop("cmp.b", None)
    st.switch_page(page)


def with_baseline(loaded: Loaded, baseline: dict) -> Loaded:
    """The run with the baseline settings as its own (what Compare calls the file's settings)."""
    logged = loaded.logged or (loaded.trace.logged if loaded.trace is not None else None)
    return dataclasses.replace(loaded, config={**loaded.config, **baseline}, trace=None, logged=logged,
                               format="json" if loaded.trace is not None else loaded.format)
