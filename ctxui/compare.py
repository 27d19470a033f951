"""Comparing two builds of one input: the presets, what changed (fates, places, totals, settings), the prompt diff."""

from __future__ import annotations

import difflib
import json
from typing import Optional

import pandas as pd
import streamlit as st

import ctxcore
from ctxcore import BuildError, Config, InputError, Loaded, Trace

from .charts import map_right, prompt_map
from .diagnosis import logged_of
from .loading import build_trace
from .scenario import _scenario
from .sent import sent_changes, sent_side, sent_tokens
from .settings import DEFAULTS
from .state import current_config, link_page_param, store
from .summary import side_metrics
from .tables import readable_table
from .text import md_escape, visible_frame
from .theme import _fate_style


PRESET_LABELS = {
    "naive": "Naive preset",
    "recommended": "Recommended preset",
    "file": "File's settings",
    "failure": "Scenario's failure settings",
    "sidebar": "Current sidebar settings",
    "defaults": "Engine defaults",
    "sent": "As sent (the logged prompt)",
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
    "sent": "The prompt the logged system actually sent, its passages in the order sent (for a logged trace).",
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


def preset_options(loaded: Loaded, logged_prompt: Optional[str] = None) -> list[str]:
    opts = ["naive", "recommended", "file", "sidebar", "defaults"]
    if isinstance(_scenario(loaded).get("naive_config"), dict):
        opts.insert(3, "failure")
    if logged_prompt:
        opts.insert(0, "sent")
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


CHANGE_WHY_WIDTH = 210  # px: id 140 + two fates of 120 + two reasons fit the 820 px main column at 1280 px


def changes_table(df: pd.DataFrame, names: tuple[str, str], key: str) -> None:
    """The fate-changes frame with the two sides' names as column titles; both reasons wrapped whole."""
    a, b = names
    df = df.copy()
    visible_frame(df, ("id", "why_a", "why_b"))
    cfg = {
        "id": st.column_config.TextColumn("id", width=140),
        "fate_a": st.column_config.TextColumn(f"fate {a}", width=120),
        "fate_b": st.column_config.TextColumn(f"fate {b}", width=120),
        "why_a": st.column_config.TextColumn(f"why {a}"),
        "why_b": st.column_config.TextColumn(f"why {b}"),
    }
    readable_table(df, key=key, reason=("why_a", "why_b"), column_config=cfg, styled=("fate_a", "fate_b"),
                   reason_width=CHANGE_WHY_WIDTH,
                   column_order=["fate_a", "fate_b", "id", "why_a", "why_b"])  # both fates whole on a phone


def moved_table(df: pd.DataFrame, names: tuple[str, str], key: str) -> None:
    a, b = names
    df = df.copy()
    visible_frame(df, ("id", "label_a", "label_b"))
    readable_table(df, key=key, column_config={
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


# --------------------------------------------------------------------------- the page's two sides

def side_choice(name: str, column, options: list[str]) -> str:
    """A side's preset select (its choice is kept apart: the widget's own key is forgotten on other pages)."""
    ss = st.session_state
    wkey = f"cmp.{name}"
    if wkey not in ss or ss[wkey] not in options:
        ss[wkey] = ss[f"cmp.{name}.choice"]
    with column:
        choice = st.selectbox(f"Settings {name.upper()}", options, key=wkey, format_func=lambda o: PRESET_LABELS[o],
                              help="; ".join(f"{PRESET_LABELS[o]}: {PRESET_HELP[o]}" for o in options))
    ss[f"cmp.{name}.choice"] = choice
    return choice


def side_trace(choice: str, loaded: Loaded, key: str, query: str) -> dict:
    """{"trace": the build for a preset} or {"error": why not}; the "as sent" side is filled in later."""
    if choice == "sent":
        return {"sent": True}
    try:
        return {"trace": build_trace(key, loaded, preset_config(choice, loaded), query)}
    except (InputError, BuildError) as err:
        return {"error": str(err)}


def _replay_for(name: str, built: dict, loaded: Loaded) -> Optional[Trace]:
    """The replay an "as sent" side is set against: the other side's build, else the sidebar's."""
    other = built["b" if name == "a" else "a"]
    if other.get("trace") is not None:
        return other["trace"]
    try:
        return build_trace(st.session_state["ctx.key"], loaded, current_config(), store()["query"])
    except (InputError, BuildError):
        return None


def shared_right(built: dict, loaded: Loaded, logged_prompt: Optional[str]) -> int:
    """The right end of both prompt maps: the larger safe input (or prompt) of the two sides."""
    traces = [b["trace"] for b in built.values() if b.get("trace") is not None]
    right = map_right(traces) if traces else 1
    if any(b.get("sent") for b in built.values()) and logged_prompt:
        replay = next((_replay_for(n, built, loaded) for n, b in built.items() if b.get("sent")), None)
        if replay is not None:
            right = max(right, map_right([replay]), sent_tokens(replay, logged_of(loaded), logged_prompt)[0])
    return right


def render_side(name: str, choice: str, built: dict, loaded: Loaded, logged_prompt: Optional[str],
                right: int) -> Optional[Trace]:
    """One side: its headline numbers and its map on the shared axis; returns its trace (the replay for "as
    sent"), or None after showing why there is none."""
    side = built[name]
    if side.get("error"):
        st.error(md_escape(side["error"]), icon=":material/error:")
        return None
    if side.get("sent"):
        replay = _replay_for(name, built, loaded)
        if replay is None or not logged_prompt:
            st.error("No replay to set the logged prompt against: fix the settings first.", icon=":material/error:")
            return None
        sent_side(replay, logged_of(loaded), logged_prompt, right, key=f"cmp.map_{name}")
        return replay
    trace = side["trace"]
    side_metrics(trace)
    st.plotly_chart(prompt_map(trace, right=right), width="stretch", key=f"cmp.map_{name}")
    return trace


def sent_comparison(choices: dict, trace_a: Trace, trace_b: Trace, logged_prompt: str) -> None:
    """Below the two sides when one is "as sent": what the logged prompt and the replay treat differently,
    and the two prompts line by line."""
    sent_name = "a" if choices["a"] == "sent" else "b"
    replay = trace_a if sent_name == "a" else trace_b
    names = ("A", "B")
    st.subheader("Sent versus replayed", anchor=False)
    changes = sent_changes(replay, logged_prompt)
    if len(changes):
        st.caption(f"{len(changes)} candidate{'s are' if len(changes) != 1 else ' is'} treated differently: sent "
                   "but dropped by the replay, or kept by the replay but never sent.")
        readable_table(changes, key="cmp.sent_changes", reason="reason", styled=("replay fate",))
    else:
        st.caption("The logged prompt sent exactly the passages the replay keeps.")
    st.subheader("The two prompts, line by line", anchor=False)
    a_text = logged_prompt if sent_name == "a" else trace_a.prompt.text
    b_text = logged_prompt if sent_name == "b" else trace_b.prompt.text
    if a_text == b_text:
        st.caption("The two prompts are identical.")
    else:
        st.caption("Lines starting with - are only in prompt A, lines starting with + only in prompt B.")
        st.code(prompt_diff(a_text, b_text, names), language="diff", wrap_lines=True, height=520)
