"""The controls' values and the Config they stand for (pure: no Streamlit), so each Config field has one control."""

from __future__ import annotations

import ctxcore
from ctxcore import Config


DEFAULTS = Config().to_dict()
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
