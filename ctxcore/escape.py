"""Markdown that shows input text literally: the one escaper of the replay's report.md and the app's pages.

Text from an input file (a query, an id, a file name, a reason quoting them) is data: whatever it holds, it
must not become a heading, a link, an image, raw HTML or a table delimiter. It lives here, below both the
report and the UI, so that both escape the same way. Every pattern reads a few characters around one
position: escaping is linear in the text.
"""

from __future__ import annotations

import re
import string
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
# What means something inside a line of CommonMark, GitHub's tables, strikethrough and math (a backslash too).
_INLINE = re.compile(r"([\\`*_~\[\]<>!&|$#])")
# _AUTOLINK on text whose ":", "/", "." and "@" are left as they are.
_TEXT_AUTOLINK = re.compile(r"(?=@)|(?i:(?<=[a-z0-9])(?=://)|(?<=www)(?=\.))")
# Every line break Python's str.splitlines knows (CR alone, U+2028 and U+0085 included), and the tab.
_BREAK = re.compile("[\t\n\x0b\x0c\r\x1c-\x1e\x85\u2028\u2029]+")
# The other control characters: a terminal acts on them (ESC starts a colour or a screen clear).
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")


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


def md_escape(text: Any) -> str:
    r"""Make markdown show ``text`` literally: invisible characters as escapes (:func:`visible`), every ASCII
    punctuation mark backslash-escaped (a backslash too, in the same pass), and an invisible word joiner put
    where an autolink would start (before ``@``, into ``://`` and ``www.``), so URLs and e-mail addresses are
    not links.

    >>> print(md_escape("![x](p.png) <b>"))
    \!\[x\]\(p\.png\) \<b\>
    >>> md_escape("http://a.b").startswith("http" + WORD_JOINER)
    True
    >>> WORD_JOINER + "\\@" in md_escape("first-@example.com")
    True
    """
    return _AUTOLINK.sub(WORD_JOINER, _MD_PUNCT.sub(r"\\\1", visible(text)))


def md_line(text: Any) -> str:
    r"""``text`` as Markdown text on one line, for a file read raw as often as rendered (the replay's report.md,
    printed on stdout too): a run of line breaks (CR, LF, U+2028 …) or tabs becomes one space and any other
    control character its escape, so the text starts no new block (a heading, a table row) and drives no
    terminal; invisible characters show as escapes (:func:`visible`); only the marks that mean something inside
    a line are backslash-escaped (the backslash itself in the same pass; ``| ` * _ ~ [ ] < > ! & $ #``), so an
    id like ``run-00009`` reads as it is; and autolinks are broken with a word joiner, as in :func:`md_escape`.

    >>> print(md_line("a\r# b\u2028c\x1b[2J"))
    a \# b c\\u001b\[2J
    >>> print(md_line("run-7 <b>![x](p.png)</b>"))
    run-7 \<b\>\!\[x\](p.png)\</b\>
    """
    text = visible(_CONTROL.sub(_escape, _BREAK.sub(" ", "" if text is None else str(text))))
    return _TEXT_AUTOLINK.sub(WORD_JOINER, _INLINE.sub(r"\\\1", text))
