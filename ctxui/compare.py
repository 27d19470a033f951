"""Comparing two builds of one input: the presets, what changed (fates, places, totals, settings), the prompt diff."""

from __future__ import annotations

import difflib
import json

import pandas as pd
import streamlit as st

import ctxcore
from ctxcore import Config, Loaded, Trace

from .scenario import _scenario
from .settings import DEFAULTS
from .state import current_config, link_page_param
from .text import visible_frame
from .theme import _fate_style


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


SIDE_DEFAULTS = {"a": "naive", "b": "recommended"}


def read_side_links(options: list[str]) -> list[str]:
    """Take the opening link's ``a``/``b`` presets into the session (``cmp.a.choice``, ``cmp.b.choice``, a default
    for a side without one); the problems with them, for ``link_warning``."""
    ss = st.session_state
    problems = []
    for side, default in SIDE_DEFAULTS.items():
        wanted = link_page_param(side)
        if wanted is not None:
            if wanted in options:
                ss[f"cmp.{side}.choice"] = wanted
                ss.pop(f"cmp.{side}", None)
            else:
                problems.append(f"{side}={wanted!r} must be one of {', '.join(options)}")
        if ss.get(f"cmp.{side}.choice") not in options:
            ss[f"cmp.{side}.choice"] = default
    return problems


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
    df = df.copy()
    visible_frame(df, ("id", "why_a", "why_b"))
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
    df = df.copy()
    visible_frame(df, ("id", "label_a", "label_b"))
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
