"""The controls' values and the Config they stand for (pure: no Streamlit), so each Config field has one control."""

from __future__ import annotations

import ctxcore
from ctxcore import Config
from ctxcore.settings import BY_NAME, SETTINGS


DEFAULTS = Config().to_dict()
ORDER_HELP = dict(BY_NAME["order"].meanings)
SELECT_HELP = dict(BY_NAME["select"].meanings)
SIMILARITY_HELP = dict(BY_NAME["similarity"].meanings)
# Values a switched-off control falls back to when it is switched on again.
OFF_VALUES = {s.name: s.off_value for s in SETTINGS if s.switch}
# Slider ranges (the registry's bounds, see Setting.control_range); a value outside one is clamped, with a note.
SLIDER_RANGES = {s.name: s.control_range for s in SETTINGS if s.control == "slider"}
# the settings with a control of their own: encoding and model share the tokenizer select
CONTROLLED = tuple(s for s in SETTINGS if s.kind not in ("encoding", "model"))


def _control_value(s, value):
    if s.kind == "int" or (s.kind == "overhead" and value != "auto"):
        return int(value)
    if s.kind == "float" or (s.kind == "share" and value != "auto"):
        return float(value)
    if s.kind == "bool":
        return bool(value)
    if s.kind == "text":
        return value or ""
    return value


def controls_from_config(cfg: dict) -> tuple[dict, list[str]]:
    """The UI control values that stand for a complete Config dict, and notes on clamped values."""
    c = Config.from_dict(cfg).to_dict()
    out = {"tokenizer": c["model"] or c["encoding"]}
    for s in CONTROLLED:
        value = c[s.name]
        if s.switch:
            off = value == "auto" if s.kind in ("overhead", "share") else value is None
            out[s.switch] = off if s.switch_word == "auto" else not off
            out[s.name] = s.off_value if off else _control_value(s, value)
        else:
            out[s.name] = _control_value(s, value)
    return clamp_controls(out)


def clamp_controls(values: dict) -> tuple[dict, list[str]]:
    """The control values with each slider's value pulled into its range (a slider given a value past its end
    stops the page), and a note on each one moved."""
    out, notes = dict(values), []
    for name, (lo, hi) in SLIDER_RANGES.items():
        value = out.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        out[name] = float(min(max(value, lo), hi))  # a float: a slider wants its value of its ends' type
        if not lo <= value <= hi:
            notes.append(f"{name} {value} is outside the control's range ({lo:g} to {hi:g}); using {out[name]:g}")
    return out, notes


def config_from_controls(v: dict) -> dict:
    """The Config dict the controls stand for (each control sets one Config field)."""
    tok = v["tokenizer"]
    if tok in ctxcore.ENCODINGS:
        out = {"encoding": tok, "model": None}
    else:
        out = {"encoding": DEFAULTS["encoding"], "model": tok}
    for s in CONTROLLED:
        value = v[s.name]
        if s.kind == "text":
            value = value or None
        if s.switch:
            on = v[s.switch] != (s.switch_word == "auto")  # label_auto on means: measured, not the number
            value = value if on else ("auto" if s.kind in ("overhead", "share") else None)
        out[s.name] = value
    return out


DEFAULT_CONTROLS, _ = controls_from_config(DEFAULTS)
PAGE_DEFAULTS = {"fixed": 65, "query": "", "fates": []}


def opening_config(loaded) -> dict:
    """The settings an input opens with: a scenario's failure settings (its ``naive_config``: the story the
    page tells is the failure, one toggle away from the fix), else the file's own settings, else the engine
    defaults (an upload never inherits the previous input's budget)."""
    scen = loaded.extra.get("scenario") if isinstance(loaded.extra, dict) else None
    naive = scen.get("naive_config") if isinstance(scen, dict) else None
    if isinstance(naive, dict):
        return {**DEFAULTS, **naive}
    if loaded.config or loaded.trace is not None or loaded.format == "trace":
        return loaded.settings().to_dict()
    return dict(DEFAULTS)
