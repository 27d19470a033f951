"""Text escaping: every string from an input file passes through here before it reaches markdown or plotly.

Safety rule: input text (chunk text, ids, reasons, titles, file names, warnings that quote ids) is shown with
``st.text``/``st.code``/``st.dataframe`` or, when a markdown element is the only option (``st.error``,
``st.warning``), after :func:`md_escape`. Strings put into plotly hover text or bar labels go through :func:`esc`.
"""

from __future__ import annotations

import html
import re
import string
from pathlib import Path
from typing import Any


_MD_PUNCT = re.compile("([%s])" % re.escape(string.punctuation))
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(?=(?:\\:\\/\\/|\\@))|(?<=www)(?=\\\.)")
WORD_JOINER = "\u2060"


def md_escape(text: Any) -> str:
    r"""Make markdown show ``text`` literally: backslash-escape every ASCII punctuation mark, and put an
    invisible word joiner into ``://``, ``www.`` and ``@`` so URLs and e-mail addresses are not autolinked.

    >>> print(md_escape("![x](p.png) <b>"))
    \!\[x\]\(p\.png\) \<b\>
    >>> md_escape("http://a.b").startswith("http" + WORD_JOINER)
    True
    """
    return _AUTOLINK.sub(WORD_JOINER, _MD_PUNCT.sub(r"\\\1", str(text)))


def esc(text: Any) -> str:
    """Escape a string for plotly hover/labels (plotly reads a subset of HTML; it decodes &lt; &gt; &amp;)."""
    return html.escape("" if text is None else str(text), quote=False)


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
