"""Colours, fate badges and the favicon: one palette for every page."""

from __future__ import annotations

import streamlit as st

import ctxcore

from .text import md_escape


FATE_COLORS = {
    "kept": "#2e7d32",
    "exact_duplicate": "#6a1b9a",
    "near_duplicate": "#ab47bc",
    "merged": "#0277bd",
    "below_threshold": "#f9a825",
    "stale": "#795548",
    "not_permitted": "#c62828",
    "over_budget": "#ef6c00",
    "over_limit": "#00838f",
}
KIND_COLORS = {
    "system": "#37474f",
    "instructions": "#546e7a",
    "schema": "#78909c",
    "tool": "#90a4ae",
    "evidence": "#2e7d32",
    "history": "#5c6bc0",
    "user_document": "#00897b",
    "rule": "#8d6e63",
    "question": "#1565c0",
}
FATE_BADGES = {"exact_duplicate": "violet", "near_duplicate": "violet", "merged": "blue", "below_threshold": "yellow",
               "stale": "gray", "not_permitted": "red", "over_budget": "orange",
               "over_limit": "primary"}


def favicon():
    """A small prompt-strip icon drawn locally (a material/emoji icon would be fetched from a CDN)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    x = 4
    for width, color in ((10, KIND_COLORS["system"]), (26, KIND_COLORS["evidence"]), (8, KIND_COLORS["rule"]),
                         (12, KIND_COLORS["question"])):
        draw.rectangle([x, 18, x + width - 2, 46], fill=color)
        x += width
    return img


def _fate_style(value: str) -> str:
    color = FATE_COLORS.get(value)
    return f"color: {color}; font-weight: 600" if color else ""


def fate_style(value: str) -> str:
    """Pandas Styler CSS for a fate cell (its colour)."""
    return _fate_style(value)


def fate_badges(counts: dict) -> None:
    dropped = [(f, n) for f, n in counts.items() if f != "kept" and n]
    if dropped:
        with st.container(horizontal=True, gap="small"):
            for fate, n in dropped:
                st.badge(md_escape(f"{fate}: {n}"), color=FATE_BADGES.get(fate, "gray"),
                         help=ctxcore.FATE_MEANINGS.get(fate, ""))
    else:
        st.badge("nothing dropped", color="green")


# A table's toolbar (search, full screen) floats 44 px above the table; without room it covers the bottom of the
# element above (a filter's arrow, a heading), which on a phone, where it is always shown, hides what it labels.
PAGE_CSS = ".stElementContainer:has(.stDataFrame) { margin-top: 2rem; }"


def page_style() -> None:
    """The app's few layout rules, once per run (a style-only st.html takes no room on the page)."""
    st.html(f"<style>{PAGE_CSS}</style>")
