"""The Diagnose page's analysis: findings and answer checks (cached; each fix is verified by a rebuild), and the
frames its tables show. Rendering stays on the page."""

from __future__ import annotations

import json
from typing import Optional

import pandas as pd
import streamlit as st

from ctxcore import Loaded, Logged, Trace
from ctxcore.answer import check_answer
from ctxcore.explain import explain_text, findings
from ctxcore.reach import logged_vs_replay

from .text import visible_frame

SEVERITY = {3: "likely cause", 2: "worth fixing", 1: "note"}


def logged_of(loaded: Loaded) -> Logged:
    """The logged request: from the log, from a saved trace that kept it, or an empty one."""
    saved = loaded.trace.logged if loaded.trace is not None else None
    return loaded.logged or saved or Logged(loaded.format)


def logged_prompt_text(loaded: Loaded) -> Optional[str]:
    """The prompt the logged trace says was sent (the log's own text, else a saved trace's prompt)."""
    return logged_of(loaded).prompt_text or (loaded.trace.prompt.text if loaded.trace is not None else None)


@st.cache_data(show_spinner="Re-running the engine to verify each fix…", max_entries=32)
def _diagnose(key: str, config_json: str, query: str, answer: str, logged_tokens, logged_prompt, _trace):
    checks = check_answer(_trace, answer, logged_prompt) if answer.strip() else []
    return checks, findings(_trace, answer_checks=checks, logged_prompt_tokens=logged_tokens,
                            logged_prompt=logged_prompt)


def diagnose(key: str, trace: Trace, answer: str, logged: Logged) -> tuple[list, list]:
    """(answer checks, findings) for this build and answer; cached by input, settings, query and answer."""
    config_json = json.dumps(trace.config.to_dict(), sort_keys=True)
    return _diagnose(key, config_json, trace.query, answer, logged.prompt_tokens, logged.prompt_text, trace)


def explain_frame(trace: Trace, needle: str) -> pd.DataFrame:
    """Every candidate containing ``needle``: its fate, why, and the verified fix (empty: retrieval missed it)."""
    frame = pd.DataFrame([{
        "id": e.id, "fate": e.fate, "stage": e.stage, "why": f"{e.note}. {e.reason}",
        "fix": json.dumps(e.fix) if e.fix else "", "verified": e.fix_verified} for e in explain_text(trace, needle)])
    visible_frame(frame, ("id", "why"))  # for display: ids and reasons show their invisible characters
    return frame


def claims_frame(checks: list) -> pd.DataFrame:
    frame = pd.DataFrame([{"kind": c.kind, "verdict": c.verdict, "claim": c.claim, "detail": c.detail}
                          for c in checks], columns=["kind", "verdict", "claim", "detail"])
    visible_frame(frame, ("claim", "detail"))
    return frame


def replay_frame(trace: Trace, logged_prompt: str) -> pd.DataFrame:
    """Each candidate: whether and where the logged prompt had it, against its fate in the replay."""
    frame = pd.DataFrame([{"id": d.id, "sent (logged)": d.logged, "order sent": d.logged_order,
                           "replay fate": d.replay, "replay position": d.replay_position,
                           "difference": d.change} for d in logged_vs_replay(trace, logged_prompt)])
    for column in ("order sent", "replay position"):  # blank, not None, where there is no place
        frame[column] = frame[column].astype("Int64")
    visible_frame(frame, ("id", "difference"))
    return frame
