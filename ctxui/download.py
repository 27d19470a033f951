"""The debugger's downloads: the trace, the prompt and the settings."""

from __future__ import annotations

import json

import streamlit as st

from ctxcore import Loaded, Trace

from .text import safe_filename


def download_files(trace: Trace, loaded: Loaded) -> list[tuple]:
    """(label, data, file name, mime, key, help) of the debugger's downloads.

    The trace JSON is a callable: Streamlit runs it when the button is clicked, not on every script run (at
    10,000 candidates it is 13 MB and about 0.2 s of serialisation). The prompt and the settings are small."""
    return [
        ("Trace JSON", trace.to_json, safe_filename(loaded.source, ".trace.json"), "application/json",
         "dbg.dl_trace", "Upload it again to get this same view; the CLI can replay it."),
        ("Prompt text", trace.prompt.text, safe_filename(loaded.source, ".prompt.txt"), "text/plain",
         "dbg.dl_prompt", None),
        ("Settings JSON", json.dumps(trace.config.to_dict(), indent=2),
         safe_filename(loaded.source, ".settings.json"), "application/json", "dbg.dl_settings",
         "Every setting of this build, as a JSON object."),
    ]


def downloads(trace: Trace, loaded: Loaded) -> None:
    """Trace JSON (re-uploading it gives this same view), the prompt text, and the settings."""
    files = download_files(trace, loaded)
    for col, (label, data, name, mime, key, help_text) in zip(st.columns(len(files)), files):
        col.download_button(label, data, file_name=name, mime=mime, key=key, on_click="ignore",
                            icon=":material/download:", help=help_text, width="stretch")
