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
# Where Streamlit's markdown (GitHub's autolink literals) would start a link, after _MD_PUNCT: before every
# "@" (an e-mail address: its local part may end in any of . _ + -, so no character before it is safe), between
# a scheme and "://", and between "www" and "." (either case). mailto: and xmpp: links need an "@" too. Each
# alternative reads at most a few characters around one position, so the substitution is linear in the text.
_AUTOLINK = re.compile(r"(?=\\@)|(?i:(?<=[a-z0-9])(?=\\:\\/\\/)|(?<=www)(?=\\\.))")
WORD_JOINER = "\u2060"
# Characters that change what a reader sees without being seen: bidi embeddings, overrides and isolates, marks,
# zero-width characters, the word joiner family, the byte-order mark, the soft hyphen, and tag characters.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                        "\U000e0000-\U000e007f]")


def _escape(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: Any) -> str:
    r"""``text`` with every invisible or direction-changing character written as its escape (``\u202e``), so
    that an id or a title shows what it holds. For display only: the prompt and the trace keep the text.

    >>> visible("invoice\u202etxt.exe"), visible("a\u200bb"), visible("plain")
    ('invoice\\u202etxt.exe', 'a\\u200bb', 'plain')
    """
    text = "" if text is None else str(text)
    return _INVISIBLE.sub(_escape, text) if _INVISIBLE.search(text) else text


def visible_frame(df, columns) -> None:
    """Apply :func:`visible` to these text columns of a pandas frame, in place (a column with nothing to
    show differently is left as it is, after one scan of its joined text)."""
    for name in columns:
        if name not in df.columns or not len(df):
            continue
        values = df[name].tolist()
        if _INVISIBLE.search("\n".join(v for v in values if isinstance(v, str))):
            df[name] = [visible(v) if isinstance(v, str) else v for v in values]


def md_escape(text: Any) -> str:
    r"""Make markdown show ``text`` literally: invisible characters as escapes (:func:`visible`), every ASCII
    punctuation mark backslash-escaped, and an invisible word joiner put where an autolink would start
    (before ``@``, into ``://`` and ``www.``), so URLs and e-mail addresses are not links.

    >>> print(md_escape("![x](p.png) <b>"))
    \!\[x\]\(p\.png\) \<b\>
    >>> md_escape("http://a.b").startswith("http" + WORD_JOINER)
    True
    >>> WORD_JOINER + "\\@" in md_escape("first-@example.com")
    True
    """
    return _AUTOLINK.sub(WORD_JOINER, _MD_PUNCT.sub(r"\\\1", visible(text)))


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
