"""Text escaping: every string from an input file passes through here before it reaches markdown or plotly.

Safety rule: input text (chunk text, ids, reasons, titles, file names, warnings that quote ids) is shown with
``st.text``/``st.code``/``st.dataframe`` or, when a markdown element is the only option (``st.error``,
``st.warning``), after :func:`md_escape` (``ctxcore.escape``, shared with the replay's report.md). Strings put into plotly hover text or bar labels go through :func:`esc`.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from ctxcore.escape import WORD_JOINER, _AUTOLINK, _INVISIBLE, _MD_PUNCT, md_escape, visible  # noqa: F401


def visible_frame(df, columns) -> None:
    """Apply :func:`visible` to these text columns of a pandas frame, in place (a column with nothing to
    show differently is left as it is, after one scan of its joined text)."""
    for name in columns:
        if name not in df.columns or not len(df):
            continue
        values = df[name].tolist()
        if _INVISIBLE.search("\n".join(v for v in values if isinstance(v, str))):
            df[name] = [visible(v) if isinstance(v, str) else v for v in values]


def esc(text: Any) -> str:
    """Escape a string for plotly hover/labels (plotly reads a subset of HTML; it decodes &lt; &gt; &amp;);
    invisible characters are shown as escapes (:func:`visible`)."""
    return html.escape(visible(text), quote=False)


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(err).__name__}: {first}"[:400]


def safe_filename(name: str, suffix: str) -> str:
    stem = Path(name or "context").name
    for ext in (".json", ".jsonl", ".csv"):
        if stem.lower().endswith(ext):
            stem = stem[: -len(ext)]
    if stem.lower().endswith(".trace"):
        stem = stem[:-6]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "context"
    return stem[:80] + suffix
