"""The Diagnose page's analysis: the sent context, its root cause and notes (each fix proved by a re-run, with
progress shown), and the frames its tables show. Rendering stays on the page."""

from __future__ import annotations

import json
from typing import Optional

import pandas as pd
import streamlit as st

from ctxcore import Config, Loaded, Logged, Trace
from ctxcore.analysis import policy as pipeline_policy
from ctxcore.analysis.diagnosis import Diagnosis, MAX_PROOFS, diagnose
from ctxcore.analysis.explain import FIND_LIMIT, explain_text
from ctxcore.analysis.findings import setting_said
from ctxcore.analysis.reach import logged_vs_replay
from ctxcore.analysis.sent import of_build

from .loading import build_trace
from .scenario import _scenario
from .state import apply_config
from .text import md_escape, visible_frame


SEVERITY = {3: "root cause", 2: "also a cause", 1: "note"}
_RESULTS = "dx.results"  # session cache of diagnoses: (input key, settings, answer) -> Diagnosis
_POLICIES = "dx.policies"  # session cache of the logged pipeline's policy: (input key, query) -> Policy


def logged_of(loaded: Loaded) -> Logged:
    """The logged request: from the log, from a saved trace that kept it, or an empty one."""
    saved = loaded.trace.logged if loaded.trace is not None else None
    return loaded.logged or saved or Logged(loaded.format)


def logged_prompt_text(loaded: Loaded) -> Optional[str]:
    """The prompt the logged trace says was sent (the log's own text, else a saved trace's prompt)."""
    return logged_of(loaded).prompt_text or (loaded.trace.prompt.text if loaded.trace is not None else None)


def failure_state(loaded: Loaded) -> Optional[dict]:
    """A sample scenario's failure settings (its ``naive_config`` over the file's), or None."""
    naive = _scenario(loaded).get("naive_config")
    return {**loaded.config, **naive} if isinstance(naive, dict) else None


def open_in_failure_state(key: str, loaded: Loaded) -> bool:
    """The first time a sample is shown here, set the controls to its failure (True: the page must rerun)."""
    ss = st.session_state
    cfg = failure_state(loaded)
    if cfg is None or ss.get("dx.opened") == key:
        return False
    ss["dx.opened"] = key
    apply_config(cfg, loaded.source)
    return True


def model_limit(loaded: Loaded) -> Optional[int]:
    """The prompt limit of the model the scenario really calls (its own window), when a sample is shown in its
    failure state with other settings; None for a logged trace (its trace's settings are the model's)."""
    if failure_state(loaded) is None:
        return None
    cfg = loaded.settings()
    return cfg.window - cfg.max_output


def failure_trace(key: str, loaded: Loaded, query: str) -> Optional[Trace]:
    """A sample's build in its failure state: the evidence of what goes wrong, whatever the controls say now
    (they are the replay). None for other inputs (a logged trace's evidence is its logged prompt)."""
    cfg = failure_state(loaded)
    if cfg is None or logged_of(loaded).prompt_text:
        return None
    return build_trace(key, loaded, loaded.settings(**cfg), query)


def run_diagnosis(key: str, trace: Trace, answer: str, logged: Logged, limit: Optional[int],
                  evidence: Optional[Trace] = None) -> Diagnosis:
    """The diagnosis of this build and answer, remembered for the session; computed with a progress bar (a
    rerun started by the user stops it at the next step). ``evidence``: the build whose prompt stands for what
    was sent (a sample's failure state), when there is no logged prompt."""
    config_json = json.dumps(trace.config.to_dict(), sort_keys=True)
    cache = st.session_state.setdefault(_RESULTS, {})
    wanted = (key, config_json, trace.query, answer, logged.prompt_text is not None, limit,
              evidence.prompt.text if evidence is not None else None)
    if wanted in cache:
        return cache[wanted]
    bar = st.progress(0.0, text="Reading the prompt that was sent…")

    def progress(done: int, total: int, what: str) -> None:
        bar.progress(min(1.0, done / max(1, total)), text=f"Verifying fixes: {what}…")

    result = diagnose(trace, logged_prompt=logged.prompt_text, answer=answer or None, limit=limit,
                      progress=progress, sent=of_build(evidence) if evidence is not None else None)
    bar.empty()
    if len(cache) >= 16:
        cache.pop(next(iter(cache)))
    cache[wanted] = result
    return result


def policy_of(key: str, trace: Trace) -> pipeline_policy.Policy:
    """The policy the logged pipeline appears to follow, remembered per input: it is read off what was
    retrieved and sent, which no control changes (an empty one without a logged prompt)."""
    cache = st.session_state.setdefault(_POLICIES, {})
    wanted = (key, trace.query)
    if wanted not in cache:
        if len(cache) >= 16:
            cache.pop(next(iter(cache)))
        cache[wanted] = pipeline_policy.of(trace) if trace.logged is not None and trace.logged.prompt_text \
            else pipeline_policy.Policy()
    return cache[wanted]


def open_in_policy(key: str, loaded: Loaded, trace: Trace) -> bool:
    """The first time an imported run is shown here, set the controls to the policy its pipeline appears to
    follow: the replay starts as the user's pipeline, so a fix's Apply changes exactly what the fix says
    (True: the page must rerun). A sample opens in its failure state instead."""
    ss = st.session_state
    if ss.get("dx.policy_opened") == key or failure_state(loaded) is not None:
        return False
    ss["dx.policy_opened"] = key
    policy = policy_of(key, trace)
    config = policy.config(Config())[0]
    if not policy.rules or config == trace.config:
        return False
    apply_config(config.to_dict(), loaded.source)
    return True


def pipeline_rules(key: str, trace: Trace) -> tuple[str, list[str], list[str]]:
    """The policy the logged pipeline appears to follow, as markdown-escaped text (ids and numbers come from the
    log): the heading, one line per rule, and what the replay cannot reproduce; no lines without a logged
    prompt."""
    found = policy_of(key, trace)
    lines = [f"{md_escape(pipeline_policy.said(r))} ({md_escape(r.evidence)}) · {r.confidence}" for r in found.rules]
    return md_escape(pipeline_policy.HEADING), lines, [md_escape(c) for c in found.cannot]


def decisive_text(trace: Trace, finding) -> Optional[tuple[str, str]]:
    """(id, text) of the finding's decisive passage."""
    if not finding.ids:
        return None
    cid = finding.ids[0]
    c = next((c for c in trace.candidates if c.id == cid), None)
    return (cid, c.text) if c is not None else None


def fix_text(finding) -> str:
    """The fix as the page leads with it: the change to the user's pipeline first, the ctxcore setting after."""
    return finding.fix_said or setting_said(finding.fix)


def fix_label(finding) -> str:
    return ("Verified fix" if finding.fix_verified else "Suggested, not verified" if finding.fix
            else "What to change in your pipeline")


def fix_controls(trace: Trace, finding) -> dict:
    """The controls Apply starts from: the replay's, with the pipeline's own settings the fix was proved on."""
    return {**trace.config.to_dict(), **(finding.base or {})}


def passage_texts(trace: Trace, diagnosis: Diagnosis, finding) -> tuple[str, str]:
    """The decisive passage as the model read it in the prompt that was sent (the part sent, when it was cut),
    and as it stands in the replay (joined with the chunks merged into it; for an outdated version, the newer one
    that replaces it): plain text, shown as text."""
    cid = finding.ids[0]
    c = next(c for c in trace.candidates if c.id == cid)
    p = diagnosis.sent.passage(cid)
    before = "(not in the prompt that was sent)" if p is None else c.text[:round(len(c.text) * p.share)] if p.cut \
        else c.text
    d = trace.decision(finding.ids[1] if finding.kind == "outdated_version_sent" else cid)  # the newer one replaces it
    if d.merged_into:
        d = trace.decision(d.merged_into)
    if d.fate != "kept":
        return before, f"(not in the replay: {d.reason})"
    head = next(c for c in trace.candidates if c.id == d.id)
    return before, d.text or head.text


def before_after(trace: Trace, diagnosis: Diagnosis, finding) -> dict:
    """Where the decisive passage was in the prompt as sent, and where it is in the current replay."""
    cid = finding.ids[0]
    p = diagnosis.sent.passage(cid)
    n = len(diagnosis.sent.passages)
    if p is None:
        before = "not sent"
    elif p.cut:
        before = f"sent in part ({p.share:.0%}) as {p.label or 'a passage'}, position {p.position} of {n}"
    else:
        before = f"sent as {p.label or 'a passage'}, position {p.position} of {n}"
    d = trace.decision(cid)
    after = (f"in the prompt as [{d.label}], position {d.position} of {len(trace.kept())}" if d.fate == "kept"
             else f"{d.fate}: {d.reason}")
    short_before = "not sent" if p is None else f"position {p.position} of {n}" + (" (cut)" if p.cut else "")
    short_after = f"[{d.label}] · position {d.position} of {len(trace.kept())}" if d.fate == "kept" else d.fate
    return {"id": cid, "before": before, "after": after, "resolved": finding.resolved,
            "before_short": short_before, "after_short": short_after}


def apply_fix(config: dict, fix: dict, kind: str, ids) -> None:
    """The Apply button: set the controls to the fix and remember which finding it was for."""
    apply_config({**config, **fix})
    st.session_state["dx.applied"] = {"kind": kind, "ids": list(ids)}


def marks(diagnosis: Diagnosis) -> dict[str, list[str]]:
    """What each sent passage is marked with: duplicate, outdated, buried, cut, decisive."""
    out: dict[str, list[str]] = {}
    buried = {f.ids[0] for f in diagnosis.findings if f.kind == "buried_in_middle" and f.ids}
    for p in diagnosis.sent.passages:
        m = []
        if p.duplicate_of:
            m.append(f"duplicate of {p.duplicate_of}")
        if p.superseded_by:
            m.append(f"outdated (newer: {p.superseded_by})")
        if p.id in buried:
            m.append("buried")
        if p.cut:
            m.append(f"cut ({p.share:.0%} sent)")
        out[p.id] = m
    return out


def sent_passages_frame(diagnosis: Diagnosis) -> pd.DataFrame:
    """The sent prompt's passages in their logged order, each marked."""
    m = marks(diagnosis)
    return pd.DataFrame([{"position": p.position, "label": p.label or "", "id": p.id, "tokens": p.tokens,
                          "share sent": p.share, "marks": ", ".join(m[p.id])} for p in diagnosis.sent.passages],
                        columns=["position", "label", "id", "tokens", "share sent", "marks"])


SEARCH_LIMIT = FIND_LIMIT  # candidates explained per search (the strongest); the page says how many more matched


def explain_frame(trace: Trace, needle: str, logged_prompt: Optional[str] = None) -> pd.DataFrame:
    """The strongest candidates containing ``needle``: whether each was sent, its fate in the replay, why, and
    the verified fix (empty: retrieval missed it)."""
    rows = []
    for e in explain_text(trace, needle, logged_prompt, limit=SEARCH_LIMIT):
        row = {"id": e.id}
        if e.sent is not None:
            row["sent?"] = e.sent
        row.update({"replay fate": e.fate, "stage": e.stage, "why": f"{e.note}. {e.reason}",
                    "fix": json.dumps(e.fix) if e.fix else "", "verified": e.fix_verified})
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        visible_frame(frame, ("id", "why"))  # for display: ids and reasons show their invisible characters
    return frame


def claims_frame(checks) -> pd.DataFrame:
    frame = pd.DataFrame([{"kind": c.kind, "verdict": c.verdict, "claim": c.claim, "detail": c.detail}
                          for c in checks], columns=["kind", "verdict", "claim", "detail"])
    visible_frame(frame, ("claim", "detail"))
    return frame


def replay_frame(trace: Trace, logged_prompt: str, diagnosis: Optional[Diagnosis] = None) -> pd.DataFrame:
    """Each candidate: whether and where the logged prompt had it, against its fate in the replay."""
    if diagnosis is not None:  # read off the sent context already reconstructed (no second text search)
        sent = {p.id: p for p in diagnosis.sent.passages}
        rows = []
        for d in trace.decisions:
            p = sent.get(d.id)
            was = "absent" if p is None else ("partly" if p.cut else "whole")
            kept = d.fate == "kept"
            change = {(True, True): "both", (False, False): "neither", (True, False): "only logged",
                      (False, True): "only replay"}[(p is not None, kept)]
            rows.append({"id": d.id, "sent (logged)": was, "order sent": p.position if p else None,
                         "replay fate": d.fate, "replay position": d.position, "difference": change})
        frame = pd.DataFrame(rows)
    else:
        frame = pd.DataFrame([{"id": d.id, "sent (logged)": d.logged, "order sent": d.logged_order,
                               "replay fate": d.replay, "replay position": d.replay_position,
                               "difference": d.change} for d in logged_vs_replay(trace, logged_prompt)])
    for column in ("order sent", "replay position"):  # blank, not None, where there is no place
        frame[column] = frame[column].astype("Int64")
    visible_frame(frame, ("id", "difference"))
    return frame


def diagnose_cached(key: str, trace: Trace, answer: str, logged: Logged):
    """(answer checks, findings): the older entry point, kept for callers outside this page."""
    d = run_diagnosis(key, trace, answer, logged, None)
    return list(d.checks), list(d.findings)


__all__ = ["MAX_PROOFS", "SEARCH_LIMIT", "SEVERITY", "apply_fix", "before_after", "claims_frame", "decisive_text", "diagnose_cached",
           "explain_frame", "failure_state", "failure_trace", "fix_controls", "fix_label", "fix_text", "logged_of",
           "logged_prompt_text", "marks", "model_limit", "open_in_failure_state", "open_in_policy", "passage_texts",
           "policy_of", "replay_frame", "run_diagnosis", "sent_passages_frame"]
